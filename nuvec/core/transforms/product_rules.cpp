// Rules of matrix products, quantized products, FFTs and convolution (the fused ops of nuvec::fast are in
// fast_rules.cpp).

#include "nuvec/core/hadamard_matrix.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

namespace {

array mT(const array& a) { return swapaxes(a, -1, -2); }

/// A mapped operand of a batched product: mapped axis in front, or a leading axis of 1 when not mapped (so
/// broadcasting pairs it with every mapped slice).
array product_operand(const VmapArgs& args, size_t i) {
  return args.axes[i] < 0 ? expand_dims(args.inputs[i], 0) : moveaxis(args.inputs[i], args.axes[i], 0);
}

/// Sum over argnums of the primitive applied with one input replaced by its tangent (multilinear primitives).
array multilinear_jvp(const Primitive& p, const JvpArgs& args) {
  std::optional<array> total;
  for (size_t k = 0; k < args.argnums.size(); ++k) {
    auto inputs = args.primals;
    inputs[static_cast<size_t>(args.argnums[k])] = args.tangents[k];
    auto term = reapply(p, inputs, args.outputs)[0];
    total = total ? add(*total, term) : term;
  }
  return *total;
}

}  // namespace

// ---- Matmul and AddMM (inputs a, b[, c]; equal batch shapes)

std::vector<array> vjp_of(const Matmul&, const VjpArgs& args) {
  const auto& ct = args.cotangents[0];
  std::vector<array> grads;
  for (int a : args.argnums) {
    // A half-precision operand of a float32 product gets its cotangent in its own dtype.
    auto g = a == 0 ? matmul(ct, mT(args.primals[1])) : matmul(mT(args.primals[0]), ct);
    grads.push_back(astype(g, args.primals[static_cast<size_t>(a)].dtype()));
  }
  return grads;
}
std::vector<array> jvp_of(const Matmul& p, const JvpArgs& args) { return {multilinear_jvp(p, args)}; }
Batched vmap_of(const Matmul&, const VmapArgs& args) {
  return {{matmul(product_operand(args, 0), product_operand(args, 1))}, {0}};
}

std::vector<array> vjp_of(const AddMM& p, const VjpArgs& args) {
  const auto& ct = args.cotangents[0];
  std::vector<array> grads;
  for (int a : args.argnums) {
    if (a == 2) {
      grads.push_back(sum_to_shape(p.beta == 1.0F ? ct : ct * p.beta, args.primals[2].shape()));
    } else {
      auto g = a == 0 ? matmul(ct, mT(args.primals[1])) : matmul(mT(args.primals[0]), ct);
      grads.push_back(p.alpha == 1.0F ? g : g * p.alpha);
    }
  }
  return grads;
}
std::vector<array> jvp_of(const AddMM& p, const JvpArgs& args) {
  const auto& y = args.outputs[0];
  std::optional<array> total;
  for (size_t k = 0; k < args.argnums.size(); ++k) {
    int a = args.argnums[k];
    const auto& t = args.tangents[k];
    auto term = a == 2 ? t * p.beta : (a == 0 ? matmul(t, args.primals[1]) : matmul(args.primals[0], t)) * p.alpha;
    total = total ? add(*total, term) : term;
  }
  return {broadcast_to(*total, y.shape())};
}
Batched vmap_of(const AddMM& p, const VmapArgs& args) {
  return {{addmm(product_operand(args, 2), product_operand(args, 0), product_operand(args, 1), p.alpha, p.beta)}, {0}};
}

// ---- Quantization

std::vector<array> vjp_of(const Quantize& p, const VjpArgs&) {
  throw_no_rule("vjp", p.name, "is not differentiable (rounding to integers).");
}
std::vector<array> jvp_of(const Quantize& p, const JvpArgs&) {
  throw_no_rule("jvp", p.name, "is not differentiable (rounding to integers).");
}
Batched vmap_of(const Quantize& p, const VmapArgs& args) {
  std::vector<array> inputs{moved_front(args, 0)};
  if (args.inputs.size() > 1) {
    if (args.axes[1] >= 0) {
      throw_unsupported("[vmap] Quantize: an nvfp4 global scale is one scalar for the whole weight; it cannot be "
                        "mapped.");
    }
    inputs.push_back(args.inputs[1]);
  }
  return reapply_front(p, std::move(inputs), args);
}

namespace {
/// The cotangent of a dequantized matrix, grouped as (..., groups, group_size).
array grouped(const array& a, int group_size) {
  Shape shape = a.shape();
  shape.back() /= group_size;
  shape.push_back(group_size);
  return reshape(a, shape);
}
}  // namespace

namespace {

/// The dequantized values of a block-format weight whose mapped axis (if any) is in front: (size, N, K) or (N, K).
array dequantized_blocks(const Dequantize& p, const array& w, bool mapped, Dtype dtype) {
  const std::string mode(mode_name(p.mode));
  if (!mapped) {
    return dequantize(w, mode, dtype);
  }
  auto rows = dequantize(reshape(w, {-1, w.shape(-1)}), mode, dtype);
  return reshape(rows, {w.shape(0), w.shape(1), rows.shape(-1)});
}

}  // namespace

