#pragma once

// The list the output rules (output_shapes.cpp, output_dtype_rules.h) return. Every op call asks them for its node's
// outputs, and nearly every primitive has one output, so the first is held inline: a rule then allocates nothing
// beyond the values themselves.

#include <concepts>
#include <optional>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::detail {

template <class T>
class OutputList {
 public:
  OutputList() = default;
  template <class... U>
    requires(sizeof...(U) > 0 && (std::convertible_to<U, T> && ...))
  OutputList(U&&... values) {  // NOLINT(google-explicit-constructor): rules return {a, b}
    (push_back(std::forward<U>(values)), ...);
  }

  void push_back(T value) {
    if (first_) {
      rest_.push_back(std::move(value));
    } else {
      first_.emplace(std::move(value));
    }
  }
  [[nodiscard]] size_t size() const { return first_ ? 1 + rest_.size() : 0; }
  T& front() { return *first_; }
  [[nodiscard]] std::vector<T> to_vector() && {
    std::vector<T> all;
    if (first_) {
      all.push_back(std::move(*first_));
      all.insert(all.end(), std::make_move_iterator(rest_.begin()), std::make_move_iterator(rest_.end()));
    }
    return all;
  }

 private:
  std::optional<T> first_;
  std::vector<T> rest_;
};

/// The rules themselves (output_shapes.h has their public forms; output_shapes.cpp visits both).
OutputList<Shape> shape_rule(const Primitive& p, const std::vector<array>& inputs);
OutputList<Dtype> dtype_rule(const Primitive& p, const std::vector<array>& inputs);

}  // namespace nuvec::detail
