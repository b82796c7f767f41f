#pragma once

// The overload set for std::visit over the lm library's closed sets of types (tokenizer pieces, Jinja values).

namespace nuvec::lm::detail {

template <typename... F>
struct Overload : F... {
  using F::operator()...;
};
// Clang 14 has no deduction of aggregates' template arguments (C++20's P1816), so the guide is spelled out.
template <typename... F>
Overload(F...) -> Overload<F...>;

}  // namespace nuvec::lm::detail
