#include "nuvec/lm/tokenizer/wordpiece.h"

namespace nuvec::lm::detail {

WordPiece WordPiece::from_json(const JsonField& model) {
  auto data = std::make_shared<Data>();
  data->vocab = Vocab::from_json(model["vocab"]);
  data->prefix = model.string_or("continuing_subword_prefix", "##");
  data->max_input_chars_per_word = static_cast<size_t>(model.integer_or("max_input_chars_per_word", 100));
  std::string unk = model.string_or("unk_token", "[UNK]");
  auto unk_id = data->vocab.find(unk);
  if (!unk_id) {
    model.fail("the unknown token '" + unk + "' is not in model.vocab");
  }
  data->unk_id = *unk_id;
  WordPiece wordpiece;
  wordpiece.data_ = std::move(data);
  return wordpiece;
}

void WordPiece::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  const Data& data = *data_;
  size_t characters = 0;
  for (char byte : word) {
    characters += (static_cast<unsigned char>(byte) & 0xC0) != 0x80 ? 1 : 0;
  }
  if (characters > data.max_input_chars_per_word) {
    ids.push_back(data.unk_id);
    return;
  }
  size_t first = ids.size();
  std::string candidate;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    bool found = false;
    while (end > start) {
      candidate.assign(start > 0 ? data.prefix : std::string());
      candidate.append(word.substr(start, end - start));
      if (auto id = data.vocab.find(candidate)) {
        ids.push_back(*id);
        found = true;
        break;
      }
      // Back off by one character.
      do {
        --end;
      } while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (!found) {
      ids.resize(first);
      ids.push_back(data.unk_id);
      return;
    }
    start = end;
  }
}

}  // namespace nuvec::lm::detail
