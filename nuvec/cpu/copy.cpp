#include "nuvec/cpu/copy.h"

#include <array>
#include <cstring>

#include "nuvec/core/dispatch.h"
#include "nuvec/core/scalar_math.h"
#include "nuvec/cpu/element_types.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/prefetch.h"
#include "nuvec/cpu/strided.h"
#include "nuvec/cpu/thread_pool.h"
#include "nuvec/cpu/transpose_block.h"

// Highway's extras, included once nuvec/cpu/highway.h has chosen static dispatch.
#include <hwy/cache_control.h>

namespace nuvec::cpu {

namespace {

/// numpy's casting rules, with the undefined C++ cases (NaN or out-of-range float
/// to integer) given x86's "integer indefinite" result as numpy does.
template <class To, class From>
To cast(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, complex64_t>) {
    return cast<To>(x.real());
  } else if constexpr (std::is_same_v<To, complex64_t>) {
    return complex64_t(cast<float>(x), 0.0F);
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<float>(x) != 0.0F || (std::is_integral_v<From> && x != From{});
  } else if constexpr (is_half_v<From>) {
    return cast<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bfloat16_t> && std::is_same_v<From, float>) {
    return bfloat16_t::from_bits(scalar::bfloat16_bits(x));
  } else if constexpr (is_half_v<To>) {
    if constexpr (std::is_same_v<From, float>) {
      return To(x);
    } else {
      return To(static_cast<double>(x));
    }
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return scalar::float_to_int<To>(static_cast<double>(x));
  } else {
    return static_cast<To>(x);
  }
}

template <class From, class To>
void convert_run(const From* src, int64_t src_stride, To* dst, int64_t dst_stride, int64_t n) {
  if (src_stride == 1 && dst_stride == 1) {
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = cast<To>(src[i]);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      dst[i * dst_stride] = cast<To>(src[i * src_stride]);
    }
  }
}

/// convert_run of a dense run whose output is too large for the caches: converted a block at a time into a buffer
/// in L1 (the conversion loop stays the vectorized one), which is then streamed to dst. That saves memory the read
/// for ownership of each output line: a third of the traffic of a float32 to bfloat16 conversion.
template <class From, class To>
void convert_streamed(const From* src, To* dst, int64_t n) {
  constexpr int64_t block = 4096 / sizeof(To);
  alignas(64) std::array<To, block> buffer;
  for (int64_t i = 0; i < n; i += block) {
    const int64_t m = std::min(block, n - i);
    convert_run(src + i, 1, buffer.data(), 1, m);
    stream_copy(dst + i, buffer.data(), static_cast<size_t>(m) * sizeof(To));
  }
  hwy::FlushStream();  // order the streamed lines before parallel_for reports this work done
}

/// Moves one buffered tile (buffer[c][r]: column c of the source, see copy_tiled) to the output in blocks transposed
/// in registers, streamed when asked. Returns false when the tile is partial or its elements have no such block.
template <class From, class To, size_t Rows>
bool transpose_tile(const std::array<std::array<From, Rows>, Rows>& buffer, int64_t height, int64_t width, To* tile_out,
                    int64_t out_row, bool stream) {
  constexpr int64_t side = transpose_block_side(sizeof(From));
  constexpr auto tile = static_cast<int64_t>(Rows);
  if constexpr (std::is_same_v<From, To> && side > 0) {
    if (height != tile || width != tile) {
      return false;
    }
    const auto in_stride = tile * static_cast<int64_t>(sizeof(From));
    const auto out_stride = out_row * static_cast<int64_t>(sizeof(To));
    // Row-block outer, column-block inner: each output row's lines are completed by consecutive stores, which the
    // write-combining buffers need for streamed lines.
    const auto blocks = [&]<bool Stream>() {
      for (int64_t r = 0; r < tile; r += side) {
        for (int64_t c = 0; c < tile; c += side) {
          transpose_block<sizeof(From), Stream>(reinterpret_cast<const char*>(&buffer[c][r]), in_stride,
                                                reinterpret_cast<char*>(tile_out + r * out_row + c), out_stride);
        }
      }
    };
    constexpr auto row_bytes = static_cast<uintptr_t>(transpose_block_row_bytes(sizeof(From)));
    if (stream && reinterpret_cast<uintptr_t>(tile_out) % row_bytes == 0 &&
        static_cast<uintptr_t>(out_stride) % row_bytes == 0) {
      blocks.template operator()<true>();
    } else {
      blocks.template operator()<false>();
    }
    return true;
  } else {
    return false;
  }
}

