// nuvec tokenize, detokenize and chat-template on a small word-level tokenizer written by the test (the ids of real
// vocabularies are checked against Hugging Face's tokenizers in tests/lm).

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "apps/tokenize/commands.h"

namespace nuvec::tokenize {
namespace {

namespace fs = std::filesystem;

// Words are ids 3..5; the post-processor puts <s> first.
const char* kTokenizerJson = R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 1, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "Whitespace"},
  "post_processor": {
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}}
  },
  "decoder": null,
  "model": {"type": "WordLevel", "vocab": {"<s>": 0, "</s>": 1, "<unk>": 2, "hello": 3, "world": 4, "!": 5},
            "unk_token": "<unk>"}
})";

const char* kTokenizerConfig = R"({
  "bos_token": "<s>",
  "eos_token": "</s>",
  "chat_template": "{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"
})";

class TokenizeCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nuvec_tokenize_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    write("tokenizer.json", kTokenizerJson);
    write("tokenizer_config.json", kTokenizerConfig);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }

  /// What `run` writes, given `input` on its standard input.
  template <class Run>
  static std::string capture(const std::string& input, Run run) {
    std::string in_text = input;
    std::FILE* in = fmemopen(in_text.data(), in_text.size(), "r");
    char* out_buffer = nullptr;
    size_t out_size = 0;
    std::FILE* out = open_memstream(&out_buffer, &out_size);
    try {
      run(in, out);
    } catch (...) {
      std::fclose(in);
      std::fclose(out);
      std::free(out_buffer);
      throw;
    }
    std::fclose(in);
    std::fclose(out);
    std::string result(out_buffer, out_size);
    std::free(out_buffer);
    return result;
  }

  std::string folder() const { return dir_.string(); }

  fs::path dir_;
};

TEST_F(TokenizeCommands, TokenizeWholeInputOrLines) {
  TokenizeOptions options{folder(), false, false};
  auto tokenize = [&](std::FILE* in, std::FILE* out) { run_tokenize(options, in, out); };
  EXPECT_EQ(capture("hello world!", tokenize), "[3,4,5]\n");
  options.add_special_tokens = true;
  EXPECT_EQ(capture("hello world!", tokenize), "[0,3,4,5]\n");
  options.jsonl = true;
  options.add_special_tokens = false;
  EXPECT_EQ(capture("\"hello\"\n\"world </s> hi\"\n", tokenize), "[3]\n[4,1,2]\n");
}

TEST_F(TokenizeCommands, DetokenizeArrayOrLines) {
  DetokenizeOptions options{folder() + "/tokenizer.json", false, false, false};
  auto detokenize = [&](std::FILE* in, std::FILE* out) { run_detokenize(options, in, out); };
  EXPECT_EQ(capture("[0, 3, 4, 5]", detokenize), "<s> hello world !");
  options.skip_special_tokens = true;
  options.jsonl = true;
  EXPECT_EQ(capture("[0,3]\n[4,1]\n", detokenize), "\"hello\"\n\"world\"\n");
  options.clean_up_spaces = true;
  EXPECT_EQ(capture("[3,5]\n", detokenize), "\"hello!\"\n");
}

TEST_F(TokenizeCommands, ChatTemplateRendersTheTokenizersTemplate) {
  std::string messages = write("messages.json", R"([{"role": "user", "content": "hi"}])");
  ChatTemplateCommandOptions options{folder(), messages, {}, {}, {}, false};
  auto render = [&](std::FILE*, std::FILE* out) { run_chat_template(options, out); };
  EXPECT_EQ(capture("-", render), "<user>hi</s>");
  options.add_generation_prompt = true;
  EXPECT_EQ(capture("-", render), "<user>hi</s><assistant>");
  options.name = "tool_use";
  EXPECT_THROW(capture("-", render), std::invalid_argument);
}

/// The message of what `run` throws.
template <class Run>
std::string error_of(Run run) {
  try {
    run();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST_F(TokenizeCommands, ErrorsSayWhatIsWrong) {
  auto tokenize = [&](TokenizeOptions options, const std::string& input) {
    return error_of([&] { capture(input, [&](std::FILE* in, std::FILE* out) { run_tokenize(options, in, out); }); });
  };
  EXPECT_NE(tokenize({"", false, false}, "x").find("--tokenizer PATH is required"), std::string::npos);
  EXPECT_NE(tokenize({folder(), false, true}, "\"a\"\n[1]\n").find("input line 2: expected a JSON string"),
            std::string::npos);
  EXPECT_NE(tokenize({folder(), false, true}, "\"a\"\n\"b\n").find("input line 2: not valid JSON"), std::string::npos);
  EXPECT_NE(tokenize({folder(), false, false}, "ab\xff").find("not valid UTF-8"), std::string::npos);
  auto detokenize = [&](const std::string& input) {
    return error_of([&] {
      capture(input, [&](std::FILE* in, std::FILE* out) { run_detokenize({folder(), false, false, false}, in, out); });
    });
  };
  EXPECT_NE(detokenize("[3, 99]").find("99"), std::string::npos);
  EXPECT_NE(detokenize("[3, -1]").find("-1 is not a token id"), std::string::npos);
  EXPECT_NE(detokenize("{}").find("expected a JSON array of token ids"), std::string::npos);
}

}  // namespace
}  // namespace nuvec::tokenize
