#pragma once

// Quantized layers with MLX's affine format (CONFORMANCE.md) and checkpoint names: weight (uint32, packed),
// scales, biases, and bias for the layer's own bias. A QuantizedLinear is a Linear and a QuantizedEmbedding an
// Embedding, so `quantize` can swap them into any member declared with the float type. The packed weight, scales
// and biases are frozen (only the layer's bias trains).
//
// In one of GGML's block formats (mode "q4_0", "q8_0", "q4_k" or "q6_k"; nuvec/core/quantization_mode.h) the weight
// is the uint8 rows of blocks a GGUF file holds, with no scales or biases of its own; such a layer starts at zero
// and takes its weight from a file (nuvec cannot quantize into these formats). A layer may also hold q4_0 as
// "q4_0x8" or "q4_0x16", q8_0 as "q8_0x16", q4_k as "q4_kx16" and q6_k as "q6_kx16" (their rows interleaved in eights
// or sixteens, repack); an embedding reads its rows back out of their groups.
//
// Affine layers take group_size 32, 64 or 128 and bits 2, 3, 4, 5, 6 or 8 (defaults 64 and 4); the input size must be
// a multiple of group_size (of the block size for block formats). A bad size, mode or bit width throws when the
// layer is made.

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "nuvec/nn/linear.h"

namespace nuvec::nn {

namespace detail {

/// What a quantized layer adds to the float layer it stands in for (Linear or Embedding): the packed weight's
/// format, scales and biases, and its product with an input.
template <class Base>
class Quantized : public Base {
 public:
  /// The format the layer was made with.
  [[nodiscard]] int group_size() const { return group_size_; }
  [[nodiscard]] int bits() const { return bits_; }
  [[nodiscard]] const std::string& mode() const { return mode_; }
  /// Rewrites a block-format weight in another layout of its format, value for value ("q4_0" to "q4_0x16", "q8_0" to
  /// "q8_0x16", "q4_k" to "q4_kx16", "q6_k" to "q6_kx16", whose groups of rows the CPU's kernels read as one stream:
  /// faster for q4_0x16 and q4_kx16 at any count of x's rows, for q8_0x16 from two (as fast for one), for q6_kx16
  /// from four; repack_blocks), and takes that mode.
  void repack(const std::string& mode);
  /// As repack, `rows` rows at a time (a multiple of the layouts' groups), each evaluated into one new buffer before
  /// the next and then handed to `done` (its rows of the old weight, evaluated): a weight mapped from a file can give
  /// back each slice's pages, so the two copies are never whole at once.
  void repack(const std::string& mode, int rows, const std::function<void(const array&)>& done);

  /// One scale and one bias per group, (rows, dims / group_size) in the float weight's dtype; unused (0-d) in a
  /// block format.
  array scales;
  array biases;

 protected:
  /// The float layer built from base_args, to be quantized by init.
  template <class... Args>
  Quantized(int group_size, int bits, std::string mode, const Args&... base_args)
      : Base(base_args...),
        scales(array(0.0F)),
        biases(array(0.0F)),
        group_size_(group_size),
        bits_(bits),
        mode_(std::move(mode)) {}
  /// Replaces the weight with float_weight (rows x dims) quantized, and registers and freezes what it packs into.
  void init(const array& float_weight, int rows, int dims);
  /// True in one of GGML's block formats (no scales or biases).
  [[nodiscard]] bool block_format() const;
  /// x @ weight.T with the packed weight.
  array product(const array& x) const;

 private:
  int group_size_;
  int bits_;
  std::string mode_;
};

}  // namespace detail

class QuantizedLinear : public detail::Quantized<Linear> {
 public:
  /// A layer with random weights (as Linear's), quantized; zeros in a block format.
  QuantizedLinear(int input_dims, int output_dims, bool bias = true, int group_size = 64, int bits = 4,
                  const std::string& mode = "affine");
  /// The quantized copy of a Linear, which keeps its bias unquantized.
  explicit QuantizedLinear(const Linear& linear, int group_size = 64, int bits = 4, const std::string& mode = "affine");
  [[nodiscard]] std::string type_name() const override { return "QuantizedLinear"; }
  /// x @ dequantized weight.T + bias for floating x (..., input_dims), through quantized_matmul; other inputs throw.
  array forward(const array& x) override;
  /// Throws: the layer is quantized already.
  [[nodiscard]] std::shared_ptr<Linear> to_quantized(int group_size, int bits, const std::string& mode) const override;
};

/// An Embedding whose table is quantized row by row.

class QuantizedEmbedding : public detail::Quantized<Embedding> {
 public:
  /// A table with random rows (as Embedding's), quantized; zeros in a block format.
  QuantizedEmbedding(int num_embeddings, int dims, int group_size = 64, int bits = 4,
                     const std::string& mode = "affine");
  /// The quantized copy of an Embedding.
  explicit QuantizedEmbedding(const Embedding& embedding, int group_size = 64, int bits = 4,
                              const std::string& mode = "affine");
  [[nodiscard]] std::string type_name() const override { return "QuantizedEmbedding"; }
  /// The dequantized rows at the integer indices x: x.shape + (dims); non-integer indices throw.
  array forward(const array& x) override;
  /// x @ dequantized table.T through quantized_matmul (tied embeddings).
  array as_linear(const array& x) override;
};

/// Replaces, in place, every Linear and Embedding of the tree whose input size divides by group_size (and that
/// `predicate` accepts, given its path and module) with its affine quantized version (Linear::to_quantized, so a
/// tensor-parallel layer stays one); others are left as they are, and so are layers already quantized. Bad
/// group_size or bits throw.
void quantize(Module& model, int group_size = 64, int bits = 4,
              const std::function<bool(const std::string&, Module&)>& predicate = {});

}  // namespace nuvec::nn
