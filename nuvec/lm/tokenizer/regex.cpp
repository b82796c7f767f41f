#include "nuvec/lm/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "nuvec/core/error.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm::detail {

namespace {

// Oniguruma's \s is Unicode White_Space (PCRE2's leaves out U+0085); as class members and as their complement.
constexpr std::string_view space_members =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
constexpr std::string_view non_space_members =
    "\\x00-\\x08\\x0E-\\x1F\\x21-\\x84\\x86-\\x9F\\x{A1}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}"
    "\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{10FFFF}";
// Oniguruma's \w in a class is Alphabetic | Mark | Decimal_Number | Connector_Punctuation; outside a class it also
// takes the Latin-1 digits ²³¹¼½¾ (PCRE2's differs from both).
constexpr std::string_view word_members = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";
constexpr std::string_view bare_word_members =
    "\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";
// Oniguruma's \h is a hexadecimal digit (PCRE2's is horizontal space).
constexpr std::string_view hex_members = "0-9a-fA-F";

struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;

  MatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    // Long runs (megabytes of spaces) need more than JIT's default 32 KiB stack.
    stack = pcre2_jit_stack_create(size_t{32} * 1024, size_t{64} * 1024 * 1024, nullptr);
    if (data == nullptr || context == nullptr || stack == nullptr) {
      throw_error(ErrorKind::out_of_memory, "PCRE2: cannot allocate match data");
    }
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  MatchState(const MatchState&) = delete;
  MatchState& operator=(const MatchState&) = delete;
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

std::string translate_onig_pattern(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() * 2);
  bool in_class = false;
  bool class_start = false;  // just after '[' or '[^', where ']' is a literal
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    bool was_class_start = class_start;
    class_start = false;
    if (c == '\\' && i + 1 < pattern.size()) {
      char e = pattern[++i];
      auto set = [&](std::string_view members, bool negated) {
        if (in_class) {
          out += members;
        } else {
          out += negated ? "[^" : "[";
          out += members;
          out += ']';
        }
      };
      switch (e) {
        case 's':
          set(space_members, false);
          break;
        case 'S':
          if (in_class) {
            set(non_space_members, false);
          } else {
            set(space_members, true);
          }
          break;
        case 'w':
          set(in_class ? word_members : bare_word_members, false);
          break;
        case 'W':
          if (in_class) {
            out += "\\W";
          } else {
            set(bare_word_members, true);
          }
          break;
        case 'd':
          out += "\\p{Nd}";
          break;
        case 'D':
          out += "\\P{Nd}";
          break;
        case 'h':
          set(hex_members, false);
          break;
        case 'H':
          if (in_class) {
            out += "\\H";
          } else {
            set(hex_members, true);
          }
          break;
        case 'u':
          if (i + 4 < pattern.size() &&
              pattern.substr(i + 1, 4).find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos) {
            out += "\\x{";
            out += pattern.substr(i + 1, 4);
            out += '}';
            i += 4;
          } else {
            out += "\\u";
          }
          break;
        default:
          out += '\\';
          out += e;
      }
      continue;
    }
    if (in_class) {
      if (c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
        size_t close = pattern.find(":]", i + 2);
        if (close != std::string_view::npos) {
          out += pattern.substr(i, close + 2 - i);
          i = close + 1;
          continue;
        }
      }
      if (c == ']' && !was_class_start) {
        in_class = false;
      } else if (c == '^' && was_class_start && out.back() == '[') {
        class_start = true;
      }
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      class_start = true;
    }
    out += c;
  }
  return out;
}

Regex::Regex(std::string_view pattern) : translated_(translate_onig_pattern(pattern)) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // Oniguruma's default syntax: '^' and '$' match at line boundaries; '.' does not match a newline.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated_.data()), translated_.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    throw_invalid("cannot compile the pattern '" + std::string(pattern) +
                  "': " + reinterpret_cast<const char*>(message));
  }
  auto compiled = std::make_shared<Code>();
  compiled->code = code;
  compiled->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  code_ = std::move(compiled);
}

bool Regex::find(std::string_view text, size_t from, size_t& start, size_t& end) const {
  MatchState& state = match_state();
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = code_->jit
               ? pcre2_jit_match(code_->code, subject, text.size(), from, 0, state.data, state.context)
               : pcre2_match(code_->code, subject, text.size(), from, PCRE2_NO_UTF_CHECK, state.data, state.context);
  if (rc == PCRE2_ERROR_NOMATCH) {
    return false;
  }
  if (rc < 0) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(rc, message, sizeof(message));
    throw_internal(std::string("PCRE2 match failed: ") + reinterpret_cast<const char*>(message));
  }
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
  start = ovector[0];
  end = ovector[1];
  return true;
}

std::shared_ptr<const Regex> compile_regex(const JsonField& field) {
  std::string pattern = field.string();
  try {
    return std::make_shared<const Regex>(pattern);
  } catch (const error& e) {
    field.fail(e.what());
  }
}

size_t Regex::step(std::string_view text, size_t pos) {
  return pos < text.size() ? utf8_length(static_cast<unsigned char>(text[pos])) : 1;
}

}  // namespace nuvec::lm::detail
