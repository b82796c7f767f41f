// response_format over a tiny random model whose tokenizer spells printable ASCII one character per token: sampled
// at temperature 1 with several seeds, every answer parses as JSON (json_object) or validates against its schema
// (json_schema; checked by Python's jsonschema, an independent validator, when it is installed) and ends with finish
// reason "stop", on both endpoints, streamed and not, with n > 1. A logit bias towards closing quotes and brackets
// keeps the random model's documents short; the constraint alone decides what is valid.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nuvec/core/dtype.h"
#include "nuvec/lm/load_model.h"
#include "tests/lm/model_test_util.h"
#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int id_of(char c) { return c - ' '; }

using test::JsonServer;

/// Sampling at temperature 1, with a bias towards the characters that close strings, arrays and objects.
json sampled(json body, int seed) {
  body["temperature"] = 1.0;
  body["seed"] = seed;
  body["max_tokens"] = 2000;
  body["logit_bias"] = {
      {std::to_string(id_of('"')), 3}, {std::to_string(id_of('}')), 4}, {std::to_string(id_of(']')), 4}};
  return body;
}

const json person_schema = {{"type", "object"},
                            {"properties",
                             {{"name", {{"type", "string"}}},
                              {"age", {{"type", "integer"}}},
                              {"score", {{"type", "number"}}},
                              {"admin", {{"type", "boolean"}}},
                              {"role", {{"enum", {"reader", "writer", 7, nullptr}}}},
                              {"tags", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                              {"pet", {{"anyOf", {{{"type", "null"}}, {{"$ref", "#/$defs/pet"}}}}}}}},
                            {"required", {"name", "age", "score", "admin", "role", "tags", "pet"}},
                            {"$defs",
                             {{"pet",
                               {{"type", "object"},
                                {"properties", {{"kind", {{"const", "cat"}}}, {"lives", {{"type", "integer"}}}}},
                                {"required", {"kind", "lives"}},
                                {"additionalProperties", false}}}}}};

json json_schema_format() {
  return {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"schema", person_schema}, {"strict", true}}}};
}

/// Runs Python's jsonschema over `texts` against `schema`: "ok", or what it found; "skip" without the module.
std::string python_validate(const std::vector<std::string>& texts, const json& schema) {
  const std::string path = (fs::path(lm::test::fresh_dir("json_validate")) / "outputs.json").string();
  std::ofstream(path) << json{{"schema", schema}, {"texts", texts}}.dump();
  return test::run_command(
      "/usr/bin/python3 -c \"import json, sys\ntry:\n import jsonschema\nexcept ImportError:\n print('skip'); "
      "sys.exit()\n"
      "d = json.load(open('" +
      path + "'))\nfor t in d['texts']:\n jsonschema.validate(json.loads(t), d['schema'])\nprint('ok')\" 2>&1");
}

TEST(ResponseFormat, JsonObjectOutputsParse) {
  JsonServer server;
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    for (int seed = 0; seed < 4; ++seed) {
      json body = {{"response_format", {{"type", "json_object"}}}, {"n", 2}};
      if (std::string(path) == "/v1/completions") {
        body["prompt"] = "Answer in JSON:";
      } else {
        body["messages"] = {{{"role", "user"}, {"content", "Answer in JSON."}}};
      }
      HttpResponse response = server.api.handle(test::post(path, sampled(body, seed)));
      ASSERT_EQ(response.status, 200) << response.body;
      const json answer = test::body_json(response);
      ASSERT_EQ(answer["choices"].size(), 2U);
      for (const json& choice : answer["choices"]) {
        const std::string text = choice.contains("message") ? choice["message"]["content"].get<std::string>()
                                                            : choice["text"].get<std::string>();
        EXPECT_EQ(choice["finish_reason"], "stop") << text;
        ASSERT_TRUE(json::accept(text)) << path << " seed " << seed << ": " << text;
        EXPECT_TRUE(json::parse(text).is_object()) << text;
      }
    }
  }
}

