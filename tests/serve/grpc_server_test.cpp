// The gRPC service on a loopback port, talked to by Python's grpcio (tests/serve/grpc_client.py; skipped, saying so,
// without it): health (nuvec's and grpc.health.v1), the model list, tokenize, and streamed Generate for a prompt and
// for chat messages give what the HTTP API gives for the same requests, with several choices, log-probabilities,
// response formats and tools; errors come back as gRPC status codes; a cancelled stream frees its slot; with a
// certificate the service speaks TLS only.

#include "nuvec/serve/grpc_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <tuple>

#include "tests/lm/model_test_util.h"
#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

bool has_python_grpc() {
  return test::run_command("/usr/bin/python3 -c 'import grpc, google.protobuf' 2>&1 && echo ok") == "ok\n" &&
         !test::run_command("command -v protoc").empty();
}

/// What grpc_client.py's `suite` got from the service on `port`, as JSON.
json run_client(const std::string& suite, int port, const std::string& key, const std::string& extra = "") {
  const std::string out = test::run_command(
      "/usr/bin/python3 " + std::string(TESTS_SERVE_DIR) + "/grpc_client.py " + suite + " " +
      std::string(NUVEC_SERVE_PROTO_DIR) + " 127.0.0.1:" + std::to_string(port) + " " + key + " " +
      lm::test::fresh_dir("grpc_client_" + suite) + " " + extra + " 2>&1");
  EXPECT_TRUE(json::accept(out)) << out;
  return json::accept(out) ? json::parse(out) : json::object();
}

/// The answer of the in-process HTTP API to a POST of `body` to `path`.
json http_answer(Api& api, const std::string& path, const json& body, const std::string& key = "") {
  HttpRequest request = test::post(path, body);
  if (!key.empty()) {
    request.headers["authorization"] = "Bearer " + key;
  }
  HttpResponse response = api.handle(request);
  EXPECT_EQ(response.status, 200) << response.body;
  return test::body_json(response);
}

