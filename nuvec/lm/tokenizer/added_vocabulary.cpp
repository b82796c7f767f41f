#include "nuvec/lm/tokenizer/added_vocabulary.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>

#include "nuvec/lm/tokenizer/unicode.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm {

namespace {

/// A byte trie of the tokens' contents that finds, at a position, the longest content starting there (what an
/// Aho-Corasick automaton with leftmost-longest matching reports, scanning left to right).
class TokenTrie {
 public:
  TokenTrie() { root_.fill(-1); }

  /// Builds the trie of `patterns[i]` -> `i`, skipping empty patterns; the first of equal patterns wins.
  explicit TokenTrie(const std::vector<std::string>& patterns) : TokenTrie() {
    std::vector<std::map<unsigned char, int32_t>> children(1);
    std::vector<int32_t> values(1, -1);
    for (size_t i = 0; i < patterns.size(); ++i) {
      if (patterns[i].empty()) {
        continue;
      }
      int32_t node = 0;
      for (char ch : patterns[i]) {
        auto c = static_cast<unsigned char>(ch);
        auto it = children[node].find(c);
        if (it == children[node].end()) {
          auto created = static_cast<int32_t>(children.size());
          children[node].emplace(c, created);
          children.emplace_back();
          values.push_back(-1);
          node = created;
        } else {
          node = it->second;
        }
      }
      if (values[node] < 0) {
        values[node] = static_cast<int32_t>(i);
      }
    }
    // Flatten into sorted edge arrays (the root gets a direct table: most positions fail on the first byte).
    nodes_.resize(children.size());
    for (size_t n = 0; n < children.size(); ++n) {
      nodes_[n].first_edge = static_cast<uint32_t>(edges_.size());
      nodes_[n].edge_count = static_cast<uint32_t>(children[n].size());
      nodes_[n].value = values[n];
      for (auto [c, target] : children[n]) {
        edges_.push_back({c, target});
      }
    }
    for (auto [c, target] : children[0]) {
      root_[c] = target;
    }
    empty_ = children[0].empty();
  }

  [[nodiscard]] bool empty() const { return empty_; }

  /// The pattern index and end of the longest pattern starting at `text[pos]`, or -1.
  [[nodiscard]] int32_t longest_at(std::string_view text, size_t pos, size_t& end) const {
    int32_t node = root_[static_cast<unsigned char>(text[pos])];
    int32_t found = -1;
    for (size_t i = pos + 1; node >= 0; ++i) {
      if (nodes_[node].value >= 0) {
        found = nodes_[node].value;
        end = i;
      }
      if (i == text.size()) {
        break;
      }
      node = child(node, static_cast<unsigned char>(text[i]));
    }
    return found;
  }

 private:
  struct Node {
    uint32_t first_edge = 0;
    uint32_t edge_count = 0;
    int32_t value = -1;
  };
  struct Edge {
    unsigned char byte;
    int32_t target;
  };

  [[nodiscard]] int32_t child(int32_t node, unsigned char c) const {
    const Edge* begin = edges_.data() + nodes_[node].first_edge;
    const Edge* end = begin + nodes_[node].edge_count;
    while (begin < end) {
      const Edge* mid = begin + (end - begin) / 2;
      if (mid->byte < c) {
        begin = mid + 1;
      } else if (mid->byte > c) {
        end = mid;
      } else {
        return mid->target;
      }
    }
    return -1;
  }

  std::array<int32_t, 256> root_{};
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  bool empty_ = true;
};

/// A trie over some of the tokens, with the index in AddedVocabulary's token list of each pattern.
struct MatchingSet {
  TokenTrie trie;
  std::vector<size_t> token_of_pattern;
};

/// A piece of a text: an added token (index into the token list) or text, as byte offsets.
struct Split {
  int64_t token;  // -1 for text
  size_t begin;
  size_t end;
};

char32_t last_char(std::string_view text) {
  size_t start = text.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
    --start;
  }
  return detail::next_code_point(text, start);
}

/// Where the whitespace at the end of `text` begins.
size_t trailing_space_start(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
      --start;
    }
    size_t pos = start;
    if (!detail::is_white_space(detail::next_code_point(text, pos))) {
      break;
    }
    end = start;
  }
  return end;
}

/// The length of the whitespace at the start of `text`.
size_t leading_space_length(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next = pos;
    if (!detail::is_white_space(detail::next_code_point(text, next))) {
      break;
    }
    pos = next;
  }
  return pos;
}

}  // namespace

struct AddedVocabulary::Impl {
  std::vector<AddedToken> tokens;
  MatchingSet raw;
  // Tokens with normalized=true match in their normalized form, which needs the tokenizer's normalizer: built on
  // the first split.
  mutable std::once_flag normalized_once;
  mutable MatchingSet normalized;

