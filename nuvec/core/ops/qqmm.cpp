// qqmm and gather_qqmm: matrix products whose two operands are both quantized, composed from quantize, dequantize
// and (gather_)matmul. Quantizing an operand and reading it back gives exactly the values a quantized kernel
// multiplies, so the composition computes what MLX's kernels do. Rounding has no derivative, so the gradients are
// given as MLX defines them (qqmm's of the cotangent) through custom_function.

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/quantization_mode.h"
#include "nuvec/core/transforms.h"

namespace nuvec {

using nuvec::detail::op_prefix;

namespace {

struct QQParams {
  int group_size;
  int bits;
  std::string mode;
  std::optional<array> global_x;
  std::optional<array> global_w;
};

/// The mode, the global scales, the dtypes and the shapes, as MLX checks them.
QQParams check_qq(const array& x, const array& w, const std::optional<array>& scales_w, std::optional<int> group_size,
                  std::optional<int> bits, const std::string& mode, const std::optional<array>& global_scale_x,
                  const std::optional<array>& global_scale_w, const char* op) {
  const auto parsed = parse_quantization_mode(mode);
  if (!parsed || is_block_format(*parsed)) {
    throw_invalid(op_prefix(op) + "Invalid quantization mode '" + mode +
                  "'; expected one of 'affine', 'mxfp4', 'mxfp8', 'nvfp4'.");
  }
  const bool affine = *parsed == QuantizationMode::affine;
  const MicroscaledLayout layout = affine ? MicroscaledLayout{64, 4} : microscaled_layout(*parsed);
  QQParams p{group_size.value_or(layout.group_size), bits.value_or(layout.bits), mode, global_scale_x,
             global_scale_w};
  if ((global_scale_x || global_scale_w) && *parsed != QuantizationMode::nvfp4) {
    throw_invalid(op_prefix(op) + "Global scale is only supported for 'nvfp4' quantization mode.");
  }
  if (global_scale_x.has_value() != global_scale_w.has_value()) {
    throw_invalid(op_prefix(op) +
                  "For nvfp4 mode, either both global_scale_x and global_scale_w must be provided, or neither.");
  }
  const bool w_quantized = w.dtype() == uint32;
  if (w_quantized && affine) {
    throw_invalid(op_prefix(op) + "A weight quantized in 'affine' mode needs biases, which " + op +
                  " does not take; pass the floating weight (quantized on the fly) or use quantized_matmul.");
  }
  if (w_quantized && !scales_w) {
    throw_invalid(op_prefix(op) + "Scales must be provided if second argument is quantized.");
  }
  if (!w_quantized && scales_w) {
    throw_invalid(op_prefix(op) + "Scales are only taken with a quantized (uint32) second argument; got " +
                  std::string(dtype_name(w.dtype())) + ".");
  }
  for (const auto& [operand, which] : {std::pair{&x, "first"}, std::pair{&w, "second"}}) {
    if (operand == &w && w_quantized) {
      continue;
    }
    if (!is_floating(operand->dtype()) || operand->dtype() == float64) {
      throw_invalid(op_prefix(op) + "Only real floating types except float64 are supported but " + which +
                    " argument dtype == " + std::string(dtype_name(operand->dtype())) + ".");
    }
  }
  const int64_t k = w_quantized ? int64_t{w.shape(-1)} * 32 / p.bits : w.shape(-1);
  if (x.ndim() == 0 || w.ndim() < 2 || x.shape(-1) != k) {
    throw_invalid(op_prefix(op) + "Last dimension of first input with shape " + shape_string(x.shape()) +
                  " must match last dimension of second input with shape " + shape_string(w.shape()) +
                  (w_quantized ? " (" + std::to_string(k) + " values a row once unpacked)." : std::string(".")));
  }
  return p;
}

/// a quantized along its last axis and read back in its own dtype.
array quantized_values(const array& a, const QQParams& p, const std::optional<array>& global_scale,
                       StreamOrDevice s) {
  auto q = quantize(a, p.group_size, p.bits, p.mode, global_scale, s);
  const std::optional<array> biases = q.size() == 3 ? std::optional<array>(q[2]) : std::nullopt;
  return dequantize(q[0], q[1], biases, p.group_size, p.bits, p.mode, global_scale, a.dtype(), s);
}

/// The values of the second operand in `dtype`: read back from its codes when quantized, else quantized first.
array weight_values(const array& w, const std::optional<array>& scales_w, const QQParams& p, Dtype dtype,
                    StreamOrDevice s) {
  if (w.dtype() == uint32) {
    return dequantize(w, *scales_w, std::nullopt, p.group_size, p.bits, p.mode, p.global_w, dtype, s);
  }
  return quantized_values(w, p, p.global_w, s);
}

[[noreturn]] std::vector<array> no_jvp(const char* op) {
  throw_unsupported(op_prefix(op) + "The jvp is not implemented, as in MLX.");
}

}  // namespace

array qqmm(const array& x, const array& w, const std::optional<array>& w_scales, std::optional<int> group_size,
           std::optional<int> bits, const std::string& mode, const std::optional<array>& global_scale_x,
           const std::optional<array>& global_scale_w, StreamOrDevice s) {
  const QQParams p = check_qq(x, w, w_scales, group_size, bits, mode, global_scale_x, global_scale_w, "qqmm");
  if (w.ndim() > 2) {
    throw_invalid("[qqmm] Only 2D inputs are supported but x.ndim() == " + std::to_string(x.ndim()) +
                  " and w.ndim() == " + std::to_string(w.ndim()) + ".");
  }
  // MLX's form: x's leading axes flattened into rows.
  auto x2 = x.ndim() == 1 ? expand_dims(x, 0, s) : flatten(x, 0, -2, s);
  const Dtype out_dtype = x.dtype();
  auto product = [p, w_scales, out_dtype, s](const std::vector<array>& in) {
    return std::vector<array>{
        astype(matmul(quantized_values(in[0], p, p.global_x, s),
                      swapaxes(weight_values(in[1], w_scales, p, in[0].dtype(), s), -1, -2, s), s),
               out_dtype, s)};
  };
  // The cotangent (M, N) is quantized along N for x's gradient and along M for w's, as in MLX (with its largest
  // magnitude as the global scale where the operands have theirs). Both are built whichever is asked for, so
  // differentiating needs M and N to be multiples of the group size.
  auto gradients = [p, w_scales, s](const std::vector<array>& primals, const std::vector<array>& cotangents,
                                    const std::vector<array>&) {
    const auto& ct = cotangents[0];
    std::optional<array> global_ct;
    if (p.global_x) {
      global_ct = astype(max(abs(ct, s), false, s), float32, s);
    }
    const bool w_quantized = primals[1].dtype() == uint32;
    // A quantized weight enters x's gradient by its values (MLX takes only floating ones there).
    auto w_dense = w_quantized ? weight_values(primals[1], w_scales, p, ct.dtype(), s) : primals[1];
    auto dx = qqmm(ct, swapaxes(w_dense, -1, -2, s), std::nullopt, p.group_size, p.bits, p.mode, global_ct,
                   w_quantized ? std::nullopt : p.global_w, s);
    auto dw = w_quantized ? zeros_like(primals[1], s)
                          : qqmm(swapaxes(ct, -1, -2, s), swapaxes(primals[0], -1, -2, s), std::nullopt, p.group_size,
                                 p.bits, p.mode, global_ct, p.global_x, s);
    return std::vector<array>{dx, dw};
  };
  auto fun = custom_function(
      product, gradients,
      [](const std::vector<array>&, const std::vector<array>&, const std::vector<int>&) { return no_jvp("qqmm"); });
  auto out = fun({x2, w})[0];
  if (x.ndim() == 1) {
    return squeeze(out, 0, s);
  }
  Shape shape = x.shape();
  shape.back() = out.shape(-1);
  return reshape(out, std::move(shape), s);
}

array gather_qqmm(const array& x, const array& w, const std::optional<array>& scales_w,
                  const std::optional<array>& lhs_indices, const std::optional<array>& rhs_indices,
                  std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                  const std::optional<array>& global_scale_x, const std::optional<array>& global_scale_w,
                  bool sorted_indices, StreamOrDevice s) {
  const QQParams p = check_qq(x, w, scales_w, group_size, bits, mode, global_scale_x, global_scale_w, "gather_qqmm");
  if (x.ndim() < 2) {
    throw_invalid("[gather_qqmm] x must have at least 2 dimensions; got shape " + shape_string(x.shape()) + ".");
  }
  // The indices travel as a vector: GCC 12 misreports optional arrays built in the lambda as maybe uninitialized.
  std::vector<array> indices;
  for (const auto& given : {lhs_indices, rhs_indices}) {
    if (given) {
      indices.push_back(*given);
    }
  }
  auto product = [p, s, scales_w, sorted_indices, indices, has_lhs = lhs_indices.has_value(),
                  has_rhs = rhs_indices.has_value()](const std::vector<array>& in) {
    auto a = quantized_values(in[0], p, p.global_x, s);
    auto b = swapaxes(weight_values(in[1], scales_w, p, in[0].dtype(), s), -1, -2, s);
    array out = has_lhs && has_rhs ? gather_mm(a, b, indices[0], indices[1], sorted_indices, s)
                : has_lhs          ? gather_mm(a, b, indices[0], std::nullopt, sorted_indices, s)
                : has_rhs          ? gather_mm(a, b, std::nullopt, indices[0], sorted_indices, s)
                                   : gather_mm(a, b, std::nullopt, std::nullopt, sorted_indices, s);
    return std::vector<array>{astype(out, in[0].dtype(), s)};
  };
  // MLX's GatherQQMM has neither derivative.
  auto fun = custom_function(
      product,
      [](const std::vector<array>&, const std::vector<array>&, const std::vector<array>&) -> std::vector<array> {
        throw_unsupported("[gather_qqmm] The vjp is not implemented, as in MLX.");
      },
      [](const std::vector<array>&, const std::vector<array>&, const std::vector<int>&) {
        return no_jvp("gather_qqmm");
      });
  return fun({x, w})[0];
}

}  // namespace nuvec
