// Softmax and LogSumExp over the last axis, vectorized with Highway, split across threads.
//
// Contiguous rows: a NaN-propagating max pass, then exp(x - max) is stored while it is summed, then scaled by
// 1 / sum. Rows of typical length stay in L1/L2 between the passes, so memory sees one read of the input and one
// write of the output; a large output is written with streaming stores from a cache-resident scratch row, which
// also saves the read-for-ownership of the output, and the passes of neighbouring rows are then interleaved (see
// softmax_rows_interleaved). LogSumExp is the max pass plus one summing pass.
//
// Rows stored side by side (the last axis strided and the one before it contiguous: what softmax over an outer axis
// becomes after the op moves that axis last) are done a band of neighbouring rows at a time: one vector load takes an
// element of several rows, the band is copied to a contiguous tile on the first pass, and the output keeps the
// input's layout, so the op's final transpose gives back a row-major array.
//
// float16 and bfloat16 rows (and other strided rows) are converted into a float32 scratch row first, so the
// arithmetic is always float32 at least (the Softmax `precise` flag is therefore always honoured).
//
// Non-finite inputs follow the plain formula as NumPy evaluates it: a row whose max is NaN, +inf or -inf (all -inf)
// gives NaN everywhere for softmax; logsumexp gives NaN for NaN, and the max itself for +inf or an all -inf row.
// A zero-length row has logsumexp -inf (log of an empty sum).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/element_types.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/softmax_row.h"
#include "nuvec/cpu/strided.h"
#include "nuvec/cpu/thread_pool.h"

// Highway's extras, included once nuvec/cpu/highway.h has chosen static dispatch.
#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>

namespace nuvec::cpu {

namespace {

constexpr size_t streaming_bytes = size_t{16} << 20;     // outputs this large go around the cache
constexpr int64_t max_streaming_row = int64_t{1} << 16;  // rows whose scratch copy stays in L2

/// y = x * scale with non-temporal stores where y is vector-aligned (the caller flushes them).
template <class A>
void scale_row_streaming(const A* x, A* y, int64_t n, A scale) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto f = hn::Set(d, scale);
  int64_t i = 0;
  const auto misaligned = reinterpret_cast<uintptr_t>(y) % (static_cast<uintptr_t>(lanes) * sizeof(A));
  if (misaligned % sizeof(A) != 0) {
    i = n;  // never for buffers from the allocator; kept for safety
  } else if (misaligned != 0) {
    i = std::min<int64_t>(n, lanes - static_cast<int64_t>(misaligned / sizeof(A)));
  }
  for (int64_t j = 0; j < i; ++j) {
    y[j] = x[j] * scale;
  }
  for (; i + lanes <= n; i += lanes) {
    hn::Stream(hn::Mul(hn::LoadU(d, x + i), f), d, y + i);
  }
  for (; i < n; ++i) {
    y[i] = x[i] * scale;
  }
}

/// Softmax of one contiguous row (x and y may alias). With `scratch`, the exponentials stay in that cache-resident
/// buffer and y is written once with streaming stores, which saves memory the read-for-ownership of y.
template <class A>
void softmax_row(const A* x, A* y, int64_t n, A* scratch = nullptr) {
  const A m = row_max(x, n);
  if (!std::isfinite(m)) {
    std::fill(y, y + n, std::numeric_limits<A>::quiet_NaN());
    return;
  }
  if (scratch != nullptr) {
    const A s = exp_store_sum(x, scratch, n, m);
    scale_row_streaming(scratch, y, n, A{1} / s);
    return;
  }
  const A s = exp_store_sum(x, y, n, m);
  scale_row(y, n, A{1} / s);
}

/// Softmax of `count` contiguous rows of n elements (n a multiple of the vector length, y aligned to it), with rows'
/// passes interleaved so that memory is read and written all the time: step k reads row k for its max while row
/// k - 1, read by the step before and now in the cache, has its exponentials stored to a scratch row and summed, and
/// row k - 2's exponentials are scaled into y with streaming stores. Done a row at a time, the max pass waits on
/// memory while the other two passes leave it idle. The reads are prefetched 4 KiB ahead: on 4096x4096 float32 (2
/// cores, loaded machine, medians of 7 alternated runs) 23.6 ms interleaved alone, 20.7 ms row by row with the
/// prefetch, 11.6 ms with both (19.3 ms before). A row whose max is not finite is scaled by NaN (all NaN).
template <class A>
void softmax_rows_interleaved(const A* x, A* y, int64_t n, size_t count, std::vector<A>& scratch) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  scratch.resize(static_cast<size_t>(2 * n));
  A* exps[2] = {scratch.data(), scratch.data() + n};
  constexpr int64_t prefetch_distance = 4096 / sizeof(A);
  A cur_max = 0;     // of row k - 1
  A prev_scale = 0;  // 1 / sum of row k - 2's exponentials, or NaN
  for (size_t k = 0; k < count + 2; ++k) {
    const bool next = k < count;
    const bool cur = k >= 1 && k <= count;
    const bool prev = k >= 2;
    const A* next_row = x + static_cast<int64_t>(k) * n;
    const A* cur_row = next_row - n;
    A* cur_exp = exps[k % 2];
    const A* prev_exp = exps[(k + 1) % 2];
    A* prev_out = y + (static_cast<int64_t>(k) - 2) * n;
    auto m = hn::Set(d, -std::numeric_limits<A>::infinity());
    auto nan = hn::IsNaN(m);
    auto sum = hn::Zero(d);
    const auto shift = hn::Set(d, std::isfinite(cur_max) ? cur_max : A{0});
    const auto scale = hn::Set(d, prev_scale);
    for (int64_t i = 0; i < n; i += lanes) {
      if (next) {
        // One core's sequential reads outrun the hardware prefetcher here: ask for lines 4 KiB ahead.
        __builtin_prefetch(next_row + i + prefetch_distance, 0, 2);
        const auto v = hn::LoadU(d, next_row + i);
        m = hn::Max(m, v);
        nan = hn::Or(nan, hn::IsNaN(v));
      }
      if (cur) {
        const auto e = exp_nonpositive(d, hn::Sub(hn::LoadU(d, cur_row + i), shift));
        hn::StoreU(e, d, cur_exp + i);
        sum = hn::Add(sum, e);
      }
      if (prev) {
        hn::Stream(hn::Mul(hn::LoadU(d, prev_exp + i), scale), d, prev_out + i);
      }
    }
    if (cur) {
      prev_scale =
          std::isfinite(cur_max) ? A{1} / hn::GetLane(hn::SumOfLanes(d, sum)) : std::numeric_limits<A>::quiet_NaN();
    }
    if (next) {
      cur_max = hn::AllFalse(d, nan) ? hn::GetLane(hn::MaxOfLanes(d, m)) : std::numeric_limits<A>::quiet_NaN();
    }
  }
}

