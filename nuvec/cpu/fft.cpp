// The FFT kernel: a multi-dimensional transform is a 1-d transform along each axis in turn. Each line along the axis
// is gathered (from any strides, converting to the compute type) into a contiguous scratch line of separate real and
// imaginary parts, transformed in place with the length's cached plan, and scattered to its destination. Lines are
// split across the thread pool; a transform with fewer lines than threads runs its lines in turn and lets each
// plan's stages use the pool instead.
//
// Real forward transforms do the real axis (the last of `axes`) first, which halves the data the other axes see;
// real inverse transforms do it last. Between axes the data lives in a complex buffer of the compute type: float
// inputs (and complex64) compute in float and reuse the output's buffer; float64 inputs compute in double in a
// buffer of their own and are rounded to complex64 once, at the end.

#include <algorithm>
#include <complex>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "nuvec/core/allocator.h"
#include "nuvec/cpu/fft_plan.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

constexpr size_t line_grain = size_t{1} << 15;  // elements of lines per work item
constexpr size_t strided_group = 16;            // lines gathered together along a strided axis

enum class Elem { f32, f64, c64, c128 };

Elem elem_of(Dtype dtype) {
  if (dtype == float32) {
    return Elem::f32;
  }
  return dtype == float64 ? Elem::f64 : Elem::c64;
}

/// An array (or work buffer) seen as lines along one axis.
struct Lines {
  void* data;
  Elem elem;
  Shape shape;
  Strides strides;
};

enum class Kind { forward, inverse, real_forward, real_inverse };

/// Walks the lines along `axis` of two arrays whose other axes agree, in row-major order of those axes.
class LineWalker {
 public:
  LineWalker(const Lines& src, const Lines& dst, int axis) {
    for (int i = 0; i < static_cast<int>(dst.shape.size()); ++i) {
      if (i != axis) {
        sizes_.push_back(dst.shape[i]);
        src_strides_.push_back(src.strides[i]);
        dst_strides_.push_back(dst.strides[i]);
      }
    }
    index_.assign(sizes_.size(), 0);
  }

  void seek(size_t line) {
    src_offset_ = 0;
    dst_offset_ = 0;
    for (size_t i = sizes_.size(); i-- > 0;) {
      index_[i] = static_cast<int32_t>(line % static_cast<size_t>(sizes_[i]));
      line /= static_cast<size_t>(sizes_[i]);
      src_offset_ += index_[i] * src_strides_[i];
      dst_offset_ += index_[i] * dst_strides_[i];
    }
  }

  void next() {
    for (size_t i = sizes_.size(); i-- > 0;) {
      src_offset_ += src_strides_[i];
      dst_offset_ += dst_strides_[i];
      if (++index_[i] < sizes_[i]) {
        return;
      }
      src_offset_ -= sizes_[i] * src_strides_[i];
      dst_offset_ -= sizes_[i] * dst_strides_[i];
      index_[i] = 0;
    }
  }

  [[nodiscard]] int64_t src_offset() const { return src_offset_; }
  [[nodiscard]] int64_t dst_offset() const { return dst_offset_; }

 private:
  Shape sizes_;
  Strides src_strides_;
  Strides dst_strides_;
  std::vector<int32_t> index_;
  int64_t src_offset_ = 0;
  int64_t dst_offset_ = 0;
};

/// Reads `count` lines of `len` elements (line g starts at base + offsets[g] and steps by `stride`) into re/im, line g
/// at g * ld; a zero imaginary part for real sources. The loop over lines is innermost: neighbouring lines of a
/// strided axis are neighbours in memory, so a group reads whole cache lines.
template <class T, class S>
void gather_from(const S* base, const int64_t* offsets, size_t count, int64_t stride, size_t len, T* re, T* im,
                 size_t ld) {
  for (size_t i = 0; i < len; ++i) {
    const int64_t at = static_cast<int64_t>(i) * stride;
    for (size_t g = 0; g < count; ++g) {
      const S v = base[offsets[g] + at];
      if constexpr (std::is_floating_point_v<S>) {
        re[g * ld + i] = static_cast<T>(v);
        im[g * ld + i] = T(0);
      } else {
        re[g * ld + i] = static_cast<T>(v.real());
        im[g * ld + i] = static_cast<T>(v.imag());
      }
    }
  }
}

