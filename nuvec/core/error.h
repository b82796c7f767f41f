#pragma once

#include <stdexcept>
#include <string>

namespace nuvec {

/// What went wrong, so callers can react without parsing messages.
enum class ErrorKind { invalid_argument, unsupported, out_of_memory, io, internal };

/// The one exception type nuvec throws. It derives from std::invalid_argument so
/// code written against MLX (which throws std::invalid_argument for bad input)
/// catches it unchanged; `kind()` tells the categories apart.
class error : public std::invalid_argument {
 public:
  error(ErrorKind kind, const std::string& message) : std::invalid_argument(message), kind_(kind) {}
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void throw_invalid(const std::string& message) {
  throw error(ErrorKind::invalid_argument, message);
}
[[noreturn]] inline void throw_unsupported(const std::string& message) { throw error(ErrorKind::unsupported, message); }
[[noreturn]] inline void throw_internal(const std::string& message) { throw error(ErrorKind::internal, message); }

}  // namespace nuvec
