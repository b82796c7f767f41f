#pragma once

// The post-processors of a tokenizer.json ("post_processor"): they add the special tokens around an encoded text
// when the caller asks for them (TemplateProcessing, BertProcessing, RobertaProcessing; ByteLevel only moves
// offsets, which nuvec does not report).

#include <cstdint>
#include <memory>
#include <vector>

#include "nuvec/lm/tokenizer/json_field.h"

namespace nuvec::lm::detail {

class PostProcessor {
 public:
  /// None: nothing is added.
  PostProcessor();
  /// Reads a "post_processor" object (null gives none); an unknown "type" is unsupported, naming the path.
  static PostProcessor from_json(const JsonField& field);

  /// `ids` of a single text with the special tokens added.
  [[nodiscard]] std::vector<int32_t> add_special_tokens(std::vector<int32_t> ids) const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace nuvec::lm::detail
