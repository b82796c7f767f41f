// RMSNorm and LayerNorm over the last axis and their vjps: one row at a time, vectorized with Highway, rows split
// across threads.
//
// A row is read from memory once: its statistics pass leaves it in L1/L2 for the normalizing pass. Rows of
// float16/bfloat16 (and strided rows) are converted into a float32 scratch row first, so the arithmetic is float32
// (float64 for float64) and the result is rounded to the output dtype once, after weight and bias. LayerNorm takes
// the mean first and then the mean of squared deviations, which stays accurate for rows with a large mean.
//
// RMSNormVJP and LayerNormVJP compute the gradients in one pass per row, instead of the dozen element-wise and
// reduction kernels the compositions differentiate into.
//
// Per row, with g the output's cotangent, w the weight (1 without one), n the row length and ĝ = g * w:
//   LayerNorm: x̂ = (x - mean) * rstd,  dx = rstd * (ĝ - mean(ĝ) - x̂ * mean(ĝ * x̂)),  dw += g * x̂,  db += g;
//   RMSNorm:   rstd = 1 / sqrt(mean(x²) + eps),  dx = rstd * ĝ - x * rstd³ * mean(ĝ * x),  dw += g * x * rstd.
// Rows are split into one part per thread; each part sums its own dw and db and the parts are added in order
// afterwards, so the result does not depend on scheduling. The arithmetic is float32 (float64 for float64).

#include <algorithm>
#include <cmath>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/row_sum.h"
#include "nuvec/cpu/strided.h"

namespace nuvec::cpu {

namespace {

/// y = (x - shift) * inv * w [+ b]; x and y may alias.
template <class A>
void normalize_row(const A* x, A* y, int64_t n, A shift, A inv, const A* w, const A* b) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto c = hn::Set(d, shift);
  const auto f = hn::Set(d, inv);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    auto v = hn::Mul(hn::Mul(hn::Sub(hn::LoadU(d, x + i), c), f), hn::LoadU(d, w + i));
    if (b != nullptr) {
      v = hn::Add(v, hn::LoadU(d, b + i));
    }
    hn::StoreU(v, d, y + i);
  }
  for (; i < n; ++i) {
    y[i] = (x[i] - shift) * inv * w[i] + (b != nullptr ? b[i] : A{0});
  }
}

/// A 1-d parameter (weight or bias) in compute type; `fill` when absent.
template <class T, class A = compute_t<T>>
std::vector<A> load_param(const array* p, int64_t n, A fill) {
  std::vector<A> out(static_cast<size_t>(n), fill);
  if (p != nullptr && n > 0) {
    load_block(out.data(), Strided<T>{p->data<T>(), p->strides(0)}, n);
  }
  return out;
}

template <class T>
void norm_kernel(const Inputs& in, array& out, float eps, bool has_weight, bool has_bias, bool centered) {
  using A = compute_t<T>;
  const array& x = in[0];
  const int64_t n = x.shape(-1);
  const size_t rows = n == 0 ? 0 : x.size() / static_cast<size_t>(n);
  const auto w = load_param<T>(has_weight ? &in[1] : nullptr, n, A{1});
  const auto b = load_param<T>(has_bias ? &in[has_weight ? 2 : 1] : nullptr, n, A{0});
  const Shape lead_shape(x.shape().begin(), x.shape().end() - 1);
  const Strides lead_strides(x.strides().begin(), x.strides().end() - 1);
  const bool dense = x.flags().row_contiguous;
  const int64_t stride = x.strides(-1);
  const T* src = x.data<T>();
  allocate_or_donate(out, x);  // each row is read before it is written
  T* dst = out.data<T>();
  parallel_for(rows, std::max<size_t>(1, (size_t{1} << 14) / static_cast<size_t>(std::max<int64_t>(n, 1))),
               [&](size_t begin, size_t end) {
                 std::vector<A> scratch;
                 for (size_t r = begin; r < end; ++r) {
                   const T* row =
                       src + (dense ? static_cast<int64_t>(r) * n : element_offset(r, lead_shape, lead_strides));
                   const A* xr = nullptr;
                   if constexpr (std::is_same_v<T, A>) {
                     xr = stride == 1 ? row : nullptr;
                   }
                   if (xr == nullptr) {
                     scratch.resize(static_cast<size_t>(n));
                     load_block(scratch.data(), Strided<T>{row, stride}, n);
                     xr = scratch.data();
                   }
                   const A mean = centered ? sum_row(xr, n) / static_cast<A>(n) : A{0};
                   const A inv = A{1} / std::sqrt(sum_squares(xr, n, mean) / static_cast<A>(n) + static_cast<A>(eps));
                   T* yr = dst + static_cast<int64_t>(r) * n;
                   if constexpr (std::is_same_v<T, A>) {
                     normalize_row(xr, yr, n, mean, inv, w.data(), has_bias ? b.data() : nullptr);
                   } else {
                     scratch.resize(static_cast<size_t>(n));
                     normalize_row(xr, scratch.data(), n, mean, inv, w.data(), has_bias ? b.data() : nullptr);
                     store_block(yr, scratch.data(), n);
                   }
                 }
               });
}

