// The CPU kernel of a fused chain: fresh row-contiguous outputs, then the
// generated kernel's flat entry when every input is row-major of the iteration
// shape (or the one value the kernel reads once), its strided row walk otherwise
// (always for row kernels, which reduce along the rows).

#include "nuvec/core/fused.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/strided.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

void run(const Compiled& p, const Inputs& in, Outputs& out) {
  const auto& k = *p.kernel;
  const Shape shape = nuvec::detail::iteration_shape(k, in, out);
  std::vector<void*> outs;
  for (auto& o : out) {
    o.set_data(allocator::malloc(o.nbytes()));
    outs.push_back(o.raw_data());
  }
  const size_t n = shape_size(shape);
  const size_t rows = shape.empty() ? 1 : shape_size(Shape(shape.begin(), shape.end() - 1));
  if (n == 0 && (!k.rows || rows == 0)) {
    return;
  }
  std::vector<const void*> ins;
  bool flat = !k.rows;
  for (size_t i = 0; i < in.size(); ++i) {
    ins.push_back(in[i].raw_data());
    // The flat entry reads a traced one-element input once: it must still have one element (shapeless calls).
    const bool dense = in[i].shape() == shape && in[i].flags().row_contiguous && in[i].data_size() == n;
    flat = flat && (k.scalar_inputs[i] ? in[i].size() == 1 : dense);
  }
  if (flat || shape.empty()) {
    parallel_for(n, elementwise_grain, [&](size_t begin, size_t end) {
      k.contiguous(ins.data(), outs.data(), static_cast<int64_t>(begin), static_cast<int64_t>(end));
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
  const auto inner = static_cast<size_t>(shape.back());
  const size_t grain = std::max<size_t>(1, elementwise_grain / std::max<size_t>(inner, 1));
  parallel_for(rows, grain, [&](size_t begin, size_t end) {
    k.strided(ins.data(), outs.data(), dims.data(), strides.data(), ndim, static_cast<int64_t>(begin),
              static_cast<int64_t>(end));
  });
}

}  // namespace nuvec::cpu