TEST(ResponseFormat, JsonSchemaOutputsValidate) {
  JsonServer server;
  std::vector<std::string> texts;
  for (int seed = 0; seed < 6; ++seed) {
    const json body = {{"messages", {{{"role", "user"}, {"content", "A person, please."}}}},
                       {"response_format", json_schema_format()},
                       {"n", 2}};
    HttpResponse response = server.api.handle(test::post("/v1/chat/completions", sampled(body, seed)));
    ASSERT_EQ(response.status, 200) << response.body;
    for (const json& choice : test::body_json(response)["choices"]) {
      const std::string text = choice["message"]["content"];
      EXPECT_EQ(choice["finish_reason"], "stop") << text;
      ASSERT_TRUE(json::accept(text)) << "seed " << seed << ": " << text;
      const json document = json::parse(text);
      // What the schema says, checked here too: every key present, none other.
      EXPECT_EQ(document.size(), person_schema["required"].size()) << text;
      for (const json& key : person_schema["required"]) {
        EXPECT_TRUE(document.contains(key.get<std::string>())) << key << " in " << text;
      }
      EXPECT_TRUE(document["age"].is_number_integer()) << text;
      texts.push_back(text);
    }
  }
  const std::string verdict = python_validate(texts, person_schema);
  if (verdict.find("skip") == 0) {
    GTEST_SKIP() << "python3 has no jsonschema module (python3-jsonschema); checked here only";
  }
  EXPECT_EQ(verdict, "ok\n");
}

TEST(ResponseFormat, StreamedOutputParses) {
  JsonServer server;
  for (int seed = 0; seed < 3; ++seed) {
    const json body = {{"prompt", "JSON:"}, {"response_format", json_schema_format()}, {"stream", true}};
    HttpResponse response = server.api.handle(test::post("/v1/completions", sampled(body, seed)));
    ASSERT_EQ(response.status, 200) << response.body;
    const std::string sse = read_body(response);
    const auto events = test::sse_events(sse);
    const std::string text = test::assemble(events, 1).front();
    ASSERT_TRUE(json::accept(text)) << text << "\n" << sse;
    EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "stop");
  }
}

TEST(ResponseFormat, MalformedFormatsAndSchemasGet400NamingTheField) {
  JsonServer server;
  struct Case {
    json format;
    std::string param;
    std::string says;
  };
  const std::vector<Case> cases = {
      {json::parse(R"([])"), "response_format", "must be an object with a 'type'"},
      {json::parse(R"({"type": "yaml"})"), "response_format.type", "'text', 'json_object' or 'json_schema'"},
      {json::parse(R"({"type": 3})"), "response_format.type", ""},
      {json::parse(R"({"type": "json_schema"})"), "response_format.json_schema", "must be an object"},
      {json::parse(R"({"type": "json_schema", "json_schema": {"name": "a b", "schema": {}}})"),
       "response_format.json_schema.name", "letters, digits"},
      {json::parse(R"({"type": "json_schema", "json_schema": {"name": "a"}})"), "response_format.json_schema.schema",
       "required"},
      {json::parse(R"({"type": "json_schema", "json_schema": {"schema": {}, "strict": "yes"}})"),
       "response_format.json_schema.strict", ""},
      {json::parse(R"({"type": "json_schema", "json_schema": {"schema":
          {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}}}})"),
       "response_format.json_schema.schema", "unsupported keywords at #/properties/a: maxLength"},
      {json::parse(R"({"type": "json_schema", "json_schema": {"schema": {"type": "strings"}}})"),
       "response_format.json_schema.schema", "'type' must name"},
  };
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    for (const Case& c : cases) {
      json body = {{"response_format", c.format}};
      if (std::string(path) == "/v1/completions") {
        body["prompt"] = "x";
      } else {
        body["messages"] = {{{"role", "user"}, {"content", "x"}}};
      }
      HttpResponse response = server.api.handle(test::post(path, body));
      ASSERT_EQ(response.status, 400) << c.format << ": " << response.body;
      const json error = test::body_json(response)["error"];
      EXPECT_EQ(error["param"], c.param) << c.format;
      EXPECT_NE(error["message"].get<std::string>().find(c.says), std::string::npos) << error["message"];
    }
  }
}

TEST(ResponseFormat, AVocabularyThatCannotBeginJsonGets400) {
  // The shared test model's vocabulary is whole words: none begins a JSON object.
  test::TestServer server;
  const json body = {{"messages", {{{"role", "user"}, {"content", "w10"}}}},
                     {"response_format", {{"type", "json_object"}}}};
  HttpResponse response = server.api.handle(test::post("/v1/chat/completions", body));
  ASSERT_EQ(response.status, 400) << response.body;
  EXPECT_EQ(test::body_json(response)["error"]["param"], "response_format");
  // The server keeps serving.
  HttpResponse good = server.api.handle(
      test::post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "w10"}}}}, {"max_tokens", 2}}));
  EXPECT_EQ(good.status, 200) << good.body;
}

}  // namespace
}  // namespace nuvec::serve
