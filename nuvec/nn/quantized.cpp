#include "nuvec/nn/quantized.h"

#include <memory>
#include <optional>
#include <vector>

#include "nuvec/core/ops.h"

namespace nuvec::nn {

namespace {

void check_quantizable(const std::string& layer, int dims, int group_size) {
  if (dims % group_size != 0) {
    throw_invalid("[" + layer + "] the input size " + std::to_string(dims) + " must be a multiple of group_size " +
                  std::to_string(group_size) + ".");
  }
}

/// The block format a mode names, or none for "affine" (the ops check any other name).
std::optional<QuantizationMode> block_mode(const std::string& mode) {
  auto parsed = parse_quantization_mode(mode);
  return parsed && is_block_format(*parsed) ? parsed : std::nullopt;
}

/// The packed weight (and scales and biases, for affine) of a layer of `rows` x `dims` values.
std::vector<array> quantized_parts(const array& float_weight, int rows, int dims, int group_size, int bits,
                                   const std::string& mode) {
  if (auto block = block_mode(mode)) {
    const BlockLayout layout = block_layout(*block);
    if (dims % layout.values != 0) {
      throw_invalid("[quantize] the input size " + std::to_string(dims) + " must be a multiple of the " + mode +
                    " block of " + std::to_string(layout.values) + " values.");
    }
    return {zeros({rows, dims / layout.values * layout.bytes}, uint8)};
  }
  return nuvec::quantize(float_weight, group_size, bits, mode);
}

}  // namespace

QuantizedLinear::QuantizedLinear(int input_dims, int output_dims, bool bias, int group_size, int bits,
                                 const std::string& mode)
    : Linear(input_dims, output_dims, bias),
      scales(array(0.0F)),
      biases(array(0.0F)),
      group_size_(group_size),
      bits_(bits),
      mode_(mode) {
  init(weight);
}

QuantizedLinear::QuantizedLinear(const Linear& linear, int group_size, int bits, const std::string& mode)
    : Linear(linear.input_dims(), linear.output_dims(), linear.bias.has_value()),
      scales(array(0.0F)),
      biases(array(0.0F)),
      group_size_(group_size),
      bits_(bits),
      mode_(mode) {
  bias = linear.bias;
  init(linear.weight);
}

void QuantizedLinear::init(const array& float_weight) {
  if (!block_mode(mode_)) {
    check_quantizable("QuantizedLinear", input_dims_, group_size_);
  }
  auto packed = quantized_parts(float_weight, output_dims_, input_dims_, group_size_, bits_, mode_);
  weight = packed[0];
  if (packed.size() == 1) {
    freeze(false, {"weight"});
    return;
  }
  scales = packed[1];
  biases = packed[2];
  register_parameter("scales", scales);
  register_parameter("biases", biases);
  freeze(false, {"weight", "scales", "biases"});
}

array QuantizedLinear::forward(const array& x) {
  check_input(x, 1, input_dims_);
  auto y = block_mode(mode_) ? quantized_matmul(x, weight, mode_)
                             : quantized_matmul(x, weight, scales, biases, true, group_size_, bits_);
  return bias ? y + *bias : y;
}

QuantizedEmbedding::QuantizedEmbedding(int num_embeddings, int dims, int group_size, int bits, const std::string& mode)
    : Embedding(num_embeddings, dims),
      scales(array(0.0F)),
      biases(array(0.0F)),
      group_size_(group_size),
      bits_(bits),
      mode_(mode) {
  init(weight);
}

QuantizedEmbedding::QuantizedEmbedding(const Embedding& embedding, int group_size, int bits, const std::string& mode)
    : Embedding(embedding.num_embeddings(), embedding.dims()),
      scales(array(0.0F)),
      biases(array(0.0F)),
      group_size_(group_size),
      bits_(bits),
      mode_(mode) {
  init(embedding.weight);
}

void QuantizedEmbedding::init(const array& float_weight) {
  if (!block_mode(mode_)) {
    check_quantizable("QuantizedEmbedding", dims_, group_size_);
  }
  auto packed = quantized_parts(float_weight, num_embeddings_, dims_, group_size_, bits_, mode_);
  weight = packed[0];
  if (packed.size() == 1) {
    freeze(false, {"weight"});
    return;
  }
  scales = packed[1];
  biases = packed[2];
  register_parameter("scales", scales);
  register_parameter("biases", biases);
  freeze(false, {"weight", "scales", "biases"});
}

array QuantizedEmbedding::forward(const array& x) {
  check_indices(x);
  if (block_mode(mode_)) {
    // The rows of blocks of the ids, decoded as one matrix.
    auto rows = dequantize(reshape(take(weight, flatten(x), 0), {-1, weight.shape(-1)}), mode_);
    Shape shape = x.shape();
    shape.push_back(dims_);
    return reshape(rows, shape);
  }
  return dequantize(take(weight, x, 0), take(scales, x, 0), take(biases, x, 0), group_size_, bits_);
}

array QuantizedEmbedding::as_linear(const array& x) {
  check_input(x, 1, dims_);
  return block_mode(mode_) ? quantized_matmul(x, weight, mode_)
                           : quantized_matmul(x, weight, scales, biases, true, group_size_, bits_);
}

void quantize(Module& model, int group_size, int bits,
              const std::function<bool(const std::string&, Module&)>& predicate) {
  model.apply_to_modules([&](const std::string& path, Module& parent) {
    for (const auto& [name, child] : parent.children()) {
      const std::string child_path = path.empty() ? name : path + "." + name;
      if (predicate && !predicate(child_path, *child)) {
        continue;
      }
      if (auto* linear = dynamic_cast<Linear*>(child); linear != nullptr &&
                                                       dynamic_cast<QuantizedLinear*>(child) == nullptr &&
                                                       linear->input_dims() % group_size == 0) {
        parent.set_child(name, std::make_shared<QuantizedLinear>(*linear, group_size, bits));
      } else if (auto* embedding = dynamic_cast<Embedding*>(child);
                 embedding != nullptr && dynamic_cast<QuantizedEmbedding*>(child) == nullptr &&
                 embedding->dims() % group_size == 0) {
        parent.set_child(name, std::make_shared<QuantizedEmbedding>(*embedding, group_size, bits));
      }
    }
  });
}

}  // namespace nuvec::nn
