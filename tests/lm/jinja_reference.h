#pragma once

// The Jinja2 reference for the chat-template tests: every test file registers its cases, and the first test that
// asks runs tests/lm/render_chat_template.py once, in one Python process, for all of them.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/lm/chat_template.h"

namespace nuvec::lm::testing {

/// One rendering to compare: a template, a conversation and the options.
struct ReferenceCase {
  std::string name;
  std::string source;
  nlohmann::ordered_json messages;
  ChatTemplateOptions options;
};

/// What Jinja2 or nuvec made of a case: the text, or the error message.
struct Rendering {
  bool ok = false;
  std::string text;
};

using CaseSource = std::function<std::vector<ReferenceCase>()>;

inline std::vector<CaseSource>& case_sources() {
  static std::vector<CaseSource> sources;
  return sources;
}

/// Registers a function giving cases; called during static initialization by each test file.
inline bool register_cases(CaseSource source) {
  case_sources().push_back(std::move(source));
  return true;
}

/// strftime_now's fixed clock in both renderers: 2024-07-26 12:00 UTC.
inline constexpr const char* fixed_now = "1721995200";

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// All registered cases and Jinja2's renderings of them, computed once; `skip` says why there are none.
struct Reference {
  std::string skip;
  std::map<std::string, Rendering> results;
};

inline const Reference& reference() {
  static const Reference ref = [] {
    Reference r;
    setenv("NUVEC_CHAT_TEMPLATE_NOW", fixed_now, 1);
    setenv("TZ", "UTC", 1);
    if (std::system("/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1") != 0) {
      r.skip = "python3-jinja2 is not installed (apt install python3-jinja2); no reference to compare with";
      return r;
    }
    std::vector<ReferenceCase> cases;
    for (const CaseSource& source : case_sources()) {
      for (ReferenceCase& c : source()) {
        cases.push_back(std::move(c));
      }
    }
    nlohmann::ordered_json input = nlohmann::ordered_json::array();
    for (const ReferenceCase& c : cases) {
      input.push_back({{"template", c.source},
                       {"messages", c.messages},
                       {"tools", c.options.tools},
                       {"documents", c.options.documents},
                       {"add_generation_prompt", c.options.add_generation_prompt},
                       {"bos_token", c.options.bos_token},
                       {"eos_token", c.options.eos_token},
                       {"extra", c.options.extra}});
    }
    auto dir = std::filesystem::temp_directory_path() / ("nuvec_jinja_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "cases.json") << input.dump();
    std::string command = "/usr/bin/python3 '" + std::string(TESTS_LM_DIR) + "/render_chat_template.py' '" +
                          (dir / "cases.json").string() + "' '" + (dir / "results.json").string() + "'";
    if (std::system(command.c_str()) != 0) {
      r.skip = "the Jinja2 reference script failed: " + command;
      return r;
    }
    auto results = nlohmann::ordered_json::parse(read_text(dir / "results.json"));
    std::filesystem::remove_all(dir);
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& x = results.at(i);
      r.results[cases[i].name] = x.contains("output") ? Rendering{true, x["output"].get<std::string>()}
                                                      : Rendering{false, x["error"].get<std::string>()};
    }
    return r;
  }();
  return ref;
}

/// nuvec's rendering of a case, parsing each distinct template once.
inline Rendering render_with_nuvec(const ReferenceCase& c) {
  static std::map<std::string, std::shared_ptr<ChatTemplate>> parsed;
  try {
    auto& t = parsed[c.source];
    if (!t) {
      t = std::make_shared<ChatTemplate>(c.source);
    }
    return {true, t->render(c.messages, c.options)};
  } catch (const nuvec::error& e) {
    parsed.erase(c.source);
    return {false, e.what()};
  }
}

/// Whether nuvec agrees with Jinja2: the same text byte for byte, or both fail and nuvec's message holds Jinja2's.
inline ::testing::AssertionResult agrees(const Rendering& jinja, const Rendering& ours) {
  if (jinja.ok && ours.ok && jinja.text == ours.text) {
    return ::testing::AssertionSuccess();
  }
  if (!jinja.ok && !ours.ok) {
    std::string message = jinja.text.substr(jinja.text.find(": ") == std::string::npos ? 0 : jinja.text.find(": ") + 2);
    if (ours.text.find(message) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure() << "\n  Jinja2 " << (jinja.ok ? "rendered: " : "failed: ")
                                       << nlohmann::json(jinja.text).dump() << "\n  nuvec  "
                                       << (ours.ok ? "rendered: " : "failed: ") << nlohmann::json(ours.text).dump();
}

/// Compares every case whose name starts with `prefix`; returns how many there were.
inline size_t expect_all_agree(const std::string& prefix, const std::vector<ReferenceCase>& cases) {
  const Reference& ref = reference();
  size_t count = 0, matched = 0, errors = 0;
  for (const ReferenceCase& c : cases) {
    if (c.name.rfind(prefix, 0) != 0) {
      continue;
    }
    ++count;
    auto it = ref.results.find(c.name);
    if (it == ref.results.end()) {
      ADD_FAILURE() << c.name << ": no reference result";
      continue;
    }
    auto result = agrees(it->second, render_with_nuvec(c));
    if (result) {
      ++matched;
    }
    if (!it->second.ok) {
      ++errors;
    }
    EXPECT_TRUE(result) << c.name;
  }
  std::printf("[ jinja2   ] %s: %zu of %zu cases agree with Jinja2 (%zu of them errors in Jinja2)\n", prefix.c_str(),
              matched, count, errors);
  return count;
}

}  // namespace nuvec::lm::testing