namespace {

/// A microscaled weight's values without its global scale: the output is linear in the global scale g, as
/// values * g / (448 * 6).
array unscaled_values(const Dequantize& p, const std::vector<array>& primals) {
  return dequantize(primals[0], primals[1], std::nullopt, p.group_size, p.bits, std::string(mode_name(p.mode)),
                    std::nullopt, p.dtype);
}
constexpr float nvfp4_scale_range = 448.F * 6.F;

}  // namespace

std::vector<array> vjp_of(const Dequantize& p, const VjpArgs& args) {
  if (is_block_format(p.mode)) {
    return {zeros_like(args.primals[0])};  // the blocks are integers
  }
  if (is_microscaled(p.mode)) {
    // Codes and scales are integers: only an nvfp4 global scale (input 2) can be asked for.
    std::vector<array> grads;
    for (int a : args.argnums) {
      const auto& g = args.primals[static_cast<size_t>(a)];
      auto dot = sum(astype(args.cotangents[0] * unscaled_values(p, args.primals), float32)) / nvfp4_scale_range;
      grads.push_back(astype(reshape(dot, g.shape()), g.dtype()));
    }
    return grads;
  }
  const auto& ct = args.cotangents[0];
  const auto& scales = args.primals[1];
  std::vector<array> grads;
  for (int a : args.argnums) {
    if (a == 1) {
      auto q = dequantize(args.primals[0], ones_like(scales), zeros_like(scales), p.group_size, p.bits);
      grads.push_back(sum(grouped(ct * q, p.group_size), -1));
    } else {
      grads.push_back(sum(grouped(ct, p.group_size), -1));
    }
  }
  return grads;
}
std::vector<array> jvp_of(const Dequantize& p, const JvpArgs& args) {
  if (is_block_format(p.mode)) {
    return {zeros_like(args.outputs[0])};
  }
  if (is_microscaled(p.mode)) {
    const array* tg = tangent_of(args, 2);
    if (tg == nullptr) {
      return {zeros_like(args.outputs[0])};
    }
    auto factor = astype(reshape(*tg, {}) / nvfp4_scale_range, p.dtype);
    return {unscaled_values(p, args.primals) * factor};
  }
  // Linear in (scales, biases) together.
  const array* ts = tangent_of(args, 1);
  const array* tb = tangent_of(args, 2);
  const auto& scales = args.primals[1];
  return reapply(p, {args.primals[0], ts ? *ts : zeros_like(scales), tb ? *tb : zeros_like(scales)}, args.outputs);
}
Batched vmap_of(const Dequantize& p, const VmapArgs& args) {
  if (is_block_format(p.mode)) {
    return {{dequantized_blocks(p, moved_front(args, 0), true, args.outputs[0].dtype())}, {0}};
  }
  if (is_microscaled(p.mode)) {
    std::vector<array> inputs{batched_front(args, 0), batched_front(args, 1)};
    if (args.inputs.size() > 2) {
      if (args.axes[2] >= 0) {
        throw_unsupported("[vmap] Dequantize: an nvfp4 global scale is one scalar for the whole weight; it cannot "
                          "be mapped.");
      }
      inputs.push_back(args.inputs[2]);
    }
    return reapply_front(p, std::move(inputs), args);
  }
  return reapply_front(p, {batched_front(args, 0), batched_front(args, 1), batched_front(args, 2)}, args);
}

namespace {

/// The cotangents of the scales and biases of a quantized weight (w = scales * q + biases per group of the last
/// axis) from the cotangent of the dense weight: sums over each group, of w_bar * q for the scales.
std::vector<array> quantization_grads(const array& w_bar, const array& w_q, const array& scales, int group_size,
                                      int bits) {
  auto q = dequantize(w_q, ones_like(scales), zeros_like(scales), group_size, bits);
  return {sum(grouped(w_bar * q, group_size), -1), sum(grouped(w_bar, group_size), -1)};
}

/// The dense weight's cotangent of one product out = x @ w^T (transpose) or x @ w, summed over x's rows.
array dense_weight_grad(const array& x, const array& ct, bool transpose) {
  auto rows = reshape(x, {-1, x.shape(-1)});
  auto cts = reshape(ct, {-1, ct.shape(-1)});
  return transpose ? matmul(mT(cts), rows) : matmul(mT(rows), cts);
}

/// The tangent of a quantized product: x's tangent through the same weight plus x through the weight's tangent (w is
/// linear in scales and biases together).
array quantized_jvp(const Primitive& p, const JvpArgs& args) {
  std::optional<array> total;
  if (const array* tx = tangent_of(args, 0)) {
    auto inputs = args.primals;
    inputs[0] = *tx;
    total = reapply(p, std::move(inputs), args.outputs)[0];
  }
  const array* ts = tangent_of(args, 2);
  const array* tb = tangent_of(args, 3);
  if (ts || tb) {
    auto inputs = args.primals;
    inputs[2] = ts ? *ts : zeros_like(args.primals[2]);
    inputs[3] = tb ? *tb : zeros_like(args.primals[3]);
    auto term = reapply(p, std::move(inputs), args.outputs)[0];
    total = total ? add(*total, term) : term;
  }
  return *total;
}

/// Index input i of a gathered product made mapped, pointing into the operand `operand` whose mapped axis joins its
/// flattened batch axes in front: each mapped slice b reads matrices b * count onwards, count being the operand's
/// matrices per slice.
array offset_indices(const VmapArgs& args, size_t i, size_t operand) {
  auto indices = batched_front(args, i);
  if (args.axes[operand] < 0) {
    return indices;
  }
  auto a = moved_front(args, operand);
  auto count = static_cast<uint32_t>(a.size() / static_cast<size_t>(args.size * a.shape(-1) * a.shape(-2)));
  Shape column(static_cast<size_t>(indices.ndim()), 1);
  column[0] = args.size;
  auto offsets = reshape(arange(0.0, static_cast<double>(args.size), 1.0, uint32) * array(count, uint32), column);
  return indices + offsets;
}

}  // namespace

