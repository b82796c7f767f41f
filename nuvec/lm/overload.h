#pragma once

// The overload set for std::visit over the lm library's closed sets of types (tokenizer pieces, Jinja values).

namespace nuvec::lm::detail {

template <typename... F>
struct Overload : F... {
  using F::operator()...;
};

}  // namespace nuvec::lm::detail
