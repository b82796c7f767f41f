#pragma once

#include <stdexcept>
#include <string>

namespace nuvec {

/// What went wrong, so callers can react without parsing messages.
enum class ErrorKind { invalid_argument, out_of_range, overflow, unsupported, out_of_memory, io, internal };

/// The base of every exception nuvec throws: `catch (const nuvec::error&)` catches them all and `kind()` tells them
/// apart. Each thrown exception also derives from the standard exception MLX throws for that case (see throw_error),
/// so code written against MLX (`catch (const std::runtime_error&)`, ...) catches it unchanged.
class error {
 public:
  virtual ~error() = default;
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }
  [[nodiscard]] virtual const char* what() const noexcept = 0;

 protected:
  explicit error(ErrorKind kind) : kind_(kind) {}
  error(const error&) = default;
  error& operator=(const error&) = default;

 private:
  ErrorKind kind_;
};

/// The concrete exception of a kind whose standard counterpart is `Std`.
template <class Std>
class basic_error final : public Std, public error {
 public:
  basic_error(ErrorKind kind, const std::string& message) : Std(message), error(kind) {}
  [[nodiscard]] const char* what() const noexcept override { return Std::what(); }
};

/// Throws the exception of `kind`: std::invalid_argument for invalid_argument and unsupported, std::out_of_range,
/// std::overflow_error (a shape dimension past int32), std::runtime_error for io, out_of_memory and internal.
[[noreturn]] inline void throw_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::invalid_argument:
    case ErrorKind::unsupported:
      throw basic_error<std::invalid_argument>(kind, message);
    case ErrorKind::out_of_range:
      throw basic_error<std::out_of_range>(kind, message);
    case ErrorKind::overflow:
      throw basic_error<std::overflow_error>(kind, message);
    case ErrorKind::io:
    case ErrorKind::out_of_memory:
    case ErrorKind::internal:
      throw basic_error<std::runtime_error>(kind, message);
  }
  throw basic_error<std::runtime_error>(ErrorKind::internal, message);
}

[[noreturn]] inline void throw_invalid(const std::string& message) {
  throw_error(ErrorKind::invalid_argument, message);
}
[[noreturn]] inline void throw_out_of_range(const std::string& message) {
  throw_error(ErrorKind::out_of_range, message);
}
[[noreturn]] inline void throw_unsupported(const std::string& message) { throw_error(ErrorKind::unsupported, message); }
[[noreturn]] inline void throw_internal(const std::string& message) { throw_error(ErrorKind::internal, message); }

}  // namespace nuvec
