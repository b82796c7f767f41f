// The source generator. Each value of the chain lives in its compute type
// (float for the 16-bit floats, the element type otherwise) and is rounded to
// its dtype after every step, so results match the unfused kernels, which round
// after every primitive. The steps' expressions come from expressions.cpp.

#include "nuvec/core/compile/codegen.h"

#include <algorithm>
#include <string_view>

#include "nuvec/core/compile/expressions.h"
#include "nuvec/core/error.h"

namespace nuvec::detail {

namespace {

/// Its arguments (strings and string literals) joined in one allocation, for the code built up in loops.
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  out.reserve((std::string_view(parts).size() + ...));
  (out += ... += parts);
  return out;
}

/// A generated variable's name: a letter and a number.
std::string name_of(char prefix, size_t index) {
  std::string text(1, prefix);
  text += std::to_string(index);
  return text;
}
std::string name_of(char prefix, int index) { return name_of(prefix, static_cast<size_t>(index)); }

// The generated source's start: libm's functions declared `omp declare simd` (glibc's vector math library has
// their vector forms; GCC calls them from vectorized loops, the builtins in scalar_math.h included), then the shared
// scalar functions, then the streaming helpers of the kernel skeleton.
constexpr std::string_view prelude = R"(#include <cstdint>
#include <cstring>
extern "C" {
#define NV_SIMD _Pragma("omp declare simd notinbranch")
#define NV_MATH1(name) NV_SIMD float name##f(float) noexcept; NV_SIMD double name(double) noexcept;
#define NV_MATH2(name) NV_SIMD float name##f(float, float) noexcept; NV_SIMD double name(double, double) noexcept;
NV_MATH1(exp) NV_MATH1(expm1) NV_MATH1(log) NV_MATH1(log2) NV_MATH1(log10) NV_MATH1(log1p)
NV_MATH1(sin) NV_MATH1(cos) NV_MATH1(tan) NV_MATH1(asin) NV_MATH1(acos) NV_MATH1(atan)
NV_MATH1(sinh) NV_MATH1(cosh) NV_MATH1(tanh) NV_MATH1(asinh) NV_MATH1(acosh) NV_MATH1(atanh) NV_MATH1(erf)
NV_MATH1(erfc)
NV_MATH2(pow) NV_MATH2(atan2)
}
#include "nuvec/core/scalar_math.h"
namespace nv = nuvec::scalar;
// Outputs of kernels that write at least this many elements are streamed past the caches, far larger than them.
constexpr int64_t nv_stream_min = int64_t(1) << 20;
// A row reduction's partial results: 64 floats are 4 AVX-512 accumulators, whose additions overlap where one
// accumulator waits for each sum before the next (a layer norm's row passes 22% faster in L2).
constexpr int64_t nv_lanes = 64;
#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif
// Whole 64-byte lines from an aligned buffer to 64-byte aligned memory, past the caches.
static inline void nv_stream_lines(void* dst, const void* src, int64_t bytes) {
#if defined(__AVX512F__)
  for (int64_t c = 0; c < bytes; c += 64) _mm512_stream_si512((__m512i*)((char*)dst + c), _mm512_load_si512((const char*)src + c));
#elif defined(__AVX__)
  for (int64_t c = 0; c < bytes; c += 32) _mm256_stream_si256((__m256i*)((char*)dst + c), _mm256_load_si256((const __m256i*)((const char*)src + c)));
#else
  std::memcpy(dst, src, (size_t)bytes);
#endif
}
// Whether an input's inner stride t walks across its lines while its row stride u stays within them (a transpose):
// the strided entry then reads tiles of rows.
static inline bool nv_across(int64_t t, int64_t u) {
  return t != 0 && t != 1 && (u < 0 ? -u : u) < (t < 0 ? -t : t);
}
static inline void nv_stream_fence() {
#if defined(__AVX__)
  _mm_sfence();
#endif
}
)";

}  // namespace

bool can_generate(const Primitive& p, const std::vector<Dtype>& arg_dtypes, Dtype out) {
  const std::vector<std::string> names(arg_dtypes.size(), "a");
  return expression(p, arg_dtypes, names, out).has_value();
}

