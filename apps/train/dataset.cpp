#include "apps/train/dataset.h"

#include <filesystem>

#include "nuvec/io/idx.h"

namespace nuvec::train {

namespace {

std::string find_file(const std::string& dir, const std::string& name) {
  for (const auto& candidate : {dir + "/" + name + ".gz", dir + "/" + name}) {
    if (std::filesystem::exists(candidate)) {
      return candidate;
    }
  }
  throw_invalid("[train] " + dir + "/" + name + "(.gz) not found: install Debian's dataset-fashion-mnist "
                "(apt-get install dataset-fashion-mnist) or pass --data <folder>.");
}

}  // namespace

ImageSet load_image_set(const std::string& dir, const std::string& prefix) {
  auto image_file = find_file(dir, prefix + "-images-idx3-ubyte");
  auto label_file = find_file(dir, prefix + "-labels-idx1-ubyte");
  auto images = io::load_idx(image_file);
  auto labels = io::load_idx(label_file);
  if (images.ndim() != 3 || images.dtype() != uint8) {
    throw_invalid("[train] " + image_file + " does not hold uint8 images (N, H, W).");
  }
  if (labels.ndim() != 1 || labels.shape(0) != images.shape(0)) {
    throw_invalid("[train] " + label_file + " holds " + std::to_string(labels.size()) + " labels for " +
                  std::to_string(images.shape(0)) + " images in " + image_file + ".");
  }
  ImageSet set{expand_dims(astype(images, float32) * (1.0F / 255.0F), -1), astype(labels, int32)};
  eval(set.images, set.labels);
  return set;
}

ImageSet batch_of(const ImageSet& set, const array& order, int first, int count) {
  auto rows = slice(order, {first}, {first + count});
  ImageSet batch{take(set.images, rows, 0), take(set.labels, rows, 0)};
  eval(batch.images, batch.labels);
  return batch;
}

}  // namespace nuvec::train
