// The endpoints around generation, without sockets: /v1/models, /health (503 while loading), /tokenize and
// /detokenize (against the tokenizer itself), /v1/embeddings (against the model's hidden states pooled here in
// double), /metrics in Prometheus' text format, and API keys.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nuvec/core/ops.h"
#include "nuvec/lm/load_model.h"
#include "nuvec/lm/tokenizer/precompiled.h"
#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;
using test::body_json;
using test::get;
using test::post;

TEST(Endpoints, ModelsListsTheServedModel) {
  test::TestServer server;
  HttpResponse response = server.api.handle(get("/v1/models"));
  ASSERT_EQ(response.status, 200);
  const json body = body_json(response);
  EXPECT_EQ(body["object"], "list");
  ASSERT_EQ(body["data"].size(), 1U);
  EXPECT_EQ(body["data"][0]["id"], "tiny");
  EXPECT_EQ(body["data"][0]["object"], "model");
  EXPECT_EQ(body["data"][0]["max_model_len"], 256);  // tiny_config's max_position_embeddings
  response = server.api.handle(get("/v1/models/tiny"));
  EXPECT_EQ(body_json(response)["id"], "tiny");
  EXPECT_EQ(server.api.handle(get("/v1/models/other")).status, 404);
}

TEST(Endpoints, HealthIs503WhileAModelLoadsAnd200After) {
  test::TestServer server;
  EXPECT_EQ(server.api.handle(get("/health")).status, 200);
  server.registry.announce("later");
  HttpResponse loading = server.api.handle(get("/health"));
  EXPECT_EQ(loading.status, 503);
  EXPECT_EQ(body_json(loading)["status"], "loading");
  // A request for the model still loading is told to come back, not that the model does not exist.
  HttpResponse early = server.api.handle(post("/v1/completions", {{"model", "later"}, {"prompt", "w5"}}));
  EXPECT_EQ(early.status, 503);
  server.registry.load("later", test::chat_model_dir(), {});
  EXPECT_EQ(server.api.handle(get("/health")).status, 200);
  EXPECT_EQ(
      server.api.handle(post("/v1/completions", {{"model", "later"}, {"prompt", "w5"}, {"max_tokens", 1}})).status,
      200);
  server.api.set_shutting_down();
  EXPECT_EQ(server.api.handle(get("/health")).status, 503);
}

TEST(Endpoints, TokenizeAndDetokenizeMatchTheTokenizer) {
  test::TestServer server;
  const lm::Tokenizer tokenizer = lm::Tokenizer::from_folder(test::chat_model_dir());
  HttpResponse response = server.api.handle(post("/tokenize", {{"model", "tiny"}, {"prompt", "w7 日本 w9"}}));
  ASSERT_EQ(response.status, 200) << response.body;
  const json body = body_json(response);
  EXPECT_EQ(body["tokens"].get<std::vector<int32_t>>(), tokenizer.encode("w7 日本 w9", true));
  EXPECT_EQ(body["count"], 3);
  EXPECT_EQ(body["max_model_len"], 256);
  response = server.api.handle(post("/tokenize", {{"messages", {{{"role", "user"}, {"content", "w8"}}}}}));
  EXPECT_EQ(body_json(response)["tokens"].get<std::vector<int32_t>>(), tokenizer.encode("user w8 assistant", false));
  response = server.api.handle(post("/detokenize", {{"tokens", {7, 93, 9}}}));
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(body_json(response)["prompt"], tokenizer.decode(std::vector<int32_t>{7, 93, 9}));
  EXPECT_EQ(server.api.handle(post("/detokenize", {{"tokens", {7, 96}}})).status, 400);
  EXPECT_EQ(server.api.handle(post("/tokenize", {{"prompt", 5}})).status, 400);
}

/// The unit-length mean over the tokens of the model's last hidden states, computed in double.
std::vector<double> pooled(lm::LanguageModel& model, const std::vector<int32_t>& ids) {
  array h = astype(model.hidden_states(array(ids.begin(), {1, static_cast<int>(ids.size())}, int32)), float32);
  h.eval();
  const int width = h.shape(2);
  std::vector<double> sum(static_cast<size_t>(width), 0.0);
  for (size_t t = 0; t < ids.size(); ++t) {
    for (int j = 0; j < width; ++j) {
      sum[static_cast<size_t>(j)] += h.data<float>()[t * static_cast<size_t>(width) + static_cast<size_t>(j)];
    }
  }
  double norm = 0.0;
  for (double& v : sum) {
    v /= static_cast<double>(ids.size());
    norm += v * v;
  }
  for (double& v : sum) {
    v /= std::sqrt(norm);
  }
  return sum;
}