namespace {

/// Elements of a run the strided entry computes at a time: its staging blocks of inputs stay in L1.
constexpr size_t strided_block = 512;
/// A tile of the strided entry: rows that share their inputs' lines (16 floats fill one) by columns.
constexpr size_t strided_tile_rows = 16;
constexpr size_t strided_tile_cols = 64;
/// Put before every loop over elements: a loop of 16 or fewer iterations (a line of floats) is otherwise unrolled
/// whole before the vectorizer sees it, and GCC 12 then computed the line in scalar code, one libm call per element
/// (`exp(x) * 0.5` over 2^24 floats 5.3x slower, `x * c + d` 1.4x, CPU time on one thread).
constexpr const char* simd_loop = "_Pragma(\"omp simd\")\n";

}  // namespace

/// Whether input i is a literal in the kernel's source rather than read.
bool is_literal(const FusedKernel& k, size_t i) { return i < k.literals.size() && k.literals[i].has_value(); }

/// The literal inputs' declarations, each line starting with `indent`.
std::string literal_declarations(const FusedKernel& k, const std::vector<Dtype>& dtypes, const std::string& indent) {
  std::string text;
  for (size_t i = 0; i < static_cast<size_t>(k.num_inputs); ++i) {
    if (is_literal(k, i)) {
      text += cat(indent, "const ", compute_type(dtypes[i]), " ", name_of('v', i), " = ", literal(dtypes[i], *k.literals[i]),
                  ";\n");
    }
  }
  return text;
}

/// The declaration of step s's value: its expression over the values before it, rounded to its dtype. A product of a
/// float32 or float64 value and its sigmoid (SiLU) is one call, nv::silu, which shares the sigmoid's exp and divides
/// once (the sigmoid step stays, for other uses; the compiler drops it when it has none).
std::string step_code(const FusedKernel& k, const std::vector<Dtype>& dtypes, size_t s) {
  const auto n_in = static_cast<size_t>(k.num_inputs);
  const auto& step = k.steps[s];
  auto value = [](int v) { return name_of('v', static_cast<size_t>(v)); };
  auto sigmoid_of = [&](int v, int x) {
    if (v < static_cast<int>(n_in)) {
      return false;
    }
    const auto& arg = k.steps[static_cast<size_t>(v) - n_in];
    return std::holds_alternative<Sigmoid>(arg.primitive) && arg.args[0] == x;
  };
  std::optional<std::string> expr;
  auto dtype_of = [&](int v) { return dtypes[static_cast<size_t>(v)]; };
  if (std::holds_alternative<Multiply>(step.primitive) && (step.dtype == float32 || step.dtype == float64) &&
      dtype_of(step.args[0]) == step.dtype && dtype_of(step.args[1]) == step.dtype) {
    const int a = step.args[0];
    const int b = step.args[1];
    if (sigmoid_of(b, a)) {
      expr = "nv::silu(" + value(a) + ")";
    }
    if (sigmoid_of(a, b)) {
      expr = "nv::silu(" + value(b) + ")";
    }
  }
  const int exponent = step.args.size() == 2 ? step.args[1] : -1;
  if (!expr && std::holds_alternative<Power>(step.primitive) && exponent >= 0 &&
      is_literal(k, static_cast<size_t>(exponent)) && dtype_of(step.args[0]) == step.dtype &&
      dtype_of(exponent) == step.dtype) {
    expr = constant_power(step.dtype, value(step.args[0]), *k.literals[static_cast<size_t>(exponent)]);
  }
  if (!expr) {
    std::vector<Dtype> arg_dtypes;
    std::vector<std::string> args;
    for (int a : step.args) {
      arg_dtypes.push_back(dtypes[static_cast<size_t>(a)]);
      args.push_back(value(a));
    }
    expr = expression(step.primitive, arg_dtypes, args, step.dtype);
  }
  if (!expr) {
    throw_internal("[compile] no generated code for " + std::string(name(step.primitive)) + ".");
  }
  return "const " + compute_type(step.dtype) + " " + value(static_cast<int>(n_in + s)) + " = " +
         rounded(step.dtype, *expr) + ";\n";
}

