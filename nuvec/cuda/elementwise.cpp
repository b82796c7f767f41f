#include "nuvec/cuda/elementwise.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "nuvec/core/compile/codegen.h"
#include "nuvec/core/compile/expressions.h"
#include "nuvec/core/error.h"
#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/check.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/jit.h"

namespace nuvec::cuda {

namespace {

constexpr unsigned block_size = 256;

std::string name_of(char prefix, size_t index) { return prefix + std::to_string(index); }

/// Every value's dtype: the inputs', then each step's.
std::vector<Dtype> value_dtypes(const detail::FusedKernel& k) {
  std::vector<Dtype> dtypes(k.input_dtypes);
  for (const auto& step : k.steps) {
    dtypes.push_back(step.dtype);
  }
  return dtypes;
}

/// The kernel's parameters: a pointer per read input and per output.
std::string pointer_parameters(const detail::FusedKernel& k, const std::vector<Dtype>& dtypes) {
  std::string text;
  for (size_t i = 0; i < static_cast<size_t>(k.num_inputs); ++i) {
    if (!detail::is_literal(k, i)) {
      text += "const " + detail::storage_type(dtypes[i]) + "* __restrict__ " + name_of('p', i) + ", ";
    }
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    text += detail::storage_type(dtypes[static_cast<size_t>(k.outputs[o])]) + "* __restrict__ " + name_of('o', o) + ", ";
  }
  return text;
}

/// The loop body: inputs loaded at their index expressions, the steps, the outputs stored at theirs.
std::string body(const detail::FusedKernel& k, const std::vector<Dtype>& dtypes,
                 const std::vector<std::string>& input_index, const std::vector<std::string>& output_index) {
  std::string text;
  for (size_t i = 0; i < static_cast<size_t>(k.num_inputs); ++i) {
    if (!detail::is_literal(k, i)) {
      text += "    const " + detail::compute_type(dtypes[i]) + " " + name_of('v', i) + " = " +
              detail::load(dtypes[i], name_of('p', i) + "[" + input_index[i] + "]") + ";\n";
    }
  }
  for (size_t s = 0; s < k.steps.size(); ++s) {
    text += "    " + detail::step_code(k, dtypes, s);
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto v = static_cast<size_t>(k.outputs[o]);
    text += "    " + name_of('o', o) + "[" + output_index[o] + "] = " + detail::store(dtypes[v], name_of('v', v)) + ";\n";
  }
  return text;
}

/// Axes merged where every operand (outputs included) is contiguous across them; size-1 axes dropped.
struct Layout {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;  // per operand
};

Layout merged_layout(const Shape& shape, const std::vector<Strides>& operand_strides) {
  Layout layout;
  layout.strides.resize(operand_strides.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) {
      continue;
    }
    bool contiguous = !layout.shape.empty();
    for (size_t op = 0; contiguous && op < operand_strides.size(); ++op) {
      contiguous = layout.strides[op].back() == operand_strides[op][d] * shape[d];
    }
    if (contiguous) {
      layout.shape.back() *= shape[d];
      for (size_t op = 0; op < operand_strides.size(); ++op) {
        layout.strides[op].back() = operand_strides[op][d];
      }
      continue;
    }
    layout.shape.push_back(shape[d]);
    for (size_t op = 0; op < operand_strides.size(); ++op) {
      layout.strides[op].push_back(operand_strides[op][d]);
    }
  }
  return layout;
}

/// An operand's strides over the iteration shape: its own, or all 0 for one value read everywhere.
Strides operand_strides(const array& a, const Shape& shape) {
  if (a.shape() == shape) {
    return a.strides();
  }
  if (a.size() == 1) {
    return Strides(shape.size(), 0);
  }
  throw_internal("[cuda] an element-wise operand of shape " + shape_string(a.shape()) + " does not match " +
                 shape_string(shape) + ".");
}

std::vector<Strides> all_strides(const std::vector<array>& inputs, const std::vector<array>& outputs,
                                 const detail::FusedKernel& k, const Shape& shape) {
  std::vector<Strides> strides;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!detail::is_literal(k, i)) {
      strides.push_back(operand_strides(inputs[i], shape));
    }
  }
  for (const auto& out : outputs) {
    strides.push_back(out.strides());
  }
  return strides;
}

/// Whether the flat entry reads `a`: row-contiguous over the iteration shape, or one value everywhere (a scalar, or
/// a broadcast of one element: read once).
bool is_flat(const array& a, const Shape& shape) {
  return a.data_size() == 1 || (a.shape() == shape && a.flags().row_contiguous && a.data_size() == a.size());
}

