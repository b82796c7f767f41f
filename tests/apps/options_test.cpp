// The command line's option parsing: typed values, switches, and errors that name the option.

#include "apps/cli/options.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nuvec::cli {
namespace {

/// Parses `args` (after a command name) into the options; returns the error message, or "" on success.
std::string parse(const Options& options, std::vector<std::string> args) {
  std::vector<char*> argv;
  std::string program = "nuvec";
  std::string command = "train";
  argv.push_back(program.data());
  argv.push_back(command.data());
  for (auto& arg : args) {
    argv.push_back(arg.data());
  }
  try {
    options.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Options, ReadsTypedValuesAndSwitches) {
  int epochs = 3;
  double lr = 0.0;
  float temperature = 0.0F;
  uint64_t seed = 0;
  std::string model;
  std::optional<std::string> resume;
  bool jsonl = false;
  Options options;
  options.add("--epochs", epochs).add("--lr", lr).add("--temperature", temperature).add("--seed", seed);
  options.add("--model", model).add("--resume", resume).flag("--jsonl", jsonl);
  EXPECT_EQ(parse(options, {"--epochs", "7", "--lr", "1e-3", "--jsonl", "--temperature", "0.5", "--seed",
                            "18446744073709551615", "--model", "mlp", "--resume", "a/b.safetensors"}),
            "");
  EXPECT_EQ(epochs, 7);
  EXPECT_DOUBLE_EQ(lr, 1e-3);
  EXPECT_FLOAT_EQ(temperature, 0.5F);
  EXPECT_EQ(seed, UINT64_MAX);
  EXPECT_EQ(model, "mlp");
  EXPECT_EQ(resume, "a/b.safetensors");
  EXPECT_TRUE(jsonl);
}

TEST(Options, ErrorsNameTheOption) {
  int epochs = 0;
  double lr = 0.0;
  uint64_t seed = 0;
  Options options;
  options.add("--epochs", epochs).add("--lr", lr).add("--seed", seed);
  EXPECT_EQ(parse(options, {"--lr", "abc"}), "--lr expects a number, got 'abc'");
  EXPECT_EQ(parse(options, {"--lr", "0.1x"}), "--lr expects a number, got '0.1x'");
  EXPECT_EQ(parse(options, {"--epochs", "2.5"}), "--epochs expects an integer, got '2.5'");
  EXPECT_EQ(parse(options, {"--epochs", ""}), "--epochs expects an integer, got ''");
  EXPECT_EQ(parse(options, {"--epochs", "99999999999"}), "--epochs expects an integer, got '99999999999'");
  EXPECT_EQ(parse(options, {"--seed", "-1"}), "--seed expects a non-negative integer, got '-1'");
  EXPECT_EQ(parse(options, {"--epochs"}), "option --epochs needs a value");
  EXPECT_EQ(parse(options, {"--epoch", "3"}), "unknown option --epoch");
}

}  // namespace
}  // namespace nuvec::cli
