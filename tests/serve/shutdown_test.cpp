// The real `nuvec serve` binary: it answers /health with 200 once its model is loaded, writes one JSON log line per
// request, and on SIGTERM during streams lets them finish (each ends with "data: [DONE]"), refuses new work, and
// exits 0; its --route, --draft-model and --grpc-port flags take effect. Skipped, saying so, when the binary or curl
// is missing.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using test::run_command;
namespace fs = std::filesystem;

/// A loopback port free now (the kernel's choice for port 0, released again).
int free_port() {
  const int sock = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t size = sizeof(address);
  getsockname(sock, reinterpret_cast<sockaddr*>(&address), &size);
  close(sock);
  return ntohs(address.sin_port);
}

/// The sum of a metric's samples (every label) in Prometheus text.
/// The status of GET /health once it answers 200, or after 60 s of asking.
std::string health_after_waiting(const std::string& base) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string status;
  while ((status = run_command("curl -s -o /dev/null -w '%{http_code}' " + base + "/health")) != "200" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  return status;
}

int metric(const std::string& text, const std::string& name) {
  int sum = 0;
  size_t at = 0;
  while ((at = text.find("\n" + name + "{", at)) != std::string::npos) {
    const size_t end = text.find('\n', at + 1);
    const size_t space = text.rfind(' ', end);
    sum += std::stoi(text.substr(space + 1, end - space - 1));
    at = end;
  }
  return sum;
}

TEST(ServeBinary, SigtermDuringStreamsFinishesThemAndExitsZero) {
  const std::string binary = NUVEC_CLI_PATH;
  if (!fs::exists(binary) || std::system("command -v curl >/dev/null") != 0) {
    GTEST_SKIP() << "needs the nuvec binary (" << binary << ") and curl";
  }
  const int port = free_port();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  const fs::path dir = fs::path(::testing::TempDir()) / ("nuvec_serve_shutdown_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string log_file = (dir / "requests.log").string();
  const std::string key_file = (dir / "keys.txt").string();
  std::ofstream(key_file) << "  first-key \n\nsecond-key\n";
  const std::string model = "tiny=" + test::chat_model_dir();
  const std::string port_text = std::to_string(port);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string err = (dir / "stderr.txt").string();
    std::freopen(err.c_str(), "w", stderr);
    execl(binary.c_str(), binary.c_str(), "serve", "--model", model.c_str(), "--port", port_text.c_str(), "--parallel",
          "1", "--log-file", log_file.c_str(), "--api-key-file", key_file.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_EQ(health_after_waiting(base), "200");

  const std::string body = json{{"prompt", "w10"},  {"max_tokens", 200}, {"n", 3},
                                {"temperature", 0}, {"stream", true},    {"logit_bias", {{"2", -100}}}}
                               .dump();
  const std::string body_file = (dir / "body.json").string();
  std::ofstream(body_file) << body;
  // The keys come from --api-key-file, one a line, spaces around them ignored.
  const std::string unauthorized =
      run_command("curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer second' --data-binary @" +
                  body_file + " " + base + "/v1/completions");
  EXPECT_EQ(unauthorized, "401");
  const std::string authorized =
      run_command("curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer first-key' " + base + "/v1/models");
  EXPECT_EQ(authorized, "200");
  // Eight streamed requests of three 200-token choices each, one sequence at a time (--parallel 1): enough queued
  // work that some is still running when the signal comes, even where the polls below are slow (a loaded machine) and
  // decoding fast; with three requests, all of them once ended before a poll saw them.
  constexpr int requests = 8;
  std::vector<std::string> streams(requests);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < streams.size(); ++i) {
    clients.emplace_back([&, i] {
      streams[i] = run_command(
          "curl -sN -H 'Authorization: Bearer second-key' -H 'Content-Type: application/json' --data-binary @" +
          body_file + " " + base + "/v1/completions");
    });
  }
  // Signal once every request is in (running, waiting or done) and some are not done yet.
  int in_flight = 0;
  const auto started = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < started) {
    const std::string metrics = run_command("curl -s " + base + "/metrics");
    in_flight = metric(metrics, "nuvec_requests_running") + metric(metrics, "nuvec_requests_waiting");
    if (in_flight + metric(metrics, "nuvec_request_success_total") == requests) {
      break;
    }
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_GT(in_flight, 0) << "every stream ended before the signal: the drain went untested";
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  for (std::thread& client : clients) {
    client.join();
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the server died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (const std::string& stream : streams) {
    EXPECT_EQ(stream.substr(stream.size() - std::min<size_t>(stream.size(), 14)), "data: [DONE]\n\n") << stream;
  }
  // One JSON line per request: the health and metrics polls, the key checks and the streams.
  std::ifstream log(log_file);
  std::string line;
  int completions = 0;
  while (std::getline(log, line)) {
    const json entry = json::parse(line);
    EXPECT_TRUE(entry.contains("status") && entry.contains("total_seconds")) << line;
    if (entry["path"] == "/v1/completions" && entry["status"] == 200) {
      ++completions;
      EXPECT_EQ(entry["model"], "tiny");
      EXPECT_EQ(entry["prompt_tokens"], 1);
      EXPECT_TRUE(entry["time_to_first_token_seconds"].is_number()) << line;
    }
  }
  EXPECT_EQ(completions, requests);
}

TEST(ServeBinary, RouteDraftModelAndGrpcPortFlags) {
  const std::string binary = NUVEC_CLI_PATH;
  if (!fs::exists(binary) || std::system("command -v curl >/dev/null") != 0) {
    GTEST_SKIP() << "needs the nuvec binary (" << binary << ") and curl";
  }
  const int port = free_port();
  const int grpc_port = free_port();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  const std::string a = "a=" + test::chat_model_dir();
  const std::string b = "b=" + test::chat_model_dir();
  const std::string draft = test::draft_model_dir();
  const std::string port_text = std::to_string(port);
  const std::string grpc_text = std::to_string(grpc_port);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen("/dev/null", "w", stderr);
    execl(binary.c_str(), binary.c_str(), "serve", "--model", a.c_str(), "--model", b.c_str(), "--route", "ab=a:1,b:1",
          "--route-seed", "5", "--draft-model", draft.c_str(), "--num-draft", "2", "--port", port_text.c_str(),
          "--grpc-port", grpc_text.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_EQ(health_after_waiting(base), "200");
  std::set<std::string> served;
  for (int i = 0; i < 12; ++i) {
    const std::string out = run_command("curl -s -H 'Content-Type: application/json' -d '" +
                                        json{{"model", "ab"}, {"prompt", "w10"}, {"max_tokens", 4}}.dump() + "' " +
                                        base + "/v1/completions");
    ASSERT_TRUE(json::accept(out)) << out;
    served.insert(json::parse(out)["model"].get<std::string>());
  }
  EXPECT_EQ(served, std::set<std::string>({"a", "b"}));
  // The first model decodes alone with its draft.
  EXPECT_GT(metric(run_command("curl -s " + base + "/metrics"), "nuvec_generation_tokens_total"), 0);
  EXPECT_NE(run_command("curl -s " + base + "/metrics").find("nuvec_spec_decode_accepted_tokens_total{model=\"a\"}"),
            std::string::npos);
  // The gRPC port answers (a raw TCP connect: the Python client is grpc_server_test's).
  const int sock = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(grpc_port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << "nothing on --grpc-port";
  close(sock);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace nuvec::serve
