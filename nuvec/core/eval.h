#pragma once

#include <exception>
#include <string>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec {

/// Computes the arrays and every unevaluated array they depend on. Throws the
/// original error (nuvec::error) if any of them failed; the process stays usable.
void eval(std::vector<array> outputs);
template <std::convertible_to<array>... Arrays>
void eval(Arrays&&... outputs) {
  eval(std::vector<array>{std::forward<Arrays>(outputs)...});
}

/// Starts computing the arrays on a background worker and returns at once;
/// a later eval() of the same arrays waits for (or performs) the work.
void async_eval(std::vector<array> outputs);
template <std::convertible_to<array>... Arrays>
void async_eval(Arrays&&... outputs) {
  async_eval(std::vector<array>{std::forward<Arrays>(outputs)...});
}

/// The outcome of a non-throwing evaluation.
class EvalStatus {
 public:
  EvalStatus() = default;
  explicit EvalStatus(std::exception_ptr err);
  [[nodiscard]] bool ok() const { return error_ == nullptr; }
  [[nodiscard]] const std::exception_ptr& error() const { return error_; }
  [[nodiscard]] const std::string& message() const { return message_; }
  [[nodiscard]] ErrorKind kind() const { return kind_; }

 private:
  std::exception_ptr error_;
  std::string message_;
  ErrorKind kind_ = ErrorKind::internal;
};

/// Like eval, but reports a failure instead of throwing it.
[[nodiscard]] EvalStatus try_eval(std::vector<array> outputs);

/// The order in which eval would run the unevaluated nodes behind `outputs`, one
/// array per node: the deepest nodes first (breadth-first from the outputs), so
/// independent nodes sit together, with the number of live intermediates bounded.
std::vector<array> schedule(const std::vector<array>& outputs);

/// The most intermediates evaluation keeps alive before it turns depth-first.
int get_max_eval_width();
void set_max_eval_width(int width);

}  // namespace nuvec