template <class T>
void gather(const Lines& src, const int64_t* offsets, size_t count, int64_t stride, size_t len, T* re, T* im,
            size_t ld) {
  switch (src.elem) {
    case Elem::f32:
      gather_from(static_cast<const float*>(src.data), offsets, count, stride, len, re, im, ld);
      break;
    case Elem::f64:
      gather_from(static_cast<const double*>(src.data), offsets, count, stride, len, re, im, ld);
      break;
    case Elem::c64:
      gather_from(static_cast<const std::complex<float>*>(src.data), offsets, count, stride, len, re, im, ld);
      break;
    case Elem::c128:
      gather_from(static_cast<const std::complex<double>*>(src.data), offsets, count, stride, len, re, im, ld);
      break;
  }
}

/// Writes scale * (re, im) of `count` lines to their places (the real part alone for real destinations).
template <class T, class D>
void scatter_to(const T* re, const T* im, size_t ld, T scale, D* base, const int64_t* offsets, size_t count,
                int64_t stride, size_t len) {
  for (size_t i = 0; i < len; ++i) {
    const int64_t at = static_cast<int64_t>(i) * stride;
    for (size_t g = 0; g < count; ++g) {
      if constexpr (std::is_floating_point_v<D>) {
        base[offsets[g] + at] = static_cast<D>(re[g * ld + i] * scale);
      } else {
        using V = typename D::value_type;
        base[offsets[g] + at] = D(static_cast<V>(re[g * ld + i] * scale), static_cast<V>(im[g * ld + i] * scale));
      }
    }
  }
}

template <class T>
void scatter(const T* re, const T* im, size_t ld, T scale, const Lines& dst, const int64_t* offsets, size_t count,
             int64_t stride, size_t len) {
  switch (dst.elem) {
    case Elem::f32:
      scatter_to(re, im, ld, scale, static_cast<float*>(dst.data), offsets, count, stride, len);
      break;
    case Elem::f64:
      scatter_to(re, im, ld, scale, static_cast<double*>(dst.data), offsets, count, stride, len);
      break;
    case Elem::c64:
      scatter_to(re, im, ld, scale, static_cast<std::complex<float>*>(dst.data), offsets, count, stride, len);
      break;
    case Elem::c128:
      scatter_to(re, im, ld, scale, static_cast<std::complex<double>*>(dst.data), offsets, count, stride, len);
      break;
  }
}