/// The generated source of each chain, by its tape: generating costs more than a launch.
const std::string& source_of(const detail::FusedKernel& k) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::string> sources;
  std::string key;
  for (const auto& step : k.steps) {
    key += name(step.primitive);
    key += ':';
    for (int a : step.args) {
      key += std::to_string(a) + ',';
    }
    key += dtype_name(step.dtype);
    key += ';';
  }
  for (size_t i = 0; i < static_cast<size_t>(k.num_inputs); ++i) {
    key += dtype_name(k.input_dtypes[i]);
    if (detail::is_literal(k, i)) {
      key += '=';
      key += std::to_string(*k.literals[i]);
    }
    key += ',';
  }
  for (int o : k.outputs) {
    key += std::to_string(o) + ',';
  }
  std::lock_guard lock(mutex);
  auto found = sources.find(key);
  if (found == sources.end()) {
    found = sources.emplace(key, generate_elementwise_source(k)).first;
  }
  return found->second;
}

}  // namespace

std::string generate_elementwise_source(const detail::FusedKernel& k) {
  const auto dtypes = value_dtypes(k);
  const auto n_in = static_cast<size_t>(k.num_inputs);
  size_t operands = k.outputs.size();
  for (size_t i = 0; i < n_in; ++i) {
    operands += detail::is_literal(k, i) ? 0 : 1;
  }
  std::string src = "#include \"nuvec/cuda/prelude.cuh\"\n";
  src += "struct nv_layout { int64_t shape[" + std::to_string(max_dims) + "]; int64_t strides[" +
         std::to_string(operands) + "][" + std::to_string(max_dims) + "]; int ndim; };\n";
  const std::string loop =
      "  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * "
      "blockDim.x) {\n";

  // The flat entry: input i is read at 0 where bit i of `once` is set.
  std::vector<std::string> input_index;
  std::vector<std::string> output_index(k.outputs.size(), "i");
  for (size_t i = 0; i < n_in; ++i) {
    input_index.push_back("((once >> " + std::to_string(i) + ") & 1u) ? 0 : i");
  }
  // Four elements a thread at a time, a grid apart (each access coalesced across the warp): four loads in flight
  // before the first use, as one element at a time does not keep enough memory traffic going.
  src += "extern \"C\" __global__ void nuvec_fused_contiguous(" + pointer_parameters(k, dtypes) +
         "unsigned once, int64_t n) {\n";
  src += detail::literal_declarations(k, dtypes, "  ");
  src += "  const int64_t step = (int64_t)gridDim.x * blockDim.x;\n"
         "  int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  for (; first + 3 * step < n; first += 4 * step) {\n"
         "#pragma unroll\n"
         "    for (int u = 0; u < 4; ++u) {\n"
         "    const int64_t i = first + u * step;\n" +
         body(k, dtypes, input_index, output_index) + "    }\n  }\n";
  src += "  for (int64_t i = first; i < n; i += step) {\n" + body(k, dtypes, input_index, output_index) + "  }\n}\n";

  // The strided entry: each operand's element offset from the index's coordinates, outermost axis first.
  input_index.clear();
  output_index.clear();
  std::string offsets;
  size_t op = 0;
  for (size_t i = 0; i < n_in; ++i) {
    if (detail::is_literal(k, i)) {
      input_index.emplace_back();
      continue;
    }
    input_index.push_back(name_of('t', op));
    offsets += "      " + name_of('t', op) + " += c * L.strides[" + std::to_string(op) + "][d];\n";
    ++op;
  }
  for (size_t o = 0; o < k.outputs.size(); ++o, ++op) {
    output_index.push_back(name_of('t', op));
    offsets += "      " + name_of('t', op) + " += c * L.strides[" + std::to_string(op) + "][d];\n";
  }
  std::string declarations;
  for (size_t t = 0; t < operands; ++t) {
    declarations += "    int64_t " + name_of('t', t) + " = 0;\n";
  }
  src += "extern \"C\" __global__ void nuvec_fused_strided(" + pointer_parameters(k, dtypes) +
         "nv_layout L, int64_t n) {\n";
  src += detail::literal_declarations(k, dtypes, "  ");
  src += loop + declarations + "    int64_t rest = i;\n    for (int d = L.ndim - 1; d >= 0; --d) {\n" +
         "      const int64_t c = rest % L.shape[d];\n      rest /= L.shape[d];\n" + offsets + "    }\n" +
         body(k, dtypes, input_index, output_index) + "  }\n}\n";
  return src;
}