std::vector<array> vjp_of(const QuantizedMatmul& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  const auto& ct = args.cotangents[0];
  std::vector<array> grads;
  if (is_block_format(p.mode)) {
    // out = x @ W.T: x's cotangent is ct @ W; the blocks are integers.
    for (int a : args.argnums) {
      grads.push_back(a == 0 ? matmul(ct, dequantize(args.primals[1], std::string(mode_name(p.mode)), x.dtype()))
                             : zeros_like(args.primals[1]));
    }
    return grads;
  }
  if (is_microscaled(p.mode)) {
    // Only x is floating (codes and scales are integers).
    for (size_t i = 0; i < args.argnums.size(); ++i) {
      grads.push_back(quantized_matmul(ct, args.primals[1], args.primals[2], std::nullopt, !p.transpose, p.group_size,
                                       p.bits, std::string(mode_name(p.mode))));
    }
    return grads;
  }
  std::optional<std::vector<array>> scale_bias;
  for (int a : args.argnums) {
    if (a == 0) {
      grads.push_back(
          quantized_matmul(ct, args.primals[1], args.primals[2], args.primals[3], !p.transpose, p.group_size, p.bits));
      continue;
    }
    if (!scale_bias) {
      scale_bias = quantization_grads(dense_weight_grad(x, ct, p.transpose), args.primals[1], args.primals[2],
                                      p.group_size, p.bits);
    }
    grads.push_back((*scale_bias)[static_cast<size_t>(a - 2)]);
  }
  return grads;
}
std::vector<array> jvp_of(const QuantizedMatmul& p, const JvpArgs& args) {
  if (is_block_format(p.mode)) {
    const array* tx = tangent_of(args, 0);
    return {tx ? reapply(p, {*tx, args.primals[1]}, args.outputs)[0] : zeros_like(args.outputs[0])};
  }
  return {quantized_jvp(p, args)};
}
Batched vmap_of(const QuantizedMatmul& p, const VmapArgs& args) {
  if (is_block_format(p.mode)) {
    auto x = moved_front(args, 0);
    if (args.axes[1] < 0) {
      return reapply_front(p, {x, args.inputs[1]}, args);
    }
    // A mapped weight: its values, one matrix per slice.
    const Dequantize values{p.group_size, p.bits, p.mode, x.dtype()};
    auto w = dequantized_blocks(values, moved_front(args, 1), true, x.dtype());
    auto rows = reshape(x, {args.axes[0] < 0 ? 1 : args.size, -1, x.shape(-1)});
    auto out = matmul(rows, swapaxes(w, 1, 2));
    return {{reshape(out, front_shape(args.size, args.outputs[0].shape()))}, {0}};
  }
  const bool microscaled = is_microscaled(p.mode);
  if (args.axes[1] < 0 && args.axes[2] < 0 && (microscaled || args.axes[3] < 0)) {
    auto inputs = args.inputs;
    inputs[0] = moved_front(args, 0);
    return reapply_front(p, std::move(inputs), args);
  }
  // A mapped weight: one quantized product per slice, x's rows (all of them when x is not mapped) against each.
  auto x = moved_front(args, 0);
  auto rows = reshape(x, {args.axes[0] < 0 ? 1 : args.size, -1, x.shape(-1)});
  auto out = quantized_matmul(rows, batched_front(args, 1), batched_front(args, 2),
                              microscaled ? std::nullopt : std::optional<array>(batched_front(args, 3)), p.transpose,
                              p.group_size, p.bits, std::string(mode_name(p.mode)));
  return {{reshape(out, front_shape(args.size, args.outputs[0].shape()))}, {0}};
}