namespace {

/// Elements per streamed line: 64 bytes of the narrowest element output (a row kernel's per-row values are written
/// in place).
size_t line_length(const FusedKernel& k, const std::vector<Dtype>& dtypes) {
  size_t narrowest = 8;
  for (int v : k.outputs) {
    const auto u = static_cast<size_t>(v);
    if (!k.rows || !k.row_values[u]) {
      narrowest = std::min<size_t>(narrowest, size_of(dtypes[u]));
    }
  }
  return 64 / narrowest;
}

/// A row kernel: for each row, one pass over the row per reduction depth (each pass recomputes the element values
/// it needs from the inputs, which the row keeps in cache), the row values between passes, then a last pass that
/// writes the element outputs. Memory sees each input read once and each output written once.
std::string generate_rows_source(const FusedKernel& k) {
  std::string src(prelude);
  const auto n_in = static_cast<size_t>(k.num_inputs);
  std::vector<Dtype> dtypes(k.input_dtypes);
  for (const auto& s : k.steps) {
    dtypes.push_back(s.dtype);
  }
  auto value = [&](size_t v) { return name_of('v', v); };
  // A value's stage: how many reductions lie between it and the inputs.
  std::vector<int> stage(dtypes.size(), 0);
  int passes = 0;
  for (size_t s = 0; s < k.steps.size(); ++s) {
    int st = 0;
    for (int a : k.steps[s].args) {
      st = std::max(st, stage[static_cast<size_t>(a)]);
    }
    if (std::holds_alternative<Reduce>(k.steps[s].primitive)) {
      ++st;
    }
    stage[n_in + s] = st;
    passes = std::max(passes, st);
  }
  auto expr_of = [&](size_t s) { return step_code(k, dtypes, s); };
  // Element values up to a stage, computed inside a loop over the row (unused ones the compiler drops); unit
  // reads where every element input is contiguous along the row, so that the loop needs no gathers.
  bool unit = true;
  auto element_body = [&](int up_to) {
    std::string body;
    for (size_t i = 0; i < n_in; ++i) {
      if (!k.row_values[i] && !is_literal(k, i)) {
        const auto index = unit ? std::string("j") : "j * " + name_of('t', i);
        body += "      const " + compute_type(dtypes[i]) + " " + value(i) + " = " +
                load(dtypes[i], name_of('q', i) + "[" + index + "]") + ";\n";
      }
    }
    for (size_t s = 0; s < k.steps.size(); ++s) {
      if (!k.row_values[n_in + s] && stage[n_in + s] <= up_to) {
        body += "      " + expr_of(s);
      }
    }
    return body;
  };
  auto row_steps = [&](int at) {
    std::string body;
    for (size_t s = 0; s < k.steps.size(); ++s) {
      if (k.row_values[n_in + s] && stage[n_in + s] == at && !std::holds_alternative<Reduce>(k.steps[s].primitive)) {
        body += "    " + expr_of(s);
      }
    }
    return body;
  };

  src += "extern \"C\" void nuvec_fused_strided(const void* const* in, void* const* out, const int64_t* shape, "
         "const int64_t* strides, int ndim, int64_t begin, int64_t end) {\n";
  for (size_t i = 0; i < n_in; ++i) {
    if (!is_literal(k, i)) {
      src += "  const " + storage_type(dtypes[i]) + "* " + name_of('p', i) + " = (const " + storage_type(dtypes[i]) +
             "*)in[" + std::to_string(i) + "];\n";
    }
  }
  src += literal_declarations(k, dtypes, "  ");
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto t = storage_type(dtypes[static_cast<size_t>(k.outputs[o])]);
    src += cat("  ", t, "* __restrict ", name_of('o', o), " = (", t, "*)out[", std::to_string(o), "];\n");
  }
  src += "  const int64_t inner = shape[ndim - 1];\n  int64_t index[64] = {0};\n";
  src += "  const bool stream_rows = (end - begin) * inner >= nv_stream_min;\n";
  // Streamed rows go out in blocks of 16 lines: a line at a time, as the flat loop, made a layer norm 10% slower.
  const auto block = std::to_string(16 * line_length(k, dtypes));
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto v = static_cast<size_t>(k.outputs[o]);
    if (!k.row_values[v]) {
      src += "  alignas(64) " + storage_type(dtypes[v]) + " " + name_of('w', o) + "[" + block + "];\n";
    }
  }
  src += "  int64_t rest = begin;\n  for (int d = ndim - 2; d >= 0; --d) { index[d] = rest % shape[d]; rest /= shape[d]; }\n";
  src += "  for (int64_t r = begin; r < end; ++r) {\n";
  for (size_t i = 0; i < n_in; ++i) {
    if (is_literal(k, i)) {
      continue;
    }
    const auto q = name_of('q', i);
    src += "    const " + storage_type(dtypes[i]) + "* __restrict " + q + " = " + name_of('p', i) + ";\n";
    src += "    for (int d = 0; d + 1 < ndim; ++d) " + q + " += index[d] * strides[" + std::to_string(i) + " * ndim + d];\n";
    src += "    const int64_t " + name_of('t', i) + " = strides[" + std::to_string(i) + " * ndim + ndim - 1];\n";
    if (!k.row_values[i]) {
      src += "    const int64_t " + name_of('u', i) + " = ndim >= 2 ? strides[" + std::to_string(i) +
             " * ndim + ndim - 2] : 0;\n";
    }
    if (k.row_values[i]) {
      src += "    const " + compute_type(dtypes[i]) + " " + value(i) + " = " + load(dtypes[i], q + "[0]") + ";\n";
    }
  }
  auto row_passes = [&](bool unit_reads) {
    unit = unit_reads;
    std::string body;
    for (int pass = 1; pass <= passes; ++pass) {
      // Sums and products vectorize as simd reductions over nv_lanes partial results (lane l takes the elements
      // j = l mod nv_lanes), so that several vector accumulators are in flight; maxima and minima (which propagate
      // NaN) stay in order.
      bool simd = true;
      for (size_t s = 0; s < k.steps.size(); ++s) {
        const auto* reduce = std::get_if<Reduce>(&k.steps[s].primitive);
        if (reduce != nullptr && stage[n_in + s] == pass && reduce->type != ReduceType::sum &&
            reduce->type != ReduceType::prod) {
          simd = false;
        }
      }
      std::string accumulators;
      std::string updates;
      std::string finish;
      for (size_t s = 0; s < k.steps.size(); ++s) {
        const auto* reduce = std::get_if<Reduce>(&k.steps[s].primitive);
        if (reduce == nullptr || stage[n_in + s] != pass) {
          continue;
        }
        const auto acc = name_of('a', n_in + s);
        const auto arg = value(static_cast<size_t>(k.steps[s].args[0]));
        const auto c = compute_type(k.steps[s].dtype);
        const auto result = "    const " + c + " " + value(n_in + s) + " = ";
        if (reduce->type == ReduceType::sum || reduce->type == ReduceType::prod) {
          const bool sum = reduce->type == ReduceType::sum;
          const std::string op = sum ? " += " : " *= ";
          const std::string identity = sum ? "0" : "1";
          if (simd) {
            const auto total = name_of('z', n_in + s);
            accumulators += cat("    ", c, " ", acc, "[nv_lanes];\n    for (int64_t l = 0; l < nv_lanes; ++l) ", acc,
                                "[l] = ", identity, ";\n");
            updates += cat("      ", acc, "[l]", op, arg, ";\n");
            finish += cat("    ", c, " ", total, " = ", identity, ";\n    _Pragma(\"omp simd reduction(",
                          sum ? "+" : "*", ":", total, ")\")\n    for (int64_t l = 0; l < nv_lanes; ++l) ", total, op,
                          acc, "[l];\n", result, total, ";\n");
          } else {
            accumulators += cat("    ", c, " ", acc, " = ", identity, ";\n");
            updates += cat("      ", acc, op, arg, ";\n");
            finish += result + acc + ";\n";
          }
        } else {
          const bool max = reduce->type == ReduceType::max;
          const std::string beats = max ? " > " : " < ";
          accumulators += cat("    ", c, " ", acc, " = ", max ? "-" : "", "__builtin_inf();\n");
          updates += cat("      ", acc, " = (", arg, beats, acc, " || ", arg, " != ", arg, " || ", acc, " != ", acc,
                         ") ? (", acc, " != ", acc, " ? ", acc, " : ", arg, ") : ", acc, ";\n");
          finish += result + acc + ";\n";
        }
      }
      body += accumulators;
      if (simd) {
        body +=
            cat("    {\n    int64_t j0 = 0;\n    for (; j0 + nv_lanes <= inner; j0 += nv_lanes) {\n"
                "    _Pragma(\"omp simd\")\n    for (int64_t l = 0; l < nv_lanes; ++l) {\n"
                "      const int64_t j = j0 + l;\n",
                element_body(pass - 1), updates, "    }\n    }\n    for (int64_t j = j0; j < inner; ++j) {\n",
                "      const int64_t l = j - j0;\n", element_body(pass - 1), updates, "    }\n    }\n");
      } else {
        body += "    for (int64_t j = 0; j < inner; ++j) {\n" + element_body(pass - 1) + updates + "    }\n";
      }
      body += finish + row_steps(pass);
    }
    // Element outputs: written in place, or (large outputs) through block buffers streamed out past the caches from
    // the first line boundary the outputs share.
    std::string stores;
    std::string buffered;
    std::string streams;
    std::string row_stores;
    std::string first;
    std::string line_starts = "true";
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      const auto v = static_cast<size_t>(k.outputs[o]);
      const auto out = name_of('o', o);
      if (k.row_values[v]) {
        row_stores += "    " + out + "[r] = " + store(dtypes[v], value(v)) + ";\n";
      } else {
        const auto w = name_of('w', o);
        if (first.empty()) {
          first = out;
        }
        line_starts += " && ((uintptr_t)(" + out + " + r * inner + j0) & 63) == 0";
        stores += "      " + out + "[r * inner + j] = " + store(dtypes[v], value(v)) + ";\n";
        buffered += "      " + w + "[j - j0] = " + store(dtypes[v], value(v)) + ";\n";
        streams += cat("      nv_stream_lines(", out, " + r * inner + j0, ", w, ", sizeof(", w, "));\n");
      }
    }
    // While a streamed row is written, the next row of each element input (rows one stride further) is fetched
    // into L2: the first pass over a row otherwise waits on memory with nothing else to do, and the row's other
    // passes leave the memory idle (a layer norm 33% faster on one thread). A prefetch past the input never faults.
    std::string prefetches;
    for (size_t i = 0; unit_reads && i < n_in; ++i) {
      if (k.row_values[i] || is_literal(k, i)) {
        continue;
      }
      // Inputs broadcast over the rows (a weight) are in cache already: their row stride is 0.
      const auto q = name_of('q', i);
      const auto u = name_of('u', i);
      prefetches += cat("      if (", u, " != 0) {\n        for (int64_t c = 0; c < ", block, " * (int64_t)sizeof(*", q,
                        "); c += 64) __builtin_prefetch((const char*)(", q, " + ", u, " + j0) + c, 0, 2);\n      }\n");
    }
    if (!stores.empty()) {
      const auto element_stores = element_body(passes) + stores;
      body += "    int64_t j0 = 0;\n    if (stream_rows) {\n"
              "      for (; j0 < inner && ((uintptr_t)(" + first + " + r * inner + j0) & 63) != 0; ++j0) {}\n"
              "      for (int64_t j = 0; j < j0; ++j) {\n" + element_stores + "      }\n"
              "      if (" + line_starts + ") {\n        for (; j0 + " + block + " <= inner; j0 += " + block + ") {\n" +
              prefetches + "      for (int64_t j = j0; j < j0 + " + block + "; ++j) {\n" + element_body(passes) +
              buffered + "      }\n" + streams + "        }\n      }\n    }\n" +
              "    for (int64_t j = j0; j < inner; ++j) {\n" + element_stores + "    }\n";
    }
    body += row_stores;
    return body;
  };
  std::string unit_test = "true";
  for (size_t i = 0; i < n_in; ++i) {
    if (!k.row_values[i] && !is_literal(k, i)) {
      unit_test += " && " + name_of('t', i) + " == 1";
    }
  }
  src += row_steps(0);
  src += "    if (" + unit_test + ") {\n" + row_passes(true) + "    } else {\n" + row_passes(false) + "    }\n";
  src += "    for (int d = ndim - 2; d >= 0; --d) { if (++index[d] < shape[d]) break; index[d] = 0; }\n";
  src += "  }\n  if (stream_rows) nv_stream_fence();\n}\n";
  return src;
}

}  // namespace

