#pragma once

// Fashion-MNIST (or MNIST) from IDX files: images scaled to [0, 1] as (N, 28, 28, 1) float32, labels int32.

#include <string>

#include "nuvec/nuvec.h"

namespace nuvec::train {

struct ImageSet {
  array images;  // (N, H, W, 1) float32
  array labels;  // (N,) int32
  [[nodiscard]] int size() const { return images.shape(0); }
};

/// Reads `<dir>/<prefix>-images-idx3-ubyte[.gz]` and `<dir>/<prefix>-labels-idx1-ubyte[.gz]` (prefix "train" or
/// "t10k"); errors name the file and what is wrong (missing, corrupt, image and label counts that differ).
ImageSet load_image_set(const std::string& dir, const std::string& prefix);

/// The rows `order[first, first + count)` of a set, evaluated (a shuffled mini-batch).
ImageSet batch_of(const ImageSet& set, const array& order, int first, int count);

}  // namespace nuvec::train
