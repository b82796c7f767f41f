#pragma once

// The byte-level tokenizer of the GPT example, as Hugging Face files: token id b is byte b (in GPT-2's byte-level
// alphabet, so tools that read tokenizer.json decode it), with no merges, followed by ChatML's special tokens, so
// the model trained here has a chat template and an end-of-turn token like the models people download.

#include <nlohmann/json.hpp>
#include <string>

namespace nuvec::gpt {

/// The special tokens after the 256 bytes: ids 256, 257 and 258.
inline constexpr const char* end_of_text = "<|endoftext|>";
inline constexpr const char* turn_start = "<|im_start|>";
inline constexpr const char* turn_end = "<|im_end|>";
inline constexpr int byte_vocabulary = 259;

/// tokenizer.json: a BPE model over the byte-level alphabet without merges, ByteLevel pre-tokenizer and decoder.
nlohmann::ordered_json byte_tokenizer_json();
/// tokenizer_config.json: the special tokens and a ChatML chat template.
nlohmann::ordered_json byte_tokenizer_config();

/// The ChatML text of one user turn and the assistant's answer, as the chat template renders it.
std::string chatml_exchange(const std::string& user, const std::string& assistant);

}  // namespace nuvec::gpt
