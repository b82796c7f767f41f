#include "nuvec/nn/quantized.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/core/allocator.h"
#include "nuvec/core/eval.h"
#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/quantization_mode.h"

namespace nuvec::nn {

namespace {

void check_quantizable(const std::string& layer, int dims, int group_size) {
  if (dims % group_size != 0) {
    throw_invalid(nuvec::detail::op_prefix(layer) + "the input size " + std::to_string(dims) +
                  " must be a multiple of group_size " + std::to_string(group_size) + ".");
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
  if (auto parsed = parse_quantization_mode(mode); parsed && is_microscaled(*parsed)) {
    throw_unsupported("[quantize] nuvec's quantized layers hold 'affine' weights or GGML's block formats; mode '" +
                      mode + "' is available through the ops (quantize, quantized_matmul).");
  }
  return nuvec::quantize(float_weight, group_size, bits, mode);
}

/// The rows of blocks at the integer `ids` (flat) of a weight in a block format, in its plain layout: for a grouped
/// layout, each byte of an id's row taken from the flat weight at its group's start plus its place in the group
/// (grouped_positions): eight bytes of index a byte of row. Gathering each id's whole group first held sixteen rows
/// and a four-byte index a byte for each id, 35 MiB for a 512-token prompt at a 128256 x 2048 q8_0x16 table.
array plain_rows_at(const array& weight, const array& ids, QuantizationMode mode) {
  const int group = block_rows(mode);
  if (group == 1) {
    return take(weight, ids, 0);
  }
  const int row_bytes = weight.shape(1);
  const std::vector<int32_t> positions = grouped_positions(mode, row_bytes / block_layout(mode).bytes);
  const array id = astype(ids, int64);  // byte indices of tables past 2 GiB need 64 bits
  const array group_start = multiply(floor_divide(id, array(group, int64)), array(int64_t{group} * row_bytes, int64));
  const array place =
      astype(take(array(positions.begin(), {group, row_bytes}, int32), remainder(id, array(group, int64)), 0), int64);
  return take(flatten(weight), add(expand_dims(group_start, 1), place));
}

}  // namespace

namespace detail {

template <class Base>
void Quantized<Base>::init(const array& float_weight, int rows, int dims) {
  if (!block_format()) {
    check_quantizable(this->type_name(), dims, group_size_);
  }
  auto packed = quantized_parts(float_weight, rows, dims, group_size_, bits_, mode_);
  this->weight = packed[0];
  if (packed.size() == 1) {
    this->freeze(false, {"weight"});
    return;
  }
  scales = packed[1];
  biases = packed[2];
  this->register_parameter("scales", scales);
  this->register_parameter("biases", biases);
  this->freeze(false, {"weight", "scales", "biases"});
}

template <class Base>
bool Quantized<Base>::block_format() const {
  return block_mode(mode_).has_value();
}

template <class Base>
void Quantized<Base>::repack(const std::string& mode) {
  if (!block_format()) {
    const std::string message = "only a weight in a block format has other layouts; this one is '" + mode_ + "'.";
    throw_invalid(nuvec::detail::op_prefix(this->type_name()) + message);
  }
  this->weight = repack_blocks(this->weight, mode_, mode);
  mode_ = mode;
}

template <class Base>
void Quantized<Base>::repack(const std::string& mode, int rows, const std::function<void(const array&)>& done) {
  const auto rows_of = [](const std::string& layout) {
    const auto parsed = parse_quantization_mode(layout);
    return parsed ? std::max(1, block_rows(*parsed)) : 1;
  };
  const int group = std::lcm(rows_of(mode_), rows_of(mode));
  if (rows <= 0 || rows % group != 0) {
    throw_invalid(nuvec::detail::op_prefix(this->type_name()) + "repacking from '" + mode_ + "' to '" + mode +
                  "' goes by a positive multiple of " + std::to_string(group) + " rows; got " + std::to_string(rows) +
                  ".");
  }
  const array source = this->weight;
  const std::string from = mode_;
  repack(mode);  // the checks, on the whole weight; its new layout is then built slice by slice, not evaluated whole
  const int total = source.shape(0);
  const int row_bytes = source.shape(1);
  array packed(allocator::malloc(source.nbytes()), source.shape(), uint8);
  for (int first = 0; first < total; first += rows) {
    const array slice_rows = slice(source, {first, 0}, {std::min(first + rows, total), row_bytes});
    const array part = repack_blocks(slice_rows, from, mode);
    eval({part, slice_rows});
    std::memcpy(packed.data<uint8_t>() + static_cast<size_t>(first) * static_cast<size_t>(row_bytes),
                part.data<uint8_t>(), part.nbytes());
    done(slice_rows);
  }
  this->weight = packed;
}

template <class Base>
array Quantized<Base>::product(const array& x) const {
  return block_format() ? quantized_matmul(x, this->weight, mode_)
                        : quantized_matmul(x, this->weight, scales, biases, true, group_size_, bits_);
}

template class Quantized<Linear>;
template class Quantized<Embedding>;

}  // namespace detail

QuantizedLinear::QuantizedLinear(int input_dims, int output_dims, bool bias, int group_size, int bits,
                                 const std::string& mode)
    : Quantized(group_size, bits, mode, input_dims, output_dims, bias) {
  init(weight, output_dims_, input_dims_);
}

QuantizedLinear::QuantizedLinear(const Linear& linear, int group_size, int bits, const std::string& mode)
    : Quantized(group_size, bits, mode, linear.input_dims(), linear.output_dims(), linear.bias.has_value()) {
  bias = linear.bias;
  init(linear.weight, output_dims_, input_dims_);
}

array QuantizedLinear::forward(const array& x) {
  check_input(x, 1, input_dims_);
  auto y = product(x);
  return bias ? y + *bias : y;
}

std::shared_ptr<Linear> QuantizedLinear::to_quantized(int, int, const std::string&) const {
  fail("is quantized already.");
}

std::shared_ptr<Linear> Linear::to_quantized(int group_size, int bits, const std::string& mode) const {
  return std::make_shared<QuantizedLinear>(*this, group_size, bits, mode);
}

QuantizedEmbedding::QuantizedEmbedding(int num_embeddings, int dims, int group_size, int bits, const std::string& mode)
    : Quantized(group_size, bits, mode, num_embeddings, dims) {
  init(weight, num_embeddings_, dims_);
}

QuantizedEmbedding::QuantizedEmbedding(const Embedding& embedding, int group_size, int bits, const std::string& mode)
    : Quantized(group_size, bits, mode, embedding.num_embeddings(), embedding.dims()) {
  init(embedding.weight, num_embeddings_, dims_);
}

array QuantizedEmbedding::forward(const array& x) {
  check_indices(x);
  if (block_format()) {
    // The rows of blocks of the ids, decoded as one matrix.
    const QuantizationMode layout = *parse_quantization_mode(mode());
    auto rows = dequantize(plain_rows_at(weight, flatten(x), layout), std::string(mode_name(plain_layout(layout))));
    Shape shape = x.shape();
    shape.push_back(dims_);
    return reshape(rows, shape);
  }
  return dequantize(take(weight, x, 0), take(scales, x, 0), take(biases, x, 0), group_size(), bits());
}

array QuantizedEmbedding::as_linear(const array& x) {
  check_input(x, 1, dims_);
  return product(x);
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
        parent.set_child(name, linear->to_quantized(group_size, bits, "affine"));
      } else if (auto* embedding = dynamic_cast<Embedding*>(child);
                 embedding != nullptr && dynamic_cast<QuantizedEmbedding*>(child) == nullptr &&
                 embedding->dims() % group_size == 0) {
        parent.set_child(name, std::make_shared<QuantizedEmbedding>(*embedding, group_size, bits));
      }
    }
  });
}

}  // namespace nuvec::nn
