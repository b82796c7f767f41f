// A corpus of malformed requests: each gets its 4xx status and OpenAI's error body ({"error": {"message", "type",
// "param", "code"}}) naming the field at fault, and the server answers a good request afterwards.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;

struct Case {
  const char* name;
  const char* path;
  std::string body;  // raw text: some cases are not JSON
  int status;
  std::optional<std::string> param;
};

json chat(json extra) {
  json body = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "w10"}}}}};
  body.update(extra);
  return body;
}

json completion(json extra) {
  json body = {{"model", "tiny"}, {"prompt", "w10"}};
  body.update(extra);
  return body;
}

std::vector<Case> corpus() {
  const char* c = "/v1/chat/completions";
  const char* t = "/v1/completions";
  return {
      {"not json", c, "{\"model\": ", 400, std::nullopt},
      {"json array body", c, "[1, 2]", 400, std::nullopt},
      {"empty body", t, "", 400, std::nullopt},
      {"invalid utf-8", t, "{\"prompt\": \"\xff\xfe\"}", 400, std::nullopt},
      {"model not a string", c, chat({{"model", 7}}).dump(), 400, "model"},
      {"unknown model", c, chat({{"model", "gpt-9"}}).dump(), 404, "model"},
      {"messages missing", c, json{{"model", "tiny"}}.dump(), 400, "messages"},
      {"messages empty", c, chat({{"messages", json::array()}}).dump(), 400, "messages"},
      {"messages not a list", c, chat({{"messages", "hi"}}).dump(), 400, "messages"},
      {"message not an object", c, chat({{"messages", {"hi"}}}).dump(), 400, "messages[0]"},
      {"role missing", c, chat({{"messages", {{{"content", "w1"}}}}}).dump(), 400, "messages[0].role"},
      {"role unknown", c, chat({{"messages", {{{"role", "wizard"}, {"content", "w1"}}}}}).dump(), 400,
       "messages[0].role"},
      {"content missing", c, chat({{"messages", {{{"role", "user"}}}}}).dump(), 400, "messages[0].content"},
      {"content a number", c, chat({{"messages", {{{"role", "user"}, {"content", 5}}}}}).dump(), 400,
       "messages[0].content"},
      {"content part without type", c,
       chat({{"messages", {{{"role", "user"}, {"content", {{{"text", "w1"}}}}}}}}).dump(), 400,
       "messages[0].content[0].type"},
      {"content part unknown type", c,
       chat({{"messages", {{{"role", "user"}, {"content", {{{"type", "video"}}}}}}}}).dump(), 400,
       "messages[0].content[0].type"},
      {"image content", c,
       chat({{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "x"}}}}}}}}).dump(),
       400, "messages[0].content[0]"},
      {"temperature a string", c, chat({{"temperature", "hot"}}).dump(), 400, "temperature"},
      {"temperature too high", c, chat({{"temperature", 2.5}}).dump(), 400, "temperature"},
      {"top_p above 1", c, chat({{"top_p", 1.5}}).dump(), 400, "top_p"},
      {"top_k a float", c, chat({{"top_k", 2.5}}).dump(), 400, "top_k"},
      {"top_k below -1", c, chat({{"top_k", -3}}).dump(), 400, "top_k"},
      {"min_p negative", c, chat({{"min_p", -0.1}}).dump(), 400, "min_p"},
      {"presence_penalty out of range", c, chat({{"presence_penalty", 3}}).dump(), 400, "presence_penalty"},
      {"frequency_penalty a bool", c, chat({{"frequency_penalty", true}}).dump(), 400, "frequency_penalty"},
      {"repetition_penalty zero", c, chat({{"repetition_penalty", 0}}).dump(), 400, "repetition_penalty"},
      {"max_tokens zero", c, chat({{"max_tokens", 0}}).dump(), 400, "max_tokens"},
      {"max_tokens negative", t, completion({{"max_tokens", -5}}).dump(), 400, "max_tokens"},
      {"max_tokens a string", t, completion({{"max_tokens", "10"}}).dump(), 400, "max_tokens"},
      {"max_completion_tokens a float", c, chat({{"max_completion_tokens", 1.5}}).dump(), 400, "max_completion_tokens"},
      {"max_tokens past the context", t, completion({{"max_tokens", 100000}}).dump(), 400, "max_tokens"},
      {"n zero", c, chat({{"n", 0}}).dump(), 400, "n"},
      {"n too large", c, chat({{"n", 1000}}).dump(), 400, "n"},
      {"stream a string", c, chat({{"stream", "yes"}}).dump(), 400, "stream"},
      {"stream_options without stream", c, chat({{"stream_options", {{"include_usage", true}}}}).dump(), 400,
       "stream_options"},
      {"include_usage not a bool", c, chat({{"stream", true}, {"stream_options", {{"include_usage", 1}}}}).dump(), 400,
       "stream_options.include_usage"},
      {"stop a number", c, chat({{"stop", 3}}).dump(), 400, "stop"},
      {"stop list with a number", c, chat({{"stop", {"a", 3}}}).dump(), 400, "stop[1]"},
      {"stop empty string", c, chat({{"stop", ""}}).dump(), 400, "stop"},
      {"seed a string", c, chat({{"seed", "42"}}).dump(), 400, "seed"},
      {"logit_bias a list", c, chat({{"logit_bias", {1, 2}}}).dump(), 400, "logit_bias"},
      {"logit_bias key not an id", c, chat({{"logit_bias", {{"abc", 1}}}}).dump(), 400, "logit_bias"},
      {"logit_bias value too large", c, chat({{"logit_bias", {{"5", 500}}}}).dump(), 400, "logit_bias.5"},
      {"logit_bias id past the vocabulary", c, chat({{"logit_bias", {{"5000", 1}}}}).dump(), 400, "logit_bias"},
      {"logprobs not a bool", c, chat({{"logprobs", 3}}).dump(), 400, "logprobs"},
      {"top_logprobs without logprobs", c, chat({{"top_logprobs", 3}}).dump(), 400, "top_logprobs"},
      {"top_logprobs too many", c, chat({{"logprobs", true}, {"top_logprobs", 50}}).dump(), 400, "top_logprobs"},
      {"completion logprobs too many", t, completion({{"logprobs", 21}}).dump(), 400, "logprobs"},
      {"tools", c, chat({{"tools", {{{"type", "function"}}}}}).dump(), 400, "tools[0].function"},
      {"json schema without one", c, chat({{"response_format", {{"type", "json_schema"}}}}).dump(), 400,
       "response_format.json_schema"},
      {"response_format unknown", c, chat({{"response_format", {{"type", "yaml"}}}}).dump(), 400,
       "response_format.type"},
      {"prompt missing", t, json{{"model", "tiny"}}.dump(), 400, "prompt"},
      {"prompt a number", t, completion({{"prompt", 5}}).dump(), 400, "prompt"},
      {"prompt empty list", t, completion({{"prompt", json::array()}}).dump(), 400, "prompt"},
      {"prompt ids negative", t, completion({{"prompt", {1, -2}}}).dump(), 400, "prompt[1]"},
      {"prompt ids past the vocabulary", t, completion({{"prompt", {1, 5000}}}).dump(), 400, "prompt"},
      {"prompt list mixing kinds", t, completion({{"prompt", {"w1", 5}}}).dump(), 400, "prompt[1]"},
      {"prompt empty text", t, completion({{"prompt", ""}}).dump(), 400, "prompt"},
      {"prompt over the context", t, completion({{"prompt", std::vector<int>(300, 7)}}).dump(), 400, "prompt"},
      {"suffix", t, completion({{"suffix", "w1"}}).dump(), 400, "suffix"},
      {"echo with logprobs", t, completion({{"echo", true}, {"logprobs", 1}}).dump(), 400, "echo"},
      {"user not a string", t, completion({{"user", 5}}).dump(), 400, "user"},
  };
}

