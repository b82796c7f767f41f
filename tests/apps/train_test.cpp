// nuvec train and nuvec gpt on small budgets: they learn, write their files, resume exactly, and refuse bad input
// with clear errors.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "apps/generate/commands.h"
#include "apps/gpt/train_gpt.h"
#include "apps/train/trainer.h"
#include "nuvec/io/io.h"
#include "nuvec/lm/load_model.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

std::string temp_dir(const std::string& name) {
  const std::filesystem::path dir = test::temp_path("apps_test_" + name);
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

/// What `write` prints to a stream, as a string.
std::string capture(const std::function<void(std::FILE*)>& write) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buffer, &size);
  write(f);
  std::fclose(f);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
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

TEST(Train, ResumingKeepsTheSavedLearningRateAndSaysWhenLrDiffers) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  auto options = small_run(temp_dir("lr_straight"));
  options.epochs = 2;
  options.train_limit = 256;
  options.learning_rate = 4e-3;
  train::train(options, quiet());

  auto interrupted = options;
  interrupted.output_dir = temp_dir("lr_interrupted");
  interrupted.stop_after_epochs = 1;
  train::train(interrupted, quiet());
  const std::string checkpoint = interrupted.output_dir + "/checkpoint.safetensors";
  auto [arrays, metadata] = load_safetensors(checkpoint);
  EXPECT_EQ(metadata["learning_rate"], "0.004");
  ASSERT_TRUE(arrays.contains("optimizer.step"));
  EXPECT_EQ(arrays.at("optimizer.step").item<uint64_t>(), 4U);  // 256 images in steps of 64
  // The rate of the fourth step: cosine decay from 4e-3 to 2e-4 over 8 steps, at step 3.
  const double fourth = 2e-4 + (4e-3 - 2e-4) * 0.5 * (1 + std::cos(M_PI * 3 / 8));
  EXPECT_NEAR(arrays.at("optimizer.learning_rate").item<double>(), fourth, 1e-9);

  // Without --lr the run continues on the saved schedule, exactly as the uninterrupted run went.
  auto resumed = options;
  resumed.output_dir = temp_dir("lr_resumed");
  resumed.resume = checkpoint;
  resumed.learning_rate.reset();
  auto log = capture([&](std::FILE* f) { train::train(resumed, f); });
  EXPECT_NE(log.find("resuming " + checkpoint + " after epoch 1 of 2 (step 4, learning rate 0.0021)"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("differs"), std::string::npos) << log;
  auto straight = load_safetensors(options.output_dir + "/model.safetensors").first;
  auto continued = load_safetensors(resumed.output_dir + "/model.safetensors").first;
  for (const auto& [name, value] : straight) {
    EXPECT_TRUE(allclose(value, continued.at(name), 1e-5, 1e-6).item<bool>()) << name;
  }

  // A different --lr is used from the saved step on, and the log says so.
  auto changed = resumed;
  changed.output_dir = temp_dir("lr_changed");
  changed.learning_rate = 1e-3;
  log = capture([&](std::FILE* f) { train::train(changed, f); });
  EXPECT_NE(log.find("--lr 0.001 differs from the checkpoint's peak learning rate 0.004: the cosine decay continues "
                     "from step 4 with peak 0.001 (leave out --lr to keep 0.004)\n"),
            std::string::npos)
      << log;
  EXPECT_EQ(load_safetensors(changed.output_dir + "/checkpoint.safetensors").second["learning_rate"], "0.001");
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
  for (const char* name :
       {"/train-images-idx3-ubyte", "/train-labels-idx1-ubyte", "/t10k-images-idx3-ubyte", "/t10k-labels-idx1-ubyte"}) {
    std::ofstream(dir + name) << "not an idx file";
  }
  options = small_run(temp_dir("bad"));
  options.data_dir = dir;
  EXPECT_NE(test::error_of([&] { train::train(options, quiet()); }).find("train-images-idx3-ubyte"), std::string::npos);
}

