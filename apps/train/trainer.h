#pragma once

// `nuvec train`: trains an image classifier on Fashion-MNIST (IDX files) with Adam and a cosine learning-rate
// decay, shows a progress bar, evaluates on the test set after every epoch, and writes to the output folder:
// checkpoint.safetensors (model, optimizer state with its step and learning rate, the peak learning rate and progress,
// after every epoch, so a run resumes on the schedule it was on),
// model.safetensors (the trained weights, PyTorch-style names), curves.svg (loss and accuracy curves).

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "apps/train/plot.h"

namespace nuvec::train {

/// The peak learning rate of a new run that names none.
constexpr double default_learning_rate = 2e-3;

struct TrainOptions {
  std::string model = "cnn";
  int epochs = 3;
  int batch_size = 64;
  std::optional<double> learning_rate;  // the peak rate; unset: 2e-3, or the checkpoint's when resuming
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string output_dir = "runs/fashion-mnist";
  std::optional<std::string> resume;  // a checkpoint.safetensors to continue from
  uint64_t seed = 0;
  int stop_after_epochs = 0;  // end this run after so many epochs (0: run to `epochs`); resume continues it
  int train_limit = 0;        // use only the first n training images (0: all), for quick runs
  int test_limit = 0;
  // Data parallel over nuvec::distributed::init's group (under nuvec launch or mpirun): each rank takes a shard of
  // every batch and the gradients are averaged, so the weights follow one process with the whole batch; rank 0
  // writes the files.
  bool distributed = false;
};

struct TrainResult {
  double test_accuracy = 0.0;
  int epochs_run = 0;
  Curves curves;
};

TrainResult train(const TrainOptions& options, std::FILE* log = stdout);

}  // namespace nuvec::train
