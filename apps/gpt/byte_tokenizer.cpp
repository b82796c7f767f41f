#include "apps/gpt/byte_tokenizer.h"

#include "nuvec/lm/tokenizer/byte_level.h"

namespace nuvec::gpt {

namespace {

const char* chat_template_source =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

nlohmann::ordered_json added_token(int id, const char* content) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

}  // namespace

nlohmann::ordered_json byte_tokenizer_json() {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  const auto& chars = lm::detail::byte_level_chars();
  for (int b = 0; b < 256; ++b) {
    vocab[chars[static_cast<size_t>(b)]] = b;
  }
  const char* specials[] = {end_of_text, turn_start, turn_end};
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  for (int i = 0; i < 3; ++i) {
    vocab[specials[i]] = 256 + i;
    added.push_back(added_token(256 + i, specials[i]));
  }
  nlohmann::ordered_json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor", nullptr},
          {"decoder", byte_level},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", nlohmann::ordered_json::array()}}}};
}

nlohmann::ordered_json byte_tokenizer_config() {
  return {{"tokenizer_class", "PreTrainedTokenizerFast"},
          {"bos_token", nullptr},
          {"eos_token", turn_end},
          {"pad_token", end_of_text},
          {"add_bos_token", false},
          {"clean_up_tokenization_spaces", false},
          {"model_max_length", 1 << 20},
          {"chat_template", chat_template_source}};
}

std::string chatml_exchange(const std::string& user, const std::string& assistant) {
  return std::string(turn_start) + "user\n" + user + turn_end + "\n" + turn_start + "assistant\n" + assistant +
         turn_end + "\n";
}

}  // namespace nuvec::gpt
