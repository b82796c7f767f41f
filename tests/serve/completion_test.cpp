// Completions through the API without sockets, on a tiny random-weight model: greedy texts, tokens and
// log-probabilities equal lm::generate's on the same prompt (the independent reference: one sequence, no batching,
// no server); n > 1; stop strings; streamed chunks that put back together give the whole response's text; usage.

#include <gtest/gtest.h>

#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/load_model.h"
#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;
using test::body_json;
using test::post;
using test::TestServer;

const lm::LoadedModel& reference_model() {
  static const lm::LoadedModel model = lm::load_model(test::chat_model_dir());
  return model;
}

lm::GenerationResult reference(const std::vector<int32_t>& prompt, int max_tokens,
                               const std::vector<std::string>& stop = {}, int top_logprobs = 0) {
  lm::GenerateOptions options;
  options.max_tokens = max_tokens;
  options.stop_strings = stop;
  options.skip_special_tokens = true;
  options.sampling.top_logprobs = top_logprobs;
  return lm::generate(reference_model(), prompt, options);
}

std::vector<int32_t> encode(const std::string& text, bool special) {
  return reference_model().tokenizer.encode(text, special);
}

TEST(Completions, GreedyTextEqualsGenerate) {
  TestServer server;
  for (const std::string prompt : {"w10 w11 w12", "w40", "w7 é w9 日本 w30 w31"}) {
    const lm::GenerationResult expected = reference(encode(prompt, true), 12);
    HttpResponse response = server.api.handle(
        post("/v1/completions", {{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}}));
    ASSERT_EQ(response.status, 200) << response.body;
    const json body = body_json(response);
    EXPECT_EQ(body["object"], "text_completion");
    EXPECT_EQ(body["model"], "tiny");
    EXPECT_EQ(body["choices"][0]["text"], expected.text) << prompt;
    EXPECT_EQ(body["choices"][0]["finish_reason"], expected.finish_reason);
    EXPECT_EQ(body["usage"]["prompt_tokens"], encode(prompt, true).size());
    EXPECT_EQ(body["usage"]["completion_tokens"], expected.tokens.size());
    EXPECT_EQ(body["usage"]["total_tokens"], encode(prompt, true).size() + expected.tokens.size());
  }
}

TEST(Completions, TokenIdPromptsAndListsEqualGenerate) {
  TestServer server;
  const std::vector<int32_t> a = {10, 20, 30};
  const std::vector<int32_t> b = {50, 51};
  HttpResponse response = server.api.handle(
      post("/v1/completions", {{"prompt", json::array({a, b})}, {"max_tokens", 8}, {"temperature", 0}, {"n", 2}}));
  ASSERT_EQ(response.status, 200) << response.body;
  const json body = body_json(response);
  ASSERT_EQ(body["choices"].size(), 4U);
  // OpenAI's order: the n choices of the first prompt, then those of the second.
  const std::vector<std::string> expected = {reference(a, 8).text, reference(a, 8).text, reference(b, 8).text,
                                             reference(b, 8).text};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(body["choices"][i]["index"], i);
    EXPECT_EQ(body["choices"][i]["text"], expected[i]) << i;
  }
  EXPECT_EQ(body["usage"]["prompt_tokens"], 5);
}

TEST(ChatCompletions, GreedyMessageEqualsGenerateOnTheTemplatedPrompt) {
  TestServer server;
  const json messages = json::array(
      {{{"role", "system"}, {"content", "w20 w21"}},
       {{"role", "user"},
        {"content", json::array({{{"type", "text"}, {"text", "w9"}}, {{"type", "text"}, {"text", "w8"}}})}}});
  // The template's own rendering, by hand: content parts are joined with a newline (a space to WhitespaceSplit).
  const lm::GenerationResult expected = reference(encode("system w20 w21 user w9\nw8 assistant", false), 10);
  HttpResponse response = server.api.handle(post(
      "/v1/chat/completions", {{"model", "tiny"}, {"messages", messages}, {"max_tokens", 10}, {"temperature", 0}}));
  ASSERT_EQ(response.status, 200) << response.body;
  const json body = body_json(response);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], expected.text);
  EXPECT_EQ(body["choices"][0]["finish_reason"], expected.finish_reason);
  EXPECT_EQ(body["usage"]["completion_tokens"], expected.tokens.size());
  EXPECT_TRUE(body["choices"][0]["logprobs"].is_null());
}