TEST(GrpcServer, PythonClientGetsWhatTheHttpApiGives) {
  if (!has_python_grpc()) {
    GTEST_SKIP() << "needs python3-grpcio, python3-protobuf and protoc (scripts/install-deps.sh installs them)";
  }
  ApiOptions options;
  options.api_keys = {"grpc-key"};
  test::TestServer local({}, options);
  GrpcServer server(local.api, "127.0.0.1", 0);
  const json got = run_client("tiny", server.start(), "grpc-key");

  const auto http = [&](const std::string& path, const json& body) {
    return http_answer(local.api, path, body, "grpc-key");
  };
  EXPECT_EQ(got["health"], "ok");
  EXPECT_EQ(got["health_v1"], json::array({1, 1})) << "SERVING";
  EXPECT_EQ(got["health_v1_unknown"], "NOT_FOUND");
  EXPECT_EQ(got["health_v1_watch"], 1);
  EXPECT_EQ(got["models"], json::array({"tiny"}));
  EXPECT_EQ(got["tokens"], http("/tokenize", {{"prompt", "w10 w11"}})["tokens"]);
  const json completion =
      http("/v1/completions", {{"prompt", "w10 w11"}, {"max_tokens", 12}, {"temperature", 0}, {"logprobs", 0}});
  EXPECT_EQ(got["completion"][0]["text"], completion["choices"][0]["text"]);
  EXPECT_EQ(got["completion"][0]["tokens"], completion["choices"][0]["logprobs"]["tokens"]);
  EXPECT_EQ(got["completion"][0]["finish_reason"], completion["choices"][0]["finish_reason"]);
  EXPECT_GT(got["completion"][0]["responses"].get<int>(), 1) << "the tokens did not stream";
  const json chat =
      http("/v1/chat/completions",
           {{"messages", {{{"role", "user"}, {"content", "w33 w34"}}}}, {"max_tokens", 12}, {"temperature", 0}});
  EXPECT_EQ(got["chat"][0]["text"], chat["choices"][0]["message"]["content"]);
  EXPECT_EQ(got["chat"][0]["tokens"].size(), chat["usage"]["completion_tokens"].get<size_t>());
  EXPECT_EQ(got["chat"][0]["finish_reason"], chat["choices"][0]["finish_reason"]);

  // Log-probabilities, as the HTTP API gives them: the completions' form and chat's.
  const json completion_logprobs =
      http("/v1/completions", {{"prompt", "w10 w11"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 3}});
  const json& expected = completion_logprobs["choices"][0]["logprobs"];
  const json& streamed = got["completion_logprobs"][0]["logprobs"];
  ASSERT_EQ(streamed.size(), expected["tokens"].size());
  for (size_t i = 0; i < streamed.size(); ++i) {
    EXPECT_EQ(streamed[i]["token"], expected["tokens"][i]);
    EXPECT_NEAR(streamed[i]["logprob"].get<double>(), expected["token_logprobs"][i].get<double>(), 1e-5);
    ASSERT_EQ(streamed[i]["top"].size(), 3U);
    double previous = 0;
    for (const json& top : streamed[i]["top"]) {
      EXPECT_NEAR(top["logprob"].get<double>(), expected["top_logprobs"][i][top["token"].get<std::string>()], 1e-5);
      EXPECT_LE(top["logprob"].get<double>(), previous) << "the alternatives are not likeliest first";
      previous = top["logprob"].get<double>();
    }
  }
  const json chat_logprobs = http("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "w33 w34"}}}},
                                                            {"max_tokens", 6},
                                                            {"temperature", 0},
                                                            {"logprobs", true},
                                                            {"top_logprobs", 2}});
  const json& chat_expected = chat_logprobs["choices"][0]["logprobs"]["content"];
  const json& chat_streamed = got["chat_logprobs"][0]["logprobs"];
  ASSERT_EQ(chat_streamed.size(), chat_expected.size());
  for (size_t i = 0; i < chat_streamed.size(); ++i) {
    EXPECT_EQ(chat_streamed[i]["token"], chat_expected[i]["token"]);
    EXPECT_EQ(chat_streamed[i]["bytes"], chat_expected[i]["bytes"]);
    EXPECT_NEAR(chat_streamed[i]["logprob"].get<double>(), chat_expected[i]["logprob"].get<double>(), 1e-5);
    EXPECT_EQ(chat_streamed[i]["top"].size(), 2U);
  }
  EXPECT_TRUE(got["completion"][0]["logprobs"].empty()) << "log-probabilities that were not asked for";

  // Three sampled choices, each streamed under its index, equal to the HTTP API's for the same seed.
  const json sampled = http("/v1/completions", {{"prompt", "w10"}, {"max_tokens", 8}, {"temperature", 1}, {"seed", 7}, {"n", 3}});
  ASSERT_EQ(got["sampled_n"].size(), 3U);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got["sampled_n"][i]["text"], sampled["choices"][i]["text"]) << "choice " << i;
    EXPECT_EQ(got["sampled_n"][i]["finish_reason"], sampled["choices"][i]["finish_reason"]);
  }

  EXPECT_EQ(got["unknown_model"], "NOT_FOUND");
  EXPECT_EQ(got["tools_without_messages"], "INVALID_ARGUMENT");
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

