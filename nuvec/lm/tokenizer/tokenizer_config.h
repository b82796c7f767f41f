#pragma once

// What tokenizer_config.json adds to a tokenizer.json: the names of the special tokens (bos, eos, unk, pad; as
// strings or AddedToken objects), add_bos_token/add_eos_token, clean_up_tokenization_spaces, the chat templates
// (one string, or a list of {name, template}) and added_tokens_decoder.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/lm/tokenizer/added_vocabulary.h"
#include "nuvec/lm/tokenizer/json_field.h"

namespace nuvec::lm::detail {

struct TokenizerConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> unk_token;
  std::optional<std::string> pad_token;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  bool clean_up_tokenization_spaces = false;
  /// (name, source); a single template is named "default".
  std::vector<std::pair<std::string, std::string>> chat_templates;
  /// The entries of added_tokens_decoder, ids included.
  std::vector<AddedToken> added_tokens;

  /// Reads the root object of a tokenizer_config.json.
  static TokenizerConfig from_json(const JsonField& root);
};

}  // namespace nuvec::lm::detail
