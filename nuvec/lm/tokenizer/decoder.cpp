#include "nuvec/lm/tokenizer/decoder.h"

#include <optional>
#include <variant>

#include "nuvec/lm/overload.h"
#include "nuvec/lm/tokenizer/byte_level.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm::detail {

namespace {

using Tokens = std::vector<std::string>;

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) {
    return;
  }
  std::string out;
  size_t pos = 0;
  for (size_t found; (found = text.find(from, pos)) != std::string::npos; pos = found + from.size()) {
    out.append(text, pos, found - pos);
    out.append(to);
  }
  if (pos == 0) {
    return;
  }
  out.append(text, pos);
  text = std::move(out);
}

// WordPiece's and CTC's clean-up: transformers' list plus " do not" -> " don't".
std::string wordpiece_cleanup(std::string text) {
  text = clean_up_tokenization(std::move(text));
  replace_all(text, " do not", " don't");
  return text;
}

std::string single_character(const JsonField& field) {
  std::string text = field.string();
  size_t pos = 0;
  next_code_point(text, pos);
  if (text.empty() || pos != text.size()) {
    field.fail("expected a single character");
  }
  return text;
}

struct ByteLevelDecoder {
  Tokens decode(const Tokens& tokens) const {
    std::string bytes;
    for (const std::string& token : tokens) {
      // A token outside the byte alphabet (an added token) stands for its own bytes.
      auto decoded = from_byte_level(token);
      bytes += decoded ? *decoded : token;
    }
    return {utf8_lossy(bytes)};
  }
};

struct ByteFallbackDecoder {
  static std::optional<unsigned char> byte_of(const std::string& token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') {
      return std::nullopt;
    }
    // Rust's u8::from_str_radix, which also takes a leading '+'.
    std::string digits = token.substr(3, 2);
    if (digits[0] == '+') {
      digits.erase(0, 1);
    }
    if (digits.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      return std::nullopt;
    }
    return static_cast<unsigned char>(std::stoi(digits, nullptr, 16));
  }

  Tokens decode(Tokens tokens) const {
    Tokens out;
    std::string bytes;
    auto flush = [&] {
      if (bytes.empty()) {
        return;
      }
      if (is_valid_utf8(bytes)) {
        out.push_back(bytes);
      } else {
        out.insert(out.end(), bytes.size(), "\xEF\xBF\xBD");
      }
      bytes.clear();
    };
    for (std::string& token : tokens) {
      if (auto byte = byte_of(token)) {
        bytes.push_back(static_cast<char>(*byte));
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    return out;
  }
};

struct MetaspaceDecoder {
  std::string replacement;
  bool strip_first;  // prepend_scheme is not "never": the first token loses its U+2581s

  Tokens decode(Tokens tokens) const {
    for (size_t i = 0; i < tokens.size(); ++i) {
      replace_all(tokens[i], replacement, i == 0 && strip_first ? "" : " ");
    }
    return tokens;
  }
};

struct FuseDecoder {
  Tokens decode(const Tokens& tokens) const {
    std::string joined;
    for (const std::string& token : tokens) {
      joined += token;
    }
    return {joined};
  }
};

struct StripDecoder {
  std::string content;
  size_t start;
  size_t stop;

  Tokens decode(Tokens tokens) const {
    for (std::string& token : tokens) {
      size_t begin = 0;
      for (size_t n = 0; n < start && token.compare(begin, content.size(), content) == 0; ++n) {
        begin += content.size();
      }
      size_t end = token.size();
      for (size_t n = 0; n < stop && end >= begin + content.size() &&
                         token.compare(end - content.size(), content.size(), content) == 0;
           ++n) {
        end -= content.size();
      }
      token = token.substr(begin, end - begin);
    }
    return tokens;
  }
};

struct ReplaceDecoder {
  std::string pattern;
  std::string content;

  Tokens decode(Tokens tokens) const {
    for (std::string& token : tokens) {
      replace_all(token, pattern, content);
    }
    return tokens;
  }
};

struct WordPieceDecoder {
  std::string prefix;
  bool cleanup;

  Tokens decode(Tokens tokens) const {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& token = tokens[i];
      if (i != 0) {
        if (token.compare(0, prefix.size(), prefix) == 0) {
          token.erase(0, prefix.size());
        } else {
          token.insert(0, 1, ' ');
        }
      }
      if (cleanup) {
        token = wordpiece_cleanup(std::move(token));
      }
    }
    return tokens;
  }
};

struct BpeDecoder {
  std::string suffix;

  Tokens decode(Tokens tokens) const {
    for (size_t i = 0; i < tokens.size(); ++i) {
      replace_all(tokens[i], suffix, i + 1 == tokens.size() ? "" : " ");
    }
    return tokens;
  }
};

struct CtcDecoder {
  std::string pad_token;
  std::string word_delimiter_token;
  bool cleanup;