template <class A>
A logsumexp_row(const A* x, int64_t n) {
  if (n == 0) {
    return -std::numeric_limits<A>::infinity();
  }
  const A m = row_max(x, n);
  if (!std::isfinite(m)) {
    return m;  // NaN, +inf, or -inf for a row of -inf
  }
  return m + std::log(exp_store_sum(x, static_cast<A*>(nullptr), n, m));
}

// ---------------------------------------------------------------- rows stored side by side

/// Bytes of neighbouring rows handled together (two cache lines per element index), and the largest copy of them
/// (rows * band) kept in cache.
constexpr int64_t band_bytes = 128;
constexpr int64_t max_tile_bytes = int64_t{2} << 20;

/// Per-thread buffers for a band of neighbouring rows: a contiguous copy (the tile) and per-row maxima and sums.
template <class A>
class Band {
 public:
  Band(int64_t length, int64_t band)
      : storage_(static_cast<size_t>((length + 2) * band) + HWY_MAX_BYTES / sizeof(A)), band_(band) {
    auto* p = storage_.data();
    while (reinterpret_cast<uintptr_t>(p) % HWY_MAX_BYTES != 0) {
      ++p;
    }
    max_ = p;
    sum_ = p + band;
    tile_ = p + 2 * band;
  }
  A* tile() { return tile_; }
  A* max() { return max_; }
  A* sum() { return sum_; }

 private:
  std::vector<A> storage_;
  int64_t band_;
  A* max_;
  A* sum_;
  A* tile_;
};

