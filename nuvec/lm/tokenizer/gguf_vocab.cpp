// Tokenizer::from_gguf: the tokenizer a GGUF file's tokenizer.ggml.* metadata describes, written as the
// tokenizer.json Hugging Face's converters would give for it and loaded through the same pipeline.
//   "gpt2":  byte-level BPE from tokens and merges, the pre-tokenizer regex chosen by tokenizer.ggml.pre;
//   "llama": SentencePiece BPE from tokens, scores and token types: <0xXX> byte fallback, U+2581 for spaces and
//            (add_space_prefix) one before the text; pieces merge highest score first, as llama.cpp's SPM
//            tokenizer merges them.

#include <algorithm>
#include <numeric>

#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "nuvec/io/gguf.h"
#include "nuvec/lm/tokenizer/tokenizer.h"
#include "nuvec/lm/tokenizer/tokenizer_state.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm {

namespace {

using Metadata = std::unordered_map<std::string, GGUFMetaData>;
using nlohmann::json;

// llama.cpp's token types.
enum TokenType { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

class Reader {
 public:
  Reader(const Metadata& metadata, std::string file) : metadata_(metadata), file_(std::move(file)) {}

  [[nodiscard]] const GGUFMetaData* find(const std::string& key) const {
    auto it = metadata_.find(key);
    return it == metadata_.end() || std::holds_alternative<std::monostate>(it->second) ? nullptr : &it->second;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw_invalid(file_ + ": " + key + ": " + problem);
  }
  [[nodiscard]] std::optional<std::string> string(const std::string& key) const {
    const GGUFMetaData* value = find(key);
    if (value == nullptr) {
      return std::nullopt;
    }
    if (!std::holds_alternative<std::string>(*value)) {
      fail(key, "expected a string");
    }
    return std::get<std::string>(*value);
  }
  [[nodiscard]] std::vector<std::string> strings(const std::string& key) const {
    const GGUFMetaData* value = find(key);
    if (value == nullptr) {
      return {};
    }
    if (!std::holds_alternative<std::vector<std::string>>(*value)) {
      fail(key, "expected an array of strings");
    }
    return std::get<std::vector<std::string>>(*value);
  }
  [[nodiscard]] std::vector<double> numbers(const std::string& key) const {
    const GGUFMetaData* value = find(key);
    if (value == nullptr) {
      return {};
    }
    if (!std::holds_alternative<array>(*value)) {
      fail(key, "expected a number or an array of numbers");
    }
    array values = astype(std::get<array>(*value), float64);
    values.eval();
    const double* data = values.data<double>();
    return {data, data + values.size()};
  }
  [[nodiscard]] std::optional<double> number(const std::string& key) const {
    std::vector<double> values = numbers(key);
    if (values.size() > 1) {
      fail(key, "expected a single number");
    }
    return values.empty() ? std::nullopt : std::optional<double>(values[0]);
  }
  [[nodiscard]] std::optional<int32_t> id(const std::string& key, size_t vocab_size) const {
    auto value = number(key);
    if (!value) {
      return std::nullopt;
    }
    if (*value < 0 || *value >= static_cast<double>(vocab_size)) {
      // llama.cpp writes -1 (as uint32) for "none".
      return std::nullopt;
    }
    return static_cast<int32_t>(*value);
  }

 private:
  const Metadata& metadata_;
  std::string file_;
};

json split_regex(const std::string& regex) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}

json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", use_regex}};
}

// The pre-tokenizer of each tokenizer.ggml.pre name (llama.cpp's names; the regexes of the models' own files).
json gpt2_pre_tokenizer(const std::string& pre, const std::string& file) {
  const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const std::string qwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const std::string tekken =
      R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const std::string deepseek3_words =
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
      "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
  auto sequence = [](std::vector<json> steps) { return json{{"type", "Sequence"}, {"pretokenizers", steps}}; };
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3") {
    return sequence({split_regex(llama3), byte_level(false)});
  }
  if (pre == "qwen2" || pre == "deepseek-r1-qwen") {
    return sequence({split_regex(qwen2), byte_level(false)});
  }
  if (pre == "tekken") {
    return sequence({split_regex(tekken), byte_level(false)});
  }
  if (pre == "deepseek-v3") {
    return sequence({split_regex("\\p{N}{1,3}"), split_regex("[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"),
                     split_regex(deepseek3_words), byte_level(false)});
  }
  if (pre == "gpt-2" || pre == "phi-2") {
    return byte_level(true);
  }
  throw_unsupported(file + ": tokenizer.ggml.pre: the pre-tokenizer '" + pre + "' is not supported");
}

json added_token(int32_t id, const std::string& content, bool special) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

