// The BlockMaskedMM, GatherMM and SegmentedMM kernels: each maps its matrices onto the GEMM layer (gemm.h), which
// threads the products itself and reads transposed or sliced operands without copies.
//
// BlockMaskedMM: operand masks are applied while copying the operands to dense scratch (a false tile becomes zeros,
// so a NaN in a masked tile does not reach the result); the output is computed one band of block_size rows at a
// time, a band whose tiles are all masked out is never computed, and the output mask then zeroes (bool) or scales
// (floating) each tile.
// GatherMM: consecutive outputs that share a right matrix (what sorted indices give) are one GEMM with their left
// matrices stacked: in place when they already sit one after the other in memory, else gathered into scratch.
// SegmentedMM: one GEMM per segment on slices of a and b (views), zeros for an empty segment.
// Indices and segments are data, so they are checked here; a bad one fails the evaluation with an error.

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/element_types.h"
#include "nuvec/cpu/gemm.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/strided.h"

namespace nuvec::cpu {

namespace {

Shape batch_of(const array& a) { return {a.shape().begin(), a.shape().end() - 2}; }
Strides batch_strides_of(const array& a) { return {a.strides().begin(), a.strides().end() - 2}; }

const char* element_ptr(const array& a, int64_t offset) {
  return static_cast<const char*>(a.raw_data()) + offset * static_cast<int64_t>(a.itemsize());
}

/// One matrix of a mask's tile grid: value(i, j) of a bool mask is 0 or 1, of a floating mask its value.
template <class T>
struct TileMask {
  const array* mask = nullptr;
  int64_t base = 0;  // element offset of this batch entry's grid

  [[nodiscard]] bool present() const { return mask != nullptr; }
  [[nodiscard]] bool is_bool() const { return mask->dtype() == bool_; }
  [[nodiscard]] compute_t<T> value(int64_t i, int64_t j) const {
    const int64_t offset = base + i * mask->strides(-2) + j * mask->strides(-1);
    if (is_bool()) {
      return mask->data<bool>()[offset] ? 1 : 0;
    }
    return static_cast<compute_t<T>>(mask->data<T>()[offset]);
  }
};

/// Copies the rows x cols matrix at `src` (strides rs, cs) to dense `dst`, each element multiplied by its tile's mask
/// value; a tile whose bool mask is false is written as zeros.
template <class T>
void masked_copy(const T* src, int64_t rs, int64_t cs, int64_t rows, int64_t cols, int block, const TileMask<T>& m,
                 T* dst) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j0 = 0; j0 < cols; j0 += block) {
      const int64_t j1 = std::min(cols, j0 + block);
      const auto f = m.value(i / block, j0 / block);
      T* row = dst + i * cols;
      if (f == 0 && m.is_bool()) {
        std::fill(row + j0, row + j1, T(0));
      } else if (f == 1) {
        for (int64_t j = j0; j < j1; ++j) {
          row[j] = src[i * rs + j * cs];
        }
      } else {
        for (int64_t j = j0; j < j1; ++j) {
          row[j] = static_cast<T>(static_cast<compute_t<T>>(src[i * rs + j * cs]) * f);
        }
      }
    }
  }
}