std::vector<array> vjp_of(const GatherQMM& p, const VjpArgs& args) {
  // out[i] = x[lhs[i]] @ W[rhs[i]]: each product's cotangent goes back to the x and the weight it read.
  const auto& x = args.primals[0];
  const auto& w_q = args.primals[1];
  const auto& scales = args.primals[2];
  const auto& ct = args.cotangents[0];
  const bool microscaled = is_microscaled(p.mode);
  const size_t n = args.primals.size();
  auto lhs = flatten(args.primals[n - 2]);
  auto rhs = flatten(args.primals[n - 1]);
  std::vector<array> grads;
  std::optional<std::vector<array>> scale_bias;
  for (int a : args.argnums) {
    if (a == 0) {
      auto per_product =
          gather_qmm(ct, w_q, scales, microscaled ? std::nullopt : std::optional<array>(args.primals[3]), std::nullopt,
                     args.primals[n - 1], !p.transpose, p.group_size, p.bits, std::string(mode_name(p.mode)));
      int batches = static_cast<int>(x.size() / static_cast<size_t>(x.shape(-2) * x.shape(-1)));
      auto flat = reshape(per_product, {-1, 1, x.shape(-2), x.shape(-1)});
      auto summed =
          scatter_add(zeros({batches, x.shape(-2), x.shape(-1)}, x.dtype()), {lhs}, flat, std::vector<int>{0});
      grads.push_back(reshape(summed, x.shape()));
      continue;
    }
    if (!scale_bias) {
      // Each product's dense weight cotangent, summed into the weight matrix it read.
      auto xs = take(reshape(x, {-1, x.shape(-2), x.shape(-1)}), lhs, 0);
      auto cts = reshape(ct, {-1, ct.shape(-2), ct.shape(-1)});
      auto per_product = p.transpose ? matmul(mT(cts), xs) : matmul(mT(xs), cts);
      Shape dense = scales.shape();
      dense.back() *= p.group_size;
      int matrices = static_cast<int>(shape_size(dense) / (dense[dense.size() - 2] * dense.back()));
      auto summed = scatter_add(zeros({matrices, dense[dense.size() - 2], dense.back()}, x.dtype()), {rhs},
                                expand_dims(per_product, 1), std::vector<int>{0});
      scale_bias = quantization_grads(reshape(summed, dense), w_q, scales, p.group_size, p.bits);
    }
    grads.push_back((*scale_bias)[static_cast<size_t>(a - 2)]);
  }
  return grads;
}
std::vector<array> jvp_of(const GatherQMM& p, const JvpArgs& args) { return {quantized_jvp(p, args)}; }
Batched vmap_of(const GatherQMM& p, const VmapArgs& args) {
  // The mapped axis joins the batch axes of x and of the weight; the indices skip to each slice's matrices. The
  // weight's parts are inputs 1 .. n - 3 (codes, scales and, for affine, biases); the indices the last two.
  const size_t n = args.inputs.size();
  size_t weight = 0;
  for (size_t i = 1; i + 2 < n && weight == 0; ++i) {
    weight = args.axes[i] >= 0 ? i : 0;
  }
  std::vector<array> inputs{moved_front(args, 0)};
  for (size_t i = 1; i + 2 < n; ++i) {
    inputs.push_back(weight != 0 ? batched_front(args, i) : args.inputs[i]);
  }
  inputs.push_back(offset_indices(args, n - 2, 0));
  inputs.push_back(weight != 0 ? offset_indices(args, n - 1, weight) : batched_front(args, n - 1));
  return reapply_front(p, std::move(inputs), args);
}

std::vector<array> vjp_of(const Fp8Cast& p, const VjpArgs&) {
  throw_no_rule("vjp", p.name, "is not differentiable (an integer code).");
}
std::vector<array> jvp_of(const Fp8Cast&, const JvpArgs& args) { return {zeros_like(args.outputs[0])}; }
Batched vmap_of(const Fp8Cast& p, const VmapArgs& args) { return reapply_front(p, {moved_front(args, 0)}, args); }

// ---- FFT. Cotangents of complex values are dL/dRe + i dL/dIm (PyTorch's convention).