TEST(ChatCompletions, LogprobsEqualGenerates) {
  TestServer server;
  const lm::GenerationResult expected = reference(encode("user w33 assistant", false), 6, {}, 3);
  HttpResponse response =
      server.api.handle(post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "w33"}}}},
                                                      {"max_tokens", 6},
                                                      {"temperature", 0},
                                                      {"logprobs", true},
                                                      {"top_logprobs", 3}}));
  ASSERT_EQ(response.status, 200) << response.body;
  const json content = body_json(response)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), expected.tokens.size());
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string token = reference_model().tokenizer.token_bytes(expected.tokens[i]);
    EXPECT_EQ(content[i]["token"], token);
    EXPECT_NEAR(content[i]["logprob"].get<double>(), expected.logprobs[i], 1e-4);
    ASSERT_EQ(content[i]["top_logprobs"].size(), 3U);
    EXPECT_EQ(content[i]["top_logprobs"][0]["token"], token);  // greedy: the chosen token is the most likely
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_NEAR(content[i]["top_logprobs"][k]["logprob"].get<double>(), expected.top_logprobs[i][k].logprob, 1e-4);
    }
    EXPECT_EQ(content[i]["bytes"].size(), token.size());
  }
}

TEST(Completions, LogprobsInTheCompletionsShape) {
  TestServer server;
  const lm::GenerationResult expected = reference(encode("w12 w13", true), 5, {}, 2);
  HttpResponse response = server.api.handle(
      post("/v1/completions", {{"prompt", "w12 w13"}, {"max_tokens", 5}, {"temperature", 0}, {"logprobs", 2}}));
  ASSERT_EQ(response.status, 200) << response.body;
  const json logprobs = body_json(response)["choices"][0]["logprobs"];
  ASSERT_EQ(logprobs["tokens"].size(), expected.tokens.size());
  ASSERT_EQ(logprobs["token_logprobs"].size(), expected.tokens.size());
  ASSERT_EQ(logprobs["text_offset"].size(), expected.tokens.size());
  const std::string text = body_json(response)["choices"][0]["text"];
  for (size_t i = 0; i < expected.tokens.size(); ++i) {
    // Each offset is where the token's part of the text starts (here a space, then the word).
    const size_t begin = logprobs["text_offset"][i];
    const size_t end = i + 1 < expected.tokens.size() ? logprobs["text_offset"][i + 1].get<size_t>() : text.size();
    EXPECT_NE(text.substr(begin, end - begin).find(logprobs["tokens"][i].get<std::string>()), std::string::npos)
        << text << " token " << i;
    EXPECT_NEAR(logprobs["token_logprobs"][i].get<double>(), expected.logprobs[i], 1e-4);
    EXPECT_EQ(logprobs["top_logprobs"][i].size(), 2U);
  }
}

TEST(Completions, StopStringsEndTheTextAsGenerateDoes) {
  TestServer server;
  const std::vector<int32_t> prompt = encode("w10 w11 w12", true);
  const lm::GenerationResult free_run = reference(prompt, 12);
  // A stop string spanning two tokens of the free run's text (its third and fourth words).
  std::istringstream words(free_run.text);
  std::vector<std::string> word{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
  ASSERT_GE(word.size(), 5U) << free_run.text;
  const std::string stop = word[2] + " " + word[3];
  const lm::GenerationResult expected = reference(prompt, 12, {stop});
  ASSERT_EQ(expected.finish_reason, "stop") << "free run: [" << free_run.text << "] stop: [" << stop << "]";
  for (bool stream : {false, true}) {
    HttpResponse response = server.api.handle(post(
        "/v1/completions",
        {{"prompt", "w10 w11 w12"}, {"max_tokens", 12}, {"temperature", 0}, {"stop", {stop}}, {"stream", stream}}));
    ASSERT_EQ(response.status, 200);
    if (stream) {
      const auto events = test::sse_events(read_body(response));
      EXPECT_EQ(test::assemble(events, 1)[0], expected.text);
      EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "stop");
    } else {
      const json body = body_json(response);
      EXPECT_EQ(body["choices"][0]["text"], expected.text);
      EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
      EXPECT_EQ(body["choices"][0]["text"].get<std::string>().find(stop), std::string::npos);
    }
  }
}

