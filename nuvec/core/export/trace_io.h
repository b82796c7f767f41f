#pragma once

// nuvec's exported-function file (export.h), version 3 (version 1 lacked the quantization mode of Quantize and
// GatherQMM, version 2 the metadata). All values little-endian; a list is a u64 count then its items; a string is a list of bytes; a dtype
// is one byte (its index in all_dtypes); a shape a list of i32.
//
//   header: "NUVECFN\0", u32 version, u8 shapeless, u32 number of traces (rewritten after each trace), string
//           metadata (the exporter's, as given)
//   trace:  u64 length, `length` bytes of content, u64 FNV-1a of the content
//   content:
//     list of string  keyword-argument names (sorted; their inputs follow the positional ones)
//     u64             number of inputs, positional and keyword
//     u64             number of constants new in this trace; each: u64 index in the file's constant table (the
//                     next one), dtype, shape, its elements row-major (size * itemsize bytes)
//     list of u64     this trace's constants by table index (a constant shared by traces is stored once)
//     u64             number of values; each: dtype, shape. Values are numbered: inputs, constants, then nodes'
//                     outputs (graph.h)
//     u64             number of nodes, in order; each: string primitive name, its parameters (primitive_io.cpp),
//                     list of i32 argument values, list of i32 output values, i32 shape source of a Broadcast (-1)
//     list of i32     the function's outputs

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/core/compile/graph.h"
#include "nuvec/core/export.h"
#include "nuvec/core/export/bytes.h"

namespace nuvec::detail {

inline constexpr std::string_view export_magic{"NUVECFN\0", 8};
inline constexpr uint32_t export_version = 3;
/// Where the header's trace count sits.
inline constexpr size_t export_count_offset = 8 + 4 + 1;

/// Keyword arguments in the order a trace keeps them: sorted by keyword (Kwargs is unordered, as MLX's).
std::vector<std::pair<std::string, array>> sorted_kwargs(const Kwargs& kwargs);

/// One exported trace: its keyword names and graph (inputs first, constants with their data).
struct ExportedTrace {
  std::vector<std::string> kwarg_keys;
  Graph graph;
};

/// The file's constant table while writing: the arrays already written, by id, with their index (kept alive so an
/// id is never reused).
struct ConstantTable {
  std::vector<array> arrays;
  [[nodiscard]] int64_t find(const array& a) const;
};

/// A trace's content (the bytes between its length and checksum); constants new to `constants` are added to it.
std::string write_trace(const ExportedTrace& trace, ConstantTable& constants);

/// A trace read from its content, checked; constants new in it are appended to `constants`. Nodes run on `stream`.
ExportedTrace read_trace(ByteReader& in, std::vector<array>& constants, Stream stream);

}  // namespace nuvec::detail
