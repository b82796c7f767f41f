// Streamed text is cut only at whole UTF-8 characters: a character whose bytes come in several tokens goes out
// whole, with its last byte, and U+FFFD never appears. The output is forced by response_format: the JSON string
// "€" in a vocabulary that holds "€" only as its three byte tokens.

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nuvec/lm/load_model.h"
#include "nuvec/lm/utf8.h"
#include "nuvec/serve/response_json.h"
#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

using nlohmann::json;

const json euro_format = {{"type", "json_schema"}, {"json_schema", {{"name", "euro"}, {"schema", {{"const", "€"}}}}}};

TEST(StreamingText, CharacterSplitAcrossTokensGoesOutWhole) {
  test::TestServer server;
  server.registry.add("bytes", lm::load_model(test::byte_model_dir()), ModelOptions{});
  HttpResponse response = server.api.handle(test::post("/v1/completions", {{"model", "bytes"},
                                                                           {"prompt", json::array({7, 8, 9})},
                                                                           {"max_tokens", 5},
                                                                           {"temperature", 0},
                                                                           {"logprobs", 0},
                                                                           {"response_format", euro_format},
                                                                           {"stream", true}}));
  ASSERT_EQ(response.status, 200) << response.body;
  const std::vector<json> events = test::sse_events(read_body(response));
  std::vector<std::string> pieces;
  std::vector<std::string> tokens;
  for (const json& event : events) {
    for (const json& choice : event["choices"]) {
      pieces.push_back(choice["text"].get<std::string>());
      if (choice["logprobs"].is_object()) {
        for (const json& token : choice["logprobs"]["tokens"]) {
          tokens.push_back(token.get<std::string>());
        }
      }
    }
  }
  // The five tokens: the quote, the three bytes of "€", the quote.
  ASSERT_EQ(tokens.size(), 5U) << json(pieces).dump();
  std::string text;
  for (const std::string& piece : pieces) {
    EXPECT_TRUE(lm::detail::is_valid_utf8(piece)) << json(pieces).dump();
    EXPECT_EQ(piece.find("\uFFFD"), std::string::npos) << json(pieces).dump();
    text += piece;
  }
  EXPECT_EQ(text, "\"€\"");
  // The byte tokens are held back (a byte-fallback decoder could still join them to what follows): their
  // character goes out in one piece, after its last byte.
  EXPECT_EQ(std::count_if(pieces.begin(), pieces.end(),
                          [](const std::string& p) { return p.find("€") != std::string::npos; }),
            1)
      << json(pieces).dump();
}

TEST(StreamingText, WholeResponseHoldsTheCharacter) {
  test::TestServer server;
  server.registry.add("bytes", lm::load_model(test::byte_model_dir()), ModelOptions{});
  HttpResponse whole = server.api.handle(test::post("/v1/completions", {{"model", "bytes"},
                                                                        {"prompt", json::array({7, 8, 9})},
                                                                        {"max_tokens", 5},
                                                                        {"temperature", 0},
                                                                        {"response_format", euro_format}}));
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(test::body_json(whole)["choices"][0]["text"], "\"€\"");
}

TEST(StreamingText, LogprobsCarryEachTokensOwnBytes) {
  // Chat's logprobs of the three byte tokens of "€": each token's "bytes" is its own byte (together the character),
  // where its text can only be U+FFFD.
  const lm::LoadedModel model = lm::load_model(test::byte_model_dir());
  ResponseContext context;
  context.endpoint = Endpoint::chat;
  context.tokenizer = &model.tokenizer;
  context.logprobs = true;
  std::vector<lm::GenerationResponse> tokens;
  for (int32_t id : {4, 5, 6}) {
    lm::GenerationResponse token;
    token.token = id;
    token.logprob = -0.5F;
    token.top_logprobs = {{id, -0.5F}, {3, -2.0F}};
    tokens.push_back(token);
  }
  const json chunk = text_chunk(context, 0, "€", tokens);
  const json content = chunk["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 3U) << chunk.dump();
  std::string bytes;
  for (const json& token : content) {
    EXPECT_EQ(token["token"], "\uFFFD");
    ASSERT_EQ(token["bytes"].size(), 1U);
    bytes.push_back(static_cast<char>(token["bytes"][0].get<int>()));
    EXPECT_EQ(token["top_logprobs"][0]["bytes"], token["bytes"]);
    EXPECT_EQ(token["top_logprobs"][1]["token"], "\"");
    EXPECT_EQ(token["top_logprobs"][1]["bytes"], json::array({'"'}));
  }
  EXPECT_EQ(bytes, "€");
}

}  // namespace
}  // namespace nuvec::serve
