#pragma once

// Training curves as an SVG image: the training loss against steps and the accuracies against epochs.

#include <string>
#include <utility>
#include <vector>

namespace nuvec::train {

struct Curves {
  std::vector<std::pair<double, double>> loss;            // (step, mean loss over the last steps)
  std::vector<std::pair<double, double>> test_accuracy;   // (epoch, accuracy in [0, 1])
  std::vector<std::pair<double, double>> train_accuracy;  // (epoch, accuracy in [0, 1])
};

/// Writes two side-by-side line charts with axes, ticks and a legend; throws naming the file if it cannot.
void write_curves_svg(const std::string& path, const Curves& curves, const std::string& title);

}  // namespace nuvec::train