/// A transposing copy (the source is unit-stride along the destination's second last axis), walked in square
/// tiles. Each tile's source columns are first copied whole into a buffer in L1, a contiguous read per column:
/// read in place, the tile's 64 columns lie 64 row strides apart and a power-of-two stride maps them all to the
/// same few cache sets, which evicted each line before its next use (a 4096x4096 float32 transpose at 8.5x the
/// time of a copy). From the buffer, 2-, 4- and 8-byte elements that keep their type move as blocks transposed in
/// registers (transpose_block.h), others one by one; the next tile's columns are prefetched into L2 meanwhile. An
/// output too large for the caches is written with streaming stores, which saves memory the read for ownership of
/// every output line (a third of the traffic). A 4096x4096 float32 transpose on 2 cores: 27-31 ms before, 7.5 ms
/// buffered, 5.9-6.9 ms with the prefetch (a copy: 3.5 ms); on a machine loaded by other builds, 24.4 ms without
/// the streaming and 12.5 ms with it (medians of 7 alternated runs). Returns false when the layout is not of that kind.
template <class From, class To>
bool copy_tiled(const StridedLayout<2>& layout, const From* in, To* dst) {
  const size_t nd = layout.shape.size();
  if (nd < 2) {
    return false;
  }
  const auto& src = layout.strides[0];
  const auto& out = layout.strides[1];
  if (src[nd - 2] != 1 || out[nd - 1] != 1 || src[nd - 1] == 1) {
    return false;
  }
  constexpr int64_t tile = 64;
  const int64_t rows = layout.shape[nd - 2];
  const int64_t cols = layout.shape[nd - 1];
  const int64_t src_col = src[nd - 1];
  const int64_t out_row = out[nd - 2];
  const int64_t row_tiles = (rows + tile - 1) / tile;
  size_t outer = 1;
  for (size_t i = 0; i + 2 < nd; ++i) {
    outer *= static_cast<size_t>(layout.shape[i]);
  }
  const size_t units = outer * static_cast<size_t>(row_tiles);
  const bool stream = shape_size(layout.shape) * sizeof(To) >= streaming_bytes;
  const size_t grain = std::max<size_t>(1, elementwise_grain / static_cast<size_t>(tile * std::max<int64_t>(cols, 1)));
  parallel_for(units, grain, [&](size_t begin, size_t end) {
    // buffer[c][r]: the tile's column c (source elements along r, contiguous).
    alignas(64) std::array<std::array<From, tile>, tile> buffer;
    for (size_t unit = begin; unit < end; ++unit) {
      // Offsets of this unit's outer index.
      size_t rem = unit / static_cast<size_t>(row_tiles);
      int64_t in_offset = 0;
      int64_t out_offset = 0;
      for (size_t i = nd - 2; i-- > 0;) {
        auto index = static_cast<int64_t>(rem % static_cast<size_t>(layout.shape[i]));
        rem /= static_cast<size_t>(layout.shape[i]);
        in_offset += index * src[i];
        out_offset += index * out[i];
      }
      const int64_t r0 = static_cast<int64_t>(unit % static_cast<size_t>(row_tiles)) * tile;
      const int64_t height = std::min(tile, rows - r0);
      for (int64_t c0 = 0; c0 < cols; c0 += tile) {
        const int64_t width = std::min(tile, cols - c0);
        const int64_t next_width = std::min(tile, cols - c0 - tile);  // the next tile's, fetched into L2 meanwhile
        const auto bytes = height * static_cast<int64_t>(sizeof(From));
        for (int64_t c = 0; c < width; ++c) {
          const From* column = in + in_offset + (c0 + c) * src_col + r0;
          std::memcpy(buffer[c].data(), column, static_cast<size_t>(bytes));
          if (c < next_width) {
            prefetch_l2(column + tile * src_col, bytes);
          }
        }
        To* tile_out = dst + out_offset + r0 * out_row + c0;
        if (transpose_tile(buffer, height, width, tile_out, out_row, stream)) {
          continue;
        }
        for (int64_t r = 0; r < height; ++r) {
          for (int64_t c = 0; c < width; ++c) {
            tile_out[r * out_row + c] = cast<To>(buffer[c][r]);
          }
        }
      }
    }
    if (stream) {
      hwy::FlushStream();  // order the streamed lines before parallel_for reports this work done
    }
  });
  return true;
}

template <class From, class To>
void copy_typed(const Shape& shape, const From* in, const Strides& src_strides, To* dst, const Strides& dst_strides) {
  StridedLayout<2> layout(shape, {src_strides, dst_strides});
  if (copy_tiled(layout, in, dst)) {
    return;
  }
  const auto inner = layout.inner_size();
  const auto in_stride = layout.inner_stride(0);
  const auto out_stride = layout.inner_stride(1);
  if (in_stride == 1 && out_stride == 1 && layout.rows() == 1) {
    // One dense run: split it between threads, as plain memcpy when the type is kept (which streams large copies
    // itself), else converted and streamed past the caches when too large for them.
    const bool stream = static_cast<size_t>(inner) * sizeof(To) >= streaming_bytes;
    parallel_for(static_cast<size_t>(inner), elementwise_grain, [&](size_t b, size_t e) {
      if constexpr (std::is_same_v<From, To>) {
        std::memcpy(dst + b, in + b, (e - b) * sizeof(To));
      } else if (stream) {
        convert_streamed(in + b, dst + b, static_cast<int64_t>(e - b));
      } else {
        convert_run(in + b, 1, dst + b, 1, static_cast<int64_t>(e - b));
      }
    });
    return;
  }
  const size_t rows = layout.rows();
  const size_t grain = std::max<size_t>(1, elementwise_grain / static_cast<size_t>(std::max<int64_t>(inner, 1)));
  parallel_for(rows, grain, [&](size_t b, size_t e) {
    layout.for_each_row(b, e, [&](const std::array<int64_t, 2>& offsets) {
      convert_run(in + offsets[0], in_stride, dst + offsets[1], out_stride, inner);
    });
  });
}

