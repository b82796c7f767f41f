// A served model with a draft model (nuvec serve --draft-model): a request that decodes alone goes through
// speculative decoding, and its greedy output is the same as without a draft (against lm::generate without one,
// the independent reference), whole, streamed and in chat; the draft's kept tokens are counted in the metrics;
// requests that share the batch still decode there.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/load_model.h"
#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;

const lm::LoadedModel& reference_model() {
  static const lm::LoadedModel model = lm::load_model(test::chat_model_dir());
  return model;
}

/// lm::generate without a draft, greedy, with the model's EOS as a stop.
std::string reference_text(const std::string& prompt, int max_tokens) {
  lm::GenerateOptions options;
  options.max_tokens = max_tokens;
  options.skip_special_tokens = true;
  options = lm::with_model_stop_ids(reference_model(), options);
  return lm::generate(*reference_model().model, reference_model().tokenizer,
                      reference_model().tokenizer.encode(prompt, true), options)
      .text;
}

/// "tiny" served with `draft_dir`'s model as its draft.
struct DraftServer {
  explicit DraftServer(const std::string& draft_dir) {
    registry.add("tiny", lm::load_model(test::chat_model_dir()), ModelOptions{}, lm::load_model(draft_dir));
  }

  /// Generated tokens in all, and those the draft proposed and the model kept.
  std::pair<int, int> token_counts() {
    const std::string text = api.handle(test::get("/metrics")).body;
    const auto value = [&](const std::string& name) {
      const std::string key = name + "{model=\"tiny\"} ";
      const size_t at = text.find(key);
      EXPECT_NE(at, std::string::npos) << name;
      return at == std::string::npos ? -1 : std::stoi(text.substr(at + key.size()));
    };
    return {value("nuvec_generation_tokens_total"), value("nuvec_spec_decode_accepted_tokens_total")};
  }

  Metrics metrics;
  ModelRegistry registry{metrics};
  RequestLog log{nullptr};
  Api api{registry, metrics, ApiOptions{}, &log};
};

const std::vector<std::string> prompts = {"w10 w11 w12", "w40", "w7 é w9 日本 w30 w31"};

TEST(SpeculativeServing, GreedyOutputEqualsDecodingWithoutADraft) {
  for (const std::string* draft : {&test::draft_model_dir(), &test::chat_model_dir()}) {
    DraftServer server(*draft);
    for (const std::string& prompt : prompts) {
      const std::string expected = reference_text(prompt, 24);
      HttpResponse whole = server.api.handle(
          test::post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}}));
      ASSERT_EQ(whole.status, 200) << whole.body;
      EXPECT_EQ(test::body_json(whole)["choices"][0]["text"], expected) << prompt << " draft " << *draft;
      HttpResponse streamed = server.api.handle(test::post(
          "/v1/completions", {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}, {"stream", true}}));
      ASSERT_EQ(streamed.status, 200) << streamed.body;
      EXPECT_EQ(test::assemble(test::sse_events(read_body(streamed)), 1)[0], expected) << prompt;
    }
  }
}

TEST(SpeculativeServing, TheDraftsTokensAreCounted) {
  // The model as its own draft: every proposal is kept.
  DraftServer server(test::chat_model_dir());
  HttpResponse response = server.api.handle(
      test::post("/v1/completions",
                 {{"prompt", "w10 w11"}, {"max_tokens", 32}, {"temperature", 0}, {"logit_bias", {{"2", -100}}}}));
  ASSERT_EQ(response.status, 200) << response.body;
  const auto [generated, from_draft] = server.token_counts();
  EXPECT_EQ(generated, 32);
  EXPECT_GE(from_draft, 16) << "speculative decoding did not run";
}

TEST(SpeculativeServing, ChatAndSharedBatchesGiveTheSameText) {
  DraftServer server(test::draft_model_dir());
  test::TestServer plain;
  const json chat = {
      {"messages", {{{"role", "user"}, {"content", "w33 w34"}}}}, {"max_tokens", 16}, {"temperature", 0}};
  HttpResponse with_draft = server.api.handle(test::post("/v1/chat/completions", chat));
  HttpResponse without = plain.api.handle(test::post("/v1/chat/completions", chat));
  ASSERT_EQ(with_draft.status, 200) << with_draft.body;
  EXPECT_EQ(test::body_json(with_draft)["choices"][0]["message"], test::body_json(without)["choices"][0]["message"]);
  // Two choices share the batch (no speculative decoding), with the same greedy text each.
  HttpResponse two = server.api.handle(
      test::post("/v1/completions", {{"prompt", "w40"}, {"max_tokens", 12}, {"temperature", 0}, {"n", 2}}));
  ASSERT_EQ(two.status, 200) << two.body;
  for (const json& choice : test::body_json(two)["choices"]) {
    EXPECT_EQ(choice["text"], reference_text("w40", 12));
  }
}

}  // namespace
}  // namespace nuvec::serve