std::vector<array> vjp_of(const FFT& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  const auto& y = args.outputs[0];
  const auto& ct = args.cotangents[0];
  double n = 1.0;
  for (int a : p.axes) {
    n *= (p.real && p.inverse && a == p.axes.back()) ? y.shape(a) : (p.real ? x.shape(a) : y.shape(a));
  }
  if (!p.real) {
    // y = F x (forward) or F^H x / n (inverse): the adjoint is n * inverse or forward / n.
    auto back = reapply(FFT{p.axes, !p.inverse, false, 0}, {ct}, x.shape(), complex64);
    return {p.inverse ? back * static_cast<float>(1.0 / n) : back * static_cast<float>(n)};
  }
  if (!p.inverse) {
    // rfft: zero-fill the missing half, take the adjoint of the full transform, keep the real part.
    int last = p.axes.back();
    auto full = pad(ct, std::vector<int>{last}, Shape{0}, Shape{x.shape(last) - ct.shape(last)},
                    array(complex64_t{0.0F, 0.0F}));
    auto back = reapply(FFT{p.axes, true, false, 0}, {full}, x.shape(), complex64);
    return {astype(real(back) * static_cast<float>(n), x.dtype())};
  }
  // irfft: the adjoint is rfft / n, with the frequencies that stand for two (k and n - k) counted twice.
  int last = p.axes.back();
  int length = y.shape(last);
  auto spectrum = reapply(FFT{p.axes, false, true, 0}, {ct}, x.shape(), complex64);
  int m = x.shape(last);
  Shape weight_shape(static_cast<size_t>(x.ndim()), 1);
  weight_shape[static_cast<size_t>(last)] = m;
  std::vector<float> weights(static_cast<size_t>(m), 2.0F);
  weights[0] = 1.0F;
  if (length % 2 == 0 && m > 1) {
    weights.back() = 1.0F;
  }
  auto w = reshape(array(weights.begin(), Shape{m}), weight_shape);
  return {spectrum * (w * static_cast<float>(1.0 / n))};
}
std::vector<array> jvp_of(const FFT& p, const JvpArgs& args) {
  return reapply(p, {astype(args.tangents[0], args.primals[0].dtype())}, args.outputs);
}
Batched vmap_of(const FFT& p, const VmapArgs& args) {
  FFT q = p;
  for (auto& a : q.axes) {
    a += 1;
  }
  return reapply_front(q, {moved_front(args, 0)}, args);
}

// ---- Convolution (channels last; weight (C_out, kernel..., C_in / groups))