/// Rows r < width (a multiple of the vector length) side by side: row r's element i is x[r + i * stride] (the layout
/// of a transposed array). Copies them to the tile (element i of every row contiguous, so later passes read cache,
/// not strided memory), computes the NaN-propagating max of each row, then replaces the tile by exp(x - max) and
/// the sums by the sums of those. A row whose max is not finite is shifted by 0 (its results become NaN or the max).
template <class A>
void band_exp(const A* x, int64_t n, int64_t stride, int64_t width, Band<A>& band) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  A* tile = band.tile();
  A* m = band.max();
  A* s = band.sum();
  for (int64_t j = 0; j < width; j += lanes) {
    hn::Store(hn::Set(d, -std::numeric_limits<A>::infinity()), d, m + j);
    hn::Store(hn::Zero(d), d, s + j);
  }
  for (int64_t i = 0; i < n; ++i) {
    const A* row = x + i * stride;
    A* t = tile + i * width;
    for (int64_t j = 0; j < width; j += lanes) {
      const auto v = hn::LoadU(d, row + j);
      const auto a = hn::Load(d, m + j);
      hn::Store(v, d, t + j);
      hn::Store(hn::IfThenElse(hn::Or(hn::Gt(v, a), hn::IsNaN(v)), v, a), d, m + j);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    A* t = tile + i * width;
    for (int64_t j = 0; j < width; j += lanes) {
      const auto mj = hn::Load(d, m + j);
      const auto e = exp_nonpositive(d, hn::Sub(hn::Load(d, t + j), hn::IfThenElseZero(hn::IsFinite(mj), mj)));
      hn::Store(e, d, t + j);
      hn::Store(hn::Add(hn::Load(d, s + j), e), d, s + j);
    }
  }
}

/// Softmax of a band (see band_exp); y has x's layout and is written with streaming stores when asked and aligned.
template <class A>
void softmax_band(const A* x, A* y, int64_t n, int64_t stride, int64_t width, Band<A>& band, bool streaming) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  band_exp(x, n, stride, width, band);
  const A* tile = band.tile();
  A* scale = band.sum();
  for (int64_t j = 0; j < width; j += lanes) {
    // Rows whose max is not finite are NaN throughout (NumPy's formula gives NaN there).
    const auto finite = hn::IsFinite(hn::Load(d, band.max() + j));
    const auto inv = hn::Div(hn::Set(d, A{1}), hn::Load(d, scale + j));
    hn::Store(hn::IfThenElse(finite, inv, hn::Set(d, std::numeric_limits<A>::quiet_NaN())), d, scale + j);
  }
  const auto vector_bytes = static_cast<uintptr_t>(lanes) * sizeof(A);
  const bool aligned = reinterpret_cast<uintptr_t>(y) % vector_bytes == 0 &&
                       static_cast<uintptr_t>(stride) * sizeof(A) % vector_bytes == 0;
  for (int64_t i = 0; i < n; ++i) {
    const A* t = tile + i * width;
    A* out = y + i * stride;
    for (int64_t j = 0; j < width; j += lanes) {
      const auto r = hn::Mul(hn::Load(d, t + j), hn::Load(d, scale + j));
      if (streaming && aligned) {
        hn::Stream(r, d, out + j);
      } else {
        hn::StoreU(r, d, out + j);
      }
    }
  }
}

/// logsumexp of a band (see band_exp), written to y[0 .. width).
template <class A>
void logsumexp_band(const A* x, A* y, int64_t n, int64_t stride, int64_t width, Band<A>& band) {
  band_exp(x, n, stride, width, band);
  for (int64_t r = 0; r < width; ++r) {
    const A m = band.max()[r];
    y[r] = std::isfinite(m) ? m + std::log(band.sum()[r]) : m;  // NaN, +inf, or -inf for a row of -inf
  }
}

/// Rows stored side by side (the last axis strided, the axis before it contiguous), in groups over the other axes.
struct Interleaved {
  size_t groups;
  int64_t width;   // rows per group (size of the second-to-last axis)
  int64_t length;  // elements per row
  int64_t stride;  // between a row's elements
  Shape outer_shape;
  Strides outer_strides;

  [[nodiscard]] int64_t base(size_t group) const { return element_offset(group, outer_shape, outer_strides); }
};

/// The interleaved geometry of `a`, when it is a dense (permuted) layout of that kind with at least `min_width` rows
/// side by side; such an array's layout can be given to the output as is.
std::optional<Interleaved> interleaved(const array& a, int64_t min_width) {
  if (a.ndim() < 2 || a.strides(-2) != 1 || a.strides(-1) <= 1 || a.shape(-2) < min_width || a.shape(-1) == 0 ||
      static_cast<int64_t>(a.shape(-1)) * band_bytes > max_tile_bytes || !a.flags().contiguous ||
      a.data_size() != a.size()) {
    return std::nullopt;
  }
  for (auto stride : a.strides()) {
    if (stride < 0) {
      return std::nullopt;
    }
  }
  Interleaved l;
  l.outer_shape.assign(a.shape().begin(), a.shape().end() - 2);
  l.outer_strides.assign(a.strides().begin(), a.strides().end() - 2);
  l.groups = shape_size(l.outer_shape);
  l.width = a.shape(-2);
  l.length = a.shape(-1);
  l.stride = a.strides(-1);
  return l;
}

