// The command line's option parsing: typed values, switches, and errors that name the option, for every option of
// every subcommand; and the nuvec program itself, which prefixes the subcommand ("nuvec train: --lr expects a
// number, got 'abc'") and exits with status 1.

#include "apps/cli/options.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "apps/cli/commands.h"
#include "nuvec/core/device.h"
#include "tests/support/reference.h"

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
  EXPECT_EQ(parse(options, {"--epochs"}), "--epochs expects an integer, got nothing");
  EXPECT_EQ(parse(options, {"--epoch", "3"}), "unknown option --epoch");
}

TEST(Options, EveryOptionOfEverySubcommandNamesItselfInItsErrors) {
  train::TrainOptions train;
  gpt::GptOptions gpt;
  tokenize::TokenizeOptions tokenize;
  tokenize::DetokenizeOptions detokenize;
  tokenize::ChatTemplateCommandOptions chat_template;
  lm_cli::GenerateCommandOptions generate;
  lm_cli::ChatCommandOptions chat;
  lm_cli::BenchCommandOptions bench;
  launch::LaunchOptions launch;
  const std::vector<std::pair<std::string, Options>> commands{
      {"train", train_options(train)},
      {"gpt", gpt_options(gpt)},
      {"tokenize", tokenize_options(tokenize)},
      {"detokenize", detokenize_options(detokenize)},
      {"chat-template", chat_template_options(chat_template)},
      {"generate", generate_options(generate)},
      {"chat", chat_options(chat)},
      {"bench", bench_options(bench)},
      {"launch", launch_options(launch)},
  };
  int numeric = 0;
  for (const auto& [command, options] : commands) {
    SCOPED_TRACE(command);
    for (const auto& [name, expects] : options.expected_values()) {
      EXPECT_EQ(parse(options, {name}), name + " expects " + expects + ", got nothing");
      if (expects != "a value") {
        ++numeric;
        EXPECT_EQ(parse(options, {name, "abc"}), name + " expects " + expects + ", got 'abc'");
        EXPECT_EQ(parse(options, {name, "1e999"}), name + " expects " + expects + ", got '1e999'");
      }
    }
    EXPECT_EQ(parse(options, {"--no-such-option"}), "unknown option --no-such-option");
  }
  EXPECT_EQ(train_options(train).expected_values().at("--lr"), "a number");
  EXPECT_GE(numeric, 30) << "the tables lost their numeric options";
}

