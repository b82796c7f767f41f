#pragma once

// The pieces of a loaded tokenizer, shared by Tokenizer, its streaming detokenizers and the loaders (tokenizer.json,
// GGUF).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nuvec/lm/tokenizer/added_vocabulary.h"
#include "nuvec/lm/tokenizer/decoder.h"
#include "nuvec/lm/tokenizer/model.h"
#include "nuvec/lm/tokenizer/normalizer.h"
#include "nuvec/lm/tokenizer/post_processor.h"
#include "nuvec/lm/tokenizer/pre_tokenizer.h"
#include "nuvec/lm/tokenizer/tokenizer.h"
#include "nuvec/lm/tokenizer/tokenizer_config.h"
#include "nuvec/lm/tokenizer/vocab.h"

namespace nuvec::lm::detail {

struct TokenizerState {
  explicit TokenizerState(Model model) : model(std::move(model)) {}

  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  AddedVocabulary added;
  Model model;
  Decoder decoder;
  PostProcessor post_processor;
  TokenizerConfig config;

  StringMap<int32_t> added_ids;                           // added token -> id
  std::unordered_map<int32_t, std::string> added_tokens;  // id -> added token
  std::vector<bool> special;                              // by id: what skip_special_tokens drops
  std::vector<bool> held_back;                            // by id: <0xXX> tokens the decoder joins into characters
  size_t vocab_size = 0;
  std::optional<int32_t> bos_id;
  std::optional<int32_t> eos_id;
  std::optional<int32_t> eot_id;
  bool add_bos = false;
  bool add_eos = false;

  /// The chat template named `name`, parsed on first use (a broken template must not stop the tokenizer loading).
  [[nodiscard]] std::shared_ptr<const ChatTemplate> chat_template(const std::string& name) const;

  /// The token of `id`, or null outside the vocabulary.
  [[nodiscard]] std::optional<std::string_view> token(int32_t id) const;
  /// Tokenizer::decode without the clean-up.
  [[nodiscard]] std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;
  /// Tokenizer::token_bytes.
  [[nodiscard]] std::string token_bytes(int32_t id) const;

 private:
  mutable std::mutex chat_templates_mutex_;
  mutable std::map<std::string, std::shared_ptr<const ChatTemplate>, std::less<>> chat_templates_;
};

/// Builds a tokenizer from a parsed tokenizer.json (`source` names it in errors) and what tokenizer_config.json or
/// GGUF metadata says; `eot_id` overrides the end-of-turn token found by name.
std::shared_ptr<const TokenizerState> build_state(const nlohmann::json& tokenizer, const std::string& source,
                                                  TokenizerConfig config, std::optional<int32_t> eot_id = {});

}  // namespace nuvec::lm::detail

namespace nuvec::lm {

/// Wraps a built state in the public class.
Tokenizer make_tokenizer(std::shared_ptr<const detail::TokenizerState> state);

}  // namespace nuvec::lm
