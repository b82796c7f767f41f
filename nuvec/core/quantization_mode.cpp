#include "nuvec/core/quantization_mode.h"

#include <array>
#include <vector>

namespace nuvec {

namespace {
constexpr std::array all_modes = {QuantizationMode::affine,  QuantizationMode::q4_0,    QuantizationMode::q8_0,
                                  QuantizationMode::q4_k,    QuantizationMode::q6_k,    QuantizationMode::mxfp4,
                                  QuantizationMode::mxfp8,   QuantizationMode::nvfp4,   QuantizationMode::q4_0x8,
                                  QuantizationMode::q4_kx16, QuantizationMode::q4_0x16, QuantizationMode::q6_kx16,
                                  QuantizationMode::q8_0x16};

/// How a grouped layout orders the bytes of its group's rows. A piece is a run of a plain block's bytes (`bytes` from
/// byte `from`), stored in units of `unit` bytes, unit j of every row of the group together (`rows` * `unit` bytes,
/// row i's at i * unit). The group holds first each block's run, its `block_pieces` in order, then its
/// `trailing_pieces`, each piece of every block (block b's at b * rows * bytes) before the next piece (q4_0x8: all
/// scales, then all codes). A plain format's: one row, its block one piece.
struct InterleavedPiece {
  int from;
  int bytes;
  int unit;
};
struct RowInterleave {
  int rows;
  std::vector<InterleavedPiece> block_pieces;
  std::vector<InterleavedPiece> trailing_pieces;
};

RowInterleave row_interleave(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::q4_0x8:
      return {8, {}, {{0, 2, 2}, {2, 16, 16}}};
    case QuantizationMode::q4_0x16:
      return {16, {{0, 2, 2}, {2, 16, 4}}, {}};
    case QuantizationMode::q4_kx16:
      return {16, {{0, 144, 4}}, {}};
    case QuantizationMode::q6_kx16: {
      RowInterleave order{16, {}, {{208, 2, 2}}};
      for (int h = 0; h < 2; ++h) {
        order.block_pieces.push_back({192 + 8 * h, 8, 4});
        for (int m = 0; m < 8; ++m) {
          for (int from : {64 * h + 4 * m, 64 * h + 32 + 4 * m, 128 + 32 * h + 4 * m}) {
            order.block_pieces.push_back({from, 4, 4});
          }
        }
      }
      return order;
    }
    case QuantizationMode::q8_0x16:
      return {16, {{2, 32, 4}}, {{0, 2, 2}}};
    case QuantizationMode::affine:
    case QuantizationMode::q4_0:
    case QuantizationMode::q8_0:
    case QuantizationMode::q4_k:
    case QuantizationMode::q6_k:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
      break;
  }
  const int bytes = block_layout(mode).bytes;
  return {1, {{0, bytes, bytes}}, {}};
}

}  // namespace

std::string_view mode_name(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::affine:
      return "affine";
    case QuantizationMode::q4_0:
      return "q4_0";
    case QuantizationMode::q8_0:
      return "q8_0";
    case QuantizationMode::q4_k:
      return "q4_k";
    case QuantizationMode::q6_k:
      return "q6_k";
    case QuantizationMode::mxfp4:
      return "mxfp4";
    case QuantizationMode::mxfp8:
      return "mxfp8";
    case QuantizationMode::nvfp4:
      return "nvfp4";
    case QuantizationMode::q4_0x8:
      return "q4_0x8";
    case QuantizationMode::q4_kx16:
      return "q4_kx16";
    case QuantizationMode::q4_0x16:
      return "q4_0x16";
    case QuantizationMode::q6_kx16:
      return "q6_kx16";
    case QuantizationMode::q8_0x16:
      return "q8_0x16";
  }
  return "unknown";
}

std::optional<QuantizationMode> parse_quantization_mode(std::string_view name) {
  for (QuantizationMode mode : all_modes) {
    if (mode_name(mode) == name) {
      return mode;
    }
  }
  return std::nullopt;
}

BlockLayout block_layout(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::affine:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
      return {0, 0};
    case QuantizationMode::q4_0:
    case QuantizationMode::q4_0x8:
    case QuantizationMode::q4_0x16:
      return {32, 18};
    case QuantizationMode::q8_0:
    case QuantizationMode::q8_0x16:
      return {32, 34};
    case QuantizationMode::q4_k:
    case QuantizationMode::q4_kx16:
      return {256, 144};
    case QuantizationMode::q6_k:
    case QuantizationMode::q6_kx16:
      return {256, 210};
  }
  return {0, 0};
}

