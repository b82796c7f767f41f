// Reduce and ArgReduce on the GPU (kernels/reduce.cu, kernels/arg_reduce.cu; sources from rows.h).
//
// Both kernels read a dense input as [outer, length, inner] and fold the middle axis. An input whose elements are
// dense in some order of its axes (row-contiguous, or a transpose of such) is read in place when, in that order, the
// reduced axes are neighbours and the kept axes keep the output's order; any other layout (broadcasts, views with
// gaps, reduced axes apart) is first copied row-contiguous with the reduced axes moved last ([outputs, length, 1]).
// Rows fold a thread, a warp or a block per row; inner > 1 folds columns with neighbouring threads on neighbouring
// columns. When those give too few blocks to fill the GPU, long rows and columns are split into pieces whose
// partial accumulators a second launch folds. complex64 runs on the host (the CUDA sources have no complex type).

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/cuda/kernels.h"
#include "nuvec/cuda/rows.h"

namespace nuvec::cuda {

namespace {

constexpr unsigned block_threads = 256;
constexpr int64_t thread_row_max = 16;   // rows this short: a thread per row
constexpr int64_t warp_row_max = 1024;   // then a warp per row, longer ones a block
constexpr int64_t piece_min = 8192;      // elements of a row piece (block kernel)
constexpr int64_t column_rows_min = 16;  // rows each column thread folds at least in a piece

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Blocks that keep every multiprocessor busy.
int64_t target_blocks(int device) { return 4 * static_cast<int64_t>(properties(device).multiProcessorCount); }

struct Geometry {
  int64_t outer;
  int64_t length;
  int64_t inner;
};

/// The geometry of reducing `axes` (sorted) of `a` in place, or nullopt (see the file's comment).
std::optional<Geometry> in_place_geometry(const array& a, const std::vector<int>& axes) {
  struct Axis {
    int64_t size;
    int64_t stride;
    bool reduced;
    int index;
  };
  std::vector<Axis> order;
  for (int i = 0; i < a.ndim(); ++i) {
    if (a.shape(i) == 1) {
      continue;
    }
    if (a.strides(i) <= 0) {
      return std::nullopt;
    }
    order.push_back({a.shape(i), a.strides(i), std::binary_search(axes.begin(), axes.end(), i), i});
  }
  std::stable_sort(order.begin(), order.end(), [](const Axis& x, const Axis& y) { return x.stride > y.stride; });
  int64_t dense = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (it->stride != dense) {
      return std::nullopt;
    }
    dense *= it->size;
  }
  Geometry g{1, 1, 1};
  int last_kept = -1;
  bool seen_reduced = false;
  bool after_reduced = false;
  for (const auto& axis : order) {
    if (axis.reduced) {
      if (after_reduced) {
        return std::nullopt;  // a second run of reduced axes
      }
      seen_reduced = true;
      g.length *= axis.size;
      continue;
    }
    if (axis.index < last_kept) {
      return std::nullopt;  // kept axes out of the output's order
    }
    last_kept = axis.index;
    after_reduced = seen_reduced;
    (seen_reduced ? g.inner : g.outer) *= axis.size;
  }
  return g;
}

/// `a` copied row-contiguous with `axes` (sorted) moved last; nullopt where the copy cannot run on the GPU.
std::optional<array> moved_last(const array& a, const std::vector<int>& axes, const Stream& s) {
  Shape shape;
  Strides strides;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < a.ndim(); ++i) {
      if (std::binary_search(axes.begin(), axes.end(), i) == (pass == 1)) {
        shape.push_back(a.shape(i));
        strides.push_back(a.strides(i));
      }
    }
  }
  // A view of a's buffer in the moved order, then its row-contiguous copy.
  array view(shape, a.dtype(), StopGradient{}, {}, s);
  view.copy_shared_buffer(a, strides, Flags{false, false, false}, a.data_size());
  return dense_copy(view, s);
}

/// The input as the kernels read it: in place, or moved; nullopt where neither runs on the GPU.
std::optional<std::pair<array, Geometry>> dense_input(const array& a, const std::vector<int>& axes, int64_t outputs,
                                                      const Stream& s) {
  if (auto g = in_place_geometry(a, axes)) {
    return std::pair{a, *g};
  }
  auto moved = moved_last(a, axes, s);
  if (!moved) {
    return std::nullopt;
  }
  return std::pair{*moved, Geometry{outputs, static_cast<int64_t>(a.size()) / outputs, 1}};
}

