// The gRPC service on a loopback port, talked to by Python's grpcio (tests/serve/grpc_client.py; skipped, saying so,
// without it): health, the model list, tokenize, and streamed Generate for a prompt and for chat messages give what
// the HTTP API gives for the same requests; errors come back as gRPC status codes; a cancelled stream frees its slot.

#include "nuvec/serve/grpc_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/lm/model_test_util.h"
#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(GrpcServer, PythonClientGetsWhatTheHttpApiGives) {
  if (test::run_command("/usr/bin/python3 -c 'import grpc, google.protobuf' 2>&1 && echo ok") != "ok\n" ||
      test::run_command("command -v protoc").empty()) {
    GTEST_SKIP() << "needs python3-grpcio, python3-protobuf and protoc (scripts/install-deps.sh installs them)";
  }
  ApiOptions options;
  options.api_keys = {"grpc-key"};
  test::TestServer local({}, options);
  GrpcServer server(local.api, "127.0.0.1", 0);
  const int port = server.start();
  const std::string out = test::run_command("/usr/bin/python3 " + std::string(TESTS_SERVE_DIR) + "/grpc_client.py " +
                                            std::string(NUVEC_SERVE_PROTO_DIR) + " 127.0.0.1:" + std::to_string(port) +
                                            " grpc-key " + lm::test::fresh_dir("grpc_client") + " 2>&1");
  ASSERT_TRUE(json::accept(out)) << out;
  const json got = json::parse(out);

  const auto http = [&](const std::string& path, const json& body) {
    HttpRequest request = test::post(path, body);
    request.headers["authorization"] = "Bearer grpc-key";
    HttpResponse response = local.api.handle(request);
    EXPECT_EQ(response.status, 200) << response.body;
    return test::body_json(response);
  };
  EXPECT_EQ(got["health"], "ok");
  EXPECT_EQ(got["models"], json::array({"tiny"}));
  EXPECT_EQ(got["tokens"], http("/tokenize", {{"prompt", "w10 w11"}})["tokens"]);
  const json completion =
      http("/v1/completions", {{"prompt", "w10 w11"}, {"max_tokens", 12}, {"temperature", 0}, {"logprobs", 0}});
  EXPECT_EQ(got["completion"]["text"], completion["choices"][0]["text"]);
  EXPECT_EQ(got["completion"]["tokens"], completion["choices"][0]["logprobs"]["tokens"]);
  EXPECT_EQ(got["completion"]["finish_reason"], completion["choices"][0]["finish_reason"]);
  EXPECT_GT(got["completion"]["responses"].get<int>(), 1) << "the tokens did not stream";
  const json chat =
      http("/v1/chat/completions",
           {{"messages", {{{"role", "user"}, {"content", "w33 w34"}}}}, {"max_tokens", 12}, {"temperature", 0}});
  EXPECT_EQ(got["chat"]["text"], chat["choices"][0]["message"]["content"]);
  EXPECT_EQ(got["chat"]["tokens"].size(), chat["usage"]["completion_tokens"].get<size_t>());
  EXPECT_EQ(got["chat"]["finish_reason"], chat["choices"][0]["finish_reason"]);
  EXPECT_EQ(got["unknown_model"], "NOT_FOUND");
  EXPECT_EQ(got["bad_temperature"], "INVALID_ARGUMENT");
  EXPECT_EQ(got["wrong_key"], "UNAUTHENTICATED");

  // The cancelled stream leaves the batch.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!local.registry.idle() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(local.registry.idle()) << "the cancelled call still holds its place";
  const std::string metrics = local.api.handle(test::get("/metrics")).body;
  const std::string generated = "nuvec_generation_tokens_total{model=\"tiny\"} ";
  const size_t at = metrics.find(generated);
  ASSERT_NE(at, std::string::npos);
  // 12 + 12 tokens answered, the cancelled call's few, and the in-process answers' 12 + 12.
  EXPECT_LT(std::stoi(metrics.substr(at + generated.size())), 48 + 200) << "the cancelled call went on";
}

}  // namespace
}  // namespace nuvec::serve
