#include "apps/train/progress.h"

#include <unistd.h>

#include <algorithm>

namespace nuvec::train {

ProgressBar::ProgressBar(std::string label, int total_steps, std::FILE* out)
    : label_(std::move(label)),
      total_(std::max(total_steps, 1)),
      out_(out),
      terminal_(isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()) {}

std::string format_duration(double seconds) {
  auto total = static_cast<long>(seconds + 0.5);
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  }
  return text;
}

void ProgressBar::update(int step, double loss, long samples) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  int tenth = step * 10 / total_;
  if (!terminal_ && tenth == last_printed_tenth_ && step != total_) {
    return;
  }
  last_printed_tenth_ = tenth;
  constexpr int width = 24;
  int filled = step * width / total_;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '.');
  double rate = elapsed > 0 ? static_cast<double>(samples) / elapsed : 0.0;
  double left = step > 0 ? elapsed * (total_ - step) / step : 0.0;
  std::fprintf(out_, "%s%s [%s] %d/%d loss %.4f %.0f img/s %s left%s", terminal_ ? "\r" : "", label_.c_str(),
               bar.c_str(), step, total_, loss, rate, format_duration(left).c_str(), terminal_ ? "  " : "\n");
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (terminal_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
}

}  // namespace nuvec::train