template <class T>
void block_masked_product(const BlockMaskedMM& p, const Inputs& in, array& o) {
  const auto& a = in[0];
  const auto& b = in[1];
  const int block = p.block_size;
  const int64_t m = o.shape(-2);
  const int64_t n = o.shape(-1);
  const int64_t k = a.shape(-1);
  const bool has_out_mask = in.size() == 3 || in.size() == 5;
  const bool has_operand_masks = in.size() >= 4;
  const Shape batch = batch_of(o);
  const auto count = static_cast<size_t>(shape_size(batch));
  std::vector<T> a_scratch(has_operand_masks ? static_cast<size_t>(m * k) : 0);
  std::vector<T> b_scratch(has_operand_masks ? static_cast<size_t>(k * n) : 0);
  auto grid = [&](const array& mask, size_t index) {
    return TileMask<T>{&mask, element_offset(index, batch, batch_strides_of(mask))};
  };
  for (size_t index = 0; index < count; ++index) {
    const T* a_ptr = a.data<T>() + element_offset(index, batch, batch_strides_of(a));
    const T* b_ptr = b.data<T>() + element_offset(index, batch, batch_strides_of(b));
    MatrixBatch ma{a_ptr, 0, a.strides(-2), a.strides(-1)};
    MatrixBatch mb{b_ptr, 0, b.strides(-2), b.strides(-1)};
    if (has_operand_masks) {
      masked_copy(a_ptr, a.strides(-2), a.strides(-1), m, k, block, grid(in[in.size() - 2], index), a_scratch.data());
      masked_copy(b_ptr, b.strides(-2), b.strides(-1), k, n, block, grid(in[in.size() - 1], index), b_scratch.data());
      ma = MatrixBatch{a_scratch.data(), 0, k, 1};
      mb = MatrixBatch{b_scratch.data(), 0, n, 1};
    }
    T* c = o.data<T>() + static_cast<int64_t>(index) * m * n;
    if (!has_out_mask) {
      gemm(o.dtype(), 1, m, n, k, 1.F, ma, mb, 0.F, c);
      continue;
    }
    const auto mask = grid(in[2], index);
    for (int64_t r0 = 0; r0 < m; r0 += block) {
      const int64_t rows = std::min<int64_t>(block, m - r0);
      T* band = c + r0 * n;
      bool needed = !mask.is_bool();
      for (int64_t j = 0; j * block < n && !needed; ++j) {
        needed = mask.value(r0 / block, j) != 0;
      }
      if (!needed) {
        std::fill(band, band + rows * n, T(0));
        continue;
      }
      MatrixBatch band_a{static_cast<const T*>(ma.data) + r0 * ma.row_stride, 0, ma.row_stride, ma.col_stride};
      gemm(o.dtype(), 1, rows, n, k, 1.F, band_a, mb, 0.F, band);
      for (int64_t j0 = 0; j0 < n; j0 += block) {
        const int64_t j1 = std::min(n, j0 + block);
        const auto f = mask.value(r0 / block, j0 / block);
        if (f == 1) {
          continue;
        }
        for (int64_t i = 0; i < rows; ++i) {
          T* row = band + i * n;
          for (int64_t j = j0; j < j1; ++j) {
            row[j] = mask.is_bool() ? T(0) : static_cast<T>(static_cast<compute_t<T>>(row[j]) * f);
          }
        }
      }
    }
  }
}

/// Reads `count` uint32 values of an index array in row-major order (it may be a strided or broadcast view).
std::vector<uint32_t> read_indices(const array& indices) {
  std::vector<uint32_t> values(indices.size());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = indices.data<uint32_t>()[element_offset(i, indices.shape(), indices.strides())];
  }
  return values;
}

void check_indices(const std::vector<uint32_t>& indices, size_t matrices, const char* which) {
  for (uint32_t index : indices) {
    if (index >= matrices) {
      throw_invalid(std::string("[gather_mm] ") + which + " holds index " + std::to_string(index) +
                    ", out of range for " + std::to_string(matrices) + " matrices.");
    }
  }
}

/// Caps the rows gathered into scratch for one GEMM (elements of the left operand).
constexpr int64_t max_gathered_elements = int64_t{1} << 22;

}  // namespace

void run(const BlockMaskedMM& p, const Inputs& in, Outputs& out) {
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  if (o.size() == 0) {
    return;
  }
  dispatch<floating_types>(o.dtype(), "BlockMaskedMM",
                           [&]<class T>(type_tag<T>) { block_masked_product<T>(p, in, o); });
}

