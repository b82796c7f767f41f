#include "nuvec/lm/tokenizer/streaming_detokenizer.h"

#include "nuvec/core/error.h"
#include "nuvec/lm/tokenizer/tokenizer_state.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm {

// The window holds context ids (already returned) and the ids not yet returned. Decoding the whole window and
// dropping the context's text gives the new text with the context's influence on it (a Strip or Metaspace decoder
// treats only the first token differently, WordPiece joins "##" pieces to the one before). Text is held back while
// the bytes of the ids not yet returned end inside a character that later bytes could complete, or while the last id
// is a byte token a ByteFallback decoder may still join with the next ones. Bytes that can never become a character
// (a lone continuation byte) go out at once as U+FFFD, as decode() gives them.

StreamingDetokenizer::StreamingDetokenizer(std::shared_ptr<const detail::TokenizerState> state,
                                           bool skip_special_tokens)
    : state_(std::move(state)), skip_special_tokens_(skip_special_tokens) {}

std::string StreamingDetokenizer::add(int32_t id) {
  if (!state_->token(id)) {
    throw_invalid("detokenizer: id " + std::to_string(id) + " is outside the vocabulary (size " +
                  std::to_string(state_->vocab_size) + ")");
  }
  ids_.push_back(id);
  if (state_->held_back[id]) {
    return {};
  }
  std::string text = state_->decode(ids_, skip_special_tokens_);
  if (text.size() <= prefix_.size() || text.compare(0, prefix_.size(), prefix_) != 0 || ends_inside_character()) {
    return {};
  }
  std::string out = text.substr(prefix_.size());
  // The ids just returned become the context of the next ones.
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_ids_));
  prefix_ = state_->decode(ids_, skip_special_tokens_);
  prefix_ids_ = ids_.size();
  return out;
}

bool StreamingDetokenizer::ends_inside_character() const {
  std::string bytes;
  for (size_t i = prefix_ids_; i < ids_.size(); ++i) {
    if (!skip_special_tokens_ || !state_->special[ids_[i]]) {
      bytes += state_->token_bytes(ids_[i]);
    }
  }
  return detail::partial_character_length(bytes) > 0;
}

std::string StreamingDetokenizer::finish() {
  std::string text = state_->decode(ids_, skip_special_tokens_);
  std::string out = text.size() > prefix_.size() ? text.substr(prefix_.size()) : std::string();
  ids_.clear();
  prefix_ids_ = 0;
  prefix_.clear();
  return out;
}

}  // namespace nuvec::lm
