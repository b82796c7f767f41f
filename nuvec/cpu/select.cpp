// CPU kernel of Select (where): out = condition ? x : y. Only bytes move, so
// every dtype runs as the unsigned integer of its size, and the bool condition
// is read as the bytes it is stored in (GCC 12 does not vectorize bool -> int).

#include <cstdint>
#include <type_traits>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/kernels.h"

namespace nuvec::cpu {

namespace {

template <size_t Bytes>
using bits_t =
    std::conditional_t<Bytes == 1, uint8_t,
                       std::conditional_t<Bytes == 2, uint16_t, std::conditional_t<Bytes == 4, uint32_t, uint64_t>>>;

/// One run with unit or zero (broadcast) strides. Broadcast operands are hoisted and
/// the choice is a mask blend: `c ? x[i] : y[i]` reads one side conditionally, which
/// the compiler will not turn into vector code.
template <bool ScalarC, bool ScalarX, bool ScalarY, class U>
void select_unit(U* out, int64_t n, const uint8_t* c, const U* x, const U* y) {
  const uint8_t c0 = c[0];
  const U x0 = x[0];
  const U y0 = y[0];
  for (int64_t i = 0; i < n; ++i) {
    const auto mask = static_cast<U>(U{0} - static_cast<U>(ScalarC ? c0 : c[i]));
    out[i] = static_cast<U>(((ScalarX ? x0 : x[i]) & mask) | ((ScalarY ? y0 : y[i]) & static_cast<U>(~mask)));
  }
}

template <class U>
void select_run(U* out, int64_t n, Strided<uint8_t> c, Strided<U> x, Strided<U> y) {
  auto unit_or_scalar = [](int64_t stride) { return stride == 0 || stride == 1; };
  if (unit_or_scalar(c.stride) && unit_or_scalar(x.stride) && unit_or_scalar(y.stride)) {
    with_flags(
        [&](auto sc, auto sx, auto sy) {
          select_unit<decltype(sc)::value, decltype(sx)::value, decltype(sy)::value>(out, n, c.ptr, x.ptr, y.ptr);
        },
        c.stride == 0, x.stride == 0, y.stride == 0);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    out[i] = c.ptr[i * c.stride] != 0 ? x.ptr[i * x.stride] : y.ptr[i * y.stride];
  }
}

}  // namespace

void run(const Select& p, const Inputs& in, Outputs& out) {
  auto& o = out[0];
  const array& condition = in[0];
  const array& x = in[1];
  const array& y = in[2];
  if (condition.dtype() != bool_ || x.dtype() != o.dtype() || y.dtype() != o.dtype()) {
    internal_error(p.name, std::string("Expected a bool condition and two ") + std::string(dtype_name(o.dtype())) +
                               " values; got " + std::string(dtype_name(condition.dtype())) + ", " +
                               std::string(dtype_name(x.dtype())) + " and " + std::string(dtype_name(y.dtype())) + ".");
  }
  dispatch(o.dtype(), [&]<class T>(type_tag<T>) {
    using U = bits_t<sizeof(T)>;
    elementwise<U, uint8_t, U, U>(o, select_run<U>, condition, x, y);
  });
}

}  // namespace nuvec::cpu
