// The CPU kernel of a fused chain: fresh outputs, then the generated kernel's
// flat entry when every input is row-major of the iteration shape (or one value
// the kernel reads once) or all share one permuted dense layout (which the
// outputs then take), its strided walk otherwise (always for row kernels, which
// reduce along the rows). Inputs the kernel has as literals are never read.

#include <algorithm>
#include <cstdlib>

#include "nuvec/core/fused.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/strided.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

void run(const Compiled& p, const Inputs& in, Outputs& out) {
  const auto& k = *p.kernel;
  const Shape shape = nuvec::detail::iteration_shape(k, in, out);
  const size_t n = shape_size(shape);
  const size_t rows = shape.empty() ? 1 : shape_size(Shape(shape.begin(), shape.end() - 1));
  std::vector<const void*> ins;
  bool flat = !k.rows;
  // The layout every input the kernel reads shares, where they are all dense in one permuted order with
  // non-negative strides (a transpose): the flat entry then walks memory order and the outputs take that layout, as
  // the eager kernels' do, instead of a transpose on the way.
  const array* model = nullptr;
  bool permuted = !k.rows;
  // Inputs that hold one value broadcast everywhere (stride 0 on every axis, as `zeros(shape)` is): the flat entry
  // reads them once.
  std::vector<unsigned char> once(in.size(), 0);
  for (size_t i = 0; i < in.size(); ++i) {
    ins.push_back(in[i].raw_data());
    const auto& x = in[i];
    // The flat entry reads a traced one-element input once: it must still have one element (shapeless calls).
    const bool dense = x.shape() == shape && x.flags().row_contiguous && x.data_size() == n;
    const bool literal = i < k.literals.size() && k.literals[i].has_value();
    once[i] = !k.rows && !literal && !k.scalar_inputs[i] && x.data_size() == 1 && !dense;
    flat = flat && (literal || once[i] || (k.scalar_inputs[i] ? x.size() == 1 : dense));
    if (literal || k.scalar_inputs[i] || once[i]) {
      permuted = permuted && (literal || x.size() == 1 || once[i]);
      continue;
    }
    const bool fits = x.shape() == shape && x.flags().contiguous && x.data_size() == n &&
                      std::all_of(x.strides().begin(), x.strides().end(), [](int64_t st) { return st >= 0; }) &&
                      (model == nullptr || x.strides() == model->strides());
    permuted = permuted && fits;
    model = model == nullptr ? &x : model;
  }
  permuted = permuted && !flat && model != nullptr;
  std::vector<void*> outs;
  for (auto& o : out) {
    if (permuted) {
      o.set_data(allocator::malloc(o.nbytes()), model->data_size(), model->strides(), model->flags());
    } else {
      o.set_data(allocator::malloc(o.nbytes()));
    }
    outs.push_back(o.raw_data());
  }
  if (n == 0 && (!k.rows || rows == 0)) {
    return;
  }
  if (flat || permuted || shape.empty()) {
    parallel_for(n, elementwise_grain, [&](size_t begin, size_t end) {
      k.contiguous(ins.data(), once.data(), outs.data(), static_cast<int64_t>(begin), static_cast<int64_t>(end));
    });
    return;
  }
  // Each input's strides over the output's axes, NumPy's broadcasting aligned at the last axis.
  const int ndim = static_cast<int>(shape.size());
  std::vector<int64_t> dims(shape.begin(), shape.end());
  std::vector<int64_t> strides(in.size() * static_cast<size_t>(ndim), 0);
  for (size_t i = 0; i < in.size(); ++i) {
    const int lead = ndim - in[i].ndim();
    for (int d = std::max(lead, 0); d < ndim; ++d) {
      const int axis = d - lead;
      if (in[i].shape(axis) != 1) {
        strides[i * static_cast<size_t>(ndim) + static_cast<size_t>(d)] = in[i].strides(axis);
      }
    }
  }
  if (k.rows) {
    const auto inner = static_cast<size_t>(shape.back());
    const size_t grain = std::max<size_t>(1, elementwise_grain / std::max<size_t>(inner, 1));
    parallel_for(rows, grain, [&](size_t begin, size_t end) {
      k.strided(ins.data(), outs.data(), dims.data(), strides.data(), ndim, static_cast<int64_t>(begin),
                static_cast<int64_t>(end));
    });
    return;
  }
  // Element kernels walk elements: axes that every input steps over as over one (a broadcast scalar's, a sliced
  // row's) merge into longer runs first, so that a run is as long as the layout allows.
  std::vector<int64_t> merged_dims{dims.back()};
  std::vector<std::vector<int64_t>> merged(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    merged[i].push_back(strides[i * static_cast<size_t>(ndim) + static_cast<size_t>(ndim - 1)]);
  }
  for (int d = ndim - 2; d >= 0; --d) {
    const auto u = static_cast<size_t>(d);
    if (merged_dims.back() == 1) {  // a run of one element: the next axis replaces it
      merged_dims.back() = dims[u];
      for (size_t i = 0; i < in.size(); ++i) {
        merged[i].back() = strides[i * static_cast<size_t>(ndim) + u];
      }
      continue;
    }
    bool joins = true;
    for (size_t i = 0; i < in.size(); ++i) {
      joins = joins && strides[i * static_cast<size_t>(ndim) + u] == merged[i].back() * merged_dims.back();
    }
    if (joins || dims[u] == 1) {
      merged_dims.back() *= dims[u];
      continue;
    }
    merged_dims.push_back(dims[u]);
    for (size_t i = 0; i < in.size(); ++i) {
      merged[i].push_back(strides[i * static_cast<size_t>(ndim) + u]);
    }
  }
  const int m = static_cast<int>(merged_dims.size());
  std::vector<int64_t> run_dims(merged_dims.rbegin(), merged_dims.rend());
  std::vector<int64_t> run_strides;
  for (const auto& st : merged) {
    run_strides.insert(run_strides.end(), st.rbegin(), st.rend());
  }
  auto walk = [&](size_t begin, size_t end) {
    k.strided(ins.data(), outs.data(), run_dims.data(), run_strides.data(), m, static_cast<int64_t>(begin),
              static_cast<int64_t>(end));
  };
  // An input read across its lines (a transpose) makes the kernel walk tiles of 16 rows: the threads' shares are
  // whole tiles then.
  bool tiles = false;
  for (size_t i = 0; m >= 2 && i < in.size(); ++i) {
    const int64_t t = run_strides[i * static_cast<size_t>(m) + static_cast<size_t>(m - 1)];
    const int64_t u = run_strides[i * static_cast<size_t>(m) + static_cast<size_t>(m - 2)];
    tiles = tiles || (t != 0 && t != 1 && std::abs(u) < std::abs(t));
  }
  const auto inner = static_cast<size_t>(run_dims.back());
  const size_t tile = 16 * inner;
  if (!tiles || n / tile < 2) {
    parallel_for(n, elementwise_grain, walk);
    return;
  }
  parallel_for((n + tile - 1) / tile, std::max<size_t>(1, elementwise_grain / tile),
               [&](size_t begin, size_t end) { walk(begin * tile, std::min(end * tile, n)); });
}

}  // namespace nuvec::cpu