  Tokens decode(Tokens tokens) const {
    Tokens out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0 && tokens[i] == tokens[i - 1]) {
        continue;
      }
      std::string token = tokens[i];
      replace_all(token, pad_token, "");
      if (cleanup) {
        token = wordpiece_cleanup(std::move(token));
        replace_all(token, word_delimiter_token, " ");
      }
      if (!token.empty()) {
        out.push_back(std::move(token));
      }
    }
    return out;
  }
};

struct SequenceDecoder {
  std::vector<Decoder> decoders;
};

}  // namespace

struct Decoder::Impl {
  using Kind = std::variant<ByteLevelDecoder, ByteFallbackDecoder, MetaspaceDecoder, FuseDecoder, StripDecoder,
                            ReplaceDecoder, WordPieceDecoder, BpeDecoder, CtcDecoder, SequenceDecoder>;
  Kind kind;
  bool joins_byte_tokens = false;
  bool maps_byte_level = false;

  Tokens decode(Tokens tokens) const {
    return std::visit(Overload{[&](const SequenceDecoder& sequence) {
                                 for (const Decoder& decoder : sequence.decoders) {
                                   tokens = decoder.impl_->decode(std::move(tokens));
                                 }
                                 return std::move(tokens);
                               },
                               [&](const auto& decoder) { return decoder.decode(std::move(tokens)); }},
                      kind);
  }
};

Decoder::Decoder() = default;

Decoder Decoder::from_json(const JsonField& field) {
  Decoder decoder;
  if (field.is_null()) {
    return decoder;
  }
  std::string type = field["type"].string();
  auto make = [&](Impl::Kind kind, bool joins_byte_tokens = false, bool maps_byte_level = false) {
    decoder.impl_ = std::make_shared<Impl>(Impl{std::move(kind), joins_byte_tokens, maps_byte_level});
    return decoder;
  };
  if (type == "ByteLevel") {
    return make(ByteLevelDecoder{}, false, true);
  }
  if (type == "ByteFallback") {
    return make(ByteFallbackDecoder{}, true);
  }
  if (type == "Metaspace") {
    std::string scheme =
        field.string_or("prepend_scheme", field.boolean_or("add_prefix_space", true) ? "always" : "never");
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      field["prepend_scheme"].unsupported("unknown prepend_scheme '" + scheme + "'");
    }
    return make(MetaspaceDecoder{single_character(field["replacement"]), scheme != "never"});
  }
  if (type == "Fuse") {
    return make(FuseDecoder{});
  }
  if (type == "Strip") {
    return make(StripDecoder{single_character(field["content"]), static_cast<size_t>(field["start"].integer()),
                             static_cast<size_t>(field["stop"].integer())});
  }
  if (type == "Replace") {
    JsonField pattern = field["pattern"];
    if (!pattern.find("String")) {
      pattern.unsupported("only a String pattern is supported in a Replace decoder");
    }
    return make(ReplaceDecoder{pattern["String"].string(), field["content"].string()});
  }
  if (type == "WordPiece") {
    return make(WordPieceDecoder{field.string_or("prefix", "##"), field.boolean_or("cleanup", true)});
  }
  if (type == "BPEDecoder") {
    return make(BpeDecoder{field.string_or("suffix", "</w>")});
  }
  if (type == "CTC") {
    return make(CtcDecoder{field.string_or("pad_token", "<pad>"), field.string_or("word_delimiter_token", "|"),
                           field.boolean_or("cleanup", true)});
  }
  if (type == "Sequence") {
    JsonField list = field["decoders"];
    SequenceDecoder sequence;
    bool joins_byte_tokens = false;
    bool maps_byte_level = false;
    for (size_t i = 0; i < list.size(); ++i) {
      sequence.decoders.push_back(from_json(list.at(i)));
      joins_byte_tokens = joins_byte_tokens || sequence.decoders.back().joins_byte_tokens();
      maps_byte_level = maps_byte_level || sequence.decoders.back().maps_byte_level();
    }
    return make(std::move(sequence), joins_byte_tokens, maps_byte_level);
  }
  field["type"].unsupported("unknown decoder type '" + type + "'");
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  std::string text;
  if (!impl_) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      text += (i > 0 ? " " : "") + tokens[i];
    }
    return text;
  }
  for (const std::string& piece : impl_->decode(std::move(tokens))) {
    text += piece;
  }
  return text;
}

bool Decoder::joins_byte_tokens() const { return impl_ && impl_->joins_byte_tokens; }
bool Decoder::maps_byte_level() const { return impl_ && impl_->maps_byte_level; }

std::string clean_up_tokenization(std::string text) {
  for (auto [from, to] : {std::pair{" .", "."},
                          {" ?", "?"},
                          {" !", "!"},
                          {" ,", ","},
                          {" ' ", "'"},
                          {" n't", "n't"},
                          {" 'm", "'m"},
                          {" 's", "'s"},
                          {" 've", "'ve"},
                          {" 're", "'re"}}) {
    replace_all(text, from, to);
  }
  return text;
}

}  // namespace nuvec::lm::detail
