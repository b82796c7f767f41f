// The real server on a loopback port, talked to by real clients: curl for raw server-sent events and error
// statuses, OpenAI's JavaScript SDK (skipped, saying so, without node or the npm package), and a raw socket that
// disconnects mid-stream. Expected texts come from the same requests answered in process.

#include "nuvec/serve/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/serve/serve_test_util.h"
#include "tests/support/reference.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using test::run_command;
namespace fs = std::filesystem;

bool have(const std::string& program) { return std::system(("command -v " + program + " >/dev/null").c_str()) == 0; }

std::string write_body(const std::string& name, const std::string& body) {
  const fs::path file = nuvec::test::temp_path("serve_" + name);
  std::ofstream(file) << body;
  return file.string();
}

class HttpServerTest : public ::testing::Test {
 protected:
  HttpServerTest() : local({.parallel = 4, .max_queue = 16}, api_options()), server(local.api, {"127.0.0.1", 0, 16}) {}
  void SetUp() override { port = server.start(); }

  static ApiOptions api_options() {
    ApiOptions options;
    options.api_keys = {"test-key"};
    options.max_body_bytes = 4096;
    return options;
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
  /// curl's body and, on the last line, the status.
  std::string curl(const std::string& path, const std::string& body, const std::string& key = "test-key") {
    return run_command("curl -sN -w '\\n%{http_code}' -H 'Authorization: Bearer " + key +
                       "' -H 'Content-Type: application/json' --data-binary @" +
                       write_body(std::to_string(++files), body) + " " + url(path));
  }
  /// The same request answered in process, without sockets.
  json in_process(const std::string& path, const json& body) {
    HttpRequest request = test::post(path, body);
    request.headers["authorization"] = "Bearer test-key";
    HttpResponse response = local.api.handle(request);
    EXPECT_EQ(response.status, 200) << response.body;
    return test::body_json(response);
  }

  test::TestServer local;
  HttpServer server;
  int port = 0;
  int files = 0;
};

std::pair<std::string, int> split_status(const std::string& out) {
  const size_t nl = out.rfind('\n');
  return {out.substr(0, nl), std::stoi(out.substr(nl + 1))};
}

TEST_F(HttpServerTest, CurlReadsRawServerSentEvents) {
  if (!have("curl")) {
    GTEST_SKIP() << "curl is not installed (scripts/install-deps.sh installs it)";
  }
  const json request = {{"model", "tiny"},
                        {"messages", {{{"role", "user"}, {"content", "w60 w61"}}}},
                        {"max_tokens", 20},
                        {"temperature", 0}};
  const json expected = in_process("/v1/chat/completions", request);
  json streamed = request;
  streamed["stream"] = true;
  const auto [body, status] = split_status(curl("/v1/chat/completions", streamed.dump()));
  ASSERT_EQ(status, 200) << body;
  const auto events = test::sse_events(body);
  EXPECT_EQ(test::assemble(events, 1)[0], expected["choices"][0]["message"]["content"]);
  EXPECT_EQ(events.back()["choices"][0]["finish_reason"], expected["choices"][0]["finish_reason"]);
}

TEST_F(HttpServerTest, CurlGetsErrorStatusesWithOpenAIsBody) {
  if (!have("curl")) {
    GTEST_SKIP() << "curl is not installed (scripts/install-deps.sh installs it)";
  }
  struct Case {
    std::string path, body, key;
    int status;
  };
  const std::vector<Case> cases = {
      {"/v1/completions", "{\"prompt\": ", "test-key", 400},
      {"/v1/completions", json{{"prompt", "w1"}, {"n", "two"}}.dump(), "test-key", 400},
      {"/v1/completions", json{{"prompt", "w1"}, {"model", "nope"}}.dump(), "test-key", 404},
      {"/v1/completions", json{{"prompt", "w1"}}.dump(), "wrong-key", 401},
      {"/v1/completions", json{{"prompt", std::string(5000, 'w')}}.dump(), "test-key", 413},
  };
  for (const Case& c : cases) {
    const auto [body, status] = split_status(curl(c.path, c.body, c.key));
    EXPECT_EQ(status, c.status) << body;
    EXPECT_TRUE(json::parse(body).contains("error")) << body;
  }
  const auto [health, status] = split_status(run_command("curl -s -w '\\n%{http_code}' " + url("/health")));
  EXPECT_EQ(status, 200);
  EXPECT_EQ(json::parse(health)["status"], "ok");
}

TEST_F(HttpServerTest, ConcurrentCurlStreamsEqualOneAtATime) {
  if (!have("curl")) {
    GTEST_SKIP() << "curl is not installed (scripts/install-deps.sh installs it)";
  }
  const std::vector<std::string> prompts = {"w10", "w20 w21", "w30 w31 w32", "w40"};
  auto request = [](const std::string& prompt) {
    return json{
        {"prompt", prompt}, {"max_tokens", 30}, {"temperature", 0}, {"stream", true}, {"logit_bias", {{"2", -100}}}}
        .dump();
  };
  std::vector<std::string> alone;
  for (const std::string& prompt : prompts) {
    alone.push_back(
        test::assemble(test::sse_events(split_status(curl("/v1/completions", request(prompt))).first), 1)[0]);
  }
  std::vector<std::string> bodies(prompts.size());
  std::vector<std::string> files_for(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    files_for[i] = write_body("concurrent" + std::to_string(i), request(prompts[i]));
  }
  std::vector<std::thread> clients;
  for (size_t i = 0; i < prompts.size(); ++i) {
    clients.emplace_back([&, i] {
      bodies[i] = run_command(
          "curl -sN -H 'Authorization: Bearer test-key' -H 'Content-Type: application/json' "
          "--data-binary @" +
          files_for[i] + " " + url("/v1/completions"));
    });
  }
  for (std::thread& client : clients) {
    client.join();
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(test::assemble(test::sse_events(bodies[i]), 1)[0], alone[i]) << prompts[i];
  }
}

/// A raw connection to the server that has sent a long completion request (250 tokens, end of sequence banned).
int send_long_completion(int port, bool stream) {
  const int sock = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(sock, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const std::string body =
      json{
          {"prompt", "w10"}, {"max_tokens", 250}, {"temperature", 0}, {"stream", stream}, {"logit_bias", {{"2", -100}}}}
          .dump();
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer test-key\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  EXPECT_EQ(send(sock, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  return sock;
}

/// The tokens the tiny model generated so far, from /metrics.
int generated_tokens(test::TestServer& server) {
  const std::string metrics = server.api.handle(test::get("/metrics")).body;
  const std::string name = "nuvec_generation_tokens_total{model=\"tiny\"} ";
  const size_t at = metrics.find(name);
  EXPECT_NE(at, std::string::npos) << metrics;
  return at == std::string::npos ? -1 : std::stoi(metrics.substr(at + name.size()));
}

TEST_F(HttpServerTest, ADisconnectBeforeAWholeResponseFreesItsSlot) {
  const int sock = send_long_completion(port, false);
  // Wait until its tokens come, then leave before the 250th.
  const auto started = std::chrono::steady_clock::now() + 10s;
  while (generated_tokens(local) == 0 && std::chrono::steady_clock::now() < started) {
    std::this_thread::sleep_for(1ms);
  }
  close(sock);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!local.registry.idle() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(local.registry.idle()) << "the request whose client left still holds its place";
  EXPECT_LT(generated_tokens(local), 250) << "the request went on after its client left";
  const std::string metrics = local.api.handle(test::get("/metrics")).body;
  EXPECT_NE(metrics.find("nuvec_requests_running{model=\"tiny\"} 0"), std::string::npos) << metrics;
}

TEST_F(HttpServerTest, ADisconnectMidStreamFreesItsSlot) {
  const int sock = send_long_completion(port, true);
  std::string received;
  std::array<char, 512> buffer{};
  while (received.find("\"text\":\"") == std::string::npos) {
    const ssize_t n = recv(sock, buffer.data(), buffer.size(), 0);
    ASSERT_GT(n, 0) << received;
    received.append(buffer.data(), static_cast<size_t>(n));
  }
  close(sock);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!local.registry.idle() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(local.registry.idle()) << "the disconnected stream still holds its place";
  EXPECT_LT(generated_tokens(local), 200) << "the stream went on after its client left";
}

TEST_F(HttpServerTest, OpenAIsJavaScriptSdk) {
  const std::string npm_dir = NUVEC_NPM_DIR;
  if (!have("node") || !fs::exists(fs::path(npm_dir) / "node_modules" / "openai")) {
    GTEST_SKIP() << "node or the npm package openai is missing (scripts/install-deps.sh installs it into " << npm_dir
                 << ")";
  }
  const std::string out = run_command("node " + std::string(TESTS_SERVE_DIR) + "/openai_client.mjs '" + npm_dir + "' " +
                                      url("/v1") + " test-key tiny");
  const json got = json::parse(out);
  const json chat =
      in_process("/v1/chat/completions",
                 {{"messages", {{{"role", "user"}, {"content", "w33 w34"}}}}, {"max_tokens", 12}, {"temperature", 0}});
  EXPECT_EQ(got["chat"]["text"], chat["choices"][0]["message"]["content"]);
  EXPECT_EQ(got["chat"]["finish_reason"], chat["choices"][0]["finish_reason"]);
  EXPECT_EQ(got["chat"]["usage"], chat["usage"]);
  EXPECT_EQ(got["stream"]["text"], chat["choices"][0]["message"]["content"]);
  EXPECT_EQ(got["stream"]["finish_reason"], chat["choices"][0]["finish_reason"]);
  EXPECT_EQ(got["stream"]["usage"], chat["usage"]);
  const json completion =
      in_process("/v1/completions", {{"prompt", "w10 w11"}, {"max_tokens", 12}, {"temperature", 0}});
  EXPECT_EQ(got["completion"]["text"], completion["choices"][0]["text"]);
  EXPECT_EQ(got["tools"]["text"], chat["choices"][0]["message"]["content"]);
  EXPECT_EQ(got["tools"]["finish_reason"], chat["choices"][0]["finish_reason"]);
  EXPECT_EQ(got["bad_tool_choice"]["status"], 400);
  EXPECT_EQ(got["bad_tool_choice"]["param"], "tool_choice.function.name");
  EXPECT_EQ(got["bad_temperature"]["status"], 400);
  EXPECT_EQ(got["bad_temperature"]["param"], "temperature");
  EXPECT_EQ(got["unknown_model"]["status"], 404);
  EXPECT_EQ(got["wrong_key"]["status"], 401);
  EXPECT_EQ(got["models"], json::array({"tiny"}));
  const json embeddings = in_process("/v1/embeddings", {{"input", {"w33 w34", "w10"}}});
  ASSERT_EQ(got["embeddings"]["vectors"].size(), 2U);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got["embeddings"]["vectors"][i].get<std::vector<float>>(),
              embeddings["data"][i]["embedding"].get<std::vector<float>>());
  }
  EXPECT_EQ(got["embeddings"]["usage"], embeddings["usage"]);
}

}  // namespace
}  // namespace nuvec::serve
