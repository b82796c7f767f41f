// The C++ layers with mlx.nn's names, constructor arguments and defaults, and their forwards as __call__. Parameters
// are read by nuvec.nn's CppModule (python/nuvec/nn/module.py), which keeps them in its dict and loads them back
// before each call.

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/nn/activations.h"
#include "nuvec/nn/conv.h"
#include "nuvec/nn/dropout.h"
#include "nuvec/nn/linear.h"
#include "nuvec/nn/normalization.h"
#include "nuvec/nn/pooling.h"
#include "nuvec/nn/positional_encoding.h"
#include "nuvec/nn/quantized.h"
#include "nuvec/nn/transformer.h"
#include "python/src/nn_module.h"

namespace pybind11::detail {

/// Kernel sizes, strides, paddings: an int for every spatial axis or a sequence of one per axis, as mlx.nn's.
template <>
class type_caster<nuvec::nn::Sizes> {
 public:
  static constexpr auto name = const_name("int | tuple[int, ...]");
  template <class T>
  using cast_op_type = movable_cast_op_type<T>;

  bool load(handle src, bool /*convert*/) {
    if (PyLong_Check(src.ptr()) != 0) {
      value_ = nuvec::nn::Sizes(src.cast<int>());
      return true;
    }
    if (PySequence_Check(src.ptr()) == 0 || PyUnicode_Check(src.ptr()) != 0) {
      return false;
    }
    value_.values = src.cast<std::vector<int>>();
    return true;
  }
  static handle cast(const nuvec::nn::Sizes& sizes, return_value_policy /*policy*/, handle /*parent*/) {
    return pybind11::cast(sizes.values).release();
  }
  operator nuvec::nn::Sizes*() { return &value_; }                // NOLINT(google-explicit-constructor)
  operator nuvec::nn::Sizes&() { return value_; }                 // NOLINT(google-explicit-constructor)
  operator nuvec::nn::Sizes&&() && { return std::move(value_); }  // NOLINT(google-explicit-constructor)

 private:
  nuvec::nn::Sizes value_{0};
};

}  // namespace pybind11::detail

