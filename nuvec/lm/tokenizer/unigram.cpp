#include "nuvec/lm/tokenizer/unigram.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "nuvec/core/error.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm::detail {

namespace {

// Unknown characters score this much below the lowest piece (SentencePiece's kUnkPenalty).
constexpr double unk_penalty = 10.0;

uint64_t edge_key(int32_t node, unsigned char byte) { return (static_cast<uint64_t>(node) << 8) | byte; }

}  // namespace

Unigram Unigram::from_json(const JsonField& model) {
  auto data = std::make_shared<Data>();
  JsonField vocab = model["vocab"];
  size_t count = vocab.size();
  data->scores.reserve(count);
  data->node_piece.push_back(-1);
  double min_score = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < count; ++i) {
    JsonField entry = vocab.at(i);
    if (entry.size() != 2) {
      entry.fail("expected a pair [piece, score]");
    }
    std::string piece = entry.at(0).string();
    double score = entry.at(1).number();
    auto id = static_cast<int32_t>(i);
    data->scores.push_back(score);
    min_score = std::min(min_score, score);
    int32_t node = 0;
    for (char byte : piece) {
      auto [it, inserted] = data->edges.try_emplace(edge_key(node, static_cast<unsigned char>(byte)),
                                                    static_cast<int32_t>(data->node_piece.size()));
      if (inserted) {
        data->node_piece.push_back(-1);
      }
      node = it->second;
    }
    if (node != 0) {
      data->node_piece[node] = id;
    }
    data->vocab.add(std::move(piece), id);
  }
  data->unk_score = min_score - unk_penalty;
  if (auto unk = model.find("unk_id")) {
    auto id = unk->integer();
    if (id < 0 || static_cast<size_t>(id) >= count) {
      unk->fail("unk_id out of range of model.vocab");
    }
    data->unk_id = static_cast<int32_t>(id);
  }
  data->byte_fallback = model.boolean_or("byte_fallback", false);
  Unigram unigram;
  unigram.data_ = std::move(data);
  return unigram;
}

void Unigram::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  const Data& data = *data_;
  struct Node {
    double score = 0;
    int32_t start = -1;  // where the best piece ending here starts; -1 while unreached
    int32_t id = -1;
  };
  size_t size = word.size();
  std::vector<Node> best(size + 1);
  for (size_t start = 0; start < size;) {
    double here = best[start].score;
    size_t char_length = std::min(utf8_length(static_cast<unsigned char>(word[start])), size - start);
    bool has_single = false;
    auto offer = [&](size_t end, double score, int32_t id) {
      Node& node = best[end];
      if (node.start < 0 || here + score > node.score) {
        node = Node{here + score, static_cast<int32_t>(start), id};
      }
    };
    int32_t trie = 0;
    for (size_t end = start; end < size; ++end) {
      auto edge = data.edges.find(edge_key(trie, static_cast<unsigned char>(word[end])));
      if (edge == data.edges.end()) {
        break;
      }
      trie = edge->second;
      if (int32_t id = data.node_piece[trie]; id >= 0) {
        offer(end + 1, data.scores[id], id);
        has_single = has_single || end + 1 - start == char_length;
      }
    }
    if (!has_single) {
      if (!data.unk_id) {
        throw_invalid("Unigram: no piece covers '" + std::string(word.substr(start, char_length)) +
                      "' and the model has no unk_id");
      }
      offer(start + char_length, data.unk_score, *data.unk_id);
    }
    start += char_length;
  }
  // Walk back from the end, fusing runs of unknown pieces into one.
  std::vector<size_t> starts;
  bool previous_unknown = false;
  for (size_t end = size; end > 0;) {
    const Node& node = best[end];
    bool unknown = data.unk_id && node.id == *data.unk_id;
    if (unknown && previous_unknown) {
      starts.back() = static_cast<size_t>(node.start);
    } else {
      starts.push_back(static_cast<size_t>(node.start));
    }
    previous_unknown = unknown;
    end = static_cast<size_t>(node.start);
  }
  std::reverse(starts.begin(), starts.end());
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t start = starts[i];
    size_t end = i + 1 < starts.size() ? starts[i + 1] : size;
    std::string_view piece = word.substr(start, end - start);
    if (auto id = data.vocab.find(piece)) {
      ids.push_back(*id);
      continue;
    }
    if (data.byte_fallback) {
      std::vector<int32_t> bytes;
      for (char byte : piece) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(byte));
        if (auto id = data.vocab.find(name)) {
          bytes.push_back(*id);
        } else {
          bytes.clear();
          break;
        }
      }
      if (!bytes.empty()) {
        ids.insert(ids.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (!data.unk_id) {
      throw_invalid("Unigram: '" + std::string(piece) + "' is not in the vocabulary and the model has no unk_id");
    }
    ids.push_back(*data.unk_id);
  }
}

}  // namespace nuvec::lm::detail