TEST(Gpt, LearnsAndSavesAModelFolderTheLmCommandsRun) {
  if (!std::filesystem::exists("/usr/share/games/fortunes")) {
    GTEST_SKIP() << "fortunes is not installed";
  }
  gpt::GptOptions o;
  o.model = {32, 32, 2, 1};
  o.steps = 60;
  o.batch_size = 16;
  o.sample_tokens = 20;
  o.output_dir = temp_dir("gpt");
  auto result = gpt::train_gpt(o, quiet());
  // Uniform guessing costs ln(259) = 5.56 nats per token; byte frequencies and the chat markup bring it near 3.
  EXPECT_LT(result.train_loss, 4.0);
  EXPECT_LT(result.validation_loss, 4.2);
  for (const char* file :
       {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    EXPECT_TRUE(std::filesystem::exists(o.output_dir + "/" + file)) << file;
  }

  // The folder is a model like any other: nuvec generate --json reads it and answers through its chat template.
  lm_cli::GenerateCommandOptions g;
  g.model = o.output_dir;
  g.prompt = "Tell me a fortune.";
  g.chat = true;
  g.max_tokens = 12;
  g.json = true;
  auto out = capture([&](std::FILE* f) { lm_cli::run_generate(g, f, quiet()); });
  auto j = nlohmann::json::parse(out);
  auto loaded = lm::load_model(o.output_dir);
  EXPECT_EQ(j["prompt_ids"].get<std::vector<int32_t>>(),
            loaded.tokenizer.encode("<|im_start|>user\nTell me a fortune.<|im_end|>\n<|im_start|>assistant\n", false));
  auto generated = j["generated_ids"].get<std::vector<int32_t>>();
  ASSERT_FALSE(generated.empty());
  EXPECT_LE(generated.size(), 12U);
  EXPECT_EQ(j["logprobs"].size(), generated.size());
  EXPECT_EQ(j["top_logprobs"][0].size(), 5U);
  // Greedy by default: each token is the most probable one, so its log-probability heads the top 5.
  for (size_t i = 0; i < generated.size(); ++i) {
    EXPECT_EQ(j["top_logprobs"][i][0]["id"].get<int32_t>(), generated[i]);
    EXPECT_FLOAT_EQ(j["top_logprobs"][i][0]["logprob"].get<float>(), j["logprobs"][i].get<float>());
  }

  lm_cli::BenchCommandOptions b;
  b.model = o.output_dir;
  b.prompt_tokens = 16;
  b.generation_tokens = 4;
  b.repetitions = 1;
  auto table = capture([&](std::FILE* f) { lm_cli::run_bench(b, f); });
  EXPECT_NE(table.find("| llama "), std::string::npos) << table;
  EXPECT_NE(table.find("| pp16 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| tg4 |"), std::string::npos) << table;
}

TEST(Gpt, TheCompiledStepTrainsAsTheEagerStepDoes) {
  if (!std::filesystem::exists("/usr/share/games/fortunes")) {
    GTEST_SKIP() << "fortunes is not installed";
  }
  gpt::GptOptions o;
  o.model = {16, 32, 2, 1};
  o.steps = 100;
  o.batch_size = 4;
  o.sample_tokens = 1;
  o.eager = true;
  const auto eager_dir = temp_dir("gpt_eager");
  const auto compiled_dir = temp_dir("gpt_compiled");
  o.output_dir = eager_dir;
  auto eager = gpt::train_gpt(o, quiet());
  o.eager = false;
  o.output_dir = compiled_dir;
  auto compiled = gpt::train_gpt(o, quiet());
  // 100 steps of forward, backward, clipping and AdamW with its warm-up and cosine schedule, from the same seed.
  auto a = load_safetensors(eager_dir + "/model.safetensors");
  auto b = load_safetensors(compiled_dir + "/model.safetensors");
  ASSERT_EQ(a.first.size(), b.first.size());
  float worst = 0.0F;
  for (const auto& [name, value] : a.first) {
    worst = std::max(worst, max(abs(value - b.first.at(name))).item<float>());
  }
  std::printf("largest weight difference after 100 steps, eager against compiled: %.3g\n", static_cast<double>(worst));
  EXPECT_LE(worst, 1e-5F);
  EXPECT_NEAR(eager.train_loss, compiled.train_loss, 1e-4);
  EXPECT_GT(compiled.step_seconds, 0.0);
}

TEST(LmCommands, ChatAnswersEachLineAndRefusesBadInput) {
  if (!std::filesystem::exists("/usr/share/games/fortunes")) {
    GTEST_SKIP() << "fortunes is not installed";
  }
  gpt::GptOptions o;
  o.model = {16, 16, 2, 1};
  o.steps = 2;
  o.batch_size = 2;
  o.sample_tokens = 1;
  o.output_dir = temp_dir("gpt_chat");
  gpt::train_gpt(o, quiet());
  lm_cli::ChatCommandOptions c;
  c.model = o.output_dir;
  c.max_tokens = 3;
  std::string script = "Hello\n/reset\nTell me a fortune.\n/exit\nnever read\n";
  std::FILE* in = fmemopen(script.data(), script.size(), "r");
  auto out = capture([&](std::FILE* f) { lm_cli::run_chat(c, in, f); });
  // Two answers, each ending its line (the model is untrained, so their text is unknown), and nothing read after
  // /exit.
  EXPECT_GE(std::count(out.begin(), out.end(), '\n'), 2) << out;
  EXPECT_EQ(std::ftell(in), static_cast<long>(script.find("never")));
  std::fclose(in);

  lm_cli::GenerateCommandOptions g;
  g.model = o.output_dir;
  g.prompt_ids = "1,2,x";
  EXPECT_NE(test::error_of([&] { lm_cli::run_generate(g, quiet(), quiet()); }).find("got 'x'"), std::string::npos);
  g.prompt_ids = "1,99999";
  EXPECT_NE(test::error_of([&] { lm_cli::run_generate(g, quiet(), quiet()); }).find("99999"), std::string::npos);
  g.prompt_ids.reset();
  EXPECT_NE(test::error_of([&] { lm_cli::run_generate(g, quiet(), quiet()); }).find("--prompt"), std::string::npos);
  g.model = o.output_dir + "/missing";
  g.prompt = "x";
  EXPECT_NE(test::error_of([&] { lm_cli::run_generate(g, quiet(), quiet()); }).find("no model at"), std::string::npos);
}

}  // namespace
}  // namespace nuvec
