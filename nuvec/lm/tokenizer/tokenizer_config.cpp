#include "nuvec/lm/tokenizer/tokenizer_config.h"

#include <limits>

namespace nuvec::lm::detail {

namespace {

// A special token given as a string or as an AddedToken object {"content": ..., "__type": "AddedToken"}.
std::optional<std::string> token_name(const JsonField& root, std::string_view key) {
  auto field = root.find(key);
  if (!field) {
    return std::nullopt;
  }
  if (field->value().is_object()) {
    return (*field)["content"].string();
  }
  return field->string();
}

std::optional<bool> optional_bool(const JsonField& root, std::string_view key) {
  auto field = root.find(key);
  return field ? std::optional<bool>(field->boolean()) : std::nullopt;
}

}  // namespace

TokenizerConfig TokenizerConfig::from_json(const JsonField& root) {
  TokenizerConfig config;
  config.bos_token = token_name(root, "bos_token");
  config.eos_token = token_name(root, "eos_token");
  config.unk_token = token_name(root, "unk_token");
  config.pad_token = token_name(root, "pad_token");
  config.add_bos_token = optional_bool(root, "add_bos_token");
  config.add_eos_token = optional_bool(root, "add_eos_token");
  config.clean_up_tokenization_spaces = root.boolean_or("clean_up_tokenization_spaces", false);
  if (auto templates = root.find("chat_template")) {
    if (templates->value().is_string()) {
      config.chat_templates.emplace_back("default", templates->string());
    } else {
      for (size_t i = 0; i < templates->size(); ++i) {
        JsonField entry = templates->at(i);
        config.chat_templates.emplace_back(entry["name"].string(), entry["template"].string());
      }
    }
  }
  if (auto decoder = root.find("added_tokens_decoder")) {
    if (!decoder->value().is_object()) {
      decoder->fail("expected an object of id: AddedToken");
    }
    for (const auto& item : decoder->value().items()) {
      JsonField entry = (*decoder)[item.key()];
      AddedToken token = AddedToken::from_json(entry);
      size_t end = 0;
      long long id = -1;
      try {
        id = std::stoll(item.key(), &end);
      } catch (const std::exception&) {
        end = 0;
      }
      if (end != item.key().size() || id < 0 || id > std::numeric_limits<int32_t>::max()) {
        entry.fail("the key is not a token id");
      }
      token.id = static_cast<int32_t>(id);
      config.added_tokens.push_back(std::move(token));
    }
  }
  return config;
}

}  // namespace nuvec::lm::detail
