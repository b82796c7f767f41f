#include "nuvec/lm/tokenizer/word_level.h"

#include "nuvec/core/error.h"

namespace nuvec::lm::detail {

WordLevel WordLevel::from_json(const JsonField& model) {
  auto data = std::make_shared<Data>();
  data->vocab = Vocab::from_json(model["vocab"]);
  if (auto unk = model.find("unk_token")) {
    data->unk_id = data->vocab.find(unk->string()).value_or(-1);
  }
  WordLevel word_level;
  word_level.data_ = std::move(data);
  return word_level;
}

void WordLevel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  if (auto id = data_->vocab.find(word)) {
    ids.push_back(*id);
  } else if (data_->unk_id >= 0) {
    ids.push_back(data_->unk_id);
  } else {
    throw_invalid("WordLevel: '" + std::string(word) + "' is not in the vocabulary and there is no unknown token");
  }
}

}  // namespace nuvec::lm::detail
