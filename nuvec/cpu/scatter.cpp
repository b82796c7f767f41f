// Kernels that write at computed positions: Scatter, ScatterAxis, MaskedScatter, SliceUpdate and
// DynamicSliceUpdate. Each starts from a copy of the array (its buffer when it may be donated) and combines the
// updates into it. Updates whose position is out of range are dropped (indexing.h).
//
// Threads never share a destination: Scatter splits the elements of the update slice when the slices cannot
// overlap (size 1 on every indexed axis), ScatterAxis splits the positions off the axis; each thread then applies
// its updates in index order, so duplicates resolve as a sequential loop would (the last one wins for
// ScatterType::none). Half floats combine in float32; integers wrap (computed unsigned).

#include <cmath>
#include <type_traits>

#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/element_types.h"
#include "nuvec/cpu/indexing.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

template <ScatterType Type>
using scatter_constant = std::integral_constant<ScatterType, Type>;

/// Calls fn(scatter_constant<type>{}).
template <class Fn>
void with_type(ScatterType type, Fn&& fn) {
  switch (type) {
    case ScatterType::none:
      fn(scatter_constant<ScatterType::none>{});
      return;
    case ScatterType::sum:
      fn(scatter_constant<ScatterType::sum>{});
      return;
    case ScatterType::prod:
      fn(scatter_constant<ScatterType::prod>{});
      return;
    case ScatterType::max:
      fn(scatter_constant<ScatterType::max>{});
      return;
    case ScatterType::min:
      fn(scatter_constant<ScatterType::min>{});
      return;
  }
}

/// The value at a destination after combining `update` into `old`; max and min propagate NaN as np.maximum does.
template <ScatterType Type, class T>
T combine(T old, T update) {
  if constexpr (Type == ScatterType::none) {
    return update;
  } else if constexpr (is_half_v<T>) {
    return T(combine<Type>(static_cast<float>(old), static_cast<float>(update)));
  } else if constexpr (std::is_same_v<T, bool>) {
    return (Type == ScatterType::sum || Type == ScatterType::max) ? (old || update) : (old && update);
  } else if constexpr (Type == ScatterType::sum || Type == ScatterType::prod) {
    if constexpr (std::is_integral_v<T>) {
      // Wider unsigned arithmetic: no signed overflow, and no promotion of small types to int.
      using W = std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>;
      const auto a = static_cast<W>(old);
      const auto b = static_cast<W>(update);
      return static_cast<T>(Type == ScatterType::sum ? a + b : a * b);
    } else {
      return Type == ScatterType::sum ? old + update : old * update;
    }
  } else {
    if (is_nan(old)) {
      return old;
    }
    if (is_nan(update)) {
      return update;
    }
    const bool take_update = Type == ScatterType::max ? greater(update, old) : greater(old, update);
    return take_update ? update : old;
  }
}

template <ScatterType Type, class T>
void combine_run(T* dst, int64_t dst_stride, const T* src, int64_t src_stride, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    dst[i * dst_stride] = combine<Type>(dst[i * dst_stride], src[i * src_stride]);
  }
}

/// Calls fn(type_tag<T>{}, scatter_constant<type>{}): element types for the reducing scatters, bytes for `none`.
template <class Fn>
void dispatch_scatter(ScatterType type, Dtype dtype, Fn&& fn) {
  with_type(type, [&](auto t) {
    if constexpr (decltype(t)::value == ScatterType::none) {
      dispatch_bytes(size_of(dtype), [&](auto tag) { fn(tag, t); });
    } else {
      dispatch(dtype, [&](auto tag) { fn(tag, t); });
    }
  });
}

}  // namespace

