#include "nuvec/lm/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <deque>
#include <utility>
#include <variant>

#include "nuvec/lm/tokenizer/byte_level.h"
#include "nuvec/lm/overload.h"
#include "nuvec/lm/tokenizer/regex.h"
#include "nuvec/lm/tokenizer/unicode.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm {

namespace {

using detail::JsonField;

/// What happens to the delimiters a pattern finds (HF's SplitDelimiterBehavior).
enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

/// The words between two pre-tokenizers: spans of one buffer. `first` says whether the first span starts at the
/// beginning of the input, which only Metaspace's prepend_scheme "first" looks at.
struct Words {
  std::string text;
  std::vector<std::pair<size_t, size_t>> spans;
  bool first = false;

  void clear() {
    text.clear();
    spans.clear();
    first = false;
  }
  void add(std::string_view piece, bool piece_first) {
    if (piece.empty()) {
      return;
    }
    if (spans.empty()) {
      first = piece_first;
    }
    spans.emplace_back(text.size(), text.size() + piece.size());
    text += piece;
  }
};

/// A piece of a word as HF's find_matches gives it: a range and whether the pattern matched it.
struct Piece {
  size_t begin;
  size_t end;
  bool match;
};

/// Adds the parts of `word` that `pieces` (covering it in order) give under `behavior`, as HF's
/// NormalizedString::split does.
void add_split(std::string_view word, bool word_first, std::vector<Piece>& pieces, Behavior behavior, Words& out) {
  thread_local std::vector<Piece> kept;
  kept.clear();
  bool previous_match = false;
  switch (behavior) {
    case Behavior::isolated:
      kept = pieces;
      break;
    case Behavior::removed:
      for (const Piece& p : pieces) {
        if (!p.match) {
          kept.push_back(p);
        }
      }
      break;
    case Behavior::contiguous:
      for (const Piece& p : pieces) {
        if (p.match == previous_match && !kept.empty()) {
          kept.back().end = p.end;
        } else {
          kept.push_back(p);
        }
        previous_match = p.match;
      }
      break;
    case Behavior::merged_with_previous:
      for (const Piece& p : pieces) {
        if (p.match && !previous_match && !kept.empty()) {
          kept.back().end = p.end;
        } else {
          kept.push_back(p);
        }
        previous_match = p.match;
      }
      break;
    case Behavior::merged_with_next:
      for (size_t i = pieces.size(); i-- > 0;) {
        const Piece& p = pieces[i];
        if (p.match && !previous_match && !kept.empty()) {
          kept.back().begin = p.begin;
        } else {
          kept.push_back(p);
        }
        previous_match = p.match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  for (const Piece& p : kept) {
    out.add(word.substr(p.begin, p.end - p.begin), word_first && p.begin == 0);
  }
}

/// The pieces of `word` where every character `is_delimiter` accepts is a match of its own.
template <class Predicate>
void char_pieces(std::string_view word, Predicate&& is_delimiter, std::vector<Piece>& pieces) {
  size_t last = 0;
  for (size_t pos = 0; pos < word.size();) {
    size_t begin = pos;
    char32_t cp = detail::next_code_point(word, pos);
    if (is_delimiter(cp)) {
      if (last < begin) {
        pieces.push_back({last, begin, false});
      }
      pieces.push_back({begin, pos, true});
      last = pos;
    }
  }
  if (last < word.size()) {
    pieces.push_back({last, word.size(), false});
  }
}

void regex_pieces(std::string_view word, const detail::Regex& regex, std::vector<Piece>& pieces) {
  size_t last = 0;
  regex.for_each_match(word, [&](size_t start, size_t end) {
    if (last != start) {
      pieces.push_back({last, start, false});
    }
    pieces.push_back({start, end, true});
    last = end;
  });
  if (last != word.size()) {
    pieces.push_back({last, word.size(), false});
  }
}

void literal_pieces(std::string_view word, std::string_view literal, std::vector<Piece>& pieces) {
  size_t last = 0;
  if (!literal.empty()) {
    for (size_t at = word.find(literal); at != std::string_view::npos; at = word.find(literal, last)) {
      if (last != at) {
        pieces.push_back({last, at, false});
      }
      pieces.push_back({at, at + literal.size(), true});
      last = at + literal.size();
    }
  }
  if (last != word.size()) {
    pieces.push_back({last, word.size(), false});
  }
}

struct Split {
  std::string literal;                         // the pattern when it is a string
  std::shared_ptr<const detail::Regex> regex;  // the pattern when it is a regex
  Behavior behavior = Behavior::isolated;
  bool invert = false;
};

struct ByteLevel {
  bool add_prefix_space = true;
  bool use_regex = true;
};

enum class PrependScheme { first, never, always };

struct Metaspace {
  std::string replacement = "\xE2\x96\x81";
  char32_t replacement_char = 0x2581;
  PrependScheme prepend_scheme = PrependScheme::always;
  bool split = true;
};

struct Digits {
  bool individual_digits = false;
};

struct Punctuation {
  Behavior behavior = Behavior::isolated;
};

struct CharDelimiterSplit {
  char32_t delimiter = ' ';
};

struct Whitespace {};
struct WhitespaceSplit {};
struct BertPreTokenizer {};

struct Node;

struct Sequence {
  std::vector<Node> items;
};

using Kind = std::variant<Split, ByteLevel, Metaspace, Digits, Punctuation, CharDelimiterSplit, Whitespace,
                          WhitespaceSplit, BertPreTokenizer, Sequence>;

struct Node {
  Kind kind;
};

/// GPT-2's pattern, which ByteLevel splits with when use_regex is set.
const detail::Regex& gpt2_regex() {
  static const detail::Regex regex(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  return regex;
}

/// Runs of word characters and runs of other non-space characters (the regex crate's `\w+|[^\w\s]+`).
void whitespace_words(std::string_view word, bool word_first, Words& out) {
  size_t begin = 0;
  int run_class = -1;  // 0: word characters, 1: others, -1: none
  for (size_t pos = 0; pos < word.size();) {
    size_t at = pos;
    char32_t cp = detail::next_code_point(word, pos);
    int cls = detail::is_regex_word(cp) ? 0 : detail::is_white_space(cp) ? -1 : 1;
    if (cls != run_class) {
      if (run_class >= 0) {
        out.add(word.substr(begin, at - begin), word_first && begin == 0);
      }
      begin = at;
      run_class = cls;
    }
  }
  if (run_class >= 0) {
    out.add(word.substr(begin), word_first && begin == 0);
  }
}

/// Calls `on_word(word, word_first)` for each word of `words`.
void for_each_word(const Words& words, auto&& on_word) {
  for (size_t i = 0; i < words.spans.size(); ++i) {
    auto [begin, end] = words.spans[i];
    on_word(std::string_view(words.text).substr(begin, end - begin), i == 0 && words.first);
  }
}

/// Per-thread buffers for the words between the steps of sequences, so splitting allocates little.
Words& scratch(size_t index) {
  thread_local std::deque<Words> buffers;
  while (buffers.size() <= index) {
    buffers.emplace_back();
  }
  return buffers[index];
}

/// Applies one pre-tokenizer to each word of `in`, appending the results to `out`; `depth` is the nesting of
/// sequences, which picks the scratch buffers.
void run(const Kind& kind, const Words& in, Words& out, size_t depth) {
  thread_local std::vector<Piece> pieces;
  auto split_by = [&](auto&& make_pieces, Behavior behavior, Words& to) {
    for_each_word(in, [&](std::string_view word, bool word_first) {
      pieces.clear();
      make_pieces(word);
      add_split(word, word_first, pieces, behavior, to);
    });
  };
  std::visit(
      detail::Overload{
          [&](const Split& s) {
            split_by(
                [&](std::string_view word) {
                  if (s.regex) {
                    regex_pieces(word, *s.regex, pieces);
                  } else {
                    literal_pieces(word, s.literal, pieces);
                  }
                  if (s.invert) {
                    for (Piece& p : pieces) {
                      p.match = !p.match;
                    }
                  }
                },
                s.behavior, out);
          },
          [&](const ByteLevel& b) {
            std::string prefixed;
            std::string mapped;
            for_each_word(in, [&](std::string_view word, bool word_first) {
              if (b.add_prefix_space && word.front() != ' ') {
                prefixed.assign(1, ' ');
                prefixed.append(word.data(), word.size());
                word = prefixed;
              }
              auto add_mapped = [&](std::string_view piece, bool piece_first) {
                mapped.clear();
                detail::to_byte_level(piece, mapped);
                out.add(mapped, piece_first);
              };
              if (!b.use_regex) {
                add_mapped(word, word_first);
                return;
              }
              size_t last = 0;
              gpt2_regex().for_each_match(word, [&](size_t start, size_t end) {
                if (last != start) {
                  add_mapped(word.substr(last, start - last), word_first && last == 0);
                }
                add_mapped(word.substr(start, end - start), word_first && start == 0);
                last = end;
              });
              if (last != word.size()) {
                add_mapped(word.substr(last), word_first && last == 0);
              }
            });
          },
          [&](const Metaspace& m) {
            std::string replaced;
            for_each_word(in, [&](std::string_view word, bool word_first) {
              replaced.clear();
              bool prepend =
                  m.prepend_scheme == PrependScheme::always || (m.prepend_scheme == PrependScheme::first && word_first);
              if (prepend && !(word.starts_with(m.replacement) || word.front() == ' ')) {
                replaced = m.replacement;
              }
              for (char c : word) {
                if (c == ' ') {
                  replaced += m.replacement;
                } else {
                  replaced += c;
                }
              }
              if (!m.split) {
                out.add(replaced, word_first);
                return;
              }
              pieces.clear();
              char_pieces(
                  replaced, [&](char32_t cp) { return cp == m.replacement_char; }, pieces);
              add_split(replaced, word_first, pieces, Behavior::merged_with_next, out);
            });
          },
          [&](const Digits& d) {
            split_by([&](std::string_view word) { char_pieces(word, detail::is_numeric, pieces); },
                     d.individual_digits ? Behavior::isolated : Behavior::contiguous, out);
          },
          [&](const Punctuation& p) {
            split_by([&](std::string_view word) { char_pieces(word, detail::is_bert_punctuation, pieces); }, p.behavior,
                     out);
          },
          [&](const CharDelimiterSplit& c) {
            split_by(
                [&](std::string_view word) {
                  char_pieces(
                      word, [&](char32_t cp) { return cp == c.delimiter; }, pieces);
                },
                Behavior::removed, out);
          },
          [&](const Whitespace&) {
            for_each_word(in, [&](std::string_view word, bool word_first) { whitespace_words(word, word_first, out); });
          },
          [&](const WhitespaceSplit&) {
            split_by([&](std::string_view word) { char_pieces(word, detail::is_white_space, pieces); },
                     Behavior::removed, out);
          },
          [&](const BertPreTokenizer&) {
            Words& spaced = scratch(2 * depth);
            spaced.clear();
            split_by([&](std::string_view word) { char_pieces(word, detail::is_white_space, pieces); },
                     Behavior::removed, spaced);
            for_each_word(spaced, [&](std::string_view word, bool word_first) {
              pieces.clear();
              char_pieces(word, detail::is_bert_punctuation, pieces);
              add_split(word, word_first, pieces, Behavior::isolated, out);
            });
          },
          [&](const Sequence& s) {
            if (s.items.empty()) {
              for_each_word(in, [&](std::string_view word, bool word_first) { out.add(word, word_first); });
              return;
            }
            const Words* source = &in;
            for (size_t i = 0; i < s.items.size(); ++i) {
              Words& target = i + 1 == s.items.size() ? out : scratch(2 * depth + i % 2);
              if (&target != &out) {
                target.clear();
              }
              run(s.items[i].kind, *source, target, depth + 1);
              source = &target;
            }
          },
      },
      kind);
}

Behavior parse_behavior(const JsonField& field) {
  std::string name = field.string();
  if (name == "Removed") {
    return Behavior::removed;
  }
  if (name == "Isolated") {
    return Behavior::isolated;
  }
  if (name == "MergedWithPrevious") {
    return Behavior::merged_with_previous;
  }
  if (name == "MergedWithNext") {
    return Behavior::merged_with_next;
  }
  if (name == "Contiguous") {
    return Behavior::contiguous;
  }
  field.fail("unknown split behavior '" + name + "'");
}

/// The single character of a string field.
char32_t single_char(const JsonField& field) {
  std::string text = field.string();
  size_t pos = 0;
  char32_t cp = text.empty() ? 0 : detail::next_code_point(text, pos);
  if (text.empty() || pos != text.size()) {
    field.fail("expected a single character");
  }
  return cp;
}

Kind parse(const JsonField& field) {
  std::string type = field["type"].string();
  if (type == "Split") {
    Split split;
    JsonField pattern = field["pattern"];
    if (auto literal = pattern.find("String")) {
      split.literal = literal->string();
    } else if (auto regex = pattern.find("Regex")) {
      split.regex = detail::compile_regex(*regex);
    } else {
      pattern.fail("expected {\"String\": ...} or {\"Regex\": ...}");
    }
    split.behavior = parse_behavior(field["behavior"]);
    split.invert = field.boolean_or("invert", false);
    return split;
  }
  if (type == "ByteLevel") {
    return ByteLevel{field.boolean_or("add_prefix_space", true), field.boolean_or("use_regex", true)};
  }
  if (type == "Metaspace") {
    Metaspace m;
    JsonField replacement = field["replacement"];
    m.replacement_char = single_char(replacement);
    m.replacement = replacement.string();
    m.split = field.boolean_or("split", true);
    if (auto scheme = field.find("prepend_scheme")) {
      std::string name = scheme->string();
      if (name == "first") {
        m.prepend_scheme = PrependScheme::first;
      } else if (name == "never") {
        m.prepend_scheme = PrependScheme::never;
      } else if (name == "always") {
        m.prepend_scheme = PrependScheme::always;
      } else {
        scheme->fail("unknown prepend_scheme '" + name + "'");
      }
    }
    // Older files only say add_prefix_space; false means never.
    if (!field.boolean_or("add_prefix_space", true)) {
      m.prepend_scheme = PrependScheme::never;
    }
    return m;
  }
  if (type == "Digits") {
    return Digits{field.boolean_or("individual_digits", false)};
  }
  if (type == "Punctuation") {
    auto behavior = field.find("behavior");
    return Punctuation{behavior ? parse_behavior(*behavior) : Behavior::isolated};
  }
  if (type == "CharDelimiterSplit") {
    return CharDelimiterSplit{single_char(field["delimiter"])};
  }
  if (type == "Whitespace") {
    return Whitespace{};
  }
  if (type == "WhitespaceSplit") {
    return WhitespaceSplit{};
  }
  if (type == "BertPreTokenizer") {
    return BertPreTokenizer{};
  }
  if (type == "Sequence") {
    JsonField list = field["pretokenizers"];
    Sequence sequence;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list.at(i).is_null()) {
        sequence.items.push_back(Node{parse(list.at(i))});
      }
    }
    return sequence;
  }
  field["type"].unsupported("unknown pre-tokenizer type '" + type + "'");
}

}  // namespace

struct PreTokenizer::Impl {
  Kind kind;
};

PreTokenizer::PreTokenizer() = default;

PreTokenizer PreTokenizer::from_json(const JsonField& field) {
  PreTokenizer pre_tokenizer;
  if (!field.is_null()) {
    pre_tokenizer.impl_ = std::make_shared<const Impl>(Impl{parse(field)});
  }
  return pre_tokenizer;
}

void PreTokenizer::split(std::string_view segment, bool first_segment, std::vector<std::string>& words) const {
  if (segment.empty()) {
    return;
  }
  if (!impl_) {
    words.emplace_back(segment);
    return;
  }
  thread_local Words input;
  thread_local Words output;
  input.clear();
  output.clear();
  input.add(segment, first_segment);
  run(impl_->kind, input, output, 0);
  words.reserve(words.size() + output.spans.size());
  for (auto [begin, end] : output.spans) {
    words.emplace_back(std::string_view(output.text).substr(begin, end - begin));
  }
}

}  // namespace nuvec::lm