/// One row's gradient. x̂ = (x - shift) * rstd (shift = mean for LayerNorm, 0 for RMSNorm). Adds g * x̂ to dw and
/// g to db (when given) and writes dx = rstd * (ĝ - centre * mean(ĝ) - x̂ * mean(ĝ * x̂)), centre 1 for LayerNorm.
template <class A>
void row_gradient(const A* x, const A* g, const A* w, int64_t n, A shift, A rstd, bool centred, A* dx, A* dw, A* db) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto vshift = hn::Set(d, shift);
  const auto vrstd = hn::Set(d, rstd);
  auto sum_gh = hn::Zero(d);
  auto sum_ghx = hn::Zero(d);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto xh = hn::Mul(hn::Sub(hn::LoadU(d, x + i), vshift), vrstd);
    const auto gv = hn::LoadU(d, g + i);
    const auto gh = hn::Mul(gv, hn::LoadU(d, w + i));
    sum_gh = hn::Add(sum_gh, gh);
    sum_ghx = hn::MulAdd(gh, xh, sum_ghx);
    if (dw != nullptr) {
      hn::StoreU(hn::MulAdd(gv, xh, hn::LoadU(d, dw + i)), d, dw + i);
    }
    if (db != nullptr) {
      hn::StoreU(hn::Add(gv, hn::LoadU(d, db + i)), d, db + i);
    }
  }
  A total_gh = hn::GetLane(hn::SumOfLanes(d, sum_gh));
  A total_ghx = hn::GetLane(hn::SumOfLanes(d, sum_ghx));
  for (int64_t t = i; t < n; ++t) {
    const A xh = (x[t] - shift) * rstd;
    const A gh = g[t] * w[t];
    total_gh += gh;
    total_ghx += gh * xh;
    if (dw != nullptr) {
      dw[t] += g[t] * xh;
    }
    if (db != nullptr) {
      db[t] += g[t];
    }
  }
  const A mean_gh = centred ? total_gh / static_cast<A>(n) : A{0};
  const A mean_ghx = total_ghx / static_cast<A>(n);
  const auto vmean_gh = hn::Set(d, mean_gh);
  const auto vmean_ghx = hn::Set(d, mean_ghx);
  for (i = 0; i + lanes <= n; i += lanes) {
    const auto xh = hn::Mul(hn::Sub(hn::LoadU(d, x + i), vshift), vrstd);
    const auto gh = hn::Mul(hn::LoadU(d, g + i), hn::LoadU(d, w + i));
    hn::StoreU(hn::Mul(vrstd, hn::NegMulAdd(xh, vmean_ghx, hn::Sub(gh, vmean_gh))), d, dx + i);
  }
  for (; i < n; ++i) {
    const A xh = (x[i] - shift) * rstd;
    dx[i] = rstd * (g[i] * w[i] - mean_gh - xh * mean_ghx);
  }
}

/// Rows of a (..., n) array in compute type: in place when already contiguous compute-type rows, else converted.
template <class T, class A = compute_t<T>>
class RowReader {
 public:
  explicit RowReader(const array& a)
      : data_(a.data<T>()),
        n_(a.shape(-1)),
        stride_(a.strides(-1)),
        dense_(a.flags().row_contiguous),
        lead_shape_(a.shape().begin(), a.shape().end() - 1),
        lead_strides_(a.strides().begin(), a.strides().end() - 1) {}

  const A* row(size_t r, std::vector<A>& buffer) const {
    const T* ptr = data_ + (dense_ ? static_cast<int64_t>(r) * n_ : element_offset(r, lead_shape_, lead_strides_));
    if constexpr (std::is_same_v<T, A>) {
      if (stride_ == 1) {
        return ptr;
      }
    }
    buffer.resize(static_cast<size_t>(n_));
    load_block(buffer.data(), Strided<T>{ptr, stride_}, n_);
    return buffer.data();
  }