int block_rows(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::q4_0x8:
      return 8;
    case QuantizationMode::q4_kx16:
    case QuantizationMode::q4_0x16:
    case QuantizationMode::q6_kx16:
    case QuantizationMode::q8_0x16:
      return 16;
    case QuantizationMode::affine:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
      return 0;
    case QuantizationMode::q4_0:
    case QuantizationMode::q8_0:
    case QuantizationMode::q4_k:
    case QuantizationMode::q6_k:
      return 1;
  }
  return 0;
}

QuantizationMode plain_layout(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::q4_0x8:
    case QuantizationMode::q4_0x16:
      return QuantizationMode::q4_0;
    case QuantizationMode::q4_kx16:
      return QuantizationMode::q4_k;
    case QuantizationMode::q6_kx16:
      return QuantizationMode::q6_k;
    case QuantizationMode::q8_0x16:
      return QuantizationMode::q8_0;
    case QuantizationMode::affine:
    case QuantizationMode::q4_0:
    case QuantizationMode::q8_0:
    case QuantizationMode::q4_k:
    case QuantizationMode::q6_k:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
      return mode;
  }
  return mode;
}

std::vector<int32_t> grouped_positions(QuantizationMode mode, int blocks) {
  const RowInterleave order = row_interleave(mode);
  const size_t block_bytes = static_cast<size_t>(block_layout(mode).bytes);
  const size_t rows = static_cast<size_t>(order.rows);
  const size_t row_bytes = static_cast<size_t>(blocks) * block_bytes;
  std::vector<int32_t> positions(rows * row_bytes);
  // Piece `piece` of block b stored from `stored`: its units, each of every row of the group together.
  const auto place = [&](const InterleavedPiece& piece, size_t b, size_t stored) {
    const auto unit = static_cast<size_t>(piece.unit);
    for (size_t row = 0; row < rows; ++row) {
      for (size_t o = 0; o < static_cast<size_t>(piece.bytes); ++o) {
        positions[row * row_bytes + b * block_bytes + static_cast<size_t>(piece.from) + o] =
            static_cast<int32_t>(stored + o / unit * rows * unit + row * unit + o % unit);
      }
    }
  };
  size_t run_bytes = 0;  // of a block's run of block pieces, per row
  for (const InterleavedPiece& piece : order.block_pieces) {
    run_bytes += static_cast<size_t>(piece.bytes);
  }
  for (size_t b = 0; b < static_cast<size_t>(blocks); ++b) {
    size_t offset = 0;
    for (const InterleavedPiece& piece : order.block_pieces) {
      place(piece, b, rows * (b * run_bytes + offset));
      offset += static_cast<size_t>(piece.bytes);
    }
  }
  size_t at = static_cast<size_t>(blocks) * rows * run_bytes;
  for (const InterleavedPiece& piece : order.trailing_pieces) {
    for (size_t b = 0; b < static_cast<size_t>(blocks); ++b) {
      place(piece, b, at + b * rows * static_cast<size_t>(piece.bytes));
    }
    at += static_cast<size_t>(blocks) * rows * static_cast<size_t>(piece.bytes);
  }
  return positions;
}

bool is_block_format(QuantizationMode mode) { return block_layout(mode).values != 0; }

bool is_microscaled(QuantizationMode mode) {
  return mode == QuantizationMode::mxfp4 || mode == QuantizationMode::mxfp8 || mode == QuantizationMode::nvfp4;
}

MicroscaledLayout microscaled_layout(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::mxfp4:
      return {32, 4};
    case QuantizationMode::mxfp8:
      return {32, 8};
    case QuantizationMode::nvfp4:
      return {16, 4};
    case QuantizationMode::affine:
    case QuantizationMode::q4_0:
    case QuantizationMode::q8_0:
    case QuantizationMode::q4_k:
    case QuantizationMode::q6_k:
    case QuantizationMode::q4_0x8:
    case QuantizationMode::q4_kx16:
    case QuantizationMode::q4_0x16:
    case QuantizationMode::q6_kx16:
    case QuantizationMode::q8_0x16:
      return {0, 0};
  }
  return {0, 0};
}

}  // namespace nuvec