// SentencePiece's pieces as BPE merges: every split of a normal piece into two pieces of the vocabulary, the pieces
// with the highest score first (ties in id order), the splits of one piece in the order of their ids.
json spm_merges(const std::vector<std::string>& tokens, const std::vector<double>& scores,
                const std::vector<int>& types, const detail::Vocab& vocab) {
  std::vector<size_t> order(tokens.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  json merges = json::array();
  std::vector<std::pair<int32_t, int32_t>> splits;
  for (size_t id : order) {
    const std::string& piece = tokens[id];
    if (types[id] != normal) {
      continue;
    }
    splits.clear();
    for (size_t pos = 0; pos < piece.size();) {
      pos += detail::utf8_length(static_cast<unsigned char>(piece[pos]));
      if (pos >= piece.size()) {
        break;
      }
      auto left = vocab.find(std::string_view(piece).substr(0, pos));
      auto right = vocab.find(std::string_view(piece).substr(pos));
      if (left && right) {
        splits.emplace_back(*left, *right);
      }
    }
    std::sort(splits.begin(), splits.end());
    for (auto [left, right] : splits) {
      merges.push_back(json::array({std::string(*vocab.token(left)), std::string(*vocab.token(right))}));
    }
  }
  return merges;
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const std::string& gguf_path) {
  Metadata metadata = io::load_gguf(gguf_path, io::GGUFQuantized::skip).second;  // the weights are not needed
  Reader reader(metadata, gguf_path);
  std::string model = reader.string("tokenizer.ggml.model").value_or("");
  std::vector<std::string> tokens = reader.strings("tokenizer.ggml.tokens");
  if (tokens.empty()) {
    reader.fail("tokenizer.ggml.tokens", "missing or empty");
  }
  std::vector<double> type_values = reader.numbers("tokenizer.ggml.token_type");
  std::vector<int> types(tokens.size(), normal);
  if (!type_values.empty() && type_values.size() != tokens.size()) {
    reader.fail("tokenizer.ggml.token_type", "expected one type per token");
  }
  std::transform(type_values.begin(), type_values.end(), types.begin(), [](double t) { return static_cast<int>(t); });

  json vocab = json::object();
  detail::Vocab table;
  for (size_t id = 0; id < tokens.size(); ++id) {
    vocab[tokens[id]] = id;
    table.add(tokens[id], static_cast<int32_t>(id));
  }
  json added = json::array();
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (types[id] == control || types[id] == unknown || types[id] == user_defined) {
      added.push_back(added_token(static_cast<int32_t>(id), tokens[id], types[id] != user_defined));
    }
  }

  detail::TokenizerConfig config;
  auto bos = reader.id("tokenizer.ggml.bos_token_id", tokens.size());
  auto eos = reader.id("tokenizer.ggml.eos_token_id", tokens.size());
  auto unk = reader.id("tokenizer.ggml.unknown_token_id", tokens.size());
  auto pad = reader.id("tokenizer.ggml.padding_token_id", tokens.size());
  auto eot = reader.id("tokenizer.ggml.eot_token_id", tokens.size());
  auto name_of = [&](std::optional<int32_t> id) { return id ? std::optional<std::string>(tokens[*id]) : std::nullopt; };
  config.bos_token = name_of(bos);
  config.eos_token = name_of(eos);
  config.unk_token = name_of(unk);
  config.pad_token = name_of(pad);
  // llama.cpp's defaults: SentencePiece vocabularies add BOS, byte-level ones do not unless told.
  bool add_bos = reader.number("tokenizer.ggml.add_bos_token").value_or(model == "llama" ? 1 : 0) != 0;
  bool add_eos = reader.number("tokenizer.ggml.add_eos_token").value_or(0) != 0;
  config.add_bos_token = add_bos;
  config.add_eos_token = add_eos;
  if (auto source = reader.string("tokenizer.chat_template")) {
    config.chat_templates.emplace_back("default", *source);
  }

  json single = json::array();
  json special_tokens = json::object();
  auto add_special = [&](std::optional<int32_t> id) {
    single.push_back({{"SpecialToken", {{"id", tokens[*id]}, {"type_id", 0}}}});
    special_tokens[tokens[*id]] = {{"id", tokens[*id]}, {"ids", {*id}}, {"tokens", {tokens[*id]}}};
  };
  if (add_bos && bos) {
    add_special(bos);
  }
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (add_eos && eos) {
    add_special(eos);
  }
  json post_processor = {
      {"type", "TemplateProcessing"}, {"single", single}, {"pair", single}, {"special_tokens", special_tokens}};

  json root = {{"version", "1.0"}, {"added_tokens", added}, {"post_processor", post_processor}};
  if (model == "gpt2") {
    std::vector<std::string> merges = reader.strings("tokenizer.ggml.merges");
    std::string pre = reader.string("tokenizer.ggml.pre").value_or("gpt-2");
    bool llama3 = pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3";
    // Qwen's own files compose the text (NFC) first; llama.cpp does not, but the ids should be Hugging Face's.
    root["normalizer"] = pre == "qwen2" || pre == "deepseek-r1-qwen" ? json{{"type", "NFC"}} : json();
    root["pre_tokenizer"] = gpt2_pre_tokenizer(pre, gguf_path);
    root["decoder"] = byte_level(true);
    // Llama 3 takes a word found whole in the vocabulary as one token (llama.cpp's ignore_merges).
    root["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", llama3}};
  } else if (model == "llama") {
    std::vector<double> scores = reader.numbers("tokenizer.ggml.scores");
    if (scores.size() != tokens.size()) {
      reader.fail("tokenizer.ggml.scores", "expected one score per token");
    }
    bool prefix = reader.number("tokenizer.ggml.add_space_prefix").value_or(1) != 0;
    json replace_spaces = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
    root["normalizer"] = prefix ? json{{"type", "Sequence"},
                                       {"normalizers", {{{"type", "Prepend"}, {"prepend", "\u2581"}}, replace_spaces}}}
                                : replace_spaces;
    root["pre_tokenizer"] = nullptr;
    json decoders = {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                     {{"type", "ByteFallback"}},
                     {{"type", "Fuse"}}};
    if (prefix) {
      decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    }
    root["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    root["model"] = {{"type", "BPE"},    {"vocab", vocab},        {"merges", spm_merges(tokens, scores, types, table)},
                     {"fuse_unk", true}, {"byte_fallback", true}, {"unk_token", unk ? json(tokens[*unk]) : json()}};
  } else {
    throw_unsupported(gguf_path + ": tokenizer.ggml.model: the vocabulary type '" + model +
                      "' is not supported (gpt2 and llama are)");
  }
  return make_tokenizer(detail::build_state(root, gguf_path, std::move(config), eot));
}

}  // namespace nuvec::lm