namespace {

/// The weight with input and output channels swapped within each group: (C_in, kernel..., C_out / groups).
array swap_channels(const array& w, int groups) {
  int c_out = w.shape(0);
  int c_in_group = w.shape(-1);
  Shape split = w.shape();
  split[0] = c_out / groups;
  split.insert(split.begin(), groups);
  auto g = reshape(w, split);  // (groups, C_out/g, kernel..., C_in/g)
  int nd = g.ndim();
  std::vector<int> perm{0, nd - 1};
  for (int i = 2; i < nd - 1; ++i) {
    perm.push_back(i);
  }
  perm.push_back(1);
  auto t = transpose(g, perm);  // (groups, C_in/g, kernel..., C_out/g)
  Shape merged(t.shape().begin() + 1, t.shape().end());
  merged[0] = groups * c_in_group;
  return reshape(t, merged);
}

array flip_spatial(const array& w) {
  std::vector<int> axes;
  for (int i = 1; i < w.ndim() - 1; ++i) {
    axes.push_back(i);
  }
  return flip(w, axes);
}

array conv_input_vjp(const Convolution& p, const array& x, const array& w, const array& ct) {
  size_t nd = p.stride.size();
  std::vector<int> lo(nd);
  std::vector<int> hi(nd);
  for (size_t i = 0; i < nd; ++i) {
    auto axis = static_cast<int>(i) + 1;
    int kernel = w.shape(axis);
    int padded = (x.shape(axis) - 1) * p.input_dilation[i] + 1 + p.padding_lo[i] + p.padding_hi[i];
    int span = p.kernel_dilation[i] * (kernel - 1);
    int unused = (padded - span - 1) % p.stride[i];
    lo[i] = span;
    hi[i] = span + unused;
  }
  auto padded_grad = conv_general(ct, swap_channels(w, p.groups), std::vector<int>(nd, 1), lo, hi, p.kernel_dilation,
                                  p.stride, p.groups, !p.flip);
  // Drop the padding, then keep the positions the input's elements occupied after input dilation.
  Shape start(static_cast<size_t>(x.ndim()), 0);
  Shape stop = padded_grad.shape();
  Shape strides(static_cast<size_t>(x.ndim()), 1);
  for (size_t i = 0; i < nd; ++i) {
    start[i + 1] = p.padding_lo[i];
    stop[i + 1] = p.padding_lo[i] + (x.shape(static_cast<int>(i) + 1) - 1) * p.input_dilation[i] + 1;
    strides[i + 1] = p.input_dilation[i];
  }
  return slice(padded_grad, start, stop, strides);
}

/// The weight cotangent of an ungrouped convolution without input dilation as one matrix product:
/// w[co, (k, ci)] = ct[(n, o), co]^T @ patches[(n, o), (k, ci)], the patches gathered from the padded input by a
/// strided view (im2col).
array conv_weight_vjp_im2col(const Convolution& p, const array& x, const array& w, const array& ct) {
  int nd = static_cast<int>(p.stride.size());
  std::vector<int> axes;
  Shape low;
  Shape high;
  for (int i = 0; i < nd; ++i) {
    axes.push_back(i + 1);
    low.push_back(p.padding_lo[static_cast<size_t>(i)]);
    high.push_back(p.padding_hi[static_cast<size_t>(i)]);
  }
  auto padded = pad(x, axes, low, high, array(0, x.dtype()));
  // Row-major strides of the padded input, then the view (N, out..., kernel..., C).
  std::vector<int64_t> dense(static_cast<size_t>(padded.ndim()), 1);
  for (int i = padded.ndim() - 2; i >= 0; --i) {
    dense[static_cast<size_t>(i)] = dense[static_cast<size_t>(i) + 1] * padded.shape(i + 1);
  }
  Shape view_shape{x.shape(0)};
  Strides view_strides{dense[0]};
  for (int i = 0; i < nd; ++i) {
    view_shape.push_back(ct.shape(i + 1));
    view_strides.push_back(dense[static_cast<size_t>(i) + 1] * p.stride[static_cast<size_t>(i)]);
  }
  for (int i = 0; i < nd; ++i) {
    view_shape.push_back(w.shape(i + 1));
    view_strides.push_back(dense[static_cast<size_t>(i) + 1] * p.kernel_dilation[static_cast<size_t>(i)]);
  }
  view_shape.push_back(x.shape(-1));
  view_strides.push_back(1);
  int rows = static_cast<int>(ct.size() / static_cast<size_t>(ct.shape(-1)));
  int columns = static_cast<int>(w.size() / static_cast<size_t>(w.shape(0)));
  auto patches = reshape(as_strided(padded, view_shape, view_strides, 0), {rows, columns});
  auto grad = matmul(transpose(reshape(ct, {rows, ct.shape(-1)})), patches);
  grad = reshape(grad, w.shape());
  return p.flip ? flip_spatial(grad) : grad;
}

/// Channels [group * size, (group + 1) * size) of the last axis.
array group_channels(const array& a, int group, int size) {
  if (a.shape(-1) == size) {
    return a;
  }
  Shape start(static_cast<size_t>(a.ndim()), 0);
  start.back() = group * size;
  Shape stop = a.shape();
  stop.back() = (group + 1) * size;
  return slice(a, start, stop);
}

array conv_weight_vjp(const Convolution& p, const array& x, const array& w, const array& ct) {
  bool dilated_input = false;
  for (int d : p.input_dilation) {
    dilated_input = dilated_input || d != 1;
  }
  if (p.groups == 1 && !dilated_input) {
    return conv_weight_vjp_im2col(p, x, w, ct);
  }
  // w[co, k, ci] = sum_{n, o} ct[n, o, co] x_padded[n, o * stride + k * dilation, ci]: a convolution whose batch is
  // the input channels and whose channels are the batch.
  int nd = static_cast<int>(p.stride.size());
  std::vector<int> to_channels_first{x.ndim() - 1};
  for (int i = 1; i <= nd; ++i) {
    to_channels_first.push_back(i);
  }
  to_channels_first.push_back(0);
  int c_in_group = w.shape(-1);
  int c_out_group = w.shape(0) / p.groups;
  std::vector<array> parts;
  for (int g = 0; g < p.groups; ++g) {
    auto xg = group_channels(x, g, c_in_group);
    auto cg = group_channels(ct, g, c_out_group);
    auto grad = conv_general(transpose(xg, to_channels_first), transpose(cg, to_channels_first), p.kernel_dilation,
                             p.padding_lo, p.padding_hi, p.stride, p.input_dilation, 1, false);
    // (C_in/g, spans..., C_out/g): keep the kernel's extent, then to (C_out/g, kernel..., C_in/g).
    Shape stop = grad.shape();
    for (int i = 1; i <= nd; ++i) {
      stop[static_cast<size_t>(i)] = w.shape(i);
    }
    grad = slice(grad, Shape(static_cast<size_t>(grad.ndim()), 0), stop);
    std::vector<int> perm{grad.ndim() - 1};
    for (int i = 1; i <= nd; ++i) {
      perm.push_back(i);
    }
    perm.push_back(0);
    parts.push_back(transpose(grad, perm));
  }
  auto grad = p.groups == 1 ? parts[0] : concatenate(parts, 0);
  return p.flip ? flip_spatial(grad) : grad;
}

}  // namespace

std::vector<array> vjp_of(const Convolution& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  const auto& w = args.primals[1];
  const auto& ct = args.cotangents[0];
  std::vector<array> grads;
  for (int a : args.argnums) {
    grads.push_back(a == 0 ? conv_input_vjp(p, x, w, ct) : conv_weight_vjp(p, x, w, ct));
  }
  return grads;
}
std::vector<array> jvp_of(const Convolution& p, const JvpArgs& args) { return {multilinear_jvp(p, args)}; }
Batched vmap_of(const Convolution& p, const VmapArgs& args) {
  const auto& out = args.outputs[0];
  if (args.axes[1] < 0) {
    // The mapped axis joins the batch axis.
    auto x = moveaxis(args.inputs[0], args.axes[0], 0);
    Shape merged(x.shape().begin() + 1, x.shape().end());
    merged[0] *= args.size;
    Shape out_merged = out.shape();
    out_merged[0] *= args.size;
    auto y = reapply(p, {reshape(x, merged), args.inputs[1]}, out_merged, out.dtype());
    return {{reshape(y, front_shape(args.size, out.shape()))}, {0}};
  }
  // A mapped weight: each slice's channels become groups of one grouped convolution, the input's channels
  // (N, spatial..., B * C) against the weights stacked along the output channels (B * C_out, kernel..., C_in / g).
  auto x = moveaxis(batched_front(args, 0), 0, -2);
  Shape x_merged(x.shape().begin(), x.shape().end() - 1);
  x_merged.back() *= x.shape(-1);
  auto w = moveaxis(args.inputs[1], args.axes[1], 0);
  Shape w_merged(w.shape().begin() + 1, w.shape().end());
  w_merged[0] *= args.size;
  Convolution q = p;
  q.groups *= args.size;
  Shape out_merged = out.shape();
  out_merged.back() *= args.size;
  auto y = reapply(q, {reshape(x, x_merged), reshape(w, w_merged)}, out_merged, out.dtype());
  Shape split = out.shape();
  split.insert(split.end() - 1, args.size);
  return {{moveaxis(reshape(y, split), -2, 0)}, {0}};
}