/// Folds x (dtype `in`) into y (dtype `out`) through accumulators of `acc`.
void fold(ReduceType op, Dtype in, Dtype acc, Dtype out, void* x, void* y, Geometry g, const Stream& s) {
  const int device = s.device.index;
  cudaStream_t stream = stream_handle(s);
  const std::string source = reduce_source(op, in, acc, out);
  const int64_t target = target_blocks(device);
  std::optional<array> partial;  // the pieces' accumulators, when split
  void* partial_ptr = nullptr;
  auto make_partial = [&](int64_t size) {
    partial = gpu_array({static_cast<int32_t>(size)}, acc, s);
    partial_ptr = device_pointer(*partial, s);
  };
  if (g.inner == 1) {
    int64_t rows = g.outer;
    int64_t n = g.length;
    if (n <= thread_row_max) {
      launch(kernel(source, "nv_reduce_rows_thread", device), dim3(grid_size(rows, block_threads, device)),
             dim3(block_threads), 0, stream, x, y, rows, n);
      return;
    }
    if (n <= warp_row_max) {
      launch(kernel(source, "nv_reduce_rows_warp", device),
             dim3(static_cast<unsigned>(ceil_div(rows, block_threads / 32))), dim3(block_threads), 0, stream, x, y,
             rows, n);
      return;
    }
    int64_t pieces =
        rows >= target ? 1 : std::clamp<int64_t>(ceil_div(target, rows), 1, std::max<int64_t>(1, n / piece_min));
    int64_t chunk = ceil_div(n, pieces);
    int splits = static_cast<int>(ceil_div(n, chunk));
    if (splits > 1) {
      make_partial(rows * splits);
    }
    launch(kernel(source, "nv_reduce_rows_block", device), dim3(static_cast<unsigned>(rows * splits)),
           dim3(block_threads), 0, stream, x, y, partial_ptr, n, chunk, splits);
    if (splits > 1) {
      fold(op, acc, acc, out, partial_ptr, y, {rows, splits, 1}, s);
    }
    return;
  }
  int width = 1;
  while (width < 32 && width < g.inner) {
    width *= 2;
  }
  int64_t length = g.length;
  int64_t inner = g.inner;
  int64_t column_blocks = ceil_div(inner, width);
  const int64_t blocks = g.outer * column_blocks;
  const int64_t row_lanes = block_threads / width;
  const int64_t most_pieces = std::clamp<int64_t>(length / (row_lanes * column_rows_min), 1, 65535);
  const int64_t pieces = blocks >= target ? 1 : std::min(ceil_div(target, blocks), most_pieces);
  int64_t chunk = ceil_div(length, pieces);
  const auto splits = static_cast<unsigned>(ceil_div(length, chunk));
  if (splits > 1) {
    make_partial(g.outer * splits * inner);
  }
  launch(kernel(source, "nv_reduce_columns", device), dim3(static_cast<unsigned>(blocks), splits), dim3(block_threads),
         0, stream, x, y, partial_ptr, length, inner, column_blocks, width, chunk);
  if (splits > 1) {
    fold(op, acc, acc, out, partial_ptr, y, {g.outer, splits, inner}, s);
  }
}

}  // namespace

void run(const Reduce& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& a = in[0];
  array& o = out[0];
  const auto acc = reduce_accumulator(p.type, a.dtype(), o.dtype());
  if (!acc) {
    on_host(p, in, out);  // complex64 (and dtype pairs without a CPU kernel either, which it reports)
    return;
  }
  const auto outputs = static_cast<int64_t>(o.size());
  if (outputs == 0) {
    allocate_output(o, s);
    return;
  }
  if (a.size() == 0) {
    // Reductions of nothing: the identity, from a fold over rows of length 0.
    allocate_output(o, s);
    fold(p.type, a.dtype(), *acc, o.dtype(), nullptr, device_pointer(o, s), {outputs, 0, 1}, s);
    return;
  }
  auto input = dense_input(a, p.axes, outputs, s);
  if (!input) {
    on_host(p, in, out);
    return;
  }
  allocate_output(o, s);
  fold(p.type, a.dtype(), *acc, o.dtype(), device_pointer(input->first, s), device_pointer(o, s), input->second, s);
}

void run(const ArgReduce& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& a = in[0];
  array& o = out[0];
  const auto outputs = static_cast<int64_t>(o.size());
  // complex64 on the host (the CUDA sources have no complex type); the op rejects an empty axis with outputs.
  if (a.dtype() == complex64 || (outputs > 0 && a.size() == 0)) {
    on_host(p, in, out);
    return;
  }
  if (outputs == 0) {
    allocate_output(o, s);
    return;
  }
  auto input = dense_input(a, {p.axis}, outputs, s);
  if (!input) {
    on_host(p, in, out);
    return;
  }
  allocate_output(o, s);
  const int device = s.device.index;
  cudaStream_t stream = stream_handle(s);
  const std::string source = arg_reduce_source(p.type, a.dtype());
  void* x = device_pointer(input->first, s);
  void* y = device_pointer(o, s);
  auto [rows, n, inner] = input->second;
  if (inner == 1 && n <= thread_row_max) {
    launch(kernel(source, "nv_arg_rows_thread", device), dim3(grid_size(rows, block_threads, device)),
           dim3(block_threads), 0, stream, x, y, rows, n);
  } else if (inner == 1 && n <= warp_row_max) {
    launch(kernel(source, "nv_arg_rows_warp", device), dim3(static_cast<unsigned>(ceil_div(rows, block_threads / 32))),
           dim3(block_threads), 0, stream, x, y, rows, n);
  } else if (inner == 1) {
    // Few long rows: the largest blocks, as these are not split.
    const unsigned threads = rows < target_blocks(device) ? 1024 : block_threads;
    launch(kernel(source, "nv_arg_rows_block", device), dim3(static_cast<unsigned>(rows)), dim3(threads), 0, stream, x,
           y, n);
  } else {
    int width = 1;
    while (width < 32 && width < inner) {
      width *= 2;
    }
    int64_t column_blocks = ceil_div(inner, width);
    launch(kernel(source, "nv_arg_columns", device), dim3(static_cast<unsigned>(rows * column_blocks)),
           dim3(block_threads), 0, stream, x, y, n, inner, column_blocks, width);
  }
}

}  // namespace nuvec::cuda
