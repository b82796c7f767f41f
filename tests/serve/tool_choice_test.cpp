// tool_choice as OpenAI documents it, on a tiny random model whose vocabulary can write any JSON: "required" makes
// the answer one call of an offered tool and a named function a call of that tool (by constrained decoding, checked
// here over sampled answers, whole and streamed), "none" and "auto" leave the answer to the model, "none" offers the
// template no tools; names outside the tools and forced calls that cannot be decoded get 400s naming the field.
// OpenAI's JavaScript SDK reads the forced calls from the real server.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "nuvec/serve/completion_handler.h"
#include "nuvec/serve/http_server.h"
#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const json tools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
    "properties": {"query": {"type": "string"}}, "required": ["query"], "additionalProperties": false}}}])");

using test::JsonServer;

int id_of(char c) { return c - ' '; }

/// A chat request with the tools and `choice`, sampled at temperature 1 with a bias towards closing quotes and
/// braces (which keeps the random model's documents short; the constraint alone decides what is valid).
json chat_body(const json& choice, int seed) {
  return {{"messages", {{{"role", "user"}, {"content", "Call a tool."}}}},
          {"tools", tools},
          {"tool_choice", choice},
          {"temperature", 1.0},
          {"seed", seed},
          {"max_tokens", 2000},
          {"logit_bias", {{std::to_string(id_of('"')), 3}, {std::to_string(id_of('}')), 4}}}};
}

json named(const std::string& name) { return {{"type", "function"}, {"function", {{"name", name}}}}; }

/// Checks that `call` (OpenAI's shape) calls one of `names` with the arguments its tool requires.
void expect_valid_call(const json& call, const std::set<std::string>& names) {
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0U) << call;
  const std::string name = call["function"]["name"];
  EXPECT_TRUE(names.contains(name)) << call;
  const std::string arguments = call["function"]["arguments"];
  ASSERT_TRUE(json::accept(arguments)) << arguments;
  const json parsed = json::parse(arguments);
  const std::string key = name == "get_weather" ? "city" : "query";
  EXPECT_EQ(parsed.size(), 1U) << arguments;
  EXPECT_TRUE(parsed.contains(key) && parsed[key].is_string()) << arguments;
}

TEST(ToolChoice, RequiredCallsOneOfTheTools) {
  JsonServer server;
  for (int seed = 0; seed < 4; ++seed) {
    json body = chat_body("required", seed);
    body["n"] = 2;
    HttpResponse response = server.api.handle(test::post("/v1/chat/completions", body));
    ASSERT_EQ(response.status, 200) << response.body;
    for (const json& choice : test::body_json(response)["choices"]) {
      const json& message = choice["message"];
      EXPECT_EQ(choice["finish_reason"], "tool_calls") << message;
      EXPECT_TRUE(message["content"].is_null() || message["content"] == "") << message;
      ASSERT_EQ(message["tool_calls"].size(), 1U) << message;
      expect_valid_call(message["tool_calls"][0], {"get_weather", "search"});
    }
  }
}

TEST(ToolChoice, NamedFunctionIsTheOneCalled) {
  JsonServer server;
  for (const std::string name : {"get_weather", "search"}) {
    for (int seed = 0; seed < 3; ++seed) {
      HttpResponse response = server.api.handle(test::post("/v1/chat/completions", chat_body(named(name), seed)));
      ASSERT_EQ(response.status, 200) << response.body;
      const json choice = test::body_json(response)["choices"][0];
      EXPECT_EQ(choice["finish_reason"], "tool_calls");
      ASSERT_EQ(choice["message"]["tool_calls"].size(), 1U) << choice;
      expect_valid_call(choice["message"]["tool_calls"][0], {name});
    }
  }
}

TEST(ToolChoice, RequiredStreamsTheCallAsToolCallDeltas) {
  JsonServer server;
  for (int seed = 0; seed < 3; ++seed) {
    json body = chat_body("required", seed);
    body["stream"] = true;
    HttpResponse response = server.api.handle(test::post("/v1/chat/completions", body));
    ASSERT_EQ(response.status, 200) << response.body;
    std::vector<json> calls;
    std::string finish;
    for (const json& event : test::sse_events(read_body(response))) {
      for (const json& choice : event["choices"]) {
        for (const json& call : choice["delta"].value("tool_calls", json::array())) {
          calls.push_back(call);
        }
        if (choice["finish_reason"].is_string()) {
          finish = choice["finish_reason"];
        }
      }
    }
    ASSERT_EQ(calls.size(), 1U);
    EXPECT_EQ(calls[0]["index"], 0);
    expect_valid_call(calls[0], {"get_weather", "search"});
    EXPECT_EQ(finish, "tool_calls");
  }
}

