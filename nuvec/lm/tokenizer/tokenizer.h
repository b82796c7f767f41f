#pragma once

// nuvec's tokenizer: the ids Hugging Face's `tokenizers` gives for the same tokenizer.json, from a tokenizer.json
// (with tokenizer_config.json beside it), a model folder or a GGUF file's tokenizer.ggml.* metadata.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nuvec/lm/chat_template.h"
#include "nuvec/lm/tokenizer/streaming_detokenizer.h"

namespace nuvec::lm {

class Tokenizer {
 public:
  /// Loads a tokenizer.json, with tokenizer_config.json and chat_template.jinja beside it when present.
  static Tokenizer from_file(const std::string& path);
  /// Loads a model folder holding tokenizer.json (and tokenizer_config.json, chat_template.jinja).
  static Tokenizer from_folder(const std::string& dir);
  /// Builds the tokenizer a GGUF file's tokenizer.ggml.* metadata describes ("gpt2" and "llama" vocabularies).
  static Tokenizer from_gguf(const std::string& gguf_path);
  /// A folder, a .gguf file or a tokenizer.json, by what `path` is.
  static Tokenizer load(const std::string& path);
  /// From the text of a tokenizer.json and, optionally, of a tokenizer_config.json.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view tokenizer_config = {});

  /// The ids of `text` (valid UTF-8, else throws), with the post-processor's special tokens when asked.
  [[nodiscard]] std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  /// encode() of each text, on several threads.
  [[nodiscard]] std::vector<std::vector<int32_t>> encode_batch(const std::vector<std::string>& texts,
                                                               bool add_special_tokens = true) const;
  /// The text of `ids` (throws for an id outside the vocabulary). Clean-up of tokenization spaces (" ." -> ".")
  /// is off by default, as in Hugging Face's Rust library.
  [[nodiscard]] std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false,
                                   bool clean_up_tokenization_spaces = false) const;
  /// The bytes `id` adds in the middle of a text: a byte token's byte, a byte-level token's bytes even where they
  /// are part of a character, a SentencePiece piece with its leading space, an added token's text. This is what
  /// OpenAI's logprobs call a token's `bytes`; decode() of the id alone may differ (lossy, or without the space).
  [[nodiscard]] std::string token_bytes(int32_t id) const;
  /// A detokenizer that turns ids into text one at a time.
  [[nodiscard]] StreamingDetokenizer detokenizer(bool skip_special_tokens = false) const;

  /// The id of `token` (added tokens first, then the model's vocabulary).
  [[nodiscard]] std::optional<int32_t> token_to_id(std::string_view token) const;
  /// The token of `id`.
  [[nodiscard]] std::optional<std::string> id_to_token(int32_t id) const;
  /// One past the largest id, added tokens included.
  [[nodiscard]] size_t vocab_size() const;
  /// Whether `id` is a special added token (what skip_special_tokens drops).
  [[nodiscard]] bool is_special(int32_t id) const;

  /// The beginning-of-sequence token and its id, when the tokenizer has one.
  [[nodiscard]] std::optional<std::string> bos_token() const;
  [[nodiscard]] std::optional<int32_t> bos_id() const;
  /// The end-of-sequence token and its id.
  [[nodiscard]] std::optional<std::string> eos_token() const;
  [[nodiscard]] std::optional<int32_t> eos_id() const;
  /// The end-of-turn id of chat models (<|eot_id|>, <|im_end|>, <end_of_turn>, ...), when there is one.
  [[nodiscard]] std::optional<int32_t> eot_id() const;
  /// Whether encode() with special tokens starts with the BOS token (add_bos_token of the config when given).
  [[nodiscard]] bool add_bos() const;
  /// Whether encode() with special tokens ends with the EOS token (add_eos_token of the config when given).
  [[nodiscard]] bool add_eos() const;
  /// clean_up_tokenization_spaces of tokenizer_config.json (what transformers' decode does by default).
  [[nodiscard]] bool clean_up_tokenization_spaces() const;
  /// The default chat template's source, empty when there is none.
  [[nodiscard]] std::string chat_template() const;
  /// All chat templates as (name, source); a single template is named "default".
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& chat_templates() const;
  /// The prompt the chat template makes of `messages`, as transformers' apply_chat_template (tokenize=False): the
  /// template named `template_name`, else "tool_use" when tools are given and the tokenizer has one, else the
  /// default; the tokenizer's BOS and EOS strings fill `options` where it leaves them empty. Throws when there is
  /// no such template, and for template errors (with the template's line).
  [[nodiscard]] std::string apply_chat_template(const nlohmann::ordered_json& messages,
                                                ChatTemplateOptions options = {},
                                                std::string_view template_name = {}) const;

 private:
  friend Tokenizer make_tokenizer(std::shared_ptr<const detail::TokenizerState> state);
  explicit Tokenizer(std::shared_ptr<const detail::TokenizerState> state) : state_(std::move(state)) {}

  std::shared_ptr<const detail::TokenizerState> state_;
};

}  // namespace nuvec::lm