namespace nuvec::python {
namespace {

using nn::Sizes;
using OptionalSizes = std::optional<Sizes>;

/// An activation module without arguments.
template <class T>
void activation(py::module_& m, const char* name) {
  LayerClass<T>(m, name).def(py::init<>());
}

template <class T>
void conv(py::module_& m, const char* name) {
  LayerClass<T>(m, name).def(py::init<int, int, const Sizes&, const Sizes&, const Sizes&, const Sizes&, int, bool>(),
                             py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"),
                             py::arg("stride") = 1, py::arg("padding") = 0, py::arg("dilation") = 1,
                             py::arg("groups") = 1, py::arg("bias") = true);
}

template <class T>
void conv_transpose(py::module_& m, const char* name) {
  LayerClass<T>(m, name).def(
      py::init<int, int, const Sizes&, const Sizes&, const Sizes&, const Sizes&, const Sizes&, int, bool>(),
      py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("output_padding") = 0, py::arg("groups") = 1,
      py::arg("bias") = true);
}

template <class T>
void pool(py::module_& m, const char* name) {
  LayerClass<T>(m, name).def(py::init<const Sizes&, const OptionalSizes&, const Sizes&>(), py::arg("kernel_size"),
                             py::arg("stride") = py::none(), py::arg("padding") = 0);
}

/// Upsample's scale_factor: one number for every spatial axis or a sequence of one per axis.
std::vector<float> scale_factors(py::handle value) {
  if (PyFloat_Check(value.ptr()) != 0 || PyLong_Check(value.ptr()) != 0) {
    return {value.cast<float>()};
  }
  return value.cast<std::vector<float>>();
}

void init_activations(py::module_& m) {
  activation<nn::ReLU>(m, "ReLU");
  activation<nn::ReLU6>(m, "ReLU6");
  activation<nn::SELU>(m, "SELU");
  activation<nn::SiLU>(m, "SiLU");
  activation<nn::Mish>(m, "Mish");
  activation<nn::Softplus>(m, "Softplus");
  activation<nn::Softsign>(m, "Softsign");
  activation<nn::Hardswish>(m, "Hardswish");
  activation<nn::HardSigmoid>(m, "HardSigmoid");
  activation<nn::Sigmoid>(m, "Sigmoid");
  activation<nn::Tanh>(m, "Tanh");
  activation<nn::LogSigmoid>(m, "LogSigmoid");
  LayerClass<nn::LeakyReLU>(m, "LeakyReLU").def(py::init<float>(), py::arg("negative_slope") = 0.01F);
  LayerClass<nn::ELU>(m, "ELU").def(py::init<float>(), py::arg("alpha") = 1.0F);
  LayerClass<nn::CELU>(m, "CELU").def(py::init<float>(), py::arg("alpha") = 1.0F);
  LayerClass<nn::GELU>(m, "GELU").def(py::init<std::string>(), py::arg("approx") = "none");
  LayerClass<nn::Hardtanh>(m, "HardTanh")
      .def(py::init<float, float>(), py::arg("min_val") = -1.0F, py::arg("max_val") = 1.0F);
  LayerClass<nn::PReLU>(m, "PReLU").def(py::init<int, float>(), py::arg("num_parameters") = 1, py::arg("init") = 0.25F);
  LayerClass<nn::GLU>(m, "GLU").def(py::init<int>(), py::arg("axis") = -1);
  LayerClass<nn::LogSoftmax>(m, "LogSoftmax").def(py::init<int>(), py::arg("axis") = -1);
  LayerClass<nn::Softmax>(m, "Softmax").def(py::init<int>(), py::arg("axis") = -1);
  LayerClass<nn::Softmin>(m, "Softmin").def(py::init<int>(), py::arg("axis") = -1);
  LayerClass<nn::Softshrink>(m, "Softshrink").def(py::init<float>(), py::arg("lambd") = 0.5F);
  LayerClass<nn::HardShrink>(m, "HardShrink").def(py::init<float>(), py::arg("lambd") = 0.5F);
  LayerClass<nn::Step>(m, "Step").def(py::init<float>(), py::arg("threshold") = 0.0F);
}

void init_dense(py::module_& m) {
  activation<nn::Identity>(m, "Identity");
  LayerClass<nn::Linear>(m, "Linear")
      .def(py::init<int, int, bool>(), py::arg("input_dims"), py::arg("output_dims"), py::arg("bias") = true);
  LayerClass<nn::Bilinear, nn::Module>(m, "Bilinear")
      .def(py::init<int, int, int, bool>(), py::arg("input1_dims"), py::arg("input2_dims"), py::arg("output_dims"),
           py::arg("bias") = true)
      .def("__call__", &nn::Bilinear::forward, py::arg("x1"), py::arg("x2"));
  LayerClass<nn::Embedding>(m, "Embedding")
      .def(py::init<int, int>(), py::arg("num_embeddings"), py::arg("dims"))
      .def("as_linear", &nn::Embedding::as_linear, py::arg("x"), "x @ weight.T: the table as an output projection.");
  LayerClass<nn::QuantizedLinear, nn::Linear>(m, "QuantizedLinear")
      .def(py::init<int, int, bool, int, int, const std::string&>(), py::arg("input_dims"), py::arg("output_dims"),
           py::arg("bias") = true, py::arg("group_size") = 64, py::arg("bits") = 4, py::arg("mode") = "affine")
      .def(py::init<const nn::Linear&, int, int, const std::string&>(), py::arg("linear"), py::arg("group_size") = 64,
           py::arg("bits") = 4, py::arg("mode") = "affine");
  LayerClass<nn::QuantizedEmbedding, nn::Embedding>(m, "QuantizedEmbedding")
      .def(py::init<int, int, int, int, const std::string&>(), py::arg("num_embeddings"), py::arg("dims"),
           py::arg("group_size") = 64, py::arg("bits") = 4, py::arg("mode") = "affine")
      .def(py::init<const nn::Embedding&, int, int, const std::string&>(), py::arg("embedding"),
           py::arg("group_size") = 64, py::arg("bits") = 4, py::arg("mode") = "affine");
}

void init_conv_pool(py::module_& m) {
  conv<nn::Conv1d>(m, "Conv1d");
  conv<nn::Conv2d>(m, "Conv2d");
  conv<nn::Conv3d>(m, "Conv3d");
  conv_transpose<nn::ConvTranspose1d>(m, "ConvTranspose1d");
  conv_transpose<nn::ConvTranspose2d>(m, "ConvTranspose2d");
  conv_transpose<nn::ConvTranspose3d>(m, "ConvTranspose3d");
  pool<nn::MaxPool1d>(m, "MaxPool1d");
  pool<nn::MaxPool2d>(m, "MaxPool2d");
  pool<nn::MaxPool3d>(m, "MaxPool3d");
  pool<nn::AvgPool1d>(m, "AvgPool1d");
  pool<nn::AvgPool2d>(m, "AvgPool2d");
  pool<nn::AvgPool3d>(m, "AvgPool3d");
  LayerClass<nn::Upsample>(m, "Upsample")
      .def(py::init([](py::handle scale_factor, std::string mode, bool align_corners) {
             return std::make_shared<nn::Upsample>(scale_factors(scale_factor), std::move(mode), align_corners);
           }),
           py::arg("scale_factor"), py::arg("mode") = "nearest", py::arg("align_corners") = false);
}

void init_normalization_dropout(py::module_& m) {
  LayerClass<nn::LayerNorm>(m, "LayerNorm")
      .def(py::init<int, float, bool, bool>(), py::arg("dims"), py::arg("eps") = 1e-5F, py::arg("affine") = true,
           py::arg("bias") = true);
  LayerClass<nn::RMSNorm>(m, "RMSNorm").def(py::init<int, float>(), py::arg("dims"), py::arg("eps") = 1e-5F);
  LayerClass<nn::GroupNorm>(m, "GroupNorm")
      .def(py::init<int, int, float, bool, bool>(), py::arg("num_groups"), py::arg("dims"), py::arg("eps") = 1e-5F,
           py::arg("affine") = true, py::arg("pytorch_compatible") = false);
  LayerClass<nn::BatchNorm>(m, "BatchNorm")
      .def(py::init<int, float, float, bool, bool>(), py::arg("num_features"), py::arg("eps") = 1e-5F,
           py::arg("momentum") = 0.1F, py::arg("affine") = true, py::arg("track_running_stats") = true);
  LayerClass<nn::InstanceNorm>(m, "InstanceNorm")
      .def(py::init<int, float, bool>(), py::arg("dims"), py::arg("eps") = 1e-5F, py::arg("affine") = false);
  LayerClass<nn::Dropout>(m, "Dropout").def(py::init<float>(), py::arg("p") = 0.5F);
  LayerClass<nn::Dropout2d>(m, "Dropout2d").def(py::init<float>(), py::arg("p") = 0.5F);
  LayerClass<nn::Dropout3d>(m, "Dropout3d").def(py::init<float>(), py::arg("p") = 0.5F);
}

void init_positional(py::module_& m) {
  LayerClass<nn::RoPE>(m, "RoPE")
      .def(py::init<int, bool, float, float>(), py::arg("dims"), py::arg("traditional") = false,
           py::arg("base") = 10000.0F, py::arg("scale") = 1.0F)
      .def("__call__", py::overload_cast<const array&, int>(&nn::RoPE::forward), py::arg("x"), py::arg("offset") = 0);
  LayerClass<nn::ALiBi, nn::Module>(m, "ALiBi")
      .def(py::init<>())
      .def("__call__", &nn::ALiBi::forward, py::arg("attention_scores"), py::arg("offset") = 0,
           py::arg("mask") = py::none())
      .def_static("create_alibi_matrix", &nn::ALiBi::create_alibi_matrix, py::arg("q_sequence_length"),
                  py::arg("k_sequence_length"), py::arg("num_heads"), py::arg("offset") = 0, py::arg("dtype") = float32)
      .def_static("create_alibi_slope", &nn::ALiBi::create_alibi_slope, py::arg("num_heads"),
                  py::arg("dtype") = float32);
  LayerClass<nn::SinusoidalPositionalEncoding>(m, "SinusoidalPositionalEncoding")
      .def(py::init<int, float, float, std::optional<float>, bool, bool>(), py::arg("dims"),
           py::arg("min_freq") = 0.0001F, py::arg("max_freq") = 1.0F, py::arg("scale") = py::none(),
           py::arg("cos_first") = false, py::arg("full_turns") = false);
}

void init_transformer(py::module_& m) {
  LayerClass<nn::MultiHeadAttention, nn::Module>(m, "MultiHeadAttention")
      .def(py::init<int, int, std::optional<int>, std::optional<int>, std::optional<int>, std::optional<int>,
                    std::optional<int>, bool>(),
           py::arg("dims"), py::arg("num_heads"), py::arg("query_input_dims") = py::none(),
           py::arg("key_input_dims") = py::none(), py::arg("value_input_dims") = py::none(),
           py::arg("value_dims") = py::none(), py::arg("value_output_dims") = py::none(), py::arg("bias") = false)
      .def("__call__", &nn::MultiHeadAttention::forward, py::arg("queries"), py::arg("keys"), py::arg("values"),
           py::arg("mask") = py::none())
      .def_static("create_additive_causal_mask", &nn::MultiHeadAttention::create_additive_causal_mask, py::arg("N"),
                  py::arg("dtype") = float32);
  // The MLP's activation: a Python callable or one of nuvec.nn's functions (None is relu, the default).
  using Activation = std::optional<nn::ActivationFn>;
  auto activation_of = [](const Activation& fn) { return fn.value_or(nn::ActivationFn{}); };
  LayerClass<nn::TransformerEncoderLayer, nn::Module>(m, "TransformerEncoderLayer")
      .def(py::init([activation_of](int dims, int num_heads, std::optional<int> mlp_dims, float dropout,
                                    const Activation& activation, bool norm_first) {
             return std::make_shared<nn::TransformerEncoderLayer>(dims, num_heads, mlp_dims, dropout,
                                                                  activation_of(activation), norm_first);
           }),
           py::arg("dims"), py::arg("num_heads"), py::arg("mlp_dims") = py::none(), py::arg("dropout") = 0.0F,
           py::arg("activation") = py::none(), py::arg("norm_first") = true)
      .def("__call__", &nn::TransformerEncoderLayer::forward, py::arg("x"), py::arg("mask") = py::none());
  LayerClass<nn::TransformerDecoderLayer, nn::Module>(m, "TransformerDecoderLayer")
      .def(py::init([activation_of](int dims, int num_heads, std::optional<int> mlp_dims, float dropout,
                                    const Activation& activation, bool norm_first) {
             return std::make_shared<nn::TransformerDecoderLayer>(dims, num_heads, mlp_dims, dropout,
                                                                  activation_of(activation), norm_first);
           }),
           py::arg("dims"), py::arg("num_heads"), py::arg("mlp_dims") = py::none(), py::arg("dropout") = 0.0F,
           py::arg("activation") = py::none(), py::arg("norm_first") = true)
      .def("__call__", &nn::TransformerDecoderLayer::forward, py::arg("x"), py::arg("memory"),
           py::arg("x_mask") = py::none(), py::arg("memory_mask") = py::none());
  LayerClass<nn::TransformerEncoder, nn::Module>(m, "TransformerEncoder")
      .def(py::init([activation_of](int num_layers, int dims, int num_heads, std::optional<int> mlp_dims, float dropout,
                                    const Activation& activation, bool norm_first) {
             return std::make_shared<nn::TransformerEncoder>(num_layers, dims, num_heads, mlp_dims, dropout,
                                                             activation_of(activation), norm_first);
           }),
           py::arg("num_layers"), py::arg("dims"), py::arg("num_heads"), py::arg("mlp_dims") = py::none(),
           py::arg("dropout") = 0.0F, py::arg("activation") = py::none(), py::arg("norm_first") = true)
      .def("__call__", &nn::TransformerEncoder::forward, py::arg("x"), py::arg("mask") = py::none());
  LayerClass<nn::TransformerDecoder, nn::Module>(m, "TransformerDecoder")
      .def(py::init([activation_of](int num_layers, int dims, int num_heads, std::optional<int> mlp_dims, float dropout,
                                    const Activation& activation, bool norm_first) {
             return std::make_shared<nn::TransformerDecoder>(num_layers, dims, num_heads, mlp_dims, dropout,
                                                             activation_of(activation), norm_first);
           }),
           py::arg("num_layers"), py::arg("dims"), py::arg("num_heads"), py::arg("mlp_dims") = py::none(),
           py::arg("dropout") = 0.0F, py::arg("activation") = py::none(), py::arg("norm_first") = true)
      .def("__call__", &nn::TransformerDecoder::forward, py::arg("x"), py::arg("memory"),
           py::arg("x_mask") = py::none(), py::arg("memory_mask") = py::none());
}

}  // namespace

void init_nn_layers(py::module_& m) {
  init_activations(m);
  init_dense(m);
  init_conv_pool(m);
  init_normalization_dropout(m);
  init_positional(m);
  init_transformer(m);
}

}  // namespace nuvec::python
