#pragma once

// The machinery the element-wise kernels share (unary.cpp, binary.cpp,
// select.cpp): the walk over the output in runs, its split across threads,
// buffer donation, and the block loops that feed a functor contiguous values
// of its compute type (vectors where it has a vector form).
//
// A functor computes in `compute_t<T>`: float for float16 and bfloat16, the
// element type itself otherwise. Its result R is stored as `store_t<T, R>`: a
// float result of a 16-bit input is rounded back to that input's type.

#include <algorithm>
#include <array>
#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "nuvec/core/array.h"
#include "nuvec/core/dtype.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/element_types.h"
#include "nuvec/cpu/simd.h"
#include "nuvec/cpu/strided.h"
#include "nuvec/cpu/thread_pool.h"

#ifdef __F16C__
#include <immintrin.h>
#endif

namespace nuvec::cpu {

/// The type a functor's result R for input elements T is stored in.
template <class T, class R>
using store_t = std::conditional_t<is_half_v<T> && std::same_as<R, float>, T, R>;

/// One run of an input: elements ptr[0], ptr[stride], ... (stride 0: one value repeated).
template <class T>
struct Strided {
  const T* ptr;
  int64_t stride;
};

/// Elements a run is cut into when it has to be staged (converted or gathered) first:
/// small enough for the stack and L1, large enough to amortise the loop overhead.
inline constexpr int64_t stage_block = 512;

// ---------------------------------------------------------------- conversions

/// float -> bfloat16 bits, rounded to nearest even; NaNs stay quiet NaNs with their
/// top payload bits. Bit for bit what `bfloat16_t(float)` gives, written so loops vectorize.
inline uint16_t bfloat16_bits(float value) {
  const auto u = std::bit_cast<uint32_t>(value);
  const uint32_t rounded = (u + 0x7fffU + ((u >> 16) & 1U)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40U;
  return static_cast<uint16_t>((u & 0x7fffffffU) > 0x7f800000U ? nan : rounded);
}

/// dst[i] = src[i * stride] converted to C, for i < n.
template <class C, class T>
void load_block(C* dst, Strided<T> src, int64_t n) {
  if constexpr (std::same_as<C, T>) {
    if (src.stride == 1) {
      std::memcpy(dst, src.ptr, static_cast<size_t>(n) * sizeof(T));
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = src.ptr[i * src.stride];
    }
  } else if constexpr (std::same_as<T, bfloat16_t>) {
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = std::bit_cast<float>(static_cast<uint32_t>(src.ptr[i * src.stride].bits) << 16);
    }
  } else {
    static_assert(std::same_as<T, float16_t> && std::same_as<C, float>);
    int64_t i = 0;
#ifdef __F16C__
    if (src.stride == 1) {
      for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src.ptr + i))));
      }
    }
#endif
    for (; i < n; ++i) {
      dst[i] = static_cast<float>(src.ptr[i * src.stride]);
    }
  }
}

/// dst[i] = src[i] stored as S (the same type, or a 16-bit float rounded from float).
template <class S, class R>
void store_block(S* dst, const R* src, int64_t n) {
  if constexpr (std::same_as<S, R>) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(S));
  } else if constexpr (std::same_as<S, bfloat16_t>) {
    static_assert(std::same_as<R, float>);
    for (int64_t i = 0; i < n; ++i) {
      dst[i].bits = bfloat16_bits(src[i]);
    }
  } else {
    static_assert(std::same_as<S, float16_t> && std::same_as<R, float>);
    int64_t i = 0;
#ifdef __F16C__
    for (; i + 8 <= n; i += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#endif
    for (; i < n; ++i) {
      dst[i] = float16_t(src[i]);
    }
  }
}

// ---------------------------------------------------------------- functor application