std::string generate_source(const FusedKernel& k) {
  if (k.rows) {
    return generate_rows_source(k);
  }
  std::string src(prelude);
  const auto n_in = static_cast<size_t>(k.num_inputs);
  std::vector<Dtype> dtypes(k.input_dtypes);
  for (const auto& s : k.steps) {
    dtypes.push_back(s.dtype);
  }
  auto value = [&](int v) { return name_of('v', v); };
  // The inputs the kernel reads (the others are literals).
  std::vector<size_t> read;
  for (size_t i = 0; i < n_in; ++i) {
    if (!is_literal(k, i)) {
      read.push_back(i);
    }
  }

  // The element body: loaded inputs in, outputs written at index i.
  src += "static inline __attribute__((always_inline)) void nv_body(";
  for (size_t i : read) {
    src += compute_type(dtypes[i]) + " " + value(static_cast<int>(i)) + ", ";
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    src += storage_type(dtypes[static_cast<size_t>(k.outputs[o])]) + "* __restrict o" + std::to_string(o) + ", ";
  }
  src += "int64_t i) {\n";
  src += literal_declarations(k, dtypes, "  ");
  for (size_t s = 0; s < k.steps.size(); ++s) {
    src += "  " + step_code(k, dtypes, s);
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    src += "  o" + std::to_string(o) + "[i] = " + store(dtypes[static_cast<size_t>(k.outputs[o])], value(k.outputs[o])) +
           ";\n";
  }
  src += "}\n";

  auto pointers = [&](std::string& body) {
    for (size_t i : read) {
      body += "  const " + storage_type(dtypes[i]) + "* __restrict p" + std::to_string(i) + " = (const " +
              storage_type(dtypes[i]) + "*)in[" + std::to_string(i) + "];\n";
    }
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      const auto t = storage_type(dtypes[static_cast<size_t>(k.outputs[o])]);
      body += cat("  ", t, "* __restrict o", std::to_string(o), " = (", t, "*)out[", std::to_string(o), "];\n");
    }
  };
  // A call of the body with input i read as reads(i) and the outputs as `outs` (a prefix), at `at`.
  auto call = [&](auto reads, char outs, const std::string& at) {
    std::string text = "nv_body(";
    for (size_t i : read) {
      text += load(dtypes[i], reads(i)) + ", ";
    }
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      text += cat(name_of(outs, o), ", ");
    }
    return text + at + ");\n";
  };
  // Large ranges: outputs streamed past the caches, so that an output costs one write of memory instead of a read
  // for ownership plus a write. Elements are computed a line at a time (64 bytes of the narrowest output) into
  // buffers in L1 and each line is streamed out at once: stores spread over the computation, where blocks of 1 KiB
  // streamed in bursts kept the core waiting on them (medians of 8 runs: GELU 1.52x the floor -> 1.2x, SiLU
  // 1.32x -> 1.03x). Plain stores up to the first line boundary of the outputs, and for the rest where they do not
  // share one.
  std::string line_starts = "true";
  std::string buffers;
  std::string streams;
  // Buffers of `length` elements per output; streams of `count` elements of them to the outputs at `at`.
  auto stream_code = [&](const std::string& length, const std::string& count, const std::string& at) {
    line_starts = "true";
    buffers.clear();
    streams.clear();
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      const auto out = name_of('o', o);
      const auto w = name_of('w', o);
      line_starts += cat(" && ((uintptr_t)(", out, " + ", at, ") & 63) == 0");
      buffers += cat("    alignas(64) ", storage_type(dtypes[static_cast<size_t>(k.outputs[o])]), " ", w, "[",
                     length, "];\n");
      streams += cat("      nv_stream_lines(", out, " + ", at, ", ", w, ", ", count, " * sizeof(", w, "[0]));\n");
    }
  };

  // Flat loop over row-major inputs. A traced one-element input's value is read once; an input that is one value
  // broadcast everywhere at run time (`zeros(shape)`, `once` set) fills a block in L1 once, which every run of
  // elements then reads at unit stride as the others read their memory, so that one loop serves both and vectorizes.
  const std::string block = std::to_string(strided_block);
  const auto line = std::to_string(line_length(k, dtypes));
  src += "extern \"C\" void nuvec_fused_contiguous(const void* const* in, const unsigned char* once, void* const* "
         "out, int64_t begin, int64_t end) {\n";
  pointers(src);
  std::string run_pointers;
  for (size_t i : read) {
    const auto s = std::to_string(i);
    const auto t = storage_type(dtypes[i]);
    if (k.scalar_inputs[i]) {
      src += cat("  const ", t, " s", s, " = p", s, "[0];\n");
      continue;
    }
    src += cat("  alignas(64) ", t, " z", s, "[", block, "];\n  if (once[", s, "]) { for (int64_t l = 0; l < ", block,
               " && l < end - begin; ++l) z", s, "[l] = p", s, "[0]; }\n  const int64_t t", s, " = once[", s,
               "] ? 0 : 1;\n");
    run_pointers += cat("      const ", t, "* __restrict r", s, " = once[", s, "] ? z", s, " : p", s, " + i;\n");
  }
  auto element_read = [&k](size_t i) {
    return k.scalar_inputs[i] ? name_of('s', i) : cat("p", std::to_string(i), "[i * t", std::to_string(i), "]");
  };
  auto line_read = [&k](size_t i) { return k.scalar_inputs[i] ? name_of('s', i) : cat("r", std::to_string(i), "[l]"); };
  stream_code(line, line, "i");
  src += "  int64_t i = begin;\n  if (end - begin >= nv_stream_min) {\n";
  src += "    for (; i < end && ((uintptr_t)(o0 + i) & 63) != 0; ++i) {\n      " + call(element_read, 'o', "i") +
         "    }\n";
  src += "    if (" + line_starts + ") {\n" + buffers + "    for (; i + " + line + " <= end; i += " + line + ") {\n" +
         run_pointers + "      " + simd_loop + "      for (int64_t l = 0; l < " + line + "; ++l) {\n        " +
         call(line_read, 'w', "l") + "      }\n" + streams + "    }\n    nv_stream_fence();\n    }\n  }\n";
  src += "  while (i < end) {\n    const int64_t n = end - i < " + block + " ? end - i : " + block + ";\n" +
         run_pointers + "    " + simd_loop + "    for (int64_t l = 0; l < n; ++l) {\n      " +
         call(line_read, 'o', "i + l") + "    }\n    i += n;\n  }\n}\n";

  // Elements [begin, end) of a strided iteration space, a run of the inner axis at a time, in blocks: an input at
  // unit stride is read in place, one broadcast along the run (stride 0) is staged once per run, any other stride is
  // gathered into a staging block; the body then reads every input at unit stride and vectorizes as the flat loop
  // does, and large outputs are streamed a block at a time.
  const std::string tile_rows = std::to_string(strided_tile_rows);
  const std::string tile_cols = std::to_string(strided_tile_cols);
  auto run_read = [](size_t i) { return cat("r", std::to_string(i), "[l]"); };
  src += "extern \"C\" void nuvec_fused_strided(const void* const* in, void* const* out, const int64_t* shape, "
         "const int64_t* strides, int ndim, int64_t begin, int64_t end) {\n";
  pointers(src);
  for (size_t i : read) {
    src += cat("  alignas(64) ", storage_type(dtypes[i]), " b", std::to_string(i), "[", block, "];\n");
  }
  stream_code(block, block, "i");
  src += buffers;
  const std::string row_streams = streams;
  const std::string row_line_starts = line_starts;
  for (size_t i : read) {
    src += cat("  alignas(64) ", storage_type(dtypes[i]), " g", std::to_string(i), "[", tile_rows, " * ", tile_cols,
               "];\n");
  }
  std::string across = "false";
  for (size_t i : read) {
    const auto s = std::to_string(i);
    across += cat(" || nv_across(strides[", s, " * ndim + ndim - 1], strides[", s, " * ndim + ndim - 2])");
  }
  src += "  const bool tiles = ndim >= 2 && (" + across + ");\n";
  src += "  const bool stream = end - begin >= nv_stream_min;\n";
  src += "  const int64_t inner = ndim > 0 ? shape[ndim - 1] : 1;\n  int64_t index[64] = {0};\n";
  src += "  int64_t rest = begin / inner;\n  for (int d = ndim - 2; d >= 0; --d) { index[d] = rest % shape[d]; rest /= "
         "shape[d]; }\n";
  src += "  int64_t j = begin % inner;\n  for (int64_t i = begin; i < end;) {\n";
  src += "    const int64_t stop = end - i < inner - j ? j + (end - i) : inner;\n";
  for (size_t i : read) {
    const auto s = std::to_string(i);
    src += cat("    const ", storage_type(dtypes[i]), "* q", s, " = p", s, ";\n");
    src += cat("    for (int d = 0; d + 1 < ndim; ++d) q", s, " += index[d] * strides[", s, " * ndim + d];\n");
    src += cat("    const int64_t t", s, " = ndim > 0 ? strides[", s, " * ndim + ndim - 1] : 0;\n");
    src += cat("    if (t", s, " == 0) { for (int64_t l = 0; l < inner && l < ", block, "; ++l) b", s, "[l] = q", s,
               "[0]; }\n");
  }
  // Tiles of rows where an input is read across its lines: each input line then serves a tile's rows at once,
  // where a row at a time fetched every line again (a transposed input read 16x its bytes).
  stream_code(block, tile_cols, "at");
  src += cat("    if (tiles && j == 0 && end - i >= ", tile_rows, " * inner && index[ndim - 2] + ", tile_rows,
             " <= shape[ndim - 2]) {\n");
  for (size_t i : read) {
    const auto s = std::to_string(i);
    src += cat("      const int64_t u", s, " = strides[", s, " * ndim + ndim - 2];\n");
    src += cat("      if (t", s, " == 0) { for (int64_t a = 0; a < ", tile_rows, "; ++a) for (int64_t l = 0; l < ",
               tile_cols, "; ++l) g", s, "[a * ", tile_cols, " + l] = q", s, "[a * u", s, "]; }\n");
  }
  src += cat("      for (int64_t j0 = 0; j0 < inner; j0 += ", tile_cols, ") {\n        const int64_t n = inner - j0 < ",
             tile_cols, " ? inner - j0 : ", tile_cols, ";\n");
  for (size_t i : read) {
    const auto s = std::to_string(i);
    const auto read_at = cat("g", s, "[a * ", tile_cols, " + l] = q", s, "[a * u", s, " + (j0 + l) * t", s, "]");
    src += cat("        if (t", s, " != 0 && t", s, " != 1) {\n          if (nv_across(t", s, ", u", s,
               ")) { for (int64_t l = 0; l < n; ++l) for (int64_t a = 0; a < ", tile_rows, "; ++a) ", read_at,
               "; }\n          else { for (int64_t a = 0; a < ", tile_rows, "; ++a) for (int64_t l = 0; l < n; ++l) ",
               read_at, "; }\n        }\n");
  }
  src += cat("        for (int64_t a = 0; a < ", tile_rows, "; ++a) {\n");
  for (size_t i : read) {
    const auto s = std::to_string(i);
    src += cat("          const ", storage_type(dtypes[i]), "* __restrict r", s, " = t", s, " == 1 ? q", s, " + a * u",
               s, " + j0 : g", s, " + a * ", tile_cols, ";\n");
  }
  src += "          const int64_t at = i + a * inner + j0;\n";
  src += cat("          if (stream && n == ", tile_cols, " && ", line_starts, ") {\n            ", simd_loop,
             "            for (int64_t l = 0; l < ", tile_cols, "; ++l) {\n              ", call(run_read, 'w', "l"),
             "            }\n", streams, "          } else {\n            ", simd_loop,
             "            for (int64_t l = 0; l < n; ++l) {\n              ", call(run_read, 'o', "at + l"),
             "            }\n          }\n        }\n      }\n");
  src += cat("      i += ", tile_rows, " * inner;\n      for (int k = 0; k < ", tile_rows,
             "; ++k) { for (int d = ndim - 2; d >= 0; --d) { if (++index[d] < shape[d]) break; index[d] = 0; } }\n",
             "      continue;\n    }\n");
  src += "    while (j < stop) {\n";
  src += cat("      const int64_t n = stop - j < ", block, " - i % ", block, " ? stop - j : ", block, " - i % ", block,
             ";\n");
  for (size_t i : read) {
    const auto s = std::to_string(i);
    src += cat("      if (t", s, " != 0 && t", s, " != 1) { for (int64_t l = 0; l < n; ++l) b", s, "[l] = q", s,
               "[(j + l) * t", s, "]; }\n");
    src += cat("      const ", storage_type(dtypes[i]), "* __restrict r", s, " = t", s, " == 1 ? q", s, " + j : b", s,
               ";\n");
  }
  src += "      if (stream && n == " + block + " && " + row_line_starts + ") {\n        " + simd_loop +
         "        for (int64_t l = 0; l < " + block + "; ++l) {\n          " + call(run_read, 'w', "l") +
         "        }\n" + row_streams + "      } else {\n        " + simd_loop +
         "        for (int64_t l = 0; l < n; ++l) {\n          " + call(run_read, 'o', "i + l") +
         "        }\n      }\n";
  src += "      j += n;\n      i += n;\n    }\n    j = 0;\n";
  src += "    for (int d = ndim - 2; d >= 0; --d) { if (++index[d] < shape[d]) break; index[d] = 0; }\n";
  src += "  }\n  if (stream) nv_stream_fence();\n}\n";
  return src;
}

}  // namespace nuvec::detail
