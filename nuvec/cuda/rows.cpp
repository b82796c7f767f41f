#include "nuvec/cuda/rows.h"

#include <limits>
#include <type_traits>
#include <vector>

#include "nuvec/core/compile/expressions.h"
#include "nuvec/core/dispatch.h"
#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/elementwise.h"
#include "nuvec/cuda/kernel_sources.h"

namespace nuvec::cuda {

namespace {

using detail::compute_type;
using detail::storage_type;

/// The prelude, in_t (stored `in`) and nv_value (an element as its compute type).
std::string input_lines(Dtype in) {
  return "#include \"nuvec/cuda/prelude.cuh\"\ntypedef " + storage_type(in) + " in_t;\ninline " + compute_type(in) +
         " nv_value(in_t x) { return " + detail::load(in, "x") + "; }\n";
}

/// `value` as a stored element of `d`, converted explicitly (integer accumulators are wider or unsigned).
std::string stored(Dtype d, const std::string& value) {
  if (d == float16 || d == bfloat16) {
    return detail::store(d, value);
  }
  std::string cast = "(";  // appended, not "(" + ...: GCC 12 warns (-Wrestrict) on the latter
  cast += storage_type(d);
  return cast + ")(" + value + ")";
}

/// The floating row kernels' lines: input_lines, acc_t (the compute type) and nv_store.
std::string floating_lines(Dtype d) {
  return input_lines(d) + "typedef " + compute_type(d) + " acc_t;\ninline in_t nv_store(acc_t a) { return " +
         stored(d, "a") + "; }\n";
}

int op_code(ReduceType op) {
  switch (op) {
    case ReduceType::sum:
      return 0;
    case ReduceType::prod:
      return 1;
    case ReduceType::max:
      return 2;
    case ReduceType::min:
      return 3;
    case ReduceType::all:
      return 4;
    case ReduceType::any:
      return 5;
  }
  return 0;
}

/// The fold's starting value in `acc`: the op's identity (max of nothing is the lowest value, min's the highest).
std::string identity(ReduceType op, Dtype acc) {
  switch (op) {
    case ReduceType::sum:
      return "(acc_t)0";
    case ReduceType::prod:
      return "(acc_t)1";
    case ReduceType::all:
      return "true";
    case ReduceType::any:
      return "false";
    case ReduceType::max:
    case ReduceType::min:
      break;
  }
  const bool max = op == ReduceType::max;
  return dispatch(acc, [&]<class T>(type_tag<T>) -> std::string {
    if constexpr (std::is_same_v<T, bool>) {
      return max ? "false" : "true";
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      // lowest + 1, then - 1: no literal spells int64's lowest value.
      return max ? "(acc_t)(" + std::to_string(static_cast<long long>(std::numeric_limits<T>::lowest()) + 1) + "LL - 1)"
                 : "(acc_t)" + std::to_string(static_cast<long long>(std::numeric_limits<T>::max())) + "LL";
    } else if constexpr (std::is_integral_v<T>) {
      return max ? "(acc_t)0"
                 : "(acc_t)" + std::to_string(static_cast<unsigned long long>(std::numeric_limits<T>::max())) + "ULL";
    } else {
      return max ? "-(acc_t)__builtin_inf()" : "(acc_t)__builtin_inf()";
    }
  });
}

/// The dtype elements of `d` are computed in: float32 for the half floats.
Dtype compute_dtype(Dtype d) { return d == float16 || d == bfloat16 ? float32 : d; }

/// MLX's output of sum and prod (nuvec/core/ops/reduce.cpp): small integers widen to 32 bits.
Dtype sum_dtype(Dtype d) {
  if (d == bool_ || d == int8 || d == int16 || d == int32) {
    return int32;
  }
  if (d == uint8 || d == uint16 || d == uint32) {
    return uint32;
  }
  return d;
}

Dtype unsigned_of(Dtype d) { return d == int32 ? uint32 : d == int64 ? uint64 : d; }

}  // namespace

std::optional<Dtype> reduce_accumulator(ReduceType op, Dtype in, Dtype out) {
  if (in == complex64 || out == complex64) {
    return std::nullopt;
  }
  const bool integral = in == bool_ || is_integer(in);
  switch (op) {
    case ReduceType::sum:
    case ReduceType::prod:
      if (out == sum_dtype(in)) {
        return integral ? unsigned_of(out) : compute_dtype(in);
      }
      if (out == float32 && in != float64) {  // mean's sums
        return integral ? float64 : float32;
      }
      return std::nullopt;
    case ReduceType::max:
    case ReduceType::min:
      return out == in ? std::optional<Dtype>(compute_dtype(in)) : std::nullopt;
    case ReduceType::all:
    case ReduceType::any:
      return out == bool_ ? std::optional<Dtype>(bool_) : std::nullopt;
  }
  return std::nullopt;
}

std::string reduce_source(ReduceType op, Dtype in, Dtype acc, Dtype out) {
  return input_lines(in) + "typedef " + compute_type(acc) + " acc_t;\ntypedef " + storage_type(out) +
         " out_t;\n#define NV_OP " + std::to_string(op_code(op)) + "\ninline out_t nv_out(acc_t a) { return " +
         stored(out, "a") + "; }\ninline acc_t nv_identity() { return " + identity(op, acc) + "; }\n" +
         std::string(kernel_source("reduce.cu"));
}

std::string arg_reduce_source(ArgReduceType op, Dtype in) {
  return input_lines(in) + "typedef " + compute_type(in) + " val_t;\n#define NV_MAX " +
         (op == ArgReduceType::argmax ? "1" : "0") + "\n" + std::string(kernel_source("arg_reduce.cu"));
}

std::string softmax_source(Dtype d) { return floating_lines(d) + std::string(kernel_source("softmax.cu")); }
std::string norm_source(Dtype d) { return floating_lines(d) + std::string(kernel_source("norm.cu")); }
std::string rope_source(Dtype d) { return floating_lines(d) + std::string(kernel_source("rope.cu")); }

std::string arange_source(Dtype d) {
  std::string from_double = "return " + stored(d, "x") + ";";
  if (d == bfloat16) {
    // Rounded once, as the CPU's conversion from double: to float rounding to odd (toward zero, then the last bit
    // set when inexact), which keeps the rounding to bfloat16 correct.
    from_double =
        "float f = __double2float_rz(x);\n  if ((double)f != x && f == f) f = __uint_as_float(__float_as_uint(f) | 1u);"
        "\n  return nv::bfloat16_bits(f);";
  }
  return "#include \"nuvec/cuda/prelude.cuh\"\ntypedef " + storage_type(d) +
         " out_t;\ninline out_t nv_from_double(double x) {\n  " + from_double + "\n}\n" +
         std::string(kernel_source("arange.cu"));
}

bool is_dense(const array& a) { return a.flags().row_contiguous && a.data_size() == a.size(); }

std::optional<array> dense_copy(const array& a, const Stream& s) {
  if (a.dtype() == complex64) {
    return std::nullopt;
  }
  array copied = gpu_array(a.shape(), a.dtype(), s);
  std::vector<array> inputs{a};
  std::vector<array> outputs{copied};
  if (!can_run_elementwise(single_step(AsType{a.dtype()}, inputs, a.dtype()), inputs, outputs)) {
    return std::nullopt;
  }
  copy(a, copied, s);
  return copied;
}

const array* dense_rows(const array& a, std::optional<array>& copy, const Stream& s) {
  if (is_dense(a)) {
    return &a;
  }
  copy = dense_copy(a, s);
  return copy ? &*copy : nullptr;
}

}  // namespace nuvec::cuda
