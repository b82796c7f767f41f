// Products of a few rows of x with a microscaled weight w (N, K), the decode shape. Each task takes a range of w's
// rows; a block of codes is decoded in registers (FP4 codes by a lane permutation of their 16 values, FP8 codes by
// moving their exponent and mantissa bits into a float's, subnormal values made exactly, so no float subnormal
// appears and flush-to-zero modes cannot change a value), multiplied by its group's scale and into every row of x
// at once. The weight is read once and its float32 form
// never written out, where decoded_gemm (for many rows) decodes tiles to memory for the sgemm.

#include "nuvec/cpu/microscaled.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/quantized.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu::quant {

namespace {

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using DB = hn::Rebind<uint8_t, DF>;
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;

constexpr int64_t grain_bytes = int64_t{1} << 15;  // weight bytes per task before splitting pays

/// E8M0 scales: 2^(code - 127); 255 is infinity.
const std::array<float, 256>& e8m0_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int code = 0; code < 256; ++code) {
      t[code] = code == 255 ? std::numeric_limits<float>::infinity() : std::ldexp(1.F, code - 127);
    }
    return t;
  }();
  return table;
}

/// E2M1 codes (bit 3 the sign) as floats. With 16 lanes or more, one lane permutation of the 16 values; with fewer
/// (a build for an older CPU), exponent e and mantissa m give 2^(e - 1) (1 + m / 2), or m / 2 when e is 0.
VF decode_fp4(VU code) {
  const DF df;
  const DU du;
  if constexpr (hn::MaxLanes(DF()) >= fp4_values.size()) {
    alignas(64) static const std::array<float, hn::MaxLanes(DF())> table = [] {
      std::array<float, hn::MaxLanes(DF())> t{};
      std::copy(fp4_values.begin(), fp4_values.end(), t.begin());
      return t;
    }();
    return hn::TableLookupLanes(hn::Load(df, table.data()), hn::IndicesFromVec(df, hn::BitCast(DI(), code)));
  } else {
    const VU magnitude = hn::And(code, hn::Set(du, 7));
    const VU e = hn::ShiftRight<1>(magnitude);
    const VU m = hn::And(magnitude, hn::Set(du, 1));
    const VU normal = hn::Or(hn::ShiftLeft<23>(hn::Add(e, hn::Set(du, 126))), hn::ShiftLeft<22>(m));
    const VU half = hn::IfThenElseZero(hn::Ne(m, hn::Zero(du)), hn::Set(du, 0x3F000000U));  // 0.5
    const VU bits = hn::IfThenElse(hn::Eq(e, hn::Zero(du)), half, normal);
    return hn::BitCast(df, hn::Or(bits, hn::ShiftLeft<28>(hn::And(code, hn::Set(du, 8)))));
  }
}

/// E4M3 codes (bit 7 the sign) as floats: 2^(e - 7) (1 + m / 8), m 2^-9 when e is 0, NaN for the all-ones code.
VF decode_fp8(VU code) {
  const DF df;
  const DU du;
  const DI di;
  const VU magnitude = hn::And(code, hn::Set(du, 0x7F));
  const VU e = hn::ShiftRight<3>(magnitude);
  const VU m = hn::And(magnitude, hn::Set(du, 7));
  const VU normal = hn::Or(hn::ShiftLeft<23>(hn::Add(e, hn::Set(du, 120))), hn::ShiftLeft<20>(m));
  const VF subnormal = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, m)), hn::Set(df, 1.F / 512.F));
  VF v = hn::IfThenElse(hn::RebindMask(df, hn::Eq(e, hn::Zero(du))), subnormal, hn::BitCast(df, normal));
  v = hn::IfThenElse(hn::RebindMask(df, hn::Eq(magnitude, hn::Set(du, 0x7F))),
                     hn::Set(df, std::numeric_limits<float>::quiet_NaN()), v);
  return hn::Or(v, hn::BitCast(df, hn::ShiftLeft<24>(hn::And(code, hn::Set(du, 0x80)))));
}

