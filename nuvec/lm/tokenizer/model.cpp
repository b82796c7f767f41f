#include "nuvec/lm/tokenizer/model.h"

#include "nuvec/lm/overload.h"

namespace nuvec::lm::detail {

Model Model::from_json(const JsonField& field) {
  // Files written before "type" was serialized hold a BPE model without it.
  std::string type = field.string_or("type", field.find("merges") ? "BPE" : "");
  if (type == "BPE") {
    return Model(Bpe::from_json(field));
  }
  if (type == "WordPiece") {
    return Model(WordPiece::from_json(field));
  }
  if (type == "Unigram") {
    return Model(Unigram::from_json(field));
  }
  if (type == "WordLevel") {
    return Model(WordLevel::from_json(field));
  }
  field.unsupported("unknown model type '" + type + "'");
}

void Model::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  std::visit(Overload{[&](const Bpe& model) { model.tokenize(word, ids); },
                      [&](const WordPiece& model) { model.tokenize(word, ids); },
                      [&](const Unigram& model) { model.tokenize(word, ids); },
                      [&](const WordLevel& model) { model.tokenize(word, ids); }},
             kind_);
}

const Vocab& Model::vocab() const {
  return std::visit(Overload{[](const Bpe& model) -> const Vocab& { return model.vocab(); },
                             [](const WordPiece& model) -> const Vocab& { return model.vocab(); },
                             [](const Unigram& model) -> const Vocab& { return model.vocab(); },
                             [](const WordLevel& model) -> const Vocab& { return model.vocab(); }},
                    kind_);
}

}  // namespace nuvec::lm::detail