// ---- Masked, gathered and segmented products, Hadamard

namespace {

/// A block mask (..., rows / bs, cols / bs rounded up) spread to elements (..., rows, cols).
array element_mask(const array& mask, int block_size, int rows, int cols) {
  auto spread = repeat(repeat(mask, block_size, -2), block_size, -1);
  Shape stop = spread.shape();
  stop[stop.size() - 2] = rows;
  stop.back() = cols;
  return slice(spread, Shape(stop.size(), 0), stop);
}

array masked(const array& x, const array& mask) {
  return mask.dtype() == bool_ ? where(mask, x, zeros_like(x)) : x * astype(mask, x.dtype());
}

/// block_masked_mm from plain ops, for its vjp: inputs a, b, [mask_out], [mask_lhs, mask_rhs].
Function block_masked_function(const BlockMaskedMM& p) {
  return [p](const std::vector<array>& in) {
    auto a = in[0];
    auto b = in[1];
    bool has_out = in.size() == 3 || in.size() == 5;
    bool has_operands = in.size() >= 4;
    if (has_operands) {
      const auto& lhs = in[in.size() - 2];
      const auto& rhs = in[in.size() - 1];
      a = masked(a, element_mask(lhs, p.block_size, a.shape(-2), a.shape(-1)));
      b = masked(b, element_mask(rhs, p.block_size, b.shape(-2), b.shape(-1)));
    }
    auto out = matmul(a, b);
    if (has_out) {
      out = masked(out, element_mask(in[2], p.block_size, out.shape(-2), out.shape(-1)));
    }
    return std::vector<array>{out};
  };
}

}  // namespace

std::vector<array> vjp_of(const BlockMaskedMM& p, const VjpArgs& args) {
  for (int a : args.argnums) {
    if (a >= 2) {
      throw_no_rule("vjp", p.name, "is not differentiable with respect to its masks.");
    }
  }
  return vjp_through(block_masked_function(p), args);
}
std::vector<array> jvp_of(const BlockMaskedMM& p, const JvpArgs& args) {
  for (int a : args.argnums) {
    if (a >= 2) {
      throw_no_rule("jvp", p.name, "is not differentiable with respect to its masks.");
    }
  }
  return {multilinear_jvp(p, args)};
}
Batched vmap_of(const BlockMaskedMM& p, const VmapArgs& args) {
  // Every input already has the product's batch shape: the mapped axis becomes one more batch axis.
  std::vector<array> inputs;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    inputs.push_back(batched_front(args, i));
  }
  return reapply_front(p, std::move(inputs), args);
}

std::vector<array> vjp_of(const GatherMM& p, const VjpArgs& args) {
  // out[i] = a[lhs[i]] @ b[rhs[i]]: gather both operands explicitly, differentiate the batched product, and
  // scatter each cotangent back to the matrix it read.
  const auto& a = args.primals[0];
  const auto& b = args.primals[1];
  const auto& ct = args.cotangents[0];
  auto lhs = flatten(args.primals[2]);
  auto rhs = flatten(args.primals[3]);
  auto flat_a = reshape(a, {-1, a.shape(-2), a.shape(-1)});
  auto flat_b = reshape(b, {-1, b.shape(-2), b.shape(-1)});
  auto flat_ct = reshape(ct, {-1, ct.shape(-2), ct.shape(-1)});
  std::vector<array> grads;
  for (int which : args.argnums) {
    if (which >= 2) {
      throw_no_rule("vjp", p.name, "is not differentiable with respect to its indices.");
    }
    if (which == 0) {
      auto per = matmul(flat_ct, mT(take(flat_b, rhs, 0)));
      auto summed = scatter_add(zeros_like(flat_a), {lhs}, expand_dims(per, 1), std::vector<int>{0});
      grads.push_back(reshape(summed, a.shape()));
    } else {
      auto per = matmul(mT(take(flat_a, lhs, 0)), flat_ct);
      auto summed = scatter_add(zeros_like(flat_b), {rhs}, expand_dims(per, 1), std::vector<int>{0});
      grads.push_back(reshape(summed, b.shape()));
    }
  }
  return grads;
}
std::vector<array> jvp_of(const GatherMM& p, const JvpArgs& args) {
  for (int a : args.argnums) {
    if (a >= 2) {
      throw_no_rule("jvp", p.name, "is not differentiable with respect to its indices.");
    }
  }
  return {multilinear_jvp(p, args)};
}
Batched vmap_of(const GatherMM& p, const VmapArgs& args) {
  // The mapped axis joins the batch axes of a mapped operand; its indices skip to each slice's matrices.
  return reapply_front(
      p, {moved_front(args, 0), moved_front(args, 1), offset_indices(args, 2, 0), offset_indices(args, 3, 1)}, args);
}

