// The parameter rule of every primitive. `fields(ar, p)` hands each parameter to the archive `ar`, which writes it
// (Save), reads it back into p (Load) or collects it for an ExportCallback (Collect); primitives hold no parameter
// that is not listed here.

#include "nuvec/core/export/primitive_io.h"

#include <array>
#include <string>
#include <utility>

#include "nuvec/core/error.h"

namespace nuvec::detail {

namespace {

/// How many values each parameter enum has (its last enumerator + 1): the reader refuses the others.
template <class E>
constexpr int enum_count = 0;
template <>
constexpr int enum_count<ReduceType> = static_cast<int>(ReduceType::any) + 1;
template <>
constexpr int enum_count<ArgReduceType> = static_cast<int>(ArgReduceType::argmin) + 1;
template <>
constexpr int enum_count<ScanType> = static_cast<int>(ScanType::logaddexp) + 1;
template <>
constexpr int enum_count<ScatterType> = static_cast<int>(ScatterType::min) + 1;
template <>
constexpr int enum_count<AttentionMask> = static_cast<int>(AttentionMask::additive) + 1;
template <>
constexpr int enum_count<QuantizationMode> = static_cast<int>(QuantizationMode::nvfp4) + 1;

struct Save {
  ByteWriter& out;
  template <class... T>
  void operator()(const T&... values) {
    (out.put(values), ...);
  }
};

struct Load {
  ByteReader& in;
  template <class... T>
  void operator()(T&... values) {
    (get(values), ...);
  }

 private:
  void get(bool& v) { v = in.get_bool(); }
  void get(Dtype& v) { v = in.get_dtype(); }
  void get(Shape& v) { v = in.get_list<int32_t>(); }
  void get(Strides& v) { v = in.get_list<int64_t>(); }
  template <class T>
  requires std::is_arithmetic_v<T>
  void get(T& v) { v = in.get<T>(); }
  template <class E>
  requires std::is_enum_v<E>
  void get(E& v) {
    static_assert(enum_count<E> > 0, "a parameter enum needs its enum_count");
    v = in.get_enum<E>(enum_count<E>);
  }
};

/// Each parameter as the StateT alternative of its type; a parameter type without one fails to compile here.
struct Collect {
  std::vector<StateT>& out;
  template <class... T>
  void operator()(const T&... values) {
    (add(values), ...);
  }

