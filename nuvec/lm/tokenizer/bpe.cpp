#include "nuvec/lm/tokenizer/bpe.h"

#include <array>
#include <cstdio>
#include <mutex>
#include <queue>
#include <span>
#include <unordered_map>

#include "nuvec/lm/utf8.h"

namespace nuvec::lm::detail {

namespace {

struct Merge {
  uint32_t rank;
  int32_t id;
};

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// A cache of tokenized words, split into shards so threads rarely wait on each other. Like Hugging Face's it stops
// growing when full and skips long words.
class WordCache {
 public:
  static constexpr size_t shard_count = 32;
  static constexpr size_t shard_capacity = 4096;
  static constexpr size_t max_word_bytes = 256;

  bool find(std::string_view word, std::vector<int32_t>& ids) const {
    Shard& shard = shards_[shard_of(word)];
    std::lock_guard lock(shard.mutex);
    auto it = shard.words.find(word);
    if (it == shard.words.end()) {
      return false;
    }
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    return true;
  }

  void insert(std::string_view word, std::span<const int32_t> ids) const {
    if (word.size() > max_word_bytes) {
      return;
    }
    Shard& shard = shards_[shard_of(word)];
    std::lock_guard lock(shard.mutex);
    if (shard.words.size() < shard_capacity) {
      shard.words.emplace(std::string(word), std::vector<int32_t>(ids.begin(), ids.end()));
    }
  }

 private:
  struct Shard {
    std::mutex mutex;
    StringMap<std::vector<int32_t>> words;
  };
  static size_t shard_of(std::string_view word) { return StringHash{}(word) % shard_count; }
  mutable std::array<Shard, shard_count> shards_;
};

}  // namespace

struct Bpe::Data {
  Vocab vocab;
  std::unordered_map<uint64_t, Merge> merges;
  std::optional<int32_t> unk_id;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  std::array<int32_t, 256> byte_ids{};  // the ids of <0x00>..<0xFF>, -1 where missing
  WordCache cache;

  void merge_word(std::string_view word, std::vector<int32_t>& ids) const;
};

namespace {

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool removed;
};

struct Candidate {
  uint32_t rank;
  int32_t pos;
  int32_t id;
  // The lowest rank first, then the leftmost position.
  bool operator<(const Candidate& other) const { return rank != other.rank ? rank > other.rank : pos > other.pos; }
};

std::pair<std::string, std::string> read_merge(const JsonField& field) {
  if (field.value().is_string()) {
    std::string line = field.string();
    auto space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
      field.fail("expected two tokens separated by one space, got '" + line + "'");
    }
    return {line.substr(0, space), line.substr(space + 1)};
  }
  if (field.value().is_array() && field.size() == 2) {
    return {field.at(0).string(), field.at(1).string()};
  }
  field.fail("expected a string \"a b\" or a pair [\"a\", \"b\"]");
}

}  // namespace

Bpe Bpe::from_json(const JsonField& model) {
  auto data = std::make_shared<Data>();
  data->vocab = Vocab::from_json(model["vocab"]);
  data->continuing_subword_prefix = model.string_or("continuing_subword_prefix", "");
  data->end_of_word_suffix = model.string_or("end_of_word_suffix", "");
  data->fuse_unk = model.boolean_or("fuse_unk", false);
  data->byte_fallback = model.boolean_or("byte_fallback", false);
  data->ignore_merges = model.boolean_or("ignore_merges", false);
  // "dropout" only matters for training; inference ignores it.
  if (auto unk = model.find("unk_token")) {
    data->unk_id = data->vocab.find(unk->string());
    if (!data->unk_id) {
      unk->fail("the unknown token '" + unk->string() + "' is not in model.vocab");
    }
  }
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    data->byte_ids[byte] = data->vocab.find(name).value_or(-1);
  }
  JsonField merges = model["merges"];
  size_t count = merges.size();
  data->merges.reserve(count);
  size_t prefix_length = data->continuing_subword_prefix.size();
  for (size_t rank = 0; rank < count; ++rank) {
    JsonField field = merges.at(rank);
    auto [left, right] = read_merge(field);
    auto left_id = data->vocab.find(left);
    auto right_id = data->vocab.find(right);
    if (!left_id || !right_id) {
      field.fail("token '" + (left_id ? right : left) + "' is not in model.vocab");
    }
    std::string merged =
        left +
        (right.compare(0, prefix_length, data->continuing_subword_prefix) == 0 ? right.substr(prefix_length) : right);
    auto merged_id = data->vocab.find(merged);
    if (!merged_id) {
      field.fail("the merged token '" + merged + "' is not in model.vocab");
    }
    // A repeated pair takes its last rank, as Hugging Face's map does.
    data->merges.insert_or_assign(pair_key(*left_id, *right_id), Merge{static_cast<uint32_t>(rank), *merged_id});
  }
  Bpe bpe;
  bpe.data_ = std::move(data);
  return bpe;
}