  /// HF's find_matches: the tokens of `set` in `text` (leftmost, longest, not overlapping), with lstrip, rstrip
  /// and single_word applied, and the text between them.
  void find_matches(std::string_view text, const MatchingSet& set, std::vector<Split>& splits) const {
    splits.clear();
    size_t start_offset = 0;
    for (size_t pos = 0; pos < text.size();) {
      size_t end = 0;
      int32_t pattern = set.trie.longest_at(text, pos, end);
      if (pattern < 0) {
        ++pos;
        continue;
      }
      size_t start = pos;
      size_t stop = end;
      pos = end;
      const AddedToken& token = tokens[set.token_of_pattern[static_cast<size_t>(pattern)]];
      if (token.single_word) {
        bool word_before = start > 0 && detail::is_regex_word(last_char(text.substr(0, start)));
        size_t after = stop;
        bool word_after = stop < text.size() && detail::is_regex_word(detail::next_code_point(text, after));
        if (word_before || word_after) {
          continue;
        }
      }
      if (token.lstrip) {
        // Whitespace an earlier token already took stays with it.
        start = std::max(trailing_space_start(text.substr(0, start)), start_offset);
      }
      if (token.rstrip) {
        stop += leading_space_length(text.substr(stop));
      }
      if (start_offset < start) {
        splits.push_back({-1, start_offset, start});
      }
      splits.push_back({static_cast<int64_t>(set.token_of_pattern[static_cast<size_t>(pattern)]), start, stop});
      start_offset = stop;
    }
    if (start_offset != text.size()) {
      splits.push_back({-1, start_offset, text.size()});
    }
  }
};

AddedToken AddedToken::from_json(const detail::JsonField& field) {
  AddedToken token;
  token.content = field["content"].string();
  token.id = static_cast<int32_t>(field.integer_or("id", -1));
  token.special = field.boolean_or("special", false);
  token.lstrip = field.boolean_or("lstrip", false);
  token.rstrip = field.boolean_or("rstrip", false);
  token.single_word = field.boolean_or("single_word", false);
  token.normalized = field.boolean_or("normalized", !token.special);
  return token;
}

AddedVocabulary::AddedVocabulary() : AddedVocabulary(std::vector<AddedToken>{}) {}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens) {
  auto impl = std::make_shared<Impl>();
  impl->tokens = std::move(tokens);
  // HF matches the special tokens' patterns before the others'; it only matters for equal contents.
  std::vector<std::string> patterns;
  for (bool special : {true, false}) {
    for (size_t i = 0; i < impl->tokens.size(); ++i) {
      const AddedToken& token = impl->tokens[i];
      if (token.special == special && !token.normalized && !token.content.empty()) {
        patterns.push_back(token.content);
        impl->raw.token_of_pattern.push_back(i);
      }
    }
  }
  impl->raw.trie = TokenTrie(patterns);
  impl_ = std::move(impl);
}

std::vector<Segment> AddedVocabulary::split(std::string_view text, const Normalizer& normalizer) const {
  std::vector<Segment> segments;
  if (text.empty()) {
    return segments;
  }
  const Impl& impl = *impl_;
  std::call_once(impl.normalized_once, [&] {
    std::vector<std::string> patterns;
    for (bool special : {true, false}) {
      for (size_t i = 0; i < impl.tokens.size(); ++i) {
        const AddedToken& token = impl.tokens[i];
        if (token.special == special && token.normalized && !token.content.empty()) {
          patterns.push_back(normalizer.apply(token.content));
          impl.normalized.token_of_pattern.push_back(i);
        }
      }
    }
    impl.normalized.trie = TokenTrie(patterns);
  });

  thread_local std::vector<Split> raw_splits;
  thread_local std::vector<Split> normalized_splits;
  impl.find_matches(text, impl.raw, raw_splits);
  for (const Split& piece : raw_splits) {
    if (piece.token >= 0) {
      segments.push_back({std::string(), impl.tokens[static_cast<size_t>(piece.token)].id, false});
      continue;
    }
    bool first = piece.begin == 0;
    std::string normalized = normalizer.apply(text.substr(piece.begin, piece.end - piece.begin), first);
    if (normalized.empty()) {
      continue;
    }
    if (impl.normalized.trie.empty()) {
      segments.push_back({std::move(normalized), -1, first});
      continue;
    }
    impl.find_matches(normalized, impl.normalized, normalized_splits);
    for (const Split& inner : normalized_splits) {
      if (inner.token >= 0) {
        segments.push_back({std::string(), impl.tokens[static_cast<size_t>(inner.token)].id, false});
      } else if (inner.end > inner.begin) {
        segments.push_back({normalized.substr(inner.begin, inner.end - inner.begin), -1, first && inner.begin == 0});
      }
    }
  }
  return segments;
}

const std::vector<AddedToken>& AddedVocabulary::tokens() const { return impl_->tokens; }

}  // namespace nuvec::lm