bool can_run_elementwise(const detail::FusedKernel& k, const std::vector<array>& inputs,
                         const std::vector<array>& outputs) {
  const auto dtypes = value_dtypes(k);
  if (std::any_of(dtypes.begin(), dtypes.end(), [](Dtype d) { return d == complex64; })) {
    return false;
  }
  for (const auto& step : k.steps) {
    std::vector<Dtype> args;
    for (int a : step.args) {
      args.push_back(dtypes[static_cast<size_t>(a)]);
    }
    if (!detail::can_generate(step.primitive, args, step.dtype)) {
      return false;
    }
  }
  const Shape& shape = outputs[0].shape();
  for (const auto& in : inputs) {
    if (in.shape() != shape && in.size() != 1) {
      return false;
    }
  }
  std::vector<Strides> strides;
  for (const auto& in : inputs) {
    strides.push_back(operand_strides(in, shape));
  }
  strides.push_back(row_major_strides(shape));
  return merged_layout(shape, strides).shape.size() <= static_cast<size_t>(max_dims);
}

void elementwise(const detail::FusedKernel& k, const std::vector<array>& inputs, std::vector<array>& outputs,
                 const Stream& s) {
  for (auto& out : outputs) {
    if (out.data_shared_ptr() == nullptr) {
      allocate_output(out, s);
    }
  }
  const Shape shape = outputs[0].shape();
  const auto n = static_cast<int64_t>(outputs[0].size());
  if (n == 0) {
    return;
  }
  const std::string& source = source_of(k);
  const int device = s.device.index;
  const cudaStream_t stream = stream_handle(s);
  std::vector<void*> pointers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!detail::is_literal(k, i)) {
      pointers.push_back(device_pointer(inputs[i], s));
    }
  }
  for (auto& out : outputs) {
    pointers.push_back(device_pointer(out, s));
  }
  std::vector<void*> args;
  for (auto& p : pointers) {
    args.push_back(&p);
  }
  const dim3 grid(grid_size(n, block_size, device));
  int64_t count = n;
  const bool flat = std::all_of(outputs.begin(), outputs.end(), [&](const array& o) { return is_flat(o, shape); }) &&
                    std::all_of(inputs.begin(), inputs.end(), [&](const array& in) { return is_flat(in, shape); });
  if (flat) {
    unsigned once = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      once |= (inputs[i].data_size() == 1 && n > 1 ? 1U : 0U) << i;
    }
    args.push_back(&once);
    args.push_back(&count);
    launch(kernel(source, "nuvec_fused_contiguous", device), grid, dim3(block_size), args.data(), 0, stream);
    return;
  }
  const auto layout = merged_layout(shape, all_strides(inputs, outputs, k, shape));
  const size_t operands = layout.strides.size();
  // The descriptor as the kernel declares it: shape, strides[operands][max_dims], ndim.
  std::vector<int64_t> descriptor(max_dims * (operands + 1) + 1, 0);
  std::copy(layout.shape.begin(), layout.shape.end(), descriptor.begin());
  for (size_t op = 0; op < operands; ++op) {
    std::copy(layout.strides[op].begin(), layout.strides[op].end(), descriptor.begin() + max_dims * (op + 1));
  }
  auto ndim = static_cast<int>(layout.shape.size());
  std::memcpy(&descriptor[max_dims * (operands + 1)], &ndim, sizeof(ndim));
  args.push_back(descriptor.data());
  args.push_back(&count);
  launch(kernel(source, "nuvec_fused_strided", device), grid, dim3(block_size), args.data(), 0, stream);
}

detail::FusedKernel single_step(const Primitive& p, const std::vector<array>& inputs, Dtype out) {
  detail::FusedKernel k;
  k.num_inputs = static_cast<int>(inputs.size());
  std::vector<int> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    k.input_dtypes.push_back(inputs[i].dtype());
    args.push_back(static_cast<int>(i));
  }
  k.steps.push_back({p, std::move(args), out});
  k.outputs = {k.num_inputs};
  return k;
}

void copy(const array& in, array& out, const Stream& s) {
  std::vector<array> outputs{out};
  elementwise(single_step(AsType{out.dtype()}, {in}, out.dtype()), {in}, outputs, s);
}

}  // namespace nuvec::cuda