 private:
  const T* data_;
  int64_t n_;
  int64_t stride_;
  bool dense_;
  Shape lead_shape_;
  Strides lead_strides_;
};

/// inputs x[, weight][, bias], cotangent; outputs dx[, dweight][, dbias].
template <class T>
void norm_vjp(const Inputs& in, Outputs& out, float eps, bool has_weight, bool has_bias, bool centred) {
  using A = compute_t<T>;
  const array& x = in[0];
  const array& cotangent = in.back();
  const int64_t n = x.shape(-1);
  const size_t rows = n == 0 ? 0 : x.size() / static_cast<size_t>(n);
  const auto w = load_param<T>(has_weight ? &in[1] : nullptr, n, A{1});
  for (auto& o : out) {
    o.set_data(allocator::malloc(o.nbytes()));
  }
  const RowReader<T> xs(x);
  const RowReader<T> gs(cotangent);
  T* dx = out[0].data<T>();
  // One part per thread, each with its own parameter sums.
  const auto parts = static_cast<size_t>(std::max<int64_t>(
      1, std::min<int64_t>(num_threads(), static_cast<int64_t>(rows * static_cast<size_t>(n) >> 14))));
  const auto width = static_cast<size_t>(n);
  std::vector<A> dw_parts(has_weight ? parts * width : 0, A{0});
  std::vector<A> db_parts(has_bias ? parts * width : 0, A{0});
  parallel_for(parts, 1, [&](size_t begin, size_t end) {
    std::vector<A> x_buf;
    std::vector<A> g_buf;
    std::vector<A> dx_buf(width);
    for (size_t part = begin; part < end; ++part) {
      A* dw = has_weight ? dw_parts.data() + part * width : nullptr;
      A* db = has_bias ? db_parts.data() + part * width : nullptr;
      for (size_t r = rows * part / parts; r < rows * (part + 1) / parts; ++r) {
        const A* xr = xs.row(r, x_buf);
        const A* gr = gs.row(r, g_buf);
        const A shift = centred ? sum_row(xr, n) / static_cast<A>(n) : A{0};
        const A squares = sum_squares(xr, n, shift);
        const A rstd = A{1} / std::sqrt(squares / static_cast<A>(n) + static_cast<A>(eps));
        A* dxr = dx_buf.data();
        if constexpr (std::is_same_v<T, A>) {
          dxr = dx + r * width;
        }
        row_gradient(xr, gr, w.data(), n, shift, rstd, centred, dxr, dw, db);
        if constexpr (!std::is_same_v<T, A>) {
          store_block(dx + r * width, dxr, n);
        }
      }
    }
  });
  auto reduce_parts = [&](const std::vector<A>& partial, array& result) {
    std::vector<A> total(width, A{0});
    for (size_t part = 0; part < parts; ++part) {
      for (size_t i = 0; i < width; ++i) {
        total[i] += partial[part * width + i];
      }
    }
    store_block(result.data<T>(), total.data(), n);
  };
  size_t next = 1;
  if (has_weight) {
    reduce_parts(dw_parts, out[next++]);
  }
  if (has_bias) {
    reduce_parts(db_parts, out[next]);
  }
}

}  // namespace

void run(const RMSNorm& p, const Inputs& in, Outputs& out) {
  dispatch<floating_types>(in[0].dtype(), "RMSNorm", [&]<class T>(type_tag<T>) {
    norm_kernel<T>(in, out[0], p.eps, p.has_weight, false, false);
  });
}

void run(const LayerNorm& p, const Inputs& in, Outputs& out) {
  dispatch<floating_types>(in[0].dtype(), "LayerNorm", [&]<class T>(type_tag<T>) {
    norm_kernel<T>(in, out[0], p.eps, p.has_weight, p.has_bias, true);
  });
}

void run(const RMSNormVJP& p, const Inputs& in, Outputs& out) {
  dispatch<floating_types>(in[0].dtype(), "RMSNormVJP",
                           [&]<class T>(type_tag<T>) { norm_vjp<T>(in, out, p.eps, p.has_weight, false, false); });
}

void run(const LayerNormVJP& p, const Inputs& in, Outputs& out) {
  dispatch<floating_types>(in[0].dtype(), "LayerNormVJP",
                           [&]<class T>(type_tag<T>) { norm_vjp<T>(in, out, p.eps, p.has_weight, p.has_bias, true); });
}

}  // namespace nuvec::cpu