/// Runs the nuvec program with `args`; its exit status and what it wrote to standard error.
std::pair<int, std::string> run_nuvec(const std::string& args) {
  const std::string err = test::temp_path("options_test.err");
  const int status = std::system((std::string(NUVEC_CLI_PATH).append(" ") + args + " >/dev/null 2>" + err).c_str());
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(err);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

TEST(Options, TheProgramPrefixesTheSubcommand) {
  EXPECT_EQ(run_nuvec("train --lr abc"), std::pair(1, std::string("nuvec train: --lr expects a number, got 'abc'\n")));
  EXPECT_EQ(run_nuvec("gpt --steps 1.5"),
            std::pair(1, std::string("nuvec gpt: --steps expects an integer, got '1.5'\n")));
  EXPECT_EQ(run_nuvec("bench --model m -r"),
            std::pair(1, std::string("nuvec bench: -r expects an integer, got nothing\n")));
  EXPECT_EQ(run_nuvec("generate --top-p x"),
            std::pair(1, std::string("nuvec generate: --top-p expects a number, got 'x'\n")));
  EXPECT_EQ(run_nuvec("serve --model m --port http"),
            std::pair(1, std::string("nuvec serve: --port expects an integer, got 'http'\n")));
  EXPECT_EQ(run_nuvec("serve --model"),
            std::pair(1, std::string("nuvec serve: --model expects a value, got nothing\n")));
  EXPECT_EQ(run_nuvec("launch -n two -- true"),
            std::pair(1, std::string("nuvec launch: -n expects an integer, got 'two'\n")));
  EXPECT_EQ(run_nuvec("launch -n 2"),
            std::pair(1, std::string("nuvec launch: the program to run goes after --: nuvec launch -n 2 -- PROGRAM "
                                     "ARGS\n")));
  EXPECT_EQ(run_nuvec("tokenize --tokenzer t"),
            std::pair(1, std::string("nuvec tokenize: unknown option --tokenzer\n")));
}

TEST(Options, LaunchNamesABadEnvironmentOrHostFile) {
  EXPECT_EQ(run_nuvec("launch -n 1 --env 1X=a -- true"),
            std::pair(1, std::string("nuvec launch: --env expects NAME=VALUE with a NAME of letters, digits and _; "
                                     "got '1X=a'\n")));
  EXPECT_EQ(run_nuvec("launch -n 1 --env 'A;B=c' -- true"),
            std::pair(1, std::string("nuvec launch: --env expects NAME=VALUE with a NAME of letters, digits and _; "
                                     "got 'A;B=c'\n")));
  const std::string missing = test::temp_path("options_test_no_hosts.json");
  EXPECT_EQ(run_nuvec("launch --hostfile " + missing + " -- true"),
            std::pair(1, "nuvec launch: cannot read the host file " + missing + ": No such file or directory\n"));
  const std::string hosts = test::temp_path("options_test_hosts.json");
  std::ofstream(hosts) << R"([["10.0.0.1:5000"], {"ip": "10.0.0.2"}])";
  EXPECT_EQ(
      run_nuvec("launch --hostfile " + hosts + " -- true"),
      std::pair(1, "nuvec launch: the host file " + hosts +
                       R"(: entry 1 is neither "ip:port" (or a list of them) nor {"ssh": host, "ips": [ip, ...]}; )"
                       R"(got {"ip":"10.0.0.2"})"
                       "\n"));
  std::filesystem::remove(hosts);
}

TEST(Options, DeviceChoosesWhereACommandComputes) {
  EXPECT_EQ(run_nuvec("generate --device tpu --model m"),
            std::pair(1, std::string("nuvec generate: --device tpu: expected cpu or gpu\n")));
  EXPECT_EQ(run_nuvec("bench --model m --device"),
            std::pair(1, std::string("nuvec bench: --device expects a value, got nothing\n")));
  // The option leaves the command's own options to their parser.
  EXPECT_EQ(run_nuvec("train --device cpu --lr abc"),
            std::pair(1, std::string("nuvec train: --lr expects a number, got 'abc'\n")));
  if (!is_available(Device::gpu)) {
    auto [status, message] = run_nuvec("generate --device gpu --model m");
    EXPECT_EQ(status, 1);
    EXPECT_NE(message.find("no GPU is usable"), std::string::npos) << message;
  }
}

TEST(Options, MatmulPrecisionIsOneOfPyTorchsNames) {
  EXPECT_EQ(run_nuvec("bench --model m --matmul-precision fast"),
            std::pair(1, std::string("nuvec bench: --matmul-precision fast: expected highest, high or medium\n")));
  EXPECT_EQ(run_nuvec("generate --matmul-precision"),
            std::pair(1, std::string("nuvec generate: --matmul-precision expects a value, got nothing\n")));
  // Taken out before the command's own parser sees the arguments.
  EXPECT_EQ(run_nuvec("train --matmul-precision medium --lr abc"),
            std::pair(1, std::string("nuvec train: --lr expects a number, got 'abc'\n")));
}

TEST(Options, HelpAnywhereAmongACommandsOptionsPrintsTheUsage) {
  for (const char* args : {"--help", "help", "train --help", "gpt -h", "serve --model m --help", "launch -n 2 -h"}) {
    EXPECT_EQ(run_nuvec(args), std::pair(0, std::string())) << args;
  }
  // After launch's --, -h and --help belong to the program, which runs (and fails here).
  EXPECT_NE(run_nuvec("launch -n 1 -- false --help").first, 0);
}

}  // namespace
}  // namespace nuvec::cli
