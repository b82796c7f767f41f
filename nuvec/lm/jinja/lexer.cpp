#include "nuvec/lm/jinja/lexer.h"

#include <algorithm>
#include <cctype>

#include "nuvec/core/error.h"
#include "nuvec/lm/jinja/value.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm::jinja {

void syntax_error(int line, const std::string& message) {
  throw_error(ErrorKind::invalid_argument,
              "chat template syntax error at line " + std::to_string(line) + ": " + message);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t at = src_.find('{', pos_);
      while (at != std::string::npos && at + 1 < src_.size() &&
             std::string_view("{%#").find(src_[at + 1]) == std::string_view::npos) {
        at = src_.find('{', at + 1);
      }
      if (at == std::string::npos || at + 1 >= src_.size()) {
        emit_text(src_.substr(pos_), line_);
        count_lines(pos_, src_.size());
        pos_ = src_.size();
        break;
      }
      char kind = src_[at + 1];
      char sign = at + 2 < src_.size() ? src_[at + 2] : '\0';
      std::string text = src_.substr(pos_, at - pos_);
      if (sign == '-') {
        text.erase(std::find_if_not(text.rbegin(), text.rend(), is_space).base(), text.end());
      } else if (sign != '+' && kind != '{') {
        lstrip(text);
      }
      int text_line = line_;
      count_lines(pos_, at);
      emit_text(text, text_line);
      pos_ = at + 2 + (sign == '-' || sign == '+' ? 1 : 0);
      if (kind == '#') {
        comment();
      } else if (kind == '%' && raw()) {
        continue;
      } else {
        tag(kind == '{');
      }
    }
    tokens_.push_back({TokenKind::end, "", line_});
    return std::move(tokens_);
  }

 private:
  // lstrip_blocks: spaces and tabs between the line's start and a block tag go.
  void lstrip(std::string& text) const {
    size_t start = text.rfind('\n');
    start = start == std::string::npos ? 0 : start + 1;
    if (start == 0 && !line_starting_) {
      return;
    }
    bool blank = std::all_of(text.begin() + static_cast<ptrdiff_t>(start), text.end(),
                             [](char c) { return is_space(c) && c != '\n'; });
    if (blank) {
      text.resize(start);
    }
  }

  void emit_text(const std::string& text, int line) {
    if (!text.empty()) {
      tokens_.push_back({TokenKind::text, text, line});
    }
  }

  void count_lines(size_t from, size_t to) {
    line_ += static_cast<int>(
        std::count(src_.begin() + static_cast<ptrdiff_t>(from), src_.begin() + static_cast<ptrdiff_t>(to), '\n'));
  }

  // Moves past the end of a tag: `-` strips all whitespace after it, otherwise trim_blocks drops one newline.
  void after_tag(size_t end, bool block) {
    bool minus = src_[end - 1] == '-';
    bool plus = src_[end - 1] == '+';
    size_t next = end + 2;
    size_t skipped = next;
    if (minus) {
      while (skipped < src_.size() && is_space(src_[skipped])) {
        ++skipped;
      }
    } else if (block && !plus && skipped < src_.size() && src_[skipped] == '\n') {
      ++skipped;
    }
    count_lines(pos_, skipped);
    line_starting_ = skipped > next && src_[skipped - 1] == '\n';
    pos_ = skipped;
  }

  void comment() {
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) {
      syntax_error(line_, "missing end of comment tag");
    }
    after_tag(end, true);
  }

  // `{% raw %}...{% endraw %}`: the text between is output as it is.
  bool raw() {
    size_t p = pos_;
    auto skip_space = [&](size_t q) {
      while (q < src_.size() && is_space(src_[q])) {
        ++q;
      }
      return q;
    };
    p = skip_space(p);
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) {
      return false;
    }
    p = skip_space(p + 3);
    bool minus = p < src_.size() && src_[p] == '-';
    if (minus) {
      ++p;
    }
    if (src_.compare(p, 2, "%}") != 0) {
      syntax_error(line_, "expected '%}' after 'raw'");
    }
    p += 2;
    if (minus) {
      p = skip_space(p);
    }
    for (size_t search = p;;) {
      size_t at = src_.find("{%", search);
      if (at == std::string::npos) {
        syntax_error(line_, "missing endraw for raw block");
      }
      size_t q = at + 2;
      char sign = q < src_.size() ? src_[q] : '\0';
      if (sign == '-' || sign == '+') {
        ++q;
      }
      q = skip_space(q);
      if (src_.compare(q, 6, "endraw") != 0) {
        search = at + 2;
        continue;
      }
      q = skip_space(q + 6);
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) {
        ++q;
      }
      if (src_.compare(q, 2, "%}") != 0) {
        syntax_error(line_, "expected '%}' after 'endraw'");
      }
      int text_line = line_;
      count_lines(pos_, at);
      std::string text = src_.substr(p, at - p);
      if (sign == '-') {
        text.erase(std::find_if_not(text.rbegin(), text.rend(), is_space).base(), text.end());
      } else if (sign != '+') {
        line_starting_ = false;
        lstrip(text);
      }
      emit_text(text, text_line);
      pos_ = at;
      after_tag(q, true);
      return true;
    }
  }

  void tag(bool variable) {
    int start_line = line_;
    tokens_.push_back({variable ? TokenKind::variable_begin : TokenKind::block_begin, "", line_});
    const char* end_mark = variable ? "}}" : "%}";
    int depth = 0;
    for (;;) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        if (src_[pos_] == '\n') {
          ++line_;
        }
        ++pos_;
      }
      if (pos_ >= src_.size()) {
        syntax_error(start_line, variable ? "missing '}}'" : "missing '%}'");
      }
      if (depth == 0) {
        size_t mark = pos_;
        if ((src_[pos_] == '-' || (src_[pos_] == '+' && !variable)) && src_.compare(pos_ + 1, 2, end_mark) == 0) {
          ++mark;
        }
        if (src_.compare(mark, 2, end_mark) == 0) {
          tokens_.push_back({variable ? TokenKind::variable_end : TokenKind::block_end, "", line_});
          after_tag(mark, !variable);
          return;
        }
      }
      char c = src_[pos_];
      if (is_name_start(c)) {
        size_t e = pos_;
        while (e < src_.size() && is_name_char(src_[e])) {
          ++e;
        }
        tokens_.push_back({TokenKind::name, src_.substr(pos_, e - pos_), line_});
        pos_ = e;
      } else if (is_digit(c)) {
        number();
      } else if (c == '\'' || c == '"') {
        string_literal(c);
      } else {
        static const char* const two[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (const char* t : two) {
          if (src_.compare(pos_, 2, t) == 0) {
            op = t;
          }
        }
        if (op.size() == 1 && std::string_view("+-/*%~[](){}<>=.:|,;").find(c) == std::string_view::npos) {
          syntax_error(line_, std::string("unexpected char '") + c + "'");
        }
        if (op == "(" || op == "[" || op == "{") {
          ++depth;
        }
        if ((op == ")" || op == "]" || op == "}") && depth > 0) {
          --depth;
        }
        tokens_.push_back({TokenKind::op, op, line_});
        pos_ += op.size();
      }
    }
  }

  void number() {
    size_t e = pos_;
    auto digits = [&] {
      while (e < src_.size() &&
             (is_digit(src_[e]) || (src_[e] == '_' && e + 1 < src_.size() && is_digit(src_[e + 1])))) {
        ++e;
      }
    };
    digits();
    bool floating = false;
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1]) && (pos_ == 0 || src_[pos_ - 1] != '.')) {
      floating = true;
      ++e;
      digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) {
        ++x;
      }
      if (x < src_.size() && is_digit(src_[x])) {
        floating = true;
        e = x;
        digits();
      }
    }
    std::string text = src_.substr(pos_, e - pos_);
    std::erase(text, '_');
    tokens_.push_back({floating ? TokenKind::floating : TokenKind::integer, text, line_});
    pos_ = e;
  }

  // Decodes a literal as Python does its string escapes.
  void string_literal(char quote) {
    std::string value;
    size_t p = pos_ + 1;
    int start_line = line_;
    auto hex_value = [&](size_t at, int n) {
      if (at + static_cast<size_t>(n) > src_.size()) {
        syntax_error(line_, "truncated escape in string literal");
      }
      char32_t cp = 0;
      for (int k = 0; k < n; ++k) {
        char h = static_cast<char>(std::tolower(static_cast<unsigned char>(src_[at + static_cast<size_t>(k)])));
        if (std::isxdigit(static_cast<unsigned char>(h)) == 0) {
          syntax_error(line_, "bad escape in string literal");
        }
        cp = cp * 16 + static_cast<char32_t>(is_digit(h) ? h - '0' : h - 'a' + 10);
      }
      return cp;
    };
    for (;;) {
      if (p >= src_.size()) {
        syntax_error(start_line, "unterminated string literal");
      }
      char c = src_[p];
      if (c == quote) {
        break;
      }
      if (c == '\n') {
        ++line_;
      }
      if (c != '\\' || p + 1 >= src_.size()) {
        value += c;
        ++p;
        continue;
      }
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case '\\':
          value += '\\';
          break;
        case '\'':
          value += '\'';
          break;
        case '"':
          value += '"';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'v':
          value += '\v';
          break;
        case 'a':
          value += '\a';
          break;
        case '0':
          value += '\0';
          break;
        case '\n':
          ++line_;
          break;
        case 'x':
          detail::append_utf8(value, hex_value(p, 2)), p += 2;
          break;
        case 'u':
          detail::append_utf8(value, hex_value(p, 4)), p += 4;
          break;
        case 'U':
          detail::append_utf8(value, hex_value(p, 8)), p += 8;
          break;
        default:
          value += '\\', value += e;
      }
    }
    tokens_.push_back({TokenKind::string, value, start_line});
    pos_ = p + 1;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  // Jinja2 reads "\r\n" and "\r" as "\n" and drops one trailing newline.
  std::string text;
  text.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      text += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') {
        ++i;
      }
    } else {
      text += source[i];
    }
  }
  if (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  return Lexer(std::move(text)).run();
}

}  // namespace nuvec::lm::jinja