/// Geometry shared by both kernels: rows of the last axis of `a`.
struct Rows {
  size_t count;
  int64_t length;
  int64_t stride;  // along the row
  bool dense;      // row r starts at r * length
  Shape lead_shape;
  Strides lead_strides;

  explicit Rows(const array& a)
      : count(a.ndim() == 0 ? 1 : shape_size(Shape(a.shape().begin(), a.shape().end() - 1))),
        length(a.ndim() == 0 ? 1 : a.shape(-1)),
        stride(a.ndim() == 0 ? 1 : a.strides(-1)),
        dense(a.flags().row_contiguous) {
    if (a.ndim() > 0) {
      lead_shape.assign(a.shape().begin(), a.shape().end() - 1);
      lead_strides.assign(a.strides().begin(), a.strides().end() - 1);
    }
  }
  [[nodiscard]] int64_t offset(size_t row) const {
    return dense ? static_cast<int64_t>(row) * length : element_offset(row, lead_shape, lead_strides);
  }
  [[nodiscard]] size_t grain() const {
    return std::max<size_t>(1, (1 << 14) / static_cast<size_t>(std::max<int64_t>(length, 1)));
  }
};

/// A pointer to row `row` in compute type: the input itself when contiguous, else a converted copy in `scratch`.
template <class T>
const compute_t<T>* row_input(const T* x, const Rows& rows, size_t row, std::vector<compute_t<T>>& scratch) {
  const T* p = x + rows.offset(row);
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    if (rows.stride == 1) {
      return p;
    }
  }
  scratch.resize(static_cast<size_t>(rows.length));
  for (int64_t i = 0; i < rows.length; ++i) {
    scratch[static_cast<size_t>(i)] = static_cast<compute_t<T>>(p[i * rows.stride]);
  }
  return scratch.data();
}

/// Calls fn(buffers, group, group's offset, first row, rows) for each band of interleaved rows (rows a multiple of the
/// vector length), in parallel, and tail(group, offset, row) for the last rows of a group that do not fill a vector.
template <class A, class Band, class Fn, class Tail>
void for_each_band(const Interleaved& l, Fn&& fn, Tail&& tail) {
  const auto lanes = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<A>()));
  const int64_t band = std::max<int64_t>(lanes, band_bytes / static_cast<int64_t>(sizeof(A)) / lanes * lanes);
  const auto bands = static_cast<size_t>((l.width + band - 1) / band);
  const size_t work = static_cast<size_t>(band * l.length);
  parallel_for(l.groups * bands, std::max<size_t>(1, (size_t{1} << 15) / work), [&](size_t b, size_t e) {
    Band buffers(l.length, band);
    for (size_t item = b; item < e; ++item) {
      const size_t group = item / bands;
      const int64_t base = l.base(group);
      const int64_t r0 = static_cast<int64_t>(item % bands) * band;
      const int64_t width = std::min(band, (l.width - r0) / lanes * lanes);
      if (width > 0) {
        fn(buffers, group, base, r0, width);
      }
      for (int64_t r = r0 + width; r < std::min(l.width, r0 + band); ++r) {
        tail(group, base, r);
      }
    }
  });
}

/// Softmax of interleaved rows (see band_exp); the output takes the input's layout.
template <class A>
void softmax_interleaved(const array& in, array& out, const Interleaved& l) {
  const A* x = in.data<A>();
  out.set_data(allocator::malloc(out.nbytes()), in.data_size(), in.strides(), in.flags());
  A* y = out.data<A>();
  const bool streaming = out.nbytes() >= streaming_bytes;
  for_each_band<A, Band<A>>(
      l,
      [&](Band<A>& band, size_t /*group*/, int64_t base, int64_t r0, int64_t width) {
        softmax_band(x + base + r0, y + base + r0, l.length, l.stride, width, band, streaming);
        if (streaming) {
          hwy::FlushStream();  // order the streaming stores before parallel_for reports this work done
        }
      },
      [&](size_t /*group*/, int64_t base, int64_t r) {
        std::vector<A> row(static_cast<size_t>(l.length));
        for (int64_t i = 0; i < l.length; ++i) {
          row[static_cast<size_t>(i)] = x[base + r + i * l.stride];
        }
        softmax_row(row.data(), row.data(), l.length);
        for (int64_t i = 0; i < l.length; ++i) {
          y[base + r + i * l.stride] = row[static_cast<size_t>(i)];
        }
      });
}

