// nuvec train and nuvec gpt on small budgets: they learn, write their files, resume exactly, and refuse bad input
// with clear errors.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "apps/gpt/train_gpt.h"
#include "apps/train/trainer.h"
#include "nuvec/io/io.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

std::string temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("nuvec_apps_test_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

train::TrainOptions small_run(const std::string& out) {
  train::TrainOptions o;
  o.epochs = 1;
  o.batch_size = 64;
  o.train_limit = 1024;
  o.test_limit = 1000;
  o.output_dir = out;
  return o;
}

std::FILE* quiet() {
  static std::FILE* sink = std::fopen("/dev/null", "w");
  return sink;
}

TEST(Train, LearnsAndWritesWeightsCheckpointAndCurves) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  auto out = temp_dir("learn");
  auto result = train::train(small_run(out), quiet());
  // Sixteen steps on 1024 images lift a 10-class model far above chance (10%).
  EXPECT_GT(result.test_accuracy, 0.5);
  auto [weights, metadata] = load_safetensors(out + "/model.safetensors");
  EXPECT_TRUE(weights.contains("conv1.weight"));
  EXPECT_EQ(weights.at("conv1.weight").shape(), (Shape{32, 3, 3, 1}));
  EXPECT_EQ(metadata["model"], "cnn");
  std::ifstream svg(out + "/curves.svg");
  std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("<polyline"), std::string::npos);
}

TEST(Train, ResumingFromACheckpointContinuesExactly) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  auto options = small_run(temp_dir("straight"));
  options.epochs = 2;
  options.train_limit = 256;
  train::train(options, quiet());

  auto interrupted = options;
  interrupted.output_dir = temp_dir("interrupted");
  interrupted.stop_after_epochs = 1;
  train::train(interrupted, quiet());
  auto resumed = options;
  resumed.output_dir = temp_dir("resumed");
  resumed.resume = interrupted.output_dir + "/checkpoint.safetensors";
  auto result = train::train(resumed, quiet());
  EXPECT_EQ(result.epochs_run, 1);
  EXPECT_EQ(result.curves.test_accuracy.size(), 2U);

  auto straight = load_safetensors(options.output_dir + "/model.safetensors").first;
  auto continued = load_safetensors(resumed.output_dir + "/model.safetensors").first;
  ASSERT_EQ(straight.size(), continued.size());
  for (const auto& [name, value] : straight) {
    EXPECT_TRUE(allclose(value, continued.at(name), 1e-5, 1e-6).item<bool>()) << name;
  }
}

TEST(Train, BadInputGivesClearErrors) {
  auto options = small_run(temp_dir("bad"));
  options.data_dir = "/nonexistent";
  EXPECT_NE(test::error_of([&] { train::train(options, quiet()); }).find("dataset-fashion-mnist"), std::string::npos);
  options = small_run(temp_dir("bad"));
  options.model = "resnet";
  if (std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    EXPECT_NE(test::error_of([&] { train::train(options, quiet()); }).find("unknown model 'resnet'"),
              std::string::npos);
  }
  // A corrupt dataset file names the file.
  auto dir = temp_dir("corrupt");
  std::filesystem::create_directories(dir);
  for (const char* name : {"/train-images-idx3-ubyte", "/train-labels-idx1-ubyte", "/t10k-images-idx3-ubyte",
                           "/t10k-labels-idx1-ubyte"}) {
    std::ofstream(dir + name) << "not an idx file";
  }
  options = small_run(temp_dir("bad"));
  options.data_dir = dir;
  EXPECT_NE(test::error_of([&] { train::train(options, quiet()); }).find("train-images-idx3-ubyte"),
            std::string::npos);
}

TEST(Gpt, LearnsBytesAndSamples) {
  if (!std::filesystem::exists("/usr/share/games/fortunes")) {
    GTEST_SKIP() << "fortunes is not installed";
  }
  gpt::GptOptions o;
  o.model = {32, 32, 2, 1, 256};
  o.steps = 60;
  o.batch_size = 16;
  o.sample_bytes = 50;
  o.output_dir = temp_dir("gpt");
  auto result = gpt::train_gpt(o, quiet());
  // Uniform guessing costs ln(256) = 5.55 nats per byte; byte frequencies alone bring it near 3.5.
  EXPECT_LT(result.train_loss, 4.0);
  EXPECT_LT(result.validation_loss, 4.2);
  EXPECT_EQ(result.sample.size(), 50U);
  EXPECT_TRUE(std::filesystem::exists(o.output_dir + "/gpt.safetensors"));
}

}  // namespace
}  // namespace nuvec