void run(const GatherMM&, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  const auto& b = in[1];
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  if (o.size() == 0) {
    return;
  }
  const int64_t m = o.shape(-2);
  const int64_t n = o.shape(-1);
  const int64_t k = a.shape(-1);
  const auto lhs = read_indices(in[2]);
  const auto rhs = read_indices(in[3]);
  const Shape a_batch = batch_of(a);
  const Shape b_batch = batch_of(b);
  const Strides a_strides = batch_strides_of(a);
  const Strides b_strides = batch_strides_of(b);
  check_indices(lhs, shape_size(a_batch), "lhs_indices");
  check_indices(rhs, shape_size(b_batch), "rhs_indices");
  const auto item = static_cast<int64_t>(o.itemsize());
  auto* c = static_cast<char*>(o.raw_data());
  auto a_offset = [&](size_t i) { return element_offset(lhs[i], a_batch, a_strides); };
  const int64_t max_run = std::max<int64_t>(1, max_gathered_elements / std::max<int64_t>(m * k, 1));
  std::vector<char> scratch;
  for (size_t begin = 0; begin < lhs.size();) {
    size_t end = begin + 1;
    while (end < lhs.size() && rhs[end] == rhs[begin] && static_cast<int64_t>(end - begin) < max_run) {
      ++end;
    }
    const auto run = static_cast<int64_t>(end - begin);
    // The run's left matrices, stacked into one (run * m) x k matrix.
    bool stacked = true;
    for (size_t i = begin + 1; i < end && stacked; ++i) {
      stacked = a_offset(i) == a_offset(begin) + static_cast<int64_t>(i - begin) * m * a.strides(-2);
    }
    MatrixBatch ma{element_ptr(a, a_offset(begin)), 0, a.strides(-2), a.strides(-1)};
    if (!stacked) {
      scratch.resize(static_cast<size_t>(run * m * k * item));
      const Shape matrix{static_cast<int32_t>(m), static_cast<int32_t>(k)};
      for (size_t i = begin; i < end; ++i) {
        copy_strided(matrix, element_ptr(a, a_offset(i)), a.dtype(), {a.strides(-2), a.strides(-1)},
                     scratch.data() + static_cast<int64_t>(i - begin) * m * k * item, a.dtype(), {k, 1});
      }
      ma = MatrixBatch{scratch.data(), 0, k, 1};
    }
    MatrixBatch mb{element_ptr(b, element_offset(rhs[begin], b_batch, b_strides)), 0, b.strides(-2), b.strides(-1)};
    gemm(o.dtype(), 1, run * m, n, k, 1.F, ma, mb, 0.F, c + static_cast<int64_t>(begin) * m * n * item);
    begin = end;
  }
}

void run(const SegmentedMM&, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  const auto& b = in[1];
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  const int64_t m = o.shape(-2);
  const int64_t n = o.shape(-1);
  const int64_t k = a.shape(-1);
  const auto bounds = read_indices(in[2]);
  for (size_t i = 0; i < bounds.size(); i += 2) {
    if (bounds[i] > k || bounds[i + 1] > k) {
      throw_invalid("[segmented_mm] Segment (" + std::to_string(bounds[i]) + ", " + std::to_string(bounds[i + 1]) +
                    ") is out of range for an inner dimension of " + std::to_string(k) + ".");
    }
  }
  const auto item = static_cast<int64_t>(o.itemsize());
  auto* c = static_cast<char*>(o.raw_data());
  for (size_t i = 0; i < bounds.size(); i += 2) {
    char* dst = c + static_cast<int64_t>(i / 2) * m * n * item;
    const int64_t start = bounds[i];
    const int64_t stop = bounds[i + 1];
    if (stop <= start) {
      std::memset(dst, 0, static_cast<size_t>(m * n * item));
      continue;
    }
    MatrixBatch ma{element_ptr(a, start * a.strides(1)), 0, a.strides(0), a.strides(1)};
    MatrixBatch mb{element_ptr(b, start * b.strides(0)), 0, b.strides(0), b.strides(1)};
    gemm(o.dtype(), 1, m, n, stop - start, 1.F, ma, mb, 0.F, dst);
  }
}

}  // namespace nuvec::cpu