template <class T>
void softmax_kernel(const array& in, array& out) {
  using A = compute_t<T>;
  if constexpr (std::is_same_v<T, A>) {
    if (auto l = interleaved(in, static_cast<int64_t>(hn::Lanes(hn::ScalableTag<A>())))) {
      softmax_interleaved<A>(in, out, *l);
      return;
    }
  }
  const Rows rows(in);
  const T* x = in.data<T>();
  // The output may take over the input's buffer: each element is read before it is written.
  allocate_or_donate(out, in);
  T* y = out.data<T>();
  if (out.size() == 0) {
    return;
  }
  // A large output that does not overwrite the input is written with streaming stores (it cannot stay in cache).
  const bool streaming = std::is_same_v<T, A> && static_cast<const void*>(y) != static_cast<const void*>(x) &&
                         out.nbytes() >= streaming_bytes && rows.length <= max_streaming_row;
  const auto vector_bytes = hn::Lanes(hn::ScalableTag<A>()) * sizeof(A);
  const bool interleave = streaming && rows.dense && rows.length > 0 &&
                          static_cast<size_t>(rows.length) * sizeof(A) % vector_bytes == 0 &&
                          reinterpret_cast<uintptr_t>(y) % vector_bytes == 0;
  parallel_for(rows.count, rows.grain(), [&](size_t b, size_t e) {
    std::vector<A> scratch;
    std::vector<A> result;
    if constexpr (std::is_same_v<T, A>) {
      if (interleave) {
        softmax_rows_interleaved(x + static_cast<int64_t>(b) * rows.length, y + static_cast<int64_t>(b) * rows.length,
                                 rows.length, e - b, scratch);
        hwy::FlushStream();  // order the streaming stores before parallel_for reports this chunk done
        return;
      }
    }
    for (size_t r = b; r < e; ++r) {
      const A* src = row_input(x, rows, r, scratch);
      T* dst = y + static_cast<int64_t>(r) * rows.length;
      if constexpr (std::is_same_v<T, A>) {
        if (streaming) {
          result.resize(static_cast<size_t>(rows.length));
          softmax_row(src, dst, rows.length, result.data());
        } else {
          softmax_row(src, dst, rows.length);
        }
      } else {
        result.resize(static_cast<size_t>(rows.length));
        softmax_row(src, result.data(), rows.length);
        std::copy(result.begin(), result.end(), dst);  // rounds to the half type
      }
    }
    if (streaming) {
      hwy::FlushStream();  // order the streaming stores before parallel_for reports this chunk done
    }
  });
}

template <class T>
void logsumexp_kernel(const array& in, array& out) {
  using A = compute_t<T>;
  const T* x = in.data<T>();
  out.set_data(allocator::malloc(out.nbytes()));
  T* y = out.data<T>();
  if constexpr (std::is_same_v<T, A>) {
    if (auto l = interleaved(in, static_cast<int64_t>(hn::Lanes(hn::ScalableTag<A>())))) {
      // Output row g * width + r.
      for_each_band<A, Band<A>>(
          *l,
          [&](Band<A>& band, size_t group, int64_t base, int64_t r0, int64_t width) {
            A* dst = y + static_cast<int64_t>(group) * l->width + r0;
            logsumexp_band(x + base + r0, dst, l->length, l->stride, width, band);
          },
          [&](size_t group, int64_t base, int64_t r) {
            std::vector<A> row(static_cast<size_t>(l->length));
            for (int64_t i = 0; i < l->length; ++i) {
              row[static_cast<size_t>(i)] = x[base + r + i * l->stride];
            }
            y[static_cast<int64_t>(group) * l->width + r] = logsumexp_row(row.data(), l->length);
          });
      return;
    }
  }
  const Rows rows(in);
  parallel_for(rows.count, rows.grain(), [&](size_t b, size_t e) {
    std::vector<A> scratch;
    for (size_t r = b; r < e; ++r) {
      y[r] = static_cast<T>(logsumexp_row(row_input(x, rows, r, scratch), rows.length));
    }
  });
}

}  // namespace

void run(const Softmax&, const Inputs& in, Outputs& out) {
  dispatch<floating_types>(in[0].dtype(), "Softmax", [&]<class T>(type_tag<T>) { softmax_kernel<T>(in[0], out[0]); });
}

void run(const LogSumExp&, const Inputs& in, Outputs& out) {
  dispatch<floating_types>(in[0].dtype(), "LogSumExp",
                           [&]<class T>(type_tag<T>) { logsumexp_kernel<T>(in[0], out[0]); });
}

}  // namespace nuvec::cpu