 private:
  void add(bool v) { out.emplace_back(v); }
  void add(int v) { out.emplace_back(v); }
  void add(size_t v) { out.emplace_back(v); }
  void add(float v) { out.emplace_back(v); }
  void add(double v) { out.emplace_back(v); }
  void add(Dtype v) { out.emplace_back(v); }
  void add(const Strides& v) { out.emplace_back(v); }
  /// Shape and std::vector<int> are one type, listed twice in StateT: every integer list (shapes and axes) takes
  /// the Shape alternative.
  void add(const Shape& v) { out.emplace_back(std::in_place_index<6>, v); }
  /// An enum as its enumerator's value, as MLX reports its primitives' enums (nuvec's own enumerator order).
  template <class E>
  requires std::is_enum_v<E>
  void add(E v) { out.emplace_back(static_cast<int>(v)); }
};
static_assert(std::is_same_v<std::variant_alternative_t<6, StateT>, Shape>);

// ---- element-wise and creation
template <class Ar, class P>
requires UnaryPrimitive<P> || BinaryPrimitive<P>
void fields(Ar&, P&) {}
template <class Ar>
void fields(Ar& ar, Equal& p) {
  ar(p.equal_nan);
}
template <class Ar>
void fields(Ar&, Select&) {}
template <class Ar>
void fields(Ar& ar, AsType& p) {
  ar(p.dtype);
}
template <class Ar>
void fields(Ar& ar, Arange& p) {
  ar(p.start, p.stop, p.step, p.length, p.dtype);
}
template <class Ar>
void fields(Ar& ar, RandomBits& p) {
  ar(p.shape, p.width);
}

// ---- views
template <class Ar>
void fields(Ar& ar, Broadcast& p) {
  ar(p.shape);
}
template <class Ar>
void fields(Ar& ar, Reshape& p) {
  ar(p.shape);
}
template <class Ar>
void fields(Ar& ar, Transpose& p) {
  ar(p.axes);
}
template <class Ar>
void fields(Ar& ar, Slice& p) {
  ar(p.start, p.strides, p.shape);
}
template <class Ar>
void fields(Ar& ar, AsStrided& p) {
  ar(p.shape, p.strides, p.offset);
}
template <class Ar>
void fields(Ar& ar, Diagonal& p) {
  ar(p.offset, p.axis1, p.axis2);
}
template <class Ar>
void fields(Ar& ar, View& p) {
  ar(p.dtype);
}
template <class Ar>
void fields(Ar&, StopGradient&) {}
template <class Ar>
void fields(Ar&, Depends&) {}
/// The exporter writes a custom function as the Depends it is in a forward pass (flatten.h): its rules are C++
/// callbacks that no file can hold.
template <class Ar>
void fields(Ar&, Custom&) {
  throw_internal("[export_function] a Custom node reached serialization; the exporter flattens them first.");
}

// ---- layout, reductions, sorting and scans
template <class Ar>
void fields(Ar& ar, Copy& p) {
  ar(p.share_contiguous, p.allow_col_major);
}
template <class Ar>
void fields(Ar& ar, Concatenate& p) {
  ar(p.axis);
}
template <class Ar>
void fields(Ar& ar, Pad& p) {
  ar(p.axes, p.low, p.high);
}
template <class Ar>
void fields(Ar& ar, Reduce& p) {
  ar(p.type, p.axes, p.dtype);
}
template <class Ar>
void fields(Ar& ar, ArgReduce& p) {
  ar(p.type, p.axis);
}
template <class Ar>
void fields(Ar& ar, Softmax& p) {
  ar(p.precise);
}
template <class Ar>
void fields(Ar&, LogSumExp&) {}
template <class Ar>
void fields(Ar& ar, Sort& p) {
  ar(p.axis);
}
template <class Ar>
void fields(Ar& ar, ArgSort& p) {
  ar(p.axis);
}
template <class Ar>
void fields(Ar& ar, Partition& p) {
  ar(p.kth, p.axis);
}
template <class Ar>
void fields(Ar& ar, ArgPartition& p) {
  ar(p.kth, p.axis);
}
template <class Ar>
void fields(Ar& ar, SearchSorted& p) {
  ar(p.right);
}
template <class Ar>
void fields(Ar& ar, Scan& p) {
  ar(p.type, p.axis, p.reverse, p.inclusive);
}

// ---- products, quantization, fft, convolution
template <class Ar>
void fields(Ar&, Matmul&) {}
template <class Ar>
void fields(Ar& ar, AddMM& p) {
  ar(p.alpha, p.beta);
}
template <class Ar>
void fields(Ar& ar, Quantize& p) {
  ar(p.group_size, p.bits, p.mode);
}
template <class Ar>
void fields(Ar& ar, Dequantize& p) {
  ar(p.group_size, p.bits, p.mode, p.dtype);
}
template <class Ar>
void fields(Ar& ar, QuantizedMatmul& p) {
  ar(p.group_size, p.bits, p.transpose, p.mode);
}
template <class Ar>
void fields(Ar& ar, GatherQMM& p) {
  ar(p.group_size, p.bits, p.transpose, p.sorted, p.mode);
}
template <class Ar>
void fields(Ar& ar, Fp8Cast& p) {
  ar(p.encode, p.dtype);
}
template <class Ar>
void fields(Ar& ar, FFT& p) {
  ar(p.axes, p.inverse, p.real, p.real_length);
}
template <class Ar>
void fields(Ar& ar, Convolution& p) {
  ar(p.stride, p.padding_lo, p.padding_hi, p.kernel_dilation, p.input_dilation, p.groups, p.flip);
}

// ---- fast
template <class Ar>
void fields(Ar& ar, RMSNorm& p) {
  ar(p.eps, p.has_weight);
}
template <class Ar>
void fields(Ar& ar, LayerNorm& p) {
  ar(p.eps, p.has_weight, p.has_bias);
}
template <class Ar>
void fields(Ar& ar, RoPE& p) {
  ar(p.dims, p.traditional, p.base, p.scale, p.has_freqs);
}
template <class Ar>
void fields(Ar& ar, ScaledDotProductAttention& p) {
  ar(p.scale, p.causal, p.mask, p.has_sinks);
}
template <class Ar>
void fields(Ar& ar, RMSNormVJP& p) {
  ar(p.eps, p.has_weight);
}
template <class Ar>
void fields(Ar& ar, LayerNormVJP& p) {
  ar(p.eps, p.has_weight, p.has_bias);
}
template <class Ar>
void fields(Ar& ar, ScaledDotProductAttentionVJP& p) {
  ar(p.scale, p.causal, p.mask, p.has_sinks);
}

// ---- indexing
template <class Ar>
void fields(Ar& ar, Gather& p) {
  ar(p.axes, p.slice_sizes);
}
template <class Ar>
void fields(Ar& ar, GatherAxis& p) {
  ar(p.axis);
}
template <class Ar>
void fields(Ar& ar, Scatter& p) {
  ar(p.type, p.axes);
}
template <class Ar>
void fields(Ar& ar, ScatterAxis& p) {
  ar(p.type, p.axis);
}
template <class Ar>
void fields(Ar&, MaskedScatter&) {}
template <class Ar>
void fields(Ar& ar, SliceUpdate& p) {
  ar(p.start, p.strides, p.type);
}
template <class Ar>
void fields(Ar& ar, DynamicSlice& p) {
  ar(p.axes, p.slice_size);
}
template <class Ar>
void fields(Ar& ar, DynamicSliceUpdate& p) {
  ar(p.axes);
}

// ---- linear algebra
template <class Ar>
void fields(Ar&, QRF&) {}
template <class Ar>
void fields(Ar& ar, SVD& p) {
  ar(p.compute_uv);
}
template <class Ar>
void fields(Ar& ar, Inverse& p) {
  ar(p.triangular, p.upper);
}
template <class Ar>
void fields(Ar& ar, Cholesky& p) {
  ar(p.upper);
}
template <class Ar>
void fields(Ar&, LUF&) {}
template <class Ar>
void fields(Ar& ar, Solve& p) {
  ar(p.triangular, p.upper);
}
template <class Ar>
void fields(Ar& ar, Eig& p) {
  ar(p.compute_vectors);
}
template <class Ar>
void fields(Ar& ar, Eigh& p) {
  ar(p.upper, p.compute_vectors);
}

// ---- masked, gathered and segmented products, Hadamard
template <class Ar>
void fields(Ar& ar, BlockMaskedMM& p) {
  ar(p.block_size);
}
template <class Ar>
void fields(Ar& ar, GatherMM& p) {
  ar(p.sorted);
}
template <class Ar>
void fields(Ar&, SegmentedMM&) {}
template <class Ar>
void fields(Ar& ar, Hadamard& p) {
  ar(p.scale);
}

// ---- distributed and compile
template <class Ar>
void fields(Ar&, Collective&) {
  throw_invalid(
      "[export_function] Collective cannot be exported: it exchanges messages through this process's communicator "
      "(nuvec::distributed), which a file cannot carry.");
}
/// The exporter inlines a compiled chain's tape (flatten.h), as MLX exports compiled functions.
template <class Ar>
void fields(Ar&, Compiled&) {
  throw_internal("[export_function] a Compiled node reached serialization; the exporter flattens them first.");
}

/// A primitive of alternative P with its parameters still to be read (a Dtype has no default value).
template <class P>
P blank() {
  if constexpr (std::is_default_constructible_v<P>) {
    return P{};
  } else if constexpr (std::is_same_v<P, Arange>) {
    return Arange{0.0, 0.0, 0.0, 0, bool_};
  } else if constexpr (std::is_same_v<P, Reduce>) {
    return Reduce{ReduceType::sum, {}, bool_};
  } else if constexpr (std::is_same_v<P, Dequantize>) {
    return Dequantize{0, 0, QuantizationMode::affine, bool_};
  } else if constexpr (std::is_same_v<P, Fp8Cast>) {
    return Fp8Cast{false, bool_};
  } else {
    return P{bool_};  // AsType, View
  }
}

constexpr size_t num_primitives = std::variant_size_v<Primitive::Variant>;

template <size_t... I>
constexpr std::array<std::string_view, num_primitives> names_of(std::index_sequence<I...>) {
  return {std::variant_alternative_t<I, Primitive::Variant>::name...};
}
constexpr auto primitive_names = names_of(std::make_index_sequence<num_primitives>{});

template <size_t... I>
Primitive blank_at(size_t index, std::index_sequence<I...>) {
  using Maker = Primitive (*)();
  static constexpr std::array<Maker, num_primitives> makers{
      +[]() -> Primitive { return blank<std::variant_alternative_t<I, Primitive::Variant>>(); }...};
  return makers[index]();
}

}  // namespace

void write_primitive(ByteWriter& out, const Primitive& p) {
  Primitive copy = p;
  Save save{out};
  std::visit(
      [&](auto& prim) {
        out.put(prim.name);
        fields(save, prim);
      },
      copy);
}

std::vector<StateT> primitive_state(const Primitive& p) {
  Primitive copy = p;
  std::vector<StateT> state;
  Collect collect{state};
  std::visit([&](auto& prim) { fields(collect, prim); }, copy);
  return state;
}

std::string_view primitive_name(const Primitive& p) {
  return std::visit([](const auto& prim) { return std::string_view(prim.name); }, p);
}

Primitive read_primitive(ByteReader& in) {
  const std::string name = in.get_string();
  for (size_t i = 0; i < num_primitives; ++i) {
    if (primitive_names[i] == name) {
      Primitive p = blank_at(i, std::make_index_sequence<num_primitives>{});
      Load load{in};
      try {
        std::visit([&](auto& prim) { fields(load, prim); }, p);
      } catch (const error& e) {
        if (e.kind() == ErrorKind::io) {
          throw;
        }
        // A primitive no exporter writes (a collective): the file was not written by export_function.
        ByteReader::corrupt(e.what());
      }
      return p;
    }
  }
  ByteReader::corrupt(std::string("an unknown primitive \"").append(name).append("\""));
}

}  // namespace nuvec::detail