std::vector<array> vjp_of(const SegmentedMM& p, const VjpArgs& args) {
  // out[s] = a[:, segment s] @ b[segment s, :]: differentiate the explicit sum over segments.
  for (int a : args.argnums) {
    if (a == 2) {
      throw_no_rule("vjp", p.name, "is not differentiable with respect to its segments.");
    }
  }
  const auto& segments = args.primals[2];
  Function f = [&](const std::vector<array>& ab) {
    const auto& a = ab[0];
    const auto& b = ab[1];
    int k = a.shape(-1);
    auto positions = arange(k);
    auto starts = slice(segments, Shape(static_cast<size_t>(segments.ndim()), 0), [&] {
      Shape stop = segments.shape();
      stop.back() = 1;
      return stop;
    }());
    Shape end_start(static_cast<size_t>(segments.ndim()), 0);
    end_start.back() = 1;
    auto ends = slice(segments, end_start, segments.shape());
    // mask (..., K): positions inside each segment; out = (a * mask) @ b per segment.
    auto mask = logical_and(greater_equal(positions, astype(starts, int32)), less(positions, astype(ends, int32)));
    auto masked_a = expand_dims(a, -3) * expand_dims(astype(mask, a.dtype()), -2);
    return std::vector<array>{matmul(masked_a, b)};
  };
  std::vector<array> grads;
  auto both = vjp(f, {args.primals[0], args.primals[1]}, args.cotangents).second;
  for (int a : args.argnums) {
    grads.push_back(both[static_cast<size_t>(a)]);
  }
  return grads;
}
std::vector<array> jvp_of(const SegmentedMM& p, const JvpArgs& args) {
  for (int a : args.argnums) {
    if (a == 2) {
      throw_no_rule("jvp", p.name, "is not differentiable with respect to its segments.");
    }
  }
  return {multilinear_jvp(p, args)};
}
Batched vmap_of(const SegmentedMM& p, const VmapArgs& args) {
  if (args.axes[0] < 0 && args.axes[1] < 0) {
    return reapply_front(p, {args.inputs[0], args.inputs[1], batched_front(args, 2)}, args);
  }
  // Mapped operands: the slices of a side by side (M, B * K) and of b stacked (B * K, N), each slice's segments
  // (clamped to [0, K]) shifted to its own block of the inner axis.
  auto a = batched_front(args, 0);
  auto b = batched_front(args, 1);
  int k = a.shape(-1);
  auto a_wide = reshape(moveaxis(a, 0, 1), {a.shape(1), args.size * k});
  auto b_tall = reshape(b, {args.size * k, b.shape(-1)});
  auto segments = minimum(batched_front(args, 2), array(static_cast<uint32_t>(k), uint32));
  Shape column(static_cast<size_t>(segments.ndim()), 1);
  column[0] = args.size;
  auto offsets = reshape(
      arange(0.0, static_cast<double>(args.size), 1.0, uint32) * array(static_cast<uint32_t>(k), uint32), column);
  return reapply_front(p, {a_wide, b_tall, segments + offsets}, args);
}

std::vector<array> vjp_of(const Hadamard& p, const VjpArgs& args) {
  const auto& cotangent = args.cotangents[0];
  const int n = cotangent.shape(-1);
  const int m = hadamard_order(n);
  if (hadamard_symmetric(m)) {
    return reapply(p, {cotangent}, args.outputs);
  }
  // (H_m (x) H_p)^T = H_m^T (x) H_p: the transform of each piece of p, then H_m^T across the m pieces.
  Shape pieces = cotangent.shape();
  pieces.back() = m;
  pieces.push_back(n / m);
  const auto& h = hadamard_matrix(m);
  const auto order = static_cast<size_t>(m);
  std::vector<float> transposed(h.size());
  for (size_t i = 0; i < order; ++i) {
    for (size_t j = 0; j < order; ++j) {
      transposed[i * order + j] = h[j * order + i];
    }
  }
  const array h_t = astype(array(transposed.begin(), {m, m}, float32), cotangent.dtype());
  return {reshape(matmul(h_t, hadamard_transform(reshape(cotangent, pieces), p.scale)), cotangent.shape())};
}
std::vector<array> jvp_of(const Hadamard& p, const JvpArgs& args) {
  return reapply(p, {args.tangents[0]}, args.outputs);
}
Batched vmap_of(const Hadamard& p, const VmapArgs& args) { return reapply_front(p, {moved_front(args, 0)}, args); }

}  // namespace nuvec::detail
