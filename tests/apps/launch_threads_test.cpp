// nuvec launch shares this machine's cores among the ranks it starts here: each gets NUVEC_NUM_THREADS,
// OPENBLAS_NUM_THREADS and OMP_NUM_THREADS = cores / local ranks (at least 1), each unless the environment or --env
// sets it (a set NUVEC_NUM_THREADS is the count).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "apps/launch/launch.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::launch {
namespace {

/// What the ranks of `options` print, forwarded with their rank in front, sorted.
std::string launched_output(LaunchOptions options) {
  std::FILE* out = std::tmpfile();
  EXPECT_EQ(run_launch(options, out), 0);
  std::rewind(out);
  std::string text;
  for (int c = std::fgetc(out); c != EOF; c = std::fgetc(out)) {
    text.push_back(static_cast<char>(c));
  }
  std::fclose(out);
  return text;
}

/// Unsets an environment variable for a scope (the ranks on this machine inherit the launcher's environment).
class Unset {
 public:
  explicit Unset(std::string name) : name_(std::move(name)) {
    if (const char* value = std::getenv(name_.c_str())) {
      before_ = value;
      ::unsetenv(name_.c_str());
    }
  }
  Unset(const Unset&) = delete;
  Unset& operator=(const Unset&) = delete;
  ~Unset() {
    if (before_) {
      ::setenv(name_.c_str(), before_->c_str(), 1);
    }
  }

 private:
  std::string name_;
  std::optional<std::string> before_;
};

TEST(LaunchThreads, LocalRanksShareTheCores) {
  const Unset nuvec("NUVEC_NUM_THREADS");
  const Unset openblas("OPENBLAS_NUM_THREADS");
  const Unset omp("OMP_NUM_THREADS");
  LaunchOptions options;
  options.processes = 2;
  options.command = {"/bin/sh", "-c", "echo threads=$NUVEC_NUM_THREADS,$OPENBLAS_NUM_THREADS,$OMP_NUM_THREADS"};
  const std::string each = std::to_string(std::max(1, cpu::available_cores() / 2));
  const std::string counts = "threads=" + each + "," + each + "," + each + "\n";
  std::string text = launched_output(options);
  EXPECT_NE(text.find("[0] " + counts), std::string::npos) << text;
  EXPECT_NE(text.find("[1] " + counts), std::string::npos) << text;

  // A count given for nuvec is every library's; one given for a library is left alone.
  options.env = {"NUVEC_NUM_THREADS=3", "OMP_NUM_THREADS=5"};
  text = launched_output(options);
  EXPECT_NE(text.find("[0] threads=3,3,5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[1] threads=3,3,5\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace nuvec::launch