TEST(RequestValidation, MalformedRequestsGet4xxWithOpenAIsErrorBody) {
  test::TestServer server;
  for (const Case& c : corpus()) {
    HttpRequest request{"POST", c.path, {{"content-type", "application/json"}}, c.body, {}};
    HttpResponse response = server.api.handle(request);
    EXPECT_EQ(response.status, c.status) << c.name << ": " << response.body;
    EXPECT_EQ(response.content_type, "application/json") << c.name;
    const json body = json::parse(response.body);
    ASSERT_TRUE(body.contains("error")) << c.name;
    const json& error = body["error"];
    EXPECT_TRUE(error["message"].is_string() && !error["message"].get<std::string>().empty()) << c.name;
    EXPECT_TRUE(error["type"].is_string()) << c.name;
    ASSERT_TRUE(error.contains("param") && error.contains("code")) << c.name;
    if (c.param) {
      EXPECT_EQ(error["param"], *c.param) << c.name << ": " << error["message"];
    }
  }
  // The server keeps serving.
  HttpResponse good = server.api.handle(test::post("/v1/completions", completion({{"max_tokens", 2}})));
  EXPECT_EQ(good.status, 200) << good.body;
}

TEST(RequestValidation, MessagesSaySoPlainly) {
  test::TestServer server;
  HttpResponse response = server.api.handle(test::post("/v1/chat/completions", chat({{"temperature", "hot"}})));
  EXPECT_EQ(json::parse(response.body)["error"]["message"], "'temperature' must be a number; got \"hot\".");
  response = server.api.handle(test::post("/v1/completions", completion({{"prompt", std::vector<int>(300, 7)}})));
  EXPECT_NE(
      json::parse(response.body)["error"]["message"].get<std::string>().find("maximum context length is 256 tokens"),
      std::string::npos)
      << response.body;
  response = server.api.handle(test::post("/v1/chat/completions", chat({{"model", "gpt-9"}})));
  EXPECT_EQ(json::parse(response.body)["error"]["code"], "model_not_found");
}