/// A functor with a vector form for lanes of C that returns vectors of C.
template <class Op, class C>
concept VectorUnary = simd::Lane<C> && requires(const Op& op, simd::Vec<C> v) {
  { op(v) } -> std::same_as<simd::Vec<C>>;
};
template <class Op, class C>
concept VectorBinary = simd::Lane<C> && requires(const Op& op, simd::Vec<C> v) {
  { op(v, v) } -> std::same_as<simd::Vec<C>>;
};

/// Outputs this large are written with streaming stores: they cannot stay in the caches (L3 is 32 MiB here), and a
/// streamed line costs one write of memory where a stored one costs a read for ownership and a write.
inline constexpr size_t streaming_bytes = size_t{32} << 20;
/// Runs shorter than this keep plain stores even then: a run ends with a fence.
inline constexpr int64_t streaming_run_bytes = int64_t{64} << 10;

/// Writes out[0, n) a vector at a time: value(i) is the vector of elements i.., value(i, count) that of the last
/// count < lanes ones. With `stream` (and a long run), the vectors from out's first 64-byte boundary on are streamed.
template <class C, class Value>
void store_vectors(C* out, int64_t n, bool stream, const Value& value) {
  using V = simd::Vec<C>;
  const auto lanes = static_cast<int64_t>(V::lanes());
  int64_t i = 0;
  if (stream && n * static_cast<int64_t>(sizeof(C)) >= streaming_run_bytes) {
    const auto head = static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(out) % 64) % 64 / sizeof(C));
    for (; i + lanes <= head; i += lanes) {
      value(i).store(out + i);
    }
    if (i < head) {
      value(i, head - i).store(out + i, static_cast<size_t>(head - i));
      i = head;
    }
    for (; i + lanes <= n; i += lanes) {
      value(i).stream(out + i);
    }
    hwy::FlushStream();  // order the streamed lines before the caller reports this run done
  } else {
    for (; i + lanes <= n; i += lanes) {
      value(i).store(out + i);
    }
  }
  if (i < n) {
    value(i, n - i).store(out + i, static_cast<size_t>(n - i));
  }
}

/// out[i] = op(x[i]) over contiguous values of the compute type.
template <class Op, class C, class R>
void apply_unary(const Op& op, R* out, const C* x, int64_t n, bool stream = false) {
  if constexpr (VectorUnary<Op, C> && std::same_as<R, C>) {
    using V = simd::Vec<C>;
    store_vectors(out, n, stream,
                  [&](int64_t i, auto... count) { return op(V::load(x + i, static_cast<size_t>(count)...)); });
  } else {
    for (int64_t i = 0; i < n; ++i) {
      out[i] = op(x[i]);
    }
  }
}

/// out[i] = op(a[i], b[i]) over contiguous values; a scalar operand (ScalarA or
/// ScalarB) is one value used for every i.
template <bool ScalarA, bool ScalarB, class Op, class C, class R>
void apply_binary(const Op& op, R* out, const C* a, const C* b, int64_t n, bool stream) {
  if constexpr (ScalarA && ScalarB) {
    std::fill_n(out, n, static_cast<R>(op(a[0], b[0])));
  } else if constexpr (VectorBinary<Op, C> && std::same_as<R, C>) {
    using V = simd::Vec<C>;
    const V a0(a[0]);
    const V b0(b[0]);
    store_vectors(out, n, stream, [&](int64_t i, auto... count) {
      const V va = ScalarA ? a0 : V::load(a + i, static_cast<size_t>(count)...);
      const V vb = ScalarB ? b0 : V::load(b + i, static_cast<size_t>(count)...);
      return op(va, vb);
    });
  } else {
    const C a0 = a[0];
    const C b0 = b[0];
    for (int64_t i = 0; i < n; ++i) {
      out[i] = op(ScalarA ? a0 : a[i], ScalarB ? b0 : b[i]);
    }
  }
}

/// Calls fn(std::bool_constant<flags>...) so that a loop is compiled once per
/// combination of run-time flags.
template <class Fn>
void with_flags(const Fn& fn) {
  fn();
}
template <class Fn, class... Rest>
void with_flags(const Fn& fn, bool first, Rest... rest) {
  auto bind = [&](auto flag) { with_flags([&](auto... others) { fn(flag, others...); }, rest...); };
  first ? bind(std::true_type{}) : bind(std::false_type{});
}