/// Transforms every line along `axis` of src into dst (which may be src itself: a line is read before it is written).
template <class T>
void transform_axis(Kind kind, int axis, const Lines& src, const Lines& dst) {
  const auto len_in = static_cast<size_t>(src.shape[axis]);
  const auto len_out = static_cast<size_t>(dst.shape[axis]);
  const size_t n = kind == Kind::real_inverse ? len_out : len_in;
  const size_t lines = shape_size(dst.shape) / len_out;
  const bool real = kind == Kind::real_forward || kind == Kind::real_inverse;
  std::shared_ptr<const fft::ComplexPlan<T>> complex_plan;
  std::shared_ptr<const fft::RealPlan<T>> real_plan;
  if (real) {
    real_plan = fft::real_plan<T>(n);
  } else {
    complex_plan = fft::complex_plan<T>(n);
  }
  const size_t scratch = real ? real_plan->scratch_size() : complex_plan->scratch_size();
  const T scale = kind == Kind::inverse || kind == Kind::real_inverse ? T(1) / static_cast<T>(n) : T(1);
  // Fewer lines than threads: one work item, so the plan's stages get the pool.
  const size_t grain = lines < static_cast<size_t>(num_threads()) ? lines : std::max<size_t>(1, line_grain / n);
  // Lines that are not contiguous go in groups, so their gathers and scatters read and write whole cache lines.
  const size_t group = src.strides[axis] == 1 && dst.strides[axis] == 1 ? 1 : std::min(strided_group, lines);
  parallel_for(lines, grain, [&](size_t begin, size_t end) {
    std::vector<T> buffer(2 * n * group + scratch);
    T* re = buffer.data();
    T* im = re + n * group;
    T* work = im + n * group;
    int64_t src_offsets[strided_group];
    int64_t dst_offsets[strided_group];
    LineWalker walk(src, dst, axis);
    walk.seek(begin);
    for (size_t first = begin; first < end; first += group) {
      const size_t count = std::min(group, end - first);
      for (size_t g = 0; g < count; ++g, walk.next()) {
        src_offsets[g] = walk.src_offset();
        dst_offsets[g] = walk.dst_offset();
      }
      gather(src, src_offsets, count, src.strides[axis], len_in, re, im, n);
      for (size_t g = 0; g < count; ++g) {
        T* line_re = re + g * n;
        T* line_im = im + g * n;
        switch (kind) {
          case Kind::forward:
            complex_plan->forward(line_re, line_im, work);
            break;
          case Kind::inverse:
            complex_plan->backward(line_re, line_im, work);
            break;
          case Kind::real_forward:
            real_plan->forward(line_re, line_im, work);
            break;
          case Kind::real_inverse:
            real_plan->backward(line_re, line_im, work);
            break;
        }
      }
      scatter(re, im, n, scale, dst, dst_offsets, count, dst.strides[axis], len_out);
    }
  });
}

template <class T>
void transform(const FFT& p, const array& x, array& y) {
  std::vector<std::pair<int, Kind>> steps;
  const int real_axis = p.axes.back();
  const Kind complex_kind = p.inverse ? Kind::inverse : Kind::forward;
  if (p.real && !p.inverse) {
    steps.emplace_back(real_axis, Kind::real_forward);
  }
  for (size_t i = 0; i < p.axes.size(); ++i) {
    if (!p.real || i + 1 < p.axes.size()) {
      steps.emplace_back(p.axes[i], complex_kind);
    }
  }
  if (p.real && p.inverse) {
    steps.emplace_back(real_axis, Kind::real_inverse);
  }

  const Lines input{x.raw_data(), elem_of(x.dtype()), x.shape(), x.strides()};
  const Lines output{y.raw_data(), elem_of(y.dtype()), y.shape(), y.strides()};
  // The data between steps: the output itself when it holds complex values of the compute type, else a buffer of the
  // compute type (shaped as the input for the real inverse, whose last step changes the shape).
  std::vector<std::complex<T>> storage;
  Lines work = output;
  if (steps.size() > 1 && (std::is_same_v<T, double> || (p.real && p.inverse))) {
    const Shape& shape = p.real && p.inverse ? x.shape() : y.shape();
    storage.resize(shape_size(shape));
    work = Lines{storage.data(), std::is_same_v<T, double> ? Elem::c128 : Elem::c64, shape, row_major_strides(shape)};
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    transform_axis<T>(steps[i].second, steps[i].first, i == 0 ? input : work, i + 1 == steps.size() ? output : work);
  }
}

}  // namespace

void run(const FFT& p, const Inputs& in, Outputs& out) {
  const array& x = in[0];
  array& y = out[0];
  y.set_data(allocator::malloc(y.nbytes()));
  if (y.size() == 0) {
    return;
  }
  if (x.dtype() == float64) {
    transform<double>(p, x, y);
  } else {
    transform<float>(p, x, y);
  }
}

}  // namespace nuvec::cpu