TEST(Endpoints, EmbeddingsAreTheUnitMeanOfTheLastHiddenStates) {
  test::TestServer server;
  const auto model = server.registry.find("tiny");
  const lm::Tokenizer& tokenizer = model->loaded.tokenizer;
  const std::vector<int32_t> ids{7, 12, 93, 40};
  HttpResponse response =
      server.api.handle(post("/v1/embeddings", {{"model", "tiny"}, {"input", {"w33 w34 w35", ids, "w10"}}}));
  ASSERT_EQ(response.status, 200) << response.body;
  const json body = body_json(response);
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["model"], "tiny");
  const std::vector<std::vector<int32_t>> inputs{tokenizer.encode("w33 w34 w35", true), ids, tokenizer.encode("w10", true)};
  ASSERT_EQ(body["data"].size(), inputs.size());
  size_t tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(body["data"][i]["object"], "embedding");
    EXPECT_EQ(body["data"][i]["index"], i);
    const auto got = body["data"][i]["embedding"].get<std::vector<double>>();
    const auto want = pooled(*model->loaded.model, inputs[i]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t j = 0; j < got.size(); ++j) {
      EXPECT_NEAR(got[j], want[j], 1e-6) << i << " " << j;
    }
    tokens += inputs[i].size();
  }
  EXPECT_EQ(body["usage"]["prompt_tokens"], tokens);
  EXPECT_EQ(body["usage"]["total_tokens"], tokens);
  // One text alone gives what it gave in the list; base64 holds the same float32 values, little-endian.
  response = server.api.handle(post("/v1/embeddings", {{"input", "w10"}, {"encoding_format", "base64"}}));
  ASSERT_EQ(response.status, 200) << response.body;
  const auto decoded = lm::detail::decode_base64(body_json(response)["data"][0]["embedding"].get<std::string>());
  ASSERT_TRUE(decoded.has_value());
  std::vector<float> values(decoded->size() / sizeof(float));
  std::memcpy(values.data(), decoded->data(), values.size() * sizeof(float));
  EXPECT_EQ(values, body["data"][2]["embedding"].get<std::vector<float>>());
  // Mistakes get 400 naming the field.
  const std::vector<json> bad = {
      {{"input", ""}},
      {{"input", json::array()}},
      {{"input", 5}},
      {{"input", {1, 2, 500}}},
      {{"input", {{1, 2}, 7}}},
      {{"input", "w10"}, {"encoding_format", "hex"}},
      {{"input", "w10"}, {"dimensions", 3}},
      {{"input", std::vector<int32_t>(300, 7)}},
  };
  for (const auto& request : bad) {
    response = server.api.handle(post("/v1/embeddings", request));
    EXPECT_EQ(response.status, 400) << request.dump() << " " << response.body;
  }
  EXPECT_EQ(server.api.handle(post("/v1/embeddings", {{"model", "nope"}, {"input", "w10"}})).status, 404);
  EXPECT_EQ(server.api.handle(get("/v1/embeddings")).status, 405);
}

TEST(Endpoints, MetricsCountTokensAndRequestsPerModel) {
  test::TestServer server;
  HttpResponse response = server.api.handle(
      post("/v1/completions",
           {{"prompt", {10, 11, 12}}, {"max_tokens", 4}, {"temperature", 0}, {"n", 2}, {"logit_bias", {{"2", -100}}}}));
  ASSERT_EQ(response.status, 200);
  HttpResponse metrics = server.api.handle(get("/metrics"));
  ASSERT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.content_type.rfind("text/plain", 0), 0U);
  const std::string& text = metrics.body;
  for (const char* line : {"# TYPE nuvec_requests_running gauge", "nuvec_requests_running{model=\"tiny\"} 0",
                           "nuvec_requests_waiting{model=\"tiny\"} 0", "nuvec_prompt_tokens_total{model=\"tiny\"} 6",
                           "nuvec_generation_tokens_total{model=\"tiny\"} 8",
                           "nuvec_request_success_total{model=\"tiny\",finish_reason=\"length\"} 1",
                           "nuvec_request_success_total{model=\"tiny\",finish_reason=\"stop\"} 0",
                           "# TYPE nuvec_time_to_first_token_seconds histogram",
                           "nuvec_time_to_first_token_seconds_count{model=\"tiny\"} 1",
                           "nuvec_time_to_first_token_seconds_bucket{model=\"tiny\",le=\"+Inf\"} 1",
                           "nuvec_time_between_tokens_seconds_count{model=\"tiny\"} 6",
                           "nuvec_e2e_request_latency_seconds_count{model=\"tiny\"} 1",
                           "nuvec_request_queue_time_seconds_count{model=\"tiny\"} 1",
                           "# TYPE nuvec_kv_cache_usage_perc gauge", "nuvec_kv_cache_usage_perc{model=\"tiny\"} 0",
                           "# TYPE nuvec_num_preemptions_total counter",
                           "nuvec_num_preemptions_total{model=\"tiny\"} 0"}) {
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
  }
}