/// What a product's inner loop needs of w, decoded once per call.
struct Operand {
  const ScaledMatrix& m;
  int group_size;
  bool fp8;
  int64_t row_bytes;
  int64_t groups;
  const std::array<float, 256>& scale_table;
};

/// x's rows in the order an fp4 block decodes in: each block of 2N values (N lanes) as its N even-indexed values,
/// then its N odd ones (a byte holds value 2j in its low nibble, 2j + 1 in its high one). Values past the last whole
/// block stay in place. An fp8 weight decodes in x's own order.
std::vector<float> block_order(const float* x, int64_t rows, int64_t k, bool fp8) {
  std::vector<float> out(x, x + rows * k);
  if (fp8) {
    return out;
  }
  const auto lanes = static_cast<int64_t>(hn::Lanes(DF()));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b + 2 * lanes <= k; b += 2 * lanes) {
      for (int64_t i = 0; i < lanes; ++i) {
        out[r * k + b + i] = x[r * k + b + 2 * i];
        out[r * k + b + lanes + i] = x[r * k + b + 2 * i + 1];
      }
    }
  }
  return out;
}

/// out[r * n + c] for R rows of x (block_order, k apart) and the rows c0..c1 of w.
/// out[r * n + c] for R rows of x (block_order, k apart) and the rows c0..c1 of w. A block of codes within one group
/// takes its scale whole (OneGroup); a block over several (nvfp4's 16 values in 16 lanes) takes each lane's from
/// its group. Each row of x sums into two accumulators, so that two chains of FMAs run at once.
template <int R, bool Fp8, bool OneGroup>
void rows_product(const Operand& w, const float* x, int64_t k, int64_t n, int64_t c0, int64_t c1, float* out) {
  const DF df;
  const DU du;
  const DI di;
  const DB db;
  const auto lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t step = 2 * lanes;  // values a pass takes: two vectors of them
  const int64_t whole = k - k % step;
  const int gs = w.group_size;
  const int64_t passes_per_group = OneGroup ? gs / step : 1;
  const int64_t groups_per_pass = OneGroup ? 0 : step / gs;
  std::vector<int32_t> offsets(static_cast<size_t>(lanes));
  for (int64_t j = 0; j < lanes; ++j) {
    offsets[j] = static_cast<int32_t>((Fp8 ? j : 2 * j) / gs);  // the group of lane j, after the pass's first
  }
  const auto lane_group = hn::LoadU(di, offsets.data());
  std::vector<float> scales(static_cast<size_t>(w.groups));
  // Looked up before the loops: a call among them made GCC keep the vector sums on the stack.
  const std::array<float, 256>& fp8 = fp8_table();
  for (int64_t c = c0; c < c1; ++c) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(w.m.w) + c * w.row_bytes;
    const uint8_t* codes = w.m.scales + c * w.groups;
    for (int64_t g = 0; g < w.groups; ++g) {
      scales[g] = w.scale_table[codes[g]] * w.m.unit;
    }
    VF first[R];
    VF second[R];
    for (int r = 0; r < R; ++r) {
      first[r] = hn::Zero(df);
      second[r] = hn::Zero(df);
    }
    int64_t group = 0;  // i / gs, counted rather than divided
    int64_t pass_in_group = 0;
    for (int64_t i = 0; i < whole; i += step) {
      VF scale;
      VF scale_b;  // fp8's second vector lies `lanes` values further
      if constexpr (OneGroup) {
        scale = hn::Set(df, scales[group]);
        scale_b = scale;
        if (++pass_in_group == passes_per_group) {
          pass_in_group = 0;
          ++group;
        }
      } else if (gs == lanes) {  // two groups a pass: fp4's lower and upper lanes, or fp8's two vectors
        if constexpr (Fp8) {
          scale = hn::Set(df, scales[group]);
          scale_b = hn::Set(df, scales[group + 1]);
        } else {
          scale = hn::ConcatUpperLower(df, hn::Set(df, scales[group + 1]), hn::Set(df, scales[group]));
          scale_b = scale;
        }
        group += 2;
      } else {
        scale = hn::GatherIndex(df, scales.data() + group, lane_group);
        scale_b = Fp8 ? hn::GatherIndex(df, scales.data() + group + lanes / gs, lane_group) : scale;
        group += groups_per_pass;
      }
      VF a;
      VF b;
      if constexpr (Fp8) {  // values i.. and i + lanes.., in x's order
        a = hn::Mul(decode_fp8(hn::PromoteTo(du, hn::LoadU(db, bytes + i))), scale);
        b = hn::Mul(decode_fp8(hn::PromoteTo(du, hn::LoadU(db, bytes + i + lanes))), scale_b);
      } else {  // the even and the odd values of i..i + 2 lanes (block_order)
        const VU packed = hn::PromoteTo(du, hn::LoadU(db, bytes + i / 2));
        a = hn::Mul(decode_fp4(hn::And(packed, hn::Set(du, 0xF))), scale);
        b = hn::Mul(decode_fp4(hn::ShiftRight<4>(packed)), scale);
      }
      for (int r = 0; r < R; ++r) {
        first[r] = hn::MulAdd(a, hn::LoadU(df, x + r * k + i), first[r]);
        second[r] = hn::MulAdd(b, hn::LoadU(df, x + r * k + i + lanes), second[r]);
      }
    }
    std::array<float, R> tail{};
    for (int64_t i = whole; i < k; ++i) {
      const uint8_t code = Fp8 ? bytes[i] : static_cast<uint8_t>((bytes[i / 2] >> (4 * (i % 2))) & 0xF);
      const float value = (Fp8 ? fp8[code] : fp4_values[code]) * scales[i / gs];
      for (int r = 0; r < R; ++r) {
        tail[r] += value * x[r * k + i];
      }
    }
    for (int r = 0; r < R; ++r) {
      out[r * n + c] = hn::GetLane(hn::SumOfLanes(df, hn::Add(first[r], second[r]))) + tail[r];
    }
  }
}

