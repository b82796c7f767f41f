#pragma once

// A one-line progress bar: step, loss, throughput and time left. On a terminal it redraws in place; otherwise
// (a log file, CI) it prints a line every tenth of the way.

#include <chrono>
#include <cstdio>
#include <string>

namespace nuvec::train {

class ProgressBar {
 public:
  ProgressBar(std::string label, int total_steps, std::FILE* out = stdout);
  /// Reports step `step` (1-based) with the latest loss and the samples processed in this run so far.
  void update(int step, double loss, long samples);
  /// Ends the line.
  void finish();

 private:
  std::string label_;
  int total_;
  std::FILE* out_;
  bool terminal_;
  int last_printed_tenth_ = -1;
  std::chrono::steady_clock::time_point start_;
};

/// "1:05" or "1:02:03".
std::string format_duration(double seconds);

}  // namespace nuvec::train