bool all_ones_or(const Shape& shape, const Strides& strides, const Strides& expected) {
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] > 1 && strides[i] != expected[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

void stream_copy(void* dst, const void* src, size_t bytes) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d);
  auto* out = static_cast<uint8_t*>(dst);
  const auto* in = static_cast<const uint8_t*>(src);
  const size_t head = std::min(bytes, (lanes - reinterpret_cast<uintptr_t>(out) % lanes) % lanes);
  std::memcpy(out, in, head);
  size_t i = head;
  for (; i + lanes <= bytes; i += lanes) {
    hn::Stream(hn::LoadU(d, in + i), d, out + i);
  }
  std::memcpy(out + i, in + i, bytes - i);
}

Layout layout_of(const Shape& shape, const Strides& strides) {
  size_t size = shape_size(shape);
  Flags flags;
  flags.row_contiguous = all_ones_or(shape, strides, row_major_strides(shape));
  Strides col(shape.size(), 1);
  for (size_t i = 1; i < shape.size(); ++i) {
    col[i] = col[i - 1] * std::max<int64_t>(shape[i - 1], 1);
  }
  flags.col_contiguous = all_ones_or(shape, strides, col);
  // Dense but permuted (a transpose): the strides are a permutation of some
  // row-major strides. The span then equals the size.
  size_t span = 1;
  bool has_zero_stride = false;
  bool has_negative_stride = false;  // the data pointer is then not the start of the range
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      return {Flags{true, true, true}, 0};
    }
    if (shape[i] > 1) {
      has_zero_stride = has_zero_stride || strides[i] == 0;
      has_negative_stride = has_negative_stride || strides[i] < 0;
      span += static_cast<size_t>(std::abs(strides[i])) * static_cast<size_t>(shape[i] - 1);
    }
  }
  flags.contiguous = !has_zero_stride && !has_negative_stride && span == size;
  return {flags, has_zero_stride ? span : std::max(span, size)};
}

void copy_strided(const Shape& shape, const void* src, Dtype src_dtype, const Strides& src_strides, void* dst,
                  Dtype dst_dtype, const Strides& dst_strides) {
  if (shape_size(shape) == 0) {
    return;
  }
  dispatch(src_dtype, [&]<class From>(type_tag<From>) {
    dispatch(dst_dtype, [&]<class To>(type_tag<To>) {
      copy_typed(shape, static_cast<const From*>(src), src_strides, static_cast<To*>(dst), dst_strides);
    });
  });
}

void copy_strided(const array& src, void* dst_data, const Strides& dst_strides, Dtype dst_dtype) {
  copy_strided(src.shape(), src.raw_data(), src.dtype(), src.strides(), dst_data, dst_dtype, dst_strides);
}

void copy_to_new(const array& src, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  copy_strided(src, out.raw_data(), out.strides(), out.dtype());
}

void allocate_or_donate(array& out, const array& candidate) {
  if (candidate.is_donatable() && candidate.flags().row_contiguous && candidate.dtype() == out.dtype() &&
      candidate.size() == out.size() && candidate.data_size() == out.size()) {
    out.move_shared_buffer(candidate);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
  }
}

void run(const AsType&, const Inputs& in, Outputs& out) { copy_to_new(in[0], out[0]); }

void run(const Copy& p, const Inputs& in, Outputs& out) {
  const auto& flags = in[0].flags();
  if (p.share_contiguous && (flags.row_contiguous || (p.allow_col_major && flags.col_contiguous))) {
    out[0].copy_shared_buffer(in[0]);
    return;
  }
  copy_to_new(in[0], out[0]);
}

void run(const Concatenate& p, const Inputs& in, Outputs& out) {
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  auto* base = static_cast<char*>(o.raw_data());
  int64_t offset = 0;
  for (const auto& part : in) {
    copy_strided(part, base + offset * o.strides(p.axis) * static_cast<int64_t>(o.itemsize()), o.strides(), o.dtype());
    offset += part.shape(p.axis);
  }
}

void run(const Pad& p, const Inputs& in, Outputs& out) {
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  // Fill with the pad value (a scalar read with zero strides), then copy the
  // input into the interior.
  const auto& value = in[1];
  copy_strided(o.shape(), value.raw_data(), value.dtype(), Strides(o.ndim(), 0), o.raw_data(), o.dtype(), o.strides());
  int64_t offset = 0;
  for (size_t i = 0; i < p.axes.size(); ++i) {
    offset += p.low[i] * o.strides(p.axes[i]);
  }
  copy_strided(in[0], static_cast<char*>(o.raw_data()) + offset * static_cast<int64_t>(o.itemsize()), o.strides(),
               o.dtype());
}

}  // namespace nuvec::cpu