TEST(ChatCompletions, StreamedChunksReassembleToTheWholeText) {
  TestServer server;
  const json request = {{"messages", {{{"role", "user"}, {"content", "w50 w51 🙂"}}}},
                        {"max_tokens", 16},
                        {"temperature", 0},
                        {"n", 2}};
  HttpResponse whole = server.api.handle(post("/v1/chat/completions", request));
  ASSERT_EQ(whole.status, 200);
  const json body = body_json(whole);
  json streamed_request = request;
  streamed_request["stream"] = true;
  streamed_request["stream_options"] = {{"include_usage", true}};
  HttpResponse streamed = server.api.handle(post("/v1/chat/completions", streamed_request));
  ASSERT_EQ(streamed.status, 200);
  EXPECT_EQ(streamed.content_type, "text/event-stream");
  const auto events = test::sse_events(read_body(streamed));
  const auto texts = test::assemble(events, 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(texts[i], body["choices"][i]["message"]["content"]) << i;
  }
  // Each choice opens with its role and ends with its finish reason; the last chunk carries the usage alone.
  int roles = 0;
  int finishes = 0;
  for (size_t e = 0; e + 1 < events.size(); ++e) {
    EXPECT_EQ(events[e]["object"], "chat.completion.chunk");
    EXPECT_TRUE(events[e]["usage"].is_null());
    EXPECT_EQ(events[e]["id"], events[0]["id"]);
    for (const json& choice : events[e]["choices"]) {
      roles += choice["delta"].contains("role") ? 1 : 0;
      finishes += choice["finish_reason"].is_string() ? 1 : 0;
    }
  }
  EXPECT_EQ(roles, 2);
  EXPECT_EQ(finishes, 2);
  EXPECT_TRUE(events.back()["choices"].empty());
  EXPECT_EQ(events.back()["usage"], body["usage"]);
}

TEST(Completions, SeededSamplingRepeatsAndChoicesDiffer) {
  TestServer server;
  const json request = {{"prompt", "w10"}, {"max_tokens", 12}, {"temperature", 1.5}, {"seed", 1234}, {"n", 3}};
  HttpResponse first = server.api.handle(post("/v1/completions", request));
  HttpResponse second = server.api.handle(post("/v1/completions", request));
  ASSERT_EQ(first.status, 200);
  const json a = body_json(first);
  const json b = body_json(second);
  std::set<std::string> distinct;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(a["choices"][i]["text"], b["choices"][i]["text"]);
    distinct.insert(a["choices"][i]["text"].get<std::string>());
  }
  EXPECT_GT(distinct.size(), 1U) << "each choice draws with its own seed";
}

TEST(Completions, MaxTokensEndsWithLength) {
  TestServer server;
  HttpResponse response = server.api.handle(
      post("/v1/completions", {{"prompt", {5, 6, 7}}, {"max_tokens", 3}, {"temperature", 0}, {"echo", true}}));
  const json body = body_json(response);
  const lm::GenerationResult expected = reference({5, 6, 7}, 3);
  EXPECT_EQ(body["choices"][0]["finish_reason"], expected.finish_reason);
  EXPECT_EQ(body["choices"][0]["text"],
            reference_model().tokenizer.decode(std::vector<int32_t>{5, 6, 7}) + expected.text);
}

TEST(Completions, DefaultMaxTokensFillsTheContext) {
  TestServer server({}, {}, ModelOptions{.scheduler = {}, .context = 12, .max_tokens = 0});
  HttpResponse response = server.api.handle(post(
      "/v1/completions", {{"prompt", {3, 4, 5, 6, 7, 8, 9, 10}}, {"temperature", 0}, {"logit_bias", {{"2", -100}}}}));
  ASSERT_EQ(response.status, 200) << response.body;
  const json body = body_json(response);
  EXPECT_EQ(body["usage"]["completion_tokens"], 4);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
}

TEST(Completions, TheServersMaxTokensCapsEachCompletion) {
  TestServer server({}, {}, ModelOptions{.scheduler = {}, .context = 0, .max_tokens = 5});
  HttpResponse response = server.api.handle(
      post("/v1/completions", {{"prompt", "w10"}, {"temperature", 0}, {"logit_bias", {{"2", -100}}}}));
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(body_json(response)["usage"]["completion_tokens"], 5);
  response = server.api.handle(post("/v1/completions", {{"prompt", "w10"}, {"max_tokens", 6}}));
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(body_json(response)["error"]["param"], "max_tokens");
}

}  // namespace
}  // namespace nuvec::serve