/// apply_binary with the scalar flags read at run time.
template <class Op, class C, class R>
void apply_binary(const Op& op, R* out, const C* a, bool scalar_a, const C* b, bool scalar_b, int64_t n,
                  bool stream = false) {
  with_flags(
      [&](auto sa, auto sb) { apply_binary<decltype(sa)::value, decltype(sb)::value>(op, out, a, b, n, stream); },
      scalar_a, scalar_b);
}

// ---------------------------------------------------------------- the walk

/// One value broadcast to the whole of `out`, read once per run: a broadcast
/// (zero strides) or a scalar operand (a size-1 input of any rank, which
/// element-wise primitives take without a Broadcast node).
inline bool is_broadcast_value(const array& in, const array& out) {
  return in.data_size() == 1 && (out.size() > 1 || !in.flags().row_contiguous);
}

/// The strides of `in` over the axes of `out`: a broadcast value's are all zero,
/// as are a scalar operand's (which may have fewer axes than out).
inline Strides strides_over(const array& in, const array& out) {
  return in.ndim() != out.ndim() || is_broadcast_value(in, out) ? Strides(out.ndim(), 0) : in.strides();
}

/// Whether `in` may give its buffer to `out` (it is a temporary nothing else
/// reads, laid out as out will be): the test allocate_or_donate makes.
inline bool donatable_to(const array& in, const array& out) {
  return in.dtype() == out.dtype() && in.is_donatable() && in.flags().row_contiguous && in.data_size() == out.size();
}

/// Gives `out` a row-contiguous buffer, reusing the first donatable input's.
inline void allocate_row_major(array& out, std::initializer_list<const array*> inputs) {
  for (const array* in : inputs) {
    if (donatable_to(*in, out)) {
      allocate_or_donate(out, *in);
      return;
    }
  }
  out.set_data(allocator::malloc(out.nbytes()));
}

/// The input whose layout `out` should copy, when every input that is not a broadcast
/// value is dense in one permuted order with non-negative strides (a transpose, say):
/// one flat run over memory then covers them all with unit strides. Null otherwise.
inline const array* shared_permuted_layout(const array& out, std::initializer_list<const array*> inputs) {
  const array* model = nullptr;
  for (const array* in : inputs) {
    if (is_broadcast_value(*in, out)) {
      continue;
    }
    if (in->flags().row_contiguous || !in->flags().contiguous || in->data_size() != out.size()) {
      return nullptr;
    }
    if (model == nullptr) {
      if (std::any_of(in->strides().begin(), in->strides().end(), [](int64_t s) { return s < 0; })) {
        return nullptr;
      }
      model = in;
    } else if (in->strides() != model->strides()) {
      return nullptr;
    }
  }
  return model;
}

/// Gives `out` the layout of `model`, reusing a donatable input's buffer (which has it).
inline void allocate_like(array& out, const array& model, std::initializer_list<const array*> inputs) {
  for (const array* in : inputs) {
    if (in->dtype() == out.dtype() && !is_broadcast_value(*in, out) && in->is_donatable()) {
      out.move_shared_buffer(*in);
      return;
    }
  }
  out.set_data(allocator::malloc(out.nbytes()), model.data_size(), model.strides(), model.flags());
}