// Response formats and tools through gRPC on the JSON model: the same constrained answers as the HTTP API's.
TEST(GrpcServer, ResponseFormatsAndToolsMatchTheHttpApi) {
  if (!has_python_grpc()) {
    GTEST_SKIP() << "needs python3-grpcio, python3-protobuf and protoc (scripts/install-deps.sh installs them)";
  }
  test::JsonServer local;
  GrpcServer server(local.api, "127.0.0.1", 0);
  const json got = run_client("json", server.start(), "none");

  const json city = json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}},
                                    "required": ["city"], "additionalProperties": false})");
  const json tools = {{{"type", "function"},
                       {"function",
                        {{"name", "get_weather"}, {"description", "The weather in a city."}, {"parameters", city}}}}};
  const json user = {{{"role", "user"}, {"content", "Call a tool."}}};
  const json bias = {{"2", 3}, {"93", 4}};
  const auto chat = [&](json fields, int seed) {
    fields.update({{"messages", user}, {"temperature", 1}, {"seed", seed}, {"max_tokens", 2000}, {"logit_bias", bias}});
    return http_answer(local.api, "/v1/chat/completions", fields)["choices"][0];
  };
  for (const auto& [name, choice, seed] : {std::tuple{"forced_call", json(json{{"type", "function"}, {"function", {{"name", "get_weather"}}}}), 5},
                                           std::tuple{"required_call", json("required"), 6}}) {
    const json expected = chat({{"tools", tools}, {"tool_choice", choice}}, seed);
    const json& streamed = got[name][0];
    ASSERT_EQ(streamed["tool_calls"].size(), 1U) << name << ": " << streamed;
    EXPECT_EQ(streamed["tool_calls"][0]["name"], "get_weather");
    EXPECT_EQ(streamed["tool_calls"][0]["name"], expected["message"]["tool_calls"][0]["function"]["name"]);
    EXPECT_EQ(streamed["tool_calls"][0]["arguments"], expected["message"]["tool_calls"][0]["function"]["arguments"]);
    EXPECT_TRUE(json::parse(streamed["tool_calls"][0]["arguments"].get<std::string>()).contains("city"));
    EXPECT_EQ(streamed["finish_reason"], "tool_calls");
  }
  const json schema_answer =
      chat({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "place"}, {"strict", true}, {"schema", city}}}}}}, 8);
  EXPECT_EQ(got["json_schema"][0]["text"], schema_answer["message"]["content"]);
  EXPECT_TRUE(json::parse(got["json_schema"][0]["text"].get<std::string>())["city"].is_string());
  const json object_answer = chat({{"response_format", {{"type", "json_object"}}}}, 9);
  EXPECT_EQ(got["json_object"][0]["text"], object_answer["message"]["content"]);
  EXPECT_TRUE(json::parse(got["json_object"][0]["text"].get<std::string>()).is_object());
  EXPECT_EQ(got["unknown_tool"], "INVALID_ARGUMENT");
}

// With a certificate and its key the service speaks TLS: a client that trusts the certificate is served, a
// plain-text one is not; a missing key file is a clear error at start.
TEST(GrpcServer, ServesOverTls) {
  if (!has_python_grpc() || test::run_command("command -v openssl").empty()) {
    GTEST_SKIP() << "needs python3-grpcio, python3-protobuf, protoc and openssl (scripts/install-deps.sh installs them)";
  }
  const std::string dir = lm::test::fresh_dir("grpc_tls");
  const std::string cert = dir + "/cert.pem";
  const std::string key = dir + "/key.pem";
  test::run_command("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext "
                    "subjectAltName=IP:127.0.0.1 -keyout " + key + " -out " + cert + " 2>&1");
  ASSERT_TRUE(std::filesystem::exists(cert) && std::filesystem::exists(key));
  test::TestServer local;
  GrpcServer server(local.api, "127.0.0.1", 0, GrpcTls{cert, key});
  const json got = run_client("tls", server.start(), "none", cert);
  EXPECT_EQ(got["models"], json::array({"tiny"}));
  EXPECT_EQ(got["health_v1"], 1);
  EXPECT_EQ(got["plain_text"], "UNAVAILABLE");

  GrpcServer missing(local.api, "127.0.0.1", 0, GrpcTls{cert, dir + "/no-such-key.pem"});
  try {
    missing.start();
    ADD_FAILURE() << "started without its key";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-key.pem"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nuvec::serve