TEST(RequestValidation, ARequestTheKVCacheCannotHoldAloneIs400) {
  SchedulerOptions scheduler;
  scheduler.kv_cache_tokens = 64;
  test::TestServer server(scheduler);
  auto message = [](HttpResponse& response) {
    return json::parse(response.body)["error"]["message"].get<std::string>();
  };
  HttpResponse response = server.api.handle(
      test::post("/v1/completions", completion({{"prompt", std::vector<int>(10, 7)}, {"max_tokens", 60}})));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(json::parse(response.body)["error"]["param"], "max_tokens");
  EXPECT_EQ(message(response),
            "This server's KV cache holds 64 tokens for all requests together. However, you requested 70 tokens (10 in "
            "the prompt, 60 in the completion). Please reduce the length of the prompt or completion.");
  response = server.api.handle(test::post("/v1/completions", completion({{"prompt", std::vector<int>(64, 7)}})));
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(message(response).find("your prompt has 64 tokens"), std::string::npos) << response.body;
  // Without max_tokens the completion may fill what the cache has left; within it, the request is served.
  response = server.api.handle(
      test::post("/v1/completions", completion({{"prompt", std::vector<int>(10, 7)}, {"max_tokens", 54}})));
  EXPECT_EQ(response.status, 200) << response.body;
}

TEST(RequestValidation, UnknownPathsAndMethods) {
  test::TestServer server;
  HttpResponse response = server.api.handle(test::get("/v1/nothing"));
  EXPECT_EQ(response.status, 404);
  EXPECT_TRUE(json::parse(response.body).contains("error"));
  response = server.api.handle(test::get("/v1/chat/completions"));
  EXPECT_EQ(response.status, 405);
  response = server.api.handle(test::post("/v1/models", json::object()));
  EXPECT_EQ(response.status, 405);
}

TEST(RequestValidation, BodiesOverTheLimitGet413) {
  ApiOptions options;
  options.max_body_bytes = 256;
  test::TestServer server({}, options);
  HttpResponse response =
      server.api.handle(test::post("/v1/completions", completion({{"prompt", std::string(300, 'w')}})));
  EXPECT_EQ(response.status, 413);
  EXPECT_TRUE(json::parse(response.body).contains("error"));
}

}  // namespace
}  // namespace nuvec::serve
