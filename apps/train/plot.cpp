#include "apps/train/plot.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "nuvec/core/error.h"

namespace nuvec::train {

namespace {

struct Panel {
  double x0, y0, width, height;  // plot area in pixels
  double min_x, max_x, min_y, max_y;

  [[nodiscard]] double px(double x) const { return x0 + (x - min_x) / std::max(max_x - min_x, 1e-12) * width; }
  [[nodiscard]] double py(double y) const { return y0 + height - (y - min_y) / std::max(max_y - min_y, 1e-12) * height; }
};

void axes(std::ostringstream& svg, const Panel& p, const std::string& title, const std::string& x_label,
          bool percent) {
  svg << "<rect x='" << p.x0 << "' y='" << p.y0 << "' width='" << p.width << "' height='" << p.height
      << "' fill='none' stroke='#444'/>\n";
  svg << "<text x='" << p.x0 + p.width / 2 << "' y='" << p.y0 - 10 << "' text-anchor='middle' font-size='15'>"
      << title << "</text>\n";
  svg << "<text x='" << p.x0 + p.width / 2 << "' y='" << p.y0 + p.height + 38
      << "' text-anchor='middle' font-size='12'>" << x_label << "</text>\n";
  for (int i = 0; i <= 4; ++i) {
    double y = p.min_y + (p.max_y - p.min_y) * i / 4;
    double x = p.min_x + (p.max_x - p.min_x) * i / 4;
    svg << "<line x1='" << p.x0 << "' x2='" << p.x0 + p.width << "' y1='" << p.py(y) << "' y2='" << p.py(y)
        << "' stroke='#ddd'/>\n";
    svg << "<text x='" << p.x0 - 6 << "' y='" << p.py(y) + 4 << "' text-anchor='end' font-size='11'>";
    if (percent) {
      svg << std::fixed << std::setprecision(1) << y * 100 << "%";
    } else {
      svg << std::setprecision(3) << y;
    }
    svg << "</text>\n";
    svg << "<text x='" << p.px(x) << "' y='" << p.y0 + p.height + 18 << "' text-anchor='middle' font-size='11'>"
        << std::defaultfloat << std::setprecision(4) << x << "</text>\n";
  }
}

void line(std::ostringstream& svg, const Panel& p, const std::vector<std::pair<double, double>>& points,
          const std::string& color) {
  if (points.empty()) {
    return;
  }
  svg << "<polyline fill='none' stroke='" << color << "' stroke-width='2' points='";
  for (const auto& [x, y] : points) {
    svg << p.px(x) << "," << p.py(y) << " ";
  }
  svg << "'/>\n";
  for (const auto& [x, y] : points) {
    if (points.size() <= 50) {
      svg << "<circle cx='" << p.px(x) << "' cy='" << p.py(y) << "' r='3' fill='" << color << "'/>\n";
    }
  }
}

std::pair<double, double> range(const std::vector<std::pair<double, double>>& points, bool of_x) {
  double lo = INFINITY;
  double hi = -INFINITY;
  for (const auto& [x, y] : points) {
    double v = of_x ? x : y;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (!(lo <= hi)) {
    return {0.0, 1.0};
  }
  return lo == hi ? std::make_pair(lo - 0.5, hi + 0.5) : std::make_pair(lo, hi);
}

}  // namespace

void write_curves_svg(const std::string& path, const Curves& curves, const std::string& title) {
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='1000' height='420' font-family='sans-serif'>\n"
      << "<rect width='1000' height='420' fill='white'/>\n"
      << "<text x='500' y='24' text-anchor='middle' font-size='17'>" << title << "</text>\n";
  auto [lx0, lx1] = range(curves.loss, true);
  auto [ly0, ly1] = range(curves.loss, false);
  Panel loss{70, 70, 380, 280, lx0, lx1, 0.0, ly1};
  (void)ly0;
  axes(svg, loss, "training loss", "step", false);
  line(svg, loss, curves.loss, "#1f77b4");

  auto all = curves.test_accuracy;
  all.insert(all.end(), curves.train_accuracy.begin(), curves.train_accuracy.end());
  auto [ax0, ax1] = range(all, true);
  auto [ay0, ay1] = range(all, false);
  double pad = std::max((ay1 - ay0) * 0.1, 0.005);
  Panel accuracy{570, 70, 380, 280, ax0, ax1, std::max(0.0, ay0 - pad), std::min(1.0, ay1 + pad)};
  axes(svg, accuracy, "accuracy", "epoch", true);
  line(svg, accuracy, curves.train_accuracy, "#ff7f0e");
  line(svg, accuracy, curves.test_accuracy, "#2ca02c");
  svg << "<text x='590' y='95' font-size='12' fill='#2ca02c'>test</text>\n"
      << "<text x='590' y='112' font-size='12' fill='#ff7f0e'>train</text>\n</svg>\n";

  std::ofstream out(path);
  out << svg.str();
  if (!out) {
    throw_invalid("[train] cannot write " + path + ".");
  }
}

}  // namespace nuvec::train
