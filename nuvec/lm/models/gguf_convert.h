#pragma once

// How the weights of a GGUF file become a model's, done for the part of each weight a rank keeps (LoadPlan): blocks
// of GGML's other types (and stacked experts) repacked as nuvec's affine quantization, 3-, 5- and 6-bit codes
// widened, the llama architecture's Q and K rows put back in Hugging Face's order, Gemma's norms less the 1 the
// converter added. Each step works on whole rows and whole blocks, so a region is converted from the bytes that
// hold it (widened to whole blocks or heads, then cut exactly): what a rank drops is never read.

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "nuvec/core/array.h"
#include "nuvec/io/gguf_quants.h"
#include "nuvec/lm/models/load_plan.h"

namespace nuvec::lm::detail {

/// A GGUF tensor of a type repacked as affine quantization: its raw blocks (uint8 rows of whole blocks, the last
/// axis in bytes, mapped from the file), type and logical shape.
struct GGUFBlocks {
  array blocks;
  const io::detail::GGMLTypeInfo* info = nullptr;
  Shape shape;
};

/// How one weight of the model comes from a file's tensor.
struct GGUFConversion {
  explicit GGUFConversion(array stored) : stored(std::move(stored)) {}

  /// The tensor as read: plain values, or codes, scales or biases already packed. Unused with `blocks`.
  array stored;
  /// Blocks repacked into codes (part 0), scales (1) and biases (2), of which this weight is `part`.
  std::shared_ptr<const GGUFBlocks> blocks;
  int part = 0;
  /// Packed codes, scales or biases: the values a scale covers and the codes' bits as stored and as computed.
  bool packed = false;
  int group = 1;
  int stored_bits = 0;
  int bits = 0;
  /// Q or K rows in the converter's order, in this many heads (0: rows as they are).
  int heads = 0;
  /// A Gemma norm weight stored as 1 + w.
  bool minus_one = false;
};

/// Packed codes (rows of `bits`-wide little-endian bit streams along the last axis) rewritten `wider` bits wide (4 or
/// 8), value for value.
array widen_codes(const array& packed, int bits, int wider);

/// Replaces each weight that has a conversion (its value a stand-in of the converted shape) by its converted value,
/// cut to what `plan` keeps of it; reads only the blocks and rows that part needs, and evaluates what it converts.
void convert_gguf_weights(std::unordered_map<std::string, array>& weights,
                          const std::unordered_map<std::string, GGUFConversion>& conversions, const LoadPlan& plan);

}  // namespace nuvec::lm::detail