const Vocab& Bpe::vocab() const { return data_->vocab; }

void Bpe::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) {
    return;
  }
  const Data& data = *data_;
  if (data.ignore_merges) {
    if (auto id = data.vocab.find(word)) {
      ids.push_back(*id);
      return;
    }
  }
  if (data.cache.find(word, ids)) {
    return;
  }
  size_t start = ids.size();
  data.merge_word(word, ids);
  data.cache.insert(word, std::span<const int32_t>(ids).subspan(start));
}

void Bpe::Data::merge_word(std::string_view word, std::vector<int32_t>& ids) const {
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto push = [&](int32_t id) {
    auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, index - 1, index + 1, false});
  };
  // A run of unknown characters waiting to be pushed (one token when fuse_unk).
  bool pending_unk = false;
  std::string piece;
  for (size_t pos = 0; pos < word.size();) {
    size_t length = utf8_length(static_cast<unsigned char>(word[pos]));
    std::string_view character = word.substr(pos, length);
    piece.clear();
    if (pos > 0) {
      piece += continuing_subword_prefix;
    }
    piece += character;
    pos += length;
    if (pos == word.size()) {
      piece += end_of_word_suffix;
    }
    if (auto id = vocab.find(piece)) {
      if (pending_unk) {
        push(*unk_id);
        pending_unk = false;
      }
      push(*id);
      continue;
    }
    if (byte_fallback) {
      bool all = true;
      for (char byte : character) {
        all = all && byte_ids[static_cast<unsigned char>(byte)] >= 0;
      }
      if (all) {
        for (char byte : character) {
          push(byte_ids[static_cast<unsigned char>(byte)]);
        }
        continue;
      }
    }
    if (unk_id) {
      if (pending_unk && !fuse_unk) {
        push(*unk_id);
      }
      pending_unk = true;
    }
  }
  if (pending_unk) {
    push(*unk_id);
  }
  if (symbols.empty()) {
    return;
  }
  symbols.back().next = -1;

  auto find_merge = [&](int32_t left, int32_t right) -> const Merge* {
    auto it = merges.find(pair_key(symbols[left].id, symbols[right].id));
    return it == merges.end() ? nullptr : &it->second;
  };
  std::priority_queue<Candidate> queue;
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) {
    if (const Merge* merge = find_merge(i, i + 1)) {
      queue.push(Candidate{merge->rank, i, merge->id});
    }
  }
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.removed || left.next < 0) {
      continue;
    }
    // A stale candidate: its pair has changed since it was queued.
    const Merge* current = find_merge(top.pos, left.next);
    if (current == nullptr || current->id != top.id) {
      continue;
    }
    Symbol& right = symbols[left.next];
    left.id = top.id;
    right.removed = true;
    left.next = right.next;
    if (left.next >= 0) {
      symbols[left.next].prev = top.pos;
    }
    if (left.prev >= 0) {
      if (const Merge* merge = find_merge(left.prev, top.pos)) {
        queue.push(Candidate{merge->rank, left.prev, merge->id});
      }
    }
    if (left.next >= 0) {
      if (const Merge* merge = find_merge(top.pos, left.next)) {
        queue.push(Candidate{merge->rank, top.pos, merge->id});
      }
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    ids.push_back(symbols[i].id);
  }
}

}  // namespace nuvec::lm::detail