namespace detail {

template <class Out, class... In, size_t... K, class Run>
void walk(array& out, bool flat, const Run& run, const std::tuple<const In*...>& base,
          const std::array<const array*, sizeof...(In)>& inputs, std::index_sequence<K...>) {
  constexpr size_t n_in = sizeof...(In);
  const size_t n = out.size();
  Out* o = out.data<Out>();
  if (flat) {
    const std::array<int64_t, n_in> strides{(is_broadcast_value(*inputs[K], out) ? 0 : 1)...};
    parallel_for(n, elementwise_grain, [&](size_t begin, size_t end) {
      const auto b = static_cast<int64_t>(begin);
      run(o + b, static_cast<int64_t>(end - begin), Strided<In>{std::get<K>(base) + b * strides[K], strides[K]}...);
    });
    return;
  }
  StridedLayout<n_in + 1> layout(out.shape(), {strides_over(*inputs[K], out)..., out.strides()});
  const int64_t inner = layout.inner_size();
  const size_t rows = layout.rows();
  if (rows == 1) {
    // One long run (a strided 1-d view, say): split it instead of the rows.
    parallel_for(static_cast<size_t>(inner), elementwise_grain, [&](size_t begin, size_t end) {
      const auto b = static_cast<int64_t>(begin);
      run(o + b * layout.inner_stride(n_in), static_cast<int64_t>(end - begin),
          Strided<In>{std::get<K>(base) + b * layout.inner_stride(K), layout.inner_stride(K)}...);
    });
    return;
  }
  const size_t grain = std::max<size_t>(1, elementwise_grain / static_cast<size_t>(std::max<int64_t>(inner, 1)));
  parallel_for(rows, grain, [&](size_t begin, size_t end) {
    layout.for_each_row(begin, end, [&](const std::array<int64_t, n_in + 1>& offsets) {
      run(o + offsets[n_in], inner, Strided<In>{std::get<K>(base) + offsets[K], layout.inner_stride(K)}...);
    });
  });
}

}  // namespace detail

/// The one walk every element-wise kernel uses: gives `out` a buffer (donated by
/// an input when possible), then calls run(Out* o, int64_t n, Strided<In>... x)
/// on runs that cover out, split across threads, with out written at unit stride.
///   - inputs row-contiguous or broadcast values: out is row-contiguous, one flat run;
///   - inputs dense in one shared permuted order (transposes): out takes that layout
///     (as MLX does), one flat run over memory;
///   - anything else (slices, negative strides, partial broadcasts, mixed layouts):
///     out is row-contiguous and the inputs' strides are passed on per run.
template <class Out, class... In, class Run>
void elementwise(array& out, const Run& run, const std::same_as<array> auto&... inputs) {
  static_assert(sizeof...(In) == sizeof...(inputs));
  // Read the inputs' pointers before a donation moves a buffer into out.
  const std::tuple<const In*...> base{static_cast<const In*>(inputs.raw_data())...};
  bool flat = (... && (inputs.flags().row_contiguous || is_broadcast_value(inputs, out)));
  if (const array* model = flat ? nullptr : shared_permuted_layout(out, {&inputs...})) {
    allocate_like(out, *model, {&inputs...});
    flat = true;
  } else {
    allocate_row_major(out, {&inputs...});
  }
  if (out.size() == 0) {
    return;
  }
  detail::walk<Out, In...>(out, flat, run, base, {&inputs...}, std::index_sequence_for<In...>{});
}

/// Throws "[primitive] message" as an internal error: a kernel reached with inputs
/// its op should have rejected.
[[noreturn]] inline void internal_error(std::string_view primitive, std::string_view message) {
  std::string text = "[";
  text += primitive;
  text += "] ";
  text += message;
  throw_internal(text);
}

[[noreturn]] inline void unsupported_dtype(std::string_view primitive, Dtype dtype) {
  internal_error(primitive, std::string("The CPU kernel has no ") + std::string(dtype_name(dtype)) +
                                " implementation; the op should have rejected this dtype.");
}

/// Checks that the output dtype the op layer chose is the one the functor produces.
template <class S>
void check_output_dtype(std::string_view primitive, const array& out) {
  if (out.dtype() != dtype_v<S>) {
    internal_error(primitive, std::string("The CPU kernel produces ") + std::string(dtype_name(dtype_v<S>)) +
                                  " but the output is " + std::string(dtype_name(out.dtype())) + ".");
  }
}

}  // namespace nuvec::cpu