TEST(Endpoints, ASharedSystemPromptIsComputedOnceAndCounted) {
  test::TestServer server;
  std::string system;
  for (int w = 40; w < 60; ++w) {
    system.append("w").append(std::to_string(w)).append(" ");
  }
  auto chat = [&](const std::string& question) {
    HttpResponse response = server.api.handle(post(
        "/v1/chat/completions", {{"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", question}}}},
                                 {"max_tokens", 3},
                                 {"temperature", 0}}));
    EXPECT_EQ(response.status, 200) << response.body;
    return body_json(response)["usage"]["prompt_tokens"].get<int>();
  };
  const int first = chat("w10 w11");
  const int second = chat("w12");
  const std::string text = server.api.handle(get("/metrics")).body;
  // The second prompt found the first one's system part (the template's "system", the 20 words and "user": 22
  // tokens) cached, in whole blocks of 16.
  EXPECT_NE(text.find("nuvec_prefix_cache_queries_total{model=\"tiny\"} " + std::to_string(first + second) + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nuvec_prefix_cache_hits_total{model=\"tiny\"} 16\n"), std::string::npos) << text;
}

TEST(Endpoints, EachModelIsServedUnderItsNameWithItsOwnMetrics) {
  test::TestServer server;
  server.registry.load("second", test::chat_model_dir(), {});
  HttpResponse listed = server.api.handle(get("/v1/models"));
  const json models = body_json(listed);
  ASSERT_EQ(models["data"].size(), 2U);
  EXPECT_EQ(models["data"][0]["id"], "tiny");  // the first announced stays first: the default model
  EXPECT_EQ(models["data"][1]["id"], "second");
  HttpResponse response =
      server.api.handle(post("/v1/completions", {{"model", "second"}, {"prompt", "w5"}, {"max_tokens", 2}}));
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(body_json(response)["model"], "second");
  response = server.api.handle(post("/v1/completions", {{"prompt", "w5"}, {"max_tokens", 1}}));
  EXPECT_EQ(body_json(response)["model"], "tiny");
  const std::string metrics = server.api.handle(get("/metrics")).body;
  EXPECT_NE(metrics.find("nuvec_prompt_tokens_total{model=\"second\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("nuvec_prompt_tokens_total{model=\"tiny\"} 1\n"), std::string::npos) << metrics;
  EXPECT_THROW(server.registry.announce("second"), std::exception);
}

TEST(Endpoints, ApiKeysGuardTheApiButNotHealthOrMetrics) {
  ApiOptions options;
  options.api_keys = {"key-one", "key-two"};
  test::TestServer server({}, options);
  HttpRequest request = get("/v1/models");
  HttpResponse response = server.api.handle(request);
  EXPECT_EQ(response.status, 401);
  EXPECT_EQ(body_json(response)["error"]["code"], "invalid_api_key");
  request.headers["authorization"] = "Bearer key-on";
  EXPECT_EQ(server.api.handle(request).status, 401);
  request.headers["authorization"] = "key-two";
  EXPECT_EQ(server.api.handle(request).status, 401);
  request.headers["authorization"] = "Bearer key-two";
  EXPECT_EQ(server.api.handle(request).status, 200);
  EXPECT_EQ(server.api.handle(post("/v1/completions", {{"prompt", "w5"}})).status, 401);
  EXPECT_EQ(server.api.handle(get("/health")).status, 200);
  EXPECT_EQ(server.api.handle(get("/metrics")).status, 200);
}

}  // namespace
}  // namespace nuvec::serve
