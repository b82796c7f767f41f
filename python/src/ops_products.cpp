// Products and convolutions: addmm, tensordot, einsum, gather_mm, block_masked_mm, conv*, quantized products.

#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

/// A per-axis convolution argument given as one int or a tuple.
template <size_t N>
std::vector<int> per_axis(const std::variant<int, std::vector<int>>& v) {
  if (const int* one = std::get_if<int>(&v)) {
    return std::vector<int>(N, *one);
  }
  return std::get<std::vector<int>>(v);
}

std::pair<int, int> pair_of(const std::vector<int>& v) { return {v.at(0), v.at(1)}; }
std::tuple<int, int, int> triple_of(const std::vector<int>& v) { return {v.at(0), v.at(1), v.at(2)}; }

using PerAxis = std::variant<int, std::vector<int>>;

}  // namespace

void init_ops_products(py::module_& m) {
  m.def(
      "addmm",
      [](py::object c, py::object a, py::object b, float alpha, float beta, StreamOrDevice s) {
        return addmm(to_array(c), to_array(a), to_array(b), alpha, beta, s);
      },
      py::arg("c"), py::arg("a"), py::arg("b"), py::kw_only(), py::arg("alpha") = 1.0F, py::arg("beta") = 1.0F,
      py::arg("stream") = py::none());
  m.def(
      "tensordot",
      [](py::object a, py::object b, std::variant<int, std::vector<std::vector<int>>> axes, StreamOrDevice s) {
        auto x = to_array(a);
        auto y = to_array(b);
        if (const int* n = std::get_if<int>(&axes)) {
          return tensordot(x, y, *n, s);
        }
        const auto& pair = std::get<std::vector<std::vector<int>>>(axes);
        if (pair.size() != 2) {
          throw py::value_error("[tensordot] axes must be an int or a pair of axis lists.");
        }
        return tensordot(x, y, pair[0], pair[1], s);
      },
      py::arg("a"), py::arg("b"), py::arg("axes") = 2, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "vecdot",
      [](py::object a, py::object b, int axis, StreamOrDevice s) { return vecdot(to_array(a), to_array(b), axis, s); },
      py::arg("a"), py::arg("b"), py::arg("axis") = -1, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "einsum",
      [](const std::string& subscripts, const py::args& operands, StreamOrDevice s) {
        std::vector<array> inputs;
        for (auto a : operands) {
          inputs.push_back(to_array(a));
        }
        return einsum(subscripts, inputs, s);
      },
      py::arg("subscripts"), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "einsum_path",
      [](const std::string& subscripts, const py::args& operands) {
        std::vector<array> inputs;
        for (auto a : operands) {
          inputs.push_back(to_array(a));
        }
        return einsum_path(subscripts, inputs);
      },
      py::arg("subscripts"));
  m.def(
      "hadamard_transform",
      [](py::object a, std::optional<float> scale, StreamOrDevice s) {
        return hadamard_transform(to_array(a), scale, s);
      },
      py::arg("a"), py::arg("scale") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "gather_mm",
      [](py::object a, py::object b, py::object lhs_indices, py::object rhs_indices, bool sorted_indices,
         StreamOrDevice s) {
        return gather_mm(to_array(a), to_array(b), to_optional_array(lhs_indices), to_optional_array(rhs_indices),
                         sorted_indices, s);
      },
      py::arg("a"), py::arg("b"), py::arg("lhs_indices") = py::none(), py::arg("rhs_indices") = py::none(),
      py::kw_only(), py::arg("sorted_indices") = false, py::arg("stream") = py::none());
  m.def(
      "block_masked_mm",
      [](py::object a, py::object b, int block_size, py::object mask_out, py::object mask_lhs, py::object mask_rhs,
         StreamOrDevice s) {
        return block_masked_mm(to_array(a), to_array(b), block_size, to_optional_array(mask_out),
                               to_optional_array(mask_lhs), to_optional_array(mask_rhs), s);
      },
      py::arg("a"), py::arg("b"), py::arg("block_size") = 64, py::arg("mask_out") = py::none(),
      py::arg("mask_lhs") = py::none(), py::arg("mask_rhs") = py::none(), py::kw_only(),
      py::arg("stream") = py::none());
  m.def(
      "segmented_mm",
      [](py::object a, py::object b, py::object segments, StreamOrDevice s) {
        return segmented_mm(to_array(a), to_array(b), to_array(segments), s);
      },
      py::arg("a"), py::arg("b"), py::arg("segments"), py::kw_only(), py::arg("stream") = py::none());

  m.def(
      "conv1d",
      [](py::object input, py::object weight, int stride, int padding, int dilation, int groups, StreamOrDevice s) {
        return conv1d(to_array(input), to_array(weight), stride, padding, dilation, groups, s);
      },
      py::arg("input"), py::arg("weight"), py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
      py::arg("groups") = 1, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "conv2d",
      [](py::object input, py::object weight, PerAxis stride, PerAxis padding, PerAxis dilation, int groups,
         StreamOrDevice s) {
        return conv2d(to_array(input), to_array(weight), pair_of(per_axis<2>(stride)), pair_of(per_axis<2>(padding)),
                      pair_of(per_axis<2>(dilation)), groups, s);
      },
      py::arg("input"), py::arg("weight"), py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
      py::arg("groups") = 1, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "conv3d",
      [](py::object input, py::object weight, PerAxis stride, PerAxis padding, PerAxis dilation, int groups,
         StreamOrDevice s) {
        return conv3d(to_array(input), to_array(weight), triple_of(per_axis<3>(stride)),
                      triple_of(per_axis<3>(padding)), triple_of(per_axis<3>(dilation)), groups, s);
      },
      py::arg("input"), py::arg("weight"), py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
      py::arg("groups") = 1, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "conv_transpose1d",
      [](py::object input, py::object weight, int stride, int padding, int dilation, int output_padding, int groups,
         StreamOrDevice s) {
        return conv_transpose1d(to_array(input), to_array(weight), stride, padding, dilation, output_padding, groups,
                                s);
      },
      py::arg("input"), py::arg("weight"), py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
      py::arg("output_padding") = 0, py::arg("groups") = 1, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "conv_transpose2d",
      [](py::object input, py::object weight, PerAxis stride, PerAxis padding, PerAxis dilation,
         PerAxis output_padding, int groups, StreamOrDevice s) {
        return conv_transpose2d(to_array(input), to_array(weight), pair_of(per_axis<2>(stride)),
                                pair_of(per_axis<2>(padding)), pair_of(per_axis<2>(dilation)),
                                pair_of(per_axis<2>(output_padding)), groups, s);
      },
      py::arg("input"), py::arg("weight"), py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
      py::arg("output_padding") = 0, py::arg("groups") = 1, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "conv_transpose3d",
      [](py::object input, py::object weight, PerAxis stride, PerAxis padding, PerAxis dilation,
         PerAxis output_padding, int groups, StreamOrDevice s) {
        return conv_transpose3d(to_array(input), to_array(weight), triple_of(per_axis<3>(stride)),
                                triple_of(per_axis<3>(padding)), triple_of(per_axis<3>(dilation)),
                                triple_of(per_axis<3>(output_padding)), groups, s);
      },
      py::arg("input"), py::arg("weight"), py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
      py::arg("output_padding") = 0, py::arg("groups") = 1, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "conv_general",
      [](py::object input, py::object weight, PerAxis stride, py::object padding, PerAxis kernel_dilation,
         PerAxis input_dilation, int groups, bool flip, StreamOrDevice s) {
        auto x = to_array(input);
        auto w = to_array(weight);
        auto spatial = static_cast<size_t>(x.ndim() - 2);
        auto expand = [&](const PerAxis& v) {
          if (const int* one = std::get_if<int>(&v)) {
            return std::vector<int>(spatial, *one);
          }
          return std::get<std::vector<int>>(v);
        };
        std::vector<int> lo;
        std::vector<int> hi;
        if (PyIndex_Check(padding.ptr()) != 0) {
          lo = hi = std::vector<int>(spatial, padding.cast<int>());
        } else {
          auto seq = padding.cast<py::sequence>();
          if (py::len(seq) == 2 && !(PyIndex_Check(seq[0].ptr()) != 0)) {
            lo = seq[0].cast<std::vector<int>>();
            hi = seq[1].cast<std::vector<int>>();
          } else {
            lo = hi = seq.cast<std::vector<int>>();
          }
        }
        return conv_general(x, w, expand(stride), lo, hi, expand(kernel_dilation), expand(input_dilation), groups,
                            flip, s);
      },
      py::arg("input"), py::arg("weight"), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("kernel_dilation") = 1, py::arg("input_dilation") = 1, py::arg("groups") = 1, py::arg("flip") = false,
      py::kw_only(), py::arg("stream") = py::none());

  m.def(
      "quantize",
      [](py::object w, std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
         py::object global_scale, StreamOrDevice s) {
        auto out = quantize(to_array(w), group_size, bits, mode, to_optional_array(global_scale), s);
        py::tuple t(out.size());
        for (size_t i = 0; i < out.size(); ++i) {
          t[i] = py::cast(out[i]);
        }
        return t;
      },
      py::arg("w"), py::arg("group_size") = py::none(), py::arg("bits") = py::none(), py::arg("mode") = "affine",
      py::kw_only(), py::arg("global_scale") = py::none(), py::arg("stream") = py::none());
  // As MLX's: global_scale (nvfp4's float32 scale of the whole tensor) and dtype may be given by position too.
  m.def(
      "dequantize",
      [](py::object w, py::object scales, py::object biases, std::optional<int> group_size, std::optional<int> bits,
         const std::string& mode, py::object global_scale, std::optional<Dtype> dtype, StreamOrDevice s) {
        return dequantize(to_array(w), to_array(scales), to_optional_array(biases), group_size, bits, mode,
                          to_optional_array(global_scale), dtype, s);
      },
      py::arg("w"), py::arg("scales"), py::arg("biases") = py::none(), py::arg("group_size") = py::none(),
      py::arg("bits") = py::none(), py::arg("mode") = "affine", py::arg("global_scale") = py::none(),
      py::arg("dtype") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "quantized_matmul",
      [](py::object x, py::object w, py::object scales, py::object biases, bool transpose,
         std::optional<int> group_size, std::optional<int> bits, const std::string& mode, StreamOrDevice s) {
        return quantized_matmul(to_array(x), to_array(w), to_array(scales), to_optional_array(biases), transpose,
                                group_size, bits, mode, s);
      },
      py::arg("x"), py::arg("w"), py::arg("scales"), py::arg("biases") = py::none(), py::arg("transpose") = true,
      py::arg("group_size") = py::none(), py::arg("bits") = py::none(), py::arg("mode") = "affine", py::kw_only(),
      py::arg("stream") = py::none());
  m.def(
      "gather_qmm",
      [](py::object x, py::object w, py::object scales, py::object biases, py::object lhs_indices,
         py::object rhs_indices, bool transpose, std::optional<int> group_size, std::optional<int> bits,
         const std::string& mode, bool sorted_indices, StreamOrDevice s) {
        return gather_qmm(to_array(x), to_array(w), to_array(scales), to_optional_array(biases),
                          to_optional_array(lhs_indices), to_optional_array(rhs_indices), transpose, group_size, bits,
                          mode, sorted_indices, s);
      },
      py::arg("x"), py::arg("w"), py::arg("scales"), py::arg("biases") = py::none(),
      py::arg("lhs_indices") = py::none(), py::arg("rhs_indices") = py::none(), py::arg("transpose") = true,
      py::arg("group_size") = py::none(), py::arg("bits") = py::none(), py::arg("mode") = "affine", py::kw_only(),
      py::arg("sorted_indices") = false, py::arg("stream") = py::none());
  m.def(
      "to_fp8", [](py::object x, StreamOrDevice s) { return to_fp8(to_array(x), s); }, py::arg("x"), py::kw_only(),
      py::arg("stream") = py::none(), "FP8 E4M3 codes (uint8) of a floating array.");
  m.def(
      "from_fp8", [](py::object x, Dtype dtype, StreamOrDevice s) { return from_fp8(to_array(x), dtype, s); },
      py::arg("x"), py::arg("dtype") = bfloat16, py::kw_only(), py::arg("stream") = py::none(),
      "The values of FP8 E4M3 codes (uint8).");
}

}  // namespace nuvec::python