TEST(ToolChoice, NoneAndAutoLeaveTheAnswerToTheModel) {
  JsonServer server;
  // The template writes no calls: with "auto" or "none" nothing is forced or parsed.
  for (const char* choice : {"auto", "none"}) {
    HttpResponse response = server.api.handle(test::post("/v1/chat/completions", chat_body(choice, 1)));
    ASSERT_EQ(response.status, 200) << response.body;
    const json message = test::body_json(response)["choices"][0]["message"];
    EXPECT_TRUE(message["content"].is_string()) << message;
    EXPECT_FALSE(message.contains("tool_calls")) << message;
  }
  // "none" shows the template no tools; a named choice only the one named.
  EXPECT_TRUE(chat_template_options(parse_chat_request(chat_body("none", 1))).tools.is_null());
  const auto only = chat_template_options(parse_chat_request(chat_body(named("search"), 1))).tools;
  ASSERT_EQ(only.size(), 1U);
  EXPECT_EQ(only[0]["function"]["name"], "search");
  EXPECT_EQ(chat_template_options(parse_chat_request(chat_body("auto", 1))).tools.size(), 2U);
}

TEST(ToolChoice, ErrorsNameTheField) {
  JsonServer server;
  struct Case {
    json body;
    std::string param;
  };
  json unknown = chat_body(named("get_time"), 1);
  json with_format = chat_body("required", 1);
  with_format["response_format"] = {{"type", "json_object"}};
  json unsupported = chat_body("required", 1);
  unsupported["tools"][0]["function"]["parameters"]["properties"]["city"]["pattern"] = "^[A-Z]";
  json word_model = chat_body("required", 1);
  word_model["model"] = "tiny";
  word_model["max_tokens"] = 8;
  test::TestServer words;
  for (const auto& [body, param] :
       {Case{unknown, "tool_choice.function.name"}, Case{with_format, "response_format"}, Case{unsupported, "tools"}}) {
    HttpResponse response = server.api.handle(test::post("/v1/chat/completions", body));
    EXPECT_EQ(response.status, 400) << body.dump() << ": " << response.body;
    EXPECT_EQ(json::parse(response.body)["error"]["param"], param) << response.body;
  }
  // A vocabulary of whole words cannot write a call.
  HttpResponse response = words.api.handle(test::post("/v1/chat/completions", word_model));
  EXPECT_EQ(response.status, 400) << response.body;
  EXPECT_EQ(json::parse(response.body)["error"]["param"], "tool_choice") << response.body;
  // The schema keyword only matters when a call is forced.
  unsupported["tool_choice"] = "auto";
  EXPECT_EQ(server.api.handle(test::post("/v1/chat/completions", unsupported)).status, 200);
}

TEST(ToolChoice, OpenAIsJavaScriptSdkReadsForcedCalls) {
  const std::string npm_dir = NUVEC_NPM_DIR;
  if (test::run_command("command -v node").empty() || !fs::exists(fs::path(npm_dir) / "node_modules" / "openai")) {
    GTEST_SKIP() << "node or the npm package openai is missing (scripts/install-deps.sh installs it into " << npm_dir
                 << ")";
  }
  JsonServer local;
  HttpServer server(local.api, {"127.0.0.1", 0, 4});
  const int port = server.start();
  const std::string out =
      test::run_command("node " + std::string(TESTS_SERVE_DIR) + "/openai_tool_choice.mjs '" + npm_dir +
                        "' http://127.0.0.1:" + std::to_string(port) + "/v1 '" + json(tools).dump() + "'");
  ASSERT_TRUE(json::accept(out)) << out;
  const json got = json::parse(out);
  for (const char* shape : {"required", "required_stream", "named"}) {
    const json& message = got[shape]["message"];
    EXPECT_EQ(got[shape]["finish_reason"], "tool_calls") << shape;
    ASSERT_EQ(message["tool_calls"].size(), 1U) << shape << ": " << message;
    expect_valid_call(message["tool_calls"][0], std::string(shape) == "named"
                                                    ? std::set<std::string>{"search"}
                                                    : std::set<std::string>{"get_weather", "search"});
  }
  EXPECT_EQ(got["unknown_name"]["status"], 400);
  EXPECT_EQ(got["unknown_name"]["param"], "tool_choice.function.name");
}

}  // namespace
}  // namespace nuvec::serve