void run(const Scatter& p, const Inputs& in, Outputs& out) {
  const array& a = in[0];
  const array& updates = in.back();
  array& o = out[0];
  init_from_input(a, o);
  const auto index_ndim = static_cast<size_t>(updates.ndim() - a.ndim());
  const Shape index_shape(updates.shape().begin(), updates.shape().begin() + static_cast<int64_t>(index_ndim));
  const Shape slice(updates.shape().begin() + static_cast<int64_t>(index_ndim), updates.shape().end());
  const size_t count = shape_size(index_shape);
  const size_t slice_size = shape_size(slice);
  if (count == 0 || slice_size == 0 || o.size() == 0) {
    return;
  }
  // Offsets of each update slice in `updates` and of its destination in `o` (-1: dropped).
  const Strides index_strides(updates.strides().begin(), updates.strides().begin() + static_cast<int64_t>(index_ndim));
  const Strides slice_strides(updates.strides().begin() + static_cast<int64_t>(index_ndim), updates.strides().end());
  std::vector<int64_t> source(count);
  std::vector<int64_t> target(count, 0);
  for (size_t n = 0; n < count; ++n) {
    source[n] = element_offset(n, index_shape, index_strides);
  }
  bool disjoint = true;  // slices of size 1 on every indexed axis never overlap each other
  for (size_t k = 0; k < p.axes.size(); ++k) {
    const auto indices = load_indices(in[1 + k]);
    const int axis = p.axes[k];
    disjoint = disjoint && slice[axis] == 1;
    for (size_t n = 0; n < count; ++n) {
      const int64_t at = checked_start(indices[n], o.shape(axis), slice[axis]);
      target[n] = target[n] < 0 || at < 0 ? -1 : target[n] + at * o.strides(axis);
    }
  }
  const StridedLayout<2> layout(slice, {slice_strides, o.strides()});
  dispatch_scatter(p.type, o.dtype(), [&]<class T, class Type>(type_tag<T>, Type) {
    const auto* src = static_cast<const T*>(updates.raw_data());
    auto* dst = static_cast<T*>(o.raw_data());
    // Elements [begin, end) of every slice, the slices in index order.
    auto apply = [&](size_t begin, size_t end) {
      for (size_t n = 0; n < count; ++n) {
        if (target[n] < 0) {
          continue;
        }
        for_each_slice_run(layout, slice_size, begin, end,
                           [&](size_t, const std::array<int64_t, 2>& offsets, int64_t length) {
                             combine_run<Type::value>(dst + target[n] + offsets[1], layout.inner_stride(1),
                                                      src + source[n] + offsets[0], layout.inner_stride(0), length);
                           });
      }
    };
    if (disjoint) {
      parallel_for(slice_size, std::max<size_t>(1, elementwise_grain / count), apply);
    } else {
      apply(0, slice_size);
    }
  });
}

void run(const ScatterAxis& p, const Inputs& in, Outputs& out) {
  const array& a = in[0];
  array& o = out[0];
  init_from_input(a, o);
  const array& index_array = in[1];
  if (index_array.size() == 0 || o.size() == 0) {
    return;
  }
  const auto indices = load_indices(index_array);
  const array updates = row_major(in[2]);
  // Indices and updates have shape (outer, length, inner) around the axis, and o (outer, dim, inner).
  size_t outer = 1;
  size_t inner = 1;
  for (int i = 0; i < p.axis; ++i) {
    outer *= static_cast<size_t>(index_array.shape(i));
  }
  for (int i = p.axis + 1; i < index_array.ndim(); ++i) {
    inner *= static_cast<size_t>(index_array.shape(i));
  }
  const auto length = static_cast<size_t>(index_array.shape(p.axis));
  const int64_t dim = o.shape(p.axis);
  dispatch_scatter(p.type, o.dtype(), [&]<class T, class Type>(type_tag<T>, Type) {
    const auto* src = static_cast<const T*>(updates.raw_data());
    auto* dst = static_cast<T*>(o.raw_data());
    // Threads split the (outer, inner) positions; each walks the axis in order.
    const size_t grain = std::max<size_t>(1, elementwise_grain / length);
    parallel_for(outer * inner, grain, [&](size_t begin, size_t end) {
      for (size_t w = begin; w < end;) {
        const size_t i = w / inner;
        const size_t j0 = w - i * inner;
        const size_t j1 = std::min(inner, end - i * inner);
        for (size_t l = 0; l < length; ++l) {
          const size_t at = (i * length + l) * inner;
          for (size_t j = j0; j < j1; ++j) {
            const int64_t k = checked_start(indices[at + j], dim, 1);
            if (k >= 0) {
              T& d = dst[(i * static_cast<size_t>(dim) + static_cast<size_t>(k)) * inner + j];
              d = combine<Type::value>(d, src[at + j]);
            }
          }
        }
        w = i * inner + j1;
      }
    });
  });
}

