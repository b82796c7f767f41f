#include "nuvec/serve/request_channel.h"

#include <utility>

namespace nuvec::serve {

RequestChannel::RequestChannel(int sequences) : open_sequences_(sequences) {}

void RequestChannel::push(SequenceEvent event) {
  {
    std::lock_guard lock(mutex_);
    if (event.ends_sequence()) {
      --open_sequences_;
    }
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
}

std::vector<SequenceEvent> RequestChannel::take(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, wait, [this] { return !events_.empty(); });
  std::vector<SequenceEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

bool RequestChannel::finished() const {
  std::lock_guard lock(mutex_);
  return open_sequences_ <= 0 && events_.empty();
}

}  // namespace nuvec::serve