template <int R>
void split_rows(const Operand& w, const float* x, int64_t k, int64_t n, float* out) {
  const auto step = static_cast<int>(2 * hn::Lanes(DF()));
  parallel_for(static_cast<size_t>(n), static_cast<size_t>(grain_bytes / w.row_bytes + 1), [&](size_t c0, size_t c1) {
    const auto first = static_cast<int64_t>(c0);
    const auto last = static_cast<int64_t>(c1);
    if (w.fp8) {
      return w.group_size % step == 0 ? rows_product<R, true, true>(w, x, k, n, first, last, out)
                                      : rows_product<R, true, false>(w, x, k, n, first, last, out);
    }
    return w.group_size % step == 0 ? rows_product<R, false, true>(w, x, k, n, first, last, out)
                                    : rows_product<R, false, false>(w, x, k, n, first, last, out);
  });
}

}  // namespace

void scaled_gemv(const float* x, int64_t rows, int64_t k, const ScaledMatrix& m, float* out) {
  const MicroscaledLayout layout = microscaled_layout(m.mode);
  const bool fp8 = layout.bits == 8;
  const Operand w{m,          layout.group_size,
                  fp8,        k * layout.bits / 8,
                  k / layout.group_size, m.mode == QuantizationMode::nvfp4 ? fp8_table() : e8m0_table()};
  const std::vector<float> xs = block_order(x, rows, k, fp8);
  const int64_t n = m.rows;
  switch (rows) {
    case 1: return split_rows<1>(w, xs.data(), k, n, out);
    case 2: return split_rows<2>(w, xs.data(), k, n, out);
    case 3: return split_rows<3>(w, xs.data(), k, n, out);
    case 4: return split_rows<4>(w, xs.data(), k, n, out);
    case 5: return split_rows<5>(w, xs.data(), k, n, out);
    case 6: return split_rows<6>(w, xs.data(), k, n, out);
    case 7: return split_rows<7>(w, xs.data(), k, n, out);
    case 8: return split_rows<8>(w, xs.data(), k, n, out);
    default: throw_internal("scaled_gemv takes 1 to gemv_rows rows of x");
  }
}

}  // namespace nuvec::cpu::quant