void run(const MaskedScatter&, const Inputs& in, Outputs& out) {
  const array& a = in[0];
  const array& mask = in[1];
  array& o = out[0];
  init_from_input(a, o);
  const array source = row_major(in[2]);
  if (o.size() == 0 || source.size() == 0) {
    return;
  }
  // Sequential: the k-th true position takes the k-th source element. Positions past the source keep a's values.
  const StridedLayout<1> layout(mask.shape(), {mask.strides()});
  const int64_t inner = layout.inner_size();
  const int64_t stride = layout.inner_stride(0);
  const auto* m = static_cast<const uint8_t*>(mask.raw_data());  // bool is stored as one byte, 0 or 1
  dispatch_bytes(o.itemsize(), [&]<class U>(type_tag<U>) {
    const auto* src = static_cast<const U*>(source.raw_data());
    auto* dst = static_cast<U*>(o.raw_data());
    const size_t available = source.size();
    size_t taken = 0;
    int64_t position = 0;
    layout.for_each_row(0, layout.rows(), [&](const std::array<int64_t, 1>& offsets) {
      for (int64_t i = 0; i < inner && taken < available; ++i) {
        if (m[offsets[0] + i * stride] != 0) {
          dst[position + i] = src[taken++];
        }
      }
      position += inner;
    });
  });
}

void run(const SliceUpdate& p, const Inputs& in, Outputs& out) {
  const array& update = in[1];
  array& o = out[0];
  init_from_input(in[0], o);
  if (update.size() == 0) {
    return;
  }
  int64_t offset = 0;
  Strides window(o.ndim());
  for (int i = 0; i < o.ndim(); ++i) {
    offset += static_cast<int64_t>(p.start[i]) * o.strides(i);
    window[i] = o.strides(i) * p.strides[i];
  }
  if (p.type == ScatterType::none) {
    copy_strided(update, static_cast<char*>(o.raw_data()) + offset * static_cast<int64_t>(o.itemsize()), window,
                 o.dtype());
    return;
  }
  const StridedLayout<2> layout(update.shape(), {update.strides(), window});
  const int64_t inner = layout.inner_size();
  dispatch_scatter(p.type, o.dtype(), [&]<class T, class Type>(type_tag<T>, Type) {
    const auto* src = static_cast<const T*>(update.raw_data());
    T* dst = static_cast<T*>(o.raw_data()) + offset;
    // The slice's positions are distinct, so rows split freely.
    parallel_for(layout.rows(), std::max<size_t>(1, elementwise_grain / static_cast<size_t>(inner)),
                 [&](size_t begin, size_t end) {
                   layout.for_each_row(begin, end, [&](const std::array<int64_t, 2>& offsets) {
                     combine_run<Type::value>(dst + offsets[1], layout.inner_stride(1), src + offsets[0],
                                              layout.inner_stride(0), inner);
                   });
                 });
  });
}

void run(const DynamicSliceUpdate& p, const Inputs& in, Outputs& out) {
  const array& update = in[1];
  array& o = out[0];
  init_from_input(in[0], o);
  if (update.size() == 0) {
    return;
  }
  const auto starts = load_indices(in[2]);
  int64_t offset = 0;
  for (size_t k = 0; k < p.axes.size(); ++k) {
    const int axis = p.axes[k];
    offset += clamp_start(starts[k], o.shape(axis), update.shape(axis)) * o.strides(axis);
  }
  copy_strided(update, static_cast<char*>(o.raw_data()) + offset * static_cast<int64_t>(o.itemsize()), o.strides(),
               o.dtype());
}

}  // namespace nuvec::cpu
