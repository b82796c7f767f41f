#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "nuvec/nuvec.h"
#include "tests/io/io_test_util.h"
#include "tests/support/reference.h"

namespace nuvec::test {
namespace {

using io::GGMLType;

// A GGUF string: u64 length then the bytes.
void put_string(std::vector<unsigned char>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

std::vector<unsigned char> half_bytes(float v) {
  float16_t h(v);
  return {static_cast<unsigned char>(h.bits & 0xFF), static_cast<unsigned char>(h.bits >> 8)};
}

array u8(const std::vector<unsigned char>& bytes) {
  return array(bytes.begin(), {static_cast<int32_t>(bytes.size())}, uint8);
}

GGUFLoad load_quantized(const TempDir& dir, GGMLType type, const std::vector<unsigned char>& blocks, Shape shape,
                        io::GGUFQuantized mode) {
  io::FileWriter writer(dir.path("q.gguf"));
  io::save_gguf(writer, {{"t.weight", type, shape, u8(blocks)}}, {});
  return io::load_gguf(dir.path("q.gguf"), mode);
}

std::vector<float> values(const array& a) {
  array f = astype(a, float32);
  f.eval();
  return {f.data<float>(), f.data<float>() + f.size()};
}

TEST(Gguf, ArraysAndEveryMetadataTypeRoundTrip) {
  TempDir dir;
  std::mt19937 rng(4);
  std::unordered_map<std::string, array> arrays;
  for (Dtype dtype : {float32, float16, int8, int16, int32}) {
    arrays.insert_or_assign("t." + std::string(dtype_name(dtype)), random_array({3, 2, 5}, dtype, rng));
  }
  arrays.insert_or_assign("scalar", array(2.5f));
  arrays.insert_or_assign("empty", zeros({0, 3}, float32));
  arrays.insert_or_assign("view", transpose(reshape(arange(6, float32), {2, 3})));
  std::unordered_map<std::string, GGUFMetaData> meta;
  for (Dtype dtype : {uint8, int8, uint16, int16, uint32, int32, float32, bool_, uint64, int64, float64}) {
    meta["scalar." + std::string(dtype_name(dtype))] = random_array({}, dtype, rng);
    meta["array." + std::string(dtype_name(dtype))] = random_array({4}, dtype, rng);
  }
  meta["general.name"] = std::string("caf\xc3\xa9");
  meta["tokens"] = std::vector<std::string>{"a", "", "\xe2\x96\x81the"};
  meta["no.tokens"] = std::vector<std::string>{};
  save_gguf(dir.path("m"), arrays, meta);  // ".gguf" is appended
  auto [loaded, loaded_meta] = load_gguf(dir.path("m.gguf"));
  // An alignment given as metadata, as MLX's callers do, sets the file's alignment.
  auto with_alignment = meta;
  with_alignment["general.alignment"] = array(64, uint32);
  save_gguf(dir.path("a.gguf"), arrays, with_alignment);
  auto aligned = load_gguf(dir.path("a.gguf"));
  EXPECT_EQ(std::get<array>(aligned.second.at("general.alignment")).item<uint32_t>(), 64u);
  EXPECT_EQ(raw_bytes(aligned.first.at("t.int32")), raw_bytes(arrays.at("t.int32")));
  ASSERT_EQ(loaded.size(), arrays.size());
  for (const auto& [name, a] : arrays) {
    EXPECT_EQ(loaded.at(name).dtype(), a.dtype()) << name;
    EXPECT_EQ(loaded.at(name).shape(), a.shape()) << name;
    EXPECT_EQ(raw_bytes(loaded.at(name)), raw_bytes(a)) << name;
  }
  ASSERT_EQ(loaded_meta.size(), meta.size());
  for (const auto& [key, value] : meta) {
    const auto& got = loaded_meta.at(key);
    ASSERT_EQ(got.index(), value.index()) << key;
    if (const auto* a = std::get_if<array>(&value)) {
      EXPECT_EQ(std::get<array>(got).dtype(), a->dtype()) << key;
      EXPECT_EQ(std::get<array>(got).shape(), a->shape()) << key;
      EXPECT_EQ(raw_bytes(std::get<array>(got)), raw_bytes(*a)) << key;
    } else if (const auto* s = std::get_if<std::string>(&value)) {
      EXPECT_EQ(std::get<std::string>(got), *s) << key;
    } else {
      EXPECT_EQ(std::get<std::vector<std::string>>(got), std::get<std::vector<std::string>>(value)) << key;
    }
  }
}

TEST(Gguf, SaveRefusesTheDtypesMlxRefusesAndTheWriterTakesThem) {
  // MLX's save_gguf throws std::runtime_error for dtypes other than float32, float16, int8, int16 and int32; GGUF's
  // BF16, F64 and I64 types stay reachable through io::save_gguf.
  TempDir dir;
  std::mt19937 rng(6);
  for (Dtype dtype : {bfloat16, float64, int64, uint8, bool_}) {
    EXPECT_THROW(save_gguf(dir.path("r.gguf"), {{"t", random_array({2, 3}, dtype, rng)}}), std::runtime_error)
        << dtype_name(dtype);
  }
  std::vector<io::GGUFTensor> tensors;
  for (auto [dtype, type] :
       {std::pair{bfloat16, GGMLType::BF16}, std::pair{float64, GGMLType::F64}, std::pair{int64, GGMLType::I64}}) {
    tensors.push_back({std::string(dtype_name(dtype)), type, {2, 3}, random_array({2, 3}, dtype, rng)});
  }
  {
    io::FileWriter writer(dir.path("w.gguf"));
    io::save_gguf(writer, tensors, {});
  }
  auto loaded = load_gguf(dir.path("w.gguf")).first;
  for (const auto& t : tensors) {
    EXPECT_EQ(loaded.at(t.name).dtype(), t.data.dtype()) << t.name;
    EXPECT_EQ(raw_bytes(loaded.at(t.name)), raw_bytes(t.data)) << t.name;
  }
}

TEST(Gguf, SaveThroughAWriterWritesThePathsBytesAndChecksFirst) {
  // The writer overload (behind Python's file objects) applies MLX's rules as the path overload does.
  TempDir dir;
  std::mt19937 rng(8);
  std::unordered_map<std::string, array> arrays{{"b", random_array({3}, int8, rng)},
                                                {"a", random_array({2, 2}, float16, rng)}};
  std::unordered_map<std::string, GGUFMetaData> meta{{"general.alignment", array(64, uint32)},
                                                     {"general.name", std::string("w")}};
  save_gguf(dir.path("path.gguf"), arrays, meta);
  save_gguf(std::make_shared<io::FileWriter>(dir.path("writer.gguf")), arrays, meta);
  EXPECT_EQ(read_file(dir.path("writer.gguf")), read_file(dir.path("path.gguf")));
  auto writer = std::make_shared<io::FileWriter>(dir.path("refused.gguf"));
  EXPECT_THROW(save_gguf(writer, {{"t", random_array({2}, float64, rng)}}), std::runtime_error);
  EXPECT_EQ(writer->tell(), 0u);
}

TEST(Gguf, ReadsAVersion2FileBuiltFromTheSpecification) {
  // Version 2 shares version 3's little-endian layout. A custom alignment of 64, a nested array (kept as
  // std::monostate) and a 2x3 F32 tensor whose GGUF axes are listed innermost first.
  std::vector<unsigned char> f = {'G', 'G', 'U', 'F'};
  put<uint32_t>(f, 2);
  put<uint64_t>(f, 1);  // tensors
  put<uint64_t>(f, 3);  // metadata pairs
  put_string(f, "general.alignment");
  put<uint32_t>(f, 4);
  put<uint32_t>(f, 64);
  put_string(f, "nested");
  put<uint32_t>(f, 9);
  put<uint32_t>(f, 9);
  put<uint64_t>(f, 2);
  for (int i = 0; i < 2; ++i) {
    put<uint32_t>(f, 0);
    put<uint64_t>(f, 1);
    f.push_back(static_cast<unsigned char>(i));
  }
  put_string(f, "flag");
  put<uint32_t>(f, 7);
  f.push_back(1);
  put_string(f, "w");
  put<uint32_t>(f, 2);
  put<uint64_t>(f, 3);
  put<uint64_t>(f, 2);
  put<uint32_t>(f, 0);
  put<uint64_t>(f, 0);
  f.resize((f.size() + 63) / 64 * 64, 0);
  for (float v : {1, 2, 3, 4, 5, 6}) {
    put<float>(f, v);
  }
  TempDir dir;
  write_file(dir.path("v2.gguf"), f);
  auto [tensors, meta] = load_gguf(dir.path("v2.gguf"));
  EXPECT_EQ(tensors.at("w").shape(), Shape({2, 3}));
  EXPECT_TRUE(array_equal(tensors.at("w"), array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3})).item<bool>());
  EXPECT_EQ(std::get<array>(meta.at("general.alignment")).item<uint32_t>(), 64u);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(meta.at("nested")));
  EXPECT_EQ(std::get<array>(meta.at("flag")).dtype(), bool_);
  EXPECT_TRUE(std::get<array>(meta.at("flag")).item<bool>());
}

// One block of each quantized type, written from the format's description, with the values the format defines.
struct KnownBlock {
  GGMLType type;
  std::vector<unsigned char> block;
  std::function<float(int)> value;  // element i of the block
};

std::vector<KnownBlock> known_blocks() {
  std::vector<KnownBlock> out;
  auto cat = [](std::initializer_list<std::vector<unsigned char>> parts) {
    std::vector<unsigned char> b;
    for (const auto& p : parts) {
      b.insert(b.end(), p.begin(), p.end());
    }
    return b;
  };
  auto fill = [](size_t n, const std::function<unsigned char(int)>& f) {
    std::vector<unsigned char> b(n);
    for (size_t i = 0; i < n; ++i) {
      b[i] = f(static_cast<int>(i));
    }
    return b;
  };
  // Q4_0: d, 16 bytes; element j < 16 is the low nibble of byte j, j >= 16 the high nibble of byte j - 16; (q - 8) d.
  out.push_back({GGMLType::Q4_0, cat({half_bytes(0.5f), fill(16, [](int j) { return (j % 16) | ((15 - j) << 4); })}),
                 [](int i) { return ((i < 16 ? i : 15 - (i - 16)) - 8) * 0.5f; }});
  // Q4_1: d, m, nibbles; q d + m.
  out.push_back({GGMLType::Q4_1,
                 cat({half_bytes(0.25f), half_bytes(-1.0f), fill(16, [](int j) { return j | (3 << 4); })}),
                 [](int i) { return (i < 16 ? i : 3) * 0.25f - 1.0f; }});
  // Q5_0: d, 32 high bits (bit j for element j), nibbles; (q - 16) d. High bits set for odd elements.
  out.push_back({GGMLType::Q5_0,
                 cat({half_bytes(2.0f), {0xAA, 0xAA, 0xAA, 0xAA}, fill(16, [](int j) { return j | (j << 4); })}),
                 [](int i) { return ((i % 16) + (i % 2 ? 16 : 0) - 16) * 2.0f; }});
  // Q5_1: d, m, high bits (all set), nibbles; q d + m.
  out.push_back(
      {GGMLType::Q5_1,
       cat({half_bytes(1.0f), half_bytes(0.5f), {0xFF, 0xFF, 0xFF, 0xFF}, fill(16, [](int) { return 0x21; })}),
       [](int i) { return (i < 16 ? 17.0f : 18.0f) + 0.5f; }});
  // Q8_0: d, 32 int8; q d.
  out.push_back({GGMLType::Q8_0,
                 cat({half_bytes(0.125f), fill(32, [](int j) { return static_cast<unsigned char>(j * 8 - 128); })}),
                 [](int i) { return static_cast<float>(i * 8 - 128) * 0.125f; }});
  // Q2_K: 16 scale bytes (low nibble scale, high nibble min) per 16 elements, 64 bytes of 2-bit codes, d, dmin.
  // Codes: byte l of each 32-byte half holds elements at shifts 0, 2, 4, 6 of four 32-element runs.
  out.push_back({GGMLType::Q2_K,
                 cat({fill(16, [](int g) { return (g % 16) | (1 << 4); }), fill(64, [](int) { return 0xE4; }),
                      half_bytes(1.0f), half_bytes(0.5f)}),
                 [](int i) {
                   int group = i / 16;
                   int code = ((i % 128) / 32);  // 0xE4 holds 0, 1, 2, 3 at shifts 0, 2, 4, 6
                   return static_cast<float>(group) * static_cast<float>(code) - 0.5f;
                 }});
  // Q3_K: 32 bytes of high bits (element bit set: code as is; clear: code - 4), 64 bytes of low 2-bit codes,
  // 12 bytes of 6-bit scales (minus 32), d. All low codes 1, high bits set for runs 0-3 of each 128-half only
  // in byte 0 of hmask (elements 0, 32, 64, 96 of half 0; bit n selects run n), scales all 33 (low 1, high 2).
  out.push_back({GGMLType::Q3_K,
                 cat({fill(32, [](int l) { return l == 0 ? 0x0F : 0x00; }), fill(64, [](int) { return 0x55; }),
                      fill(12, [](int k) { return k < 8 ? 0x11 : 0xAA; }), half_bytes(0.5f)}),
                 [](int i) {
                   bool high = i < 128 && i % 32 == 0;
                   return 0.5f * 1.0f * static_cast<float>(1 - (high ? 0 : 4));
                 }});
  // Q4_K: d, dmin, 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32, 128 bytes of nibbles (each 64
  // elements: low nibbles then high nibbles of 32 bytes); d sc q - dmin m. Sub-blocks 0-3: scale 2, min 1;
  // 4-7: scale 3 (low nibble of bytes 8-11) and min 5 (high nibble), top bits zero.
  out.push_back({GGMLType::Q4_K,
                 cat({half_bytes(1.0f), half_bytes(1.0f), fill(12, [](int k) { return k < 4   ? 2
                                                                                      : k < 8 ? 1
                                                                                              : 0x53; }),
                      fill(128, [](int l) { return (l % 16) | (7 << 4); })}),
                 [](int i) {
                   int sub = i / 32;
                   int sc = sub < 4 ? 2 : 3;
                   int m = sub < 4 ? 1 : 5;
                   int q = sub % 2 == 0 ? i % 16 : 7;
                   return static_cast<float>(sc * q - m);
                 }});
  // Q5_K: as Q4_K plus 32 bytes of fifth bits (bit 2j of byte l for low nibbles of run j, 2j + 1 for high).
  out.push_back({GGMLType::Q5_K,
                 cat({half_bytes(0.5f), half_bytes(2.0f), fill(12, [](int k) { return k < 4   ? 1
                                                                                      : k < 8 ? 0
                                                                                              : 0x01; }),
                      fill(32, [](int) { return 0x01; }), fill(128, [](int) { return 0x00; })}),
                 [](int i) { return i < 32    ? 0.5f * 16.0f
                                    : i < 128 ? 0.0f
                                              : 0.5f * 0.0f; }});
  // Q6_K: 128 bytes low nibbles, 64 bytes high 2-bit pairs, 16 int8 scales per 16 elements, d; d sc (q - 32).
  out.push_back({GGMLType::Q6_K,
                 cat({fill(128, [](int) { return 0x00; }), fill(64, [](int) { return 0x00; }),
                      fill(16, [](int g) { return static_cast<unsigned char>(g - 8); }), half_bytes(0.25f)}),
                 [](int i) { return 0.25f * static_cast<float>(i / 16 - 8) * -32.0f; }});
  // Q8_K: float32 d, 256 int8, 16 int16 sums (unused by dequantization); d q.
  std::vector<unsigned char> d8;
  put<float>(d8, 0.5f);
  out.push_back(
      {GGMLType::Q8_K,
       cat({d8, fill(256, [](int j) { return static_cast<unsigned char>(j); }), std::vector<unsigned char>(32)}),
       [](int i) { return static_cast<float>(static_cast<int8_t>(i)) * 0.5f; }});
  return out;
}

TEST(Gguf, QuantizedBlocksDequantizeAsTheFormatDefines) {
  TempDir dir;
  for (const auto& known : known_blocks()) {
    int n = known.block.size() == 18 || known.block.size() == 20 || known.block.size() == 22 ||
                    known.block.size() == 24 || known.block.size() == 34
                ? 32
                : 256;
    auto [tensors, meta] = load_quantized(dir, known.type, known.block, {1, n}, io::GGUFQuantized::dequantize);
    const array& a = tensors.at("t.weight");
    EXPECT_EQ(a.dtype(), float32);
    auto got = values(a);
    for (int i = 0; i < n; ++i) {
      EXPECT_FLOAT_EQ(got[i], known.value(i)) << "type " << static_cast<int>(known.type) << " element " << i;
    }
  }
}

TEST(Gguf, PackedFormMatchesDequantizedAndFeedsQuantizedMatmul) {
  TempDir dir;
  std::mt19937 rng(8);
  for (const auto& known : known_blocks()) {
    const auto* info = io::detail::ggml_type_info(static_cast<uint32_t>(known.type));
    // Random blocks (scales set to modest finite halves), 3 rows of 2 blocks.
    int rows = 3;
    int per_row = 2;
    std::vector<unsigned char> blocks(rows * per_row * info->block_bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : blocks) {
      b = static_cast<unsigned char>(byte(rng));
    }
    std::uniform_real_distribution<float> scale(-0.1f, 0.1f);
    for (size_t blk = 0; blk < blocks.size(); blk += info->block_bytes) {
      auto set_half = [&](size_t at) {
        auto h = half_bytes(scale(rng));
        blocks[blk + at] = h[0];
        blocks[blk + at + 1] = h[1];
      };
      switch (known.type) {
        case GGMLType::Q4_1:
        case GGMLType::Q5_1:
        case GGMLType::Q4_K:
        case GGMLType::Q5_K:
          set_half(0);
          set_half(2);
          break;
        case GGMLType::Q2_K:
          set_half(80);
          set_half(82);
          break;
        case GGMLType::Q3_K:
          set_half(108);
          break;
        case GGMLType::Q6_K:
          set_half(208);
          break;
        case GGMLType::Q8_K: {
          float d = scale(rng);
          std::memcpy(&blocks[blk], &d, 4);
          break;
        }
        default:
          set_half(0);
          break;
      }
    }
    Shape shape = {rows, per_row * static_cast<int>(info->block_elems)};
    auto plain = load_quantized(dir, known.type, blocks, shape, io::GGUFQuantized::dequantize).first.at("t.weight");
    auto packed = load_quantized(dir, known.type, blocks, shape, io::GGUFQuantized::packed).first;
    if (info->group != 32) {
      EXPECT_EQ(packed.size(), 1u);
      EXPECT_TRUE(array_equal(packed.at("t.weight"), plain).item<bool>());
      continue;
    }
    ASSERT_EQ(packed.size(), 3u);
    const array& w = packed.at("t.weight");
    EXPECT_EQ(w.dtype(), uint32);
    EXPECT_EQ(w.shape(), Shape({rows, shape[1] * info->bits / 32}));
    array back = dequantize(w, packed.at("t.scales"), packed.at("t.biases"), 32, info->bits);
    EXPECT_TRUE(allclose(back, plain, 1e-6, 1e-6).item<bool>()) << info->name;
    array x = random::normal({2, shape[1]});
    array y = quantized_matmul(x, w, packed.at("t.scales"), packed.at("t.biases"), true, 32, info->bits);
    EXPECT_TRUE(allclose(y, matmul(x, transpose(plain)), 1e-4, 1e-4).item<bool>()) << info->name;
  }
}

TEST(Gguf, EncodedBlocksDecodeWithinOneStepOfTheirValues) {
  TempDir dir;
  std::mt19937 rng(12);
  // The step between codes of each type, from its block's values.
  struct Case {
    GGMLType type;
    int block;
    std::function<float(float lo, float hi, float amax)> step;
  };
  std::vector<Case> cases = {
      {GGMLType::Q4_0, 32, [](float, float, float amax) { return amax / 8; }},
      {GGMLType::Q5_0, 32, [](float, float, float amax) { return amax / 16; }},
      {GGMLType::Q4_1, 32, [](float lo, float hi, float) { return (hi - lo) / 15; }},
      {GGMLType::Q5_1, 32, [](float lo, float hi, float) { return (hi - lo) / 31; }},
      {GGMLType::Q8_0, 32, [](float, float, float amax) { return amax / 127; }},
      {GGMLType::Q8_K, 256, [](float, float, float amax) { return amax / 127; }},
      // The K-quants also round their sub-block scales to 6 or 8 bits: a little over one step of the super-block.
      {GGMLType::Q2_K, 256,
       [](float lo, float hi, float) { return 1.25f * (std::max(hi, 0.0f) - std::min(lo, 0.0f)) / 3; }},
      {GGMLType::Q3_K, 256, [](float, float, float amax) { return 1.25f * amax / 4; }},
      {GGMLType::Q4_K, 256,
       [](float lo, float hi, float) { return 1.25f * (std::max(hi, 0.0f) - std::min(lo, 0.0f)) / 15; }},
      {GGMLType::Q5_K, 256,
       [](float lo, float hi, float) { return 1.25f * (std::max(hi, 0.0f) - std::min(lo, 0.0f)) / 31; }},
      {GGMLType::Q6_K, 256, [](float, float, float amax) { return 1.25f * amax / 31; }},
  };
  for (const auto& c : cases) {
    array x = random::uniform(-3.0, 1.0, {3, 2 * c.block});
    x.eval();
    array blocks = io::quantize_blocks(x, c.type);
    io::FileWriter writer(dir.path("e.gguf"));
    io::save_gguf(writer, {{"w", c.type, x.shape(), blocks}}, {});
    array back = io::load_gguf(dir.path("e.gguf"), io::GGUFQuantized::dequantize).first.at("w");
    auto got = values(back);
    auto want = values(x);
    for (size_t start = 0; start < want.size(); start += c.block) {
      float lo = *std::min_element(want.begin() + start, want.begin() + start + c.block);
      float hi = *std::max_element(want.begin() + start, want.begin() + start + c.block);
      float step = c.step(lo, hi, std::max(std::fabs(lo), std::fabs(hi)));
      for (size_t i = start; i < start + c.block; ++i) {
        // Half a step of rounding, a whole step where a symmetric type clamps its top code, and the float16
        // rounding of the scale.
        EXPECT_LE(std::fabs(got[i] - want[i]), 1.01f * step + 1e-3f) << static_cast<int>(c.type) << " at " << i;
      }
    }
  }
  EXPECT_NE(error_of([] {
              io::quantize_blocks(zeros({2, 33}), GGMLType::Q4_0);
            }).find("multiple of 32"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              io::quantize_blocks(zeros({256}), GGMLType::F16);
            }).find("expected a quantized type (Q4_0 ... Q8_K); got F16"),
            std::string::npos);
}

TEST(Gguf, TensorsLoadAsStored) {
  // load_gguf_tensors gives each tensor its type and logical shape, quantized ones as their raw blocks (uint8 rows of
  // whole blocks, the file's own bytes), plain ones as arrays, in file order.
  TempDir dir;
  array x = random::uniform(-1.0, 1.0, {3, 512});
  array blocks = io::quantize_blocks(x, GGMLType::Q4_K);
  array f16 = astype(random::uniform(-1.0, 1.0, {2, 4}), float16);
  io::FileWriter writer(dir.path("t.gguf"));
  io::save_gguf(writer, {{"q", GGMLType::Q4_K, x.shape(), blocks}, {"h", GGMLType::F16, f16.shape(), f16}},
                {{"general.name", std::string("t")}});
  io::GGUFTensors file = io::load_gguf_tensors(dir.path("t.gguf"));
  ASSERT_EQ(file.tensors.size(), 2U);
  EXPECT_EQ(file.tensors[0].name, "q");
  EXPECT_EQ(file.tensors[0].type, GGMLType::Q4_K);
  EXPECT_EQ(file.tensors[0].shape, Shape({3, 512}));
  EXPECT_EQ(file.tensors[0].data.dtype(), uint8);
  EXPECT_EQ(file.tensors[0].data.shape(), Shape({3, 2 * 144}));
  EXPECT_TRUE(array_equal(flatten(file.tensors[0].data), blocks).item<bool>());
  EXPECT_EQ(file.tensors[1].type, GGMLType::F16);
  EXPECT_TRUE(array_equal(file.tensors[1].data, f16).item<bool>());
  EXPECT_EQ(std::get<std::string>(file.metadata.at("general.name")), "t");
  // The block formats nuvec computes in directly.
  EXPECT_EQ(io::block_format(GGMLType::Q4_K), QuantizationMode::q4_k);
  EXPECT_EQ(io::block_format(GGMLType::Q6_K), QuantizationMode::q6_k);
  EXPECT_EQ(io::block_format(GGMLType::Q5_K), std::nullopt);
  // The raw rows compute as the dequantized tensor does.
  array dense = io::load_gguf(dir.path("t.gguf"), io::GGUFQuantized::dequantize).first.at("q");
  array v = random::normal({2, 512});
  EXPECT_TRUE(allclose(quantized_matmul(v, file.tensors[0].data, "q4_k"), matmul(v, transpose(dense)), 1e-4, 1e-4)
                  .item<bool>());
}

TEST(Gguf, AnIndependentReaderReadsNuvecFiles) {
  std::string modules = NUVEC_NPM_DIR "/node_modules";
  if (std::system("node --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "node is not installed";
  }
  if (!std::filesystem::exists(modules + "/@huggingface/gguf")) {
    GTEST_SKIP() << "@huggingface/gguf is not installed in " << modules << " (scripts/install-deps.sh installs it)";
  }
  TempDir dir;
  io::FileWriter writer(dir.path("m.gguf"));
  std::vector<unsigned char> q8(34 * 2, 0);
  io::save_gguf(writer,
                {{"a", GGMLType::F32, {2, 3}, zeros({2, 3})},
                 {"b", GGMLType::F16, {5}, zeros({5}, float16)},
                 {"c.weight", GGMLType::Q8_0, {1, 64}, u8(q8)}},
                {{"general.name", std::string("tiny")},
                 {"n", array(7, uint32)},
                 {"f", array(0.5f)},
                 {"ids", array({1, -2, 3})},
                 {"tokens", std::vector<std::string>{"x", "y"}}},
                64);
  std::string out = run_python("import subprocess\nprint(subprocess.run(['node', '" TESTS_IO_DIR "/gguf_read.js', '" +
                               modules + "', '" + dir.path("m.gguf") +
                               "'], check=True, capture_output=True, "
                               "text=True).stdout, end='')\n");
  EXPECT_EQ(out, R"({"metadata":{"version":3,"tensor_count":"3","kv_count":"6","general.alignment":64,"f":0.5,)"
                 R"("general.name":"tiny","ids":[1,-2,3],"n":7,"tokens":["x","y"]},"tensorInfos":[)"
                 R"({"name":"a","n_dims":2,"shape":["3","2"],"dtype":0,"offset":"0"},)"
                 R"({"name":"b","n_dims":1,"shape":["5"],"dtype":1,"offset":"64"},)"
                 R"({"name":"c.weight","n_dims":2,"shape":["64","1"],"dtype":8,"offset":"128"}]})"
                 "\n");
}

TEST(Gguf, MalformedFilesNameTheFileAndTheProblem) {
  TempDir dir;
  std::string path = dir.path("bad.gguf");
  auto error_for = [&](const std::vector<unsigned char>& bytes) {
    write_file(path, bytes);
    std::string message = error_of([&] { load_gguf(path); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("[load_gguf]"), std::string::npos) << message;
    return message;
  };
  auto header = [](uint64_t tensors, uint64_t kv, uint32_t version = 3) {
    std::vector<unsigned char> f = {'G', 'G', 'U', 'F'};
    put<uint32_t>(f, version);
    put<uint64_t>(f, tensors);
    put<uint64_t>(f, kv);
    return f;
  };
  EXPECT_NE(error_for({'G', 'G'}).find("truncated"), std::string::npos);
  EXPECT_NE(error_for({'G', 'G', 'M', 'L', 3, 0, 0, 0}).find("wrong magic"), std::string::npos);
  EXPECT_NE(error_for(header(0, 0, 1)).find("unsupported GGUF version 1"), std::string::npos);
  EXPECT_NE(error_for(header(0, 0, 0x03000000)).find("big-endian"), std::string::npos);
  EXPECT_NE(error_for(header(0, uint64_t{1} << 60)).find("more than the file can hold"), std::string::npos);
  auto f = header(0, 1);
  put<uint64_t>(f, uint64_t{1} << 62);  // a key length past the end
  f.resize(f.size() + 16, 0);
  EXPECT_NE(error_for(f).find("truncated file: a metadata key needs"), std::string::npos);
  f = header(0, 1);
  put_string(f, "bad\xff");
  put<uint32_t>(f, 0);
  f.push_back(0);
  EXPECT_NE(error_for(f).find("a metadata key is not valid UTF-8"), std::string::npos);
  f = header(0, 1);
  put_string(f, "k");
  put<uint32_t>(f, 13);
  f.resize(f.size() + 16, 0);
  EXPECT_NE(error_for(f).find("unknown metadata value type 13"), std::string::npos);
  f = header(0, 1);
  put_string(f, "k");
  put<uint32_t>(f, 9);
  put<uint32_t>(f, 12);
  put<uint64_t>(f, uint64_t{1} << 62);
  EXPECT_NE(error_for(f).find("overflows"), std::string::npos);
  f = header(0, 1);
  put_string(f, "k");
  put<uint32_t>(f, 9);
  put<uint32_t>(f, 8);
  put<uint64_t>(f, uint64_t{1} << 40);
  f.resize(f.size() + 16, 0);
  EXPECT_NE(error_for(f).find("longer than the file"), std::string::npos);
  auto tensor = [&](uint32_t n_dims, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    auto t = header(1, 0);
    put_string(t, "w");
    put<uint32_t>(t, n_dims);
    for (auto d : dims) {
      put<uint64_t>(t, d);
    }
    put<uint32_t>(t, type);
    put<uint64_t>(t, offset);
    t.resize(t.size() + 40, 0);  // enough for the count checks
    return t;
  };
  EXPECT_NE(error_for(tensor(5, {1, 1, 1, 1, 1}, 0, 0)).find("5 axes"), std::string::npos);
  EXPECT_NE(error_for(tensor(1, {4}, 99, 0)).find("unknown or unsupported tensor type 99"), std::string::npos);
  EXPECT_NE(error_for(tensor(1, {4}, 0, 7)).find("not a multiple of the alignment"), std::string::npos);
  EXPECT_NE(error_for(tensor(1, {1000}, 0, 0)).find("runs past the end of the file"), std::string::npos);
  EXPECT_NE(error_for(tensor(1, {33}, 2, 0)).find("not a multiple of Q4_0's block of 32"), std::string::npos);
  EXPECT_NE(error_for(tensor(4, {0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF}, 0, 0)).find("overflows"),
            std::string::npos);
  EXPECT_NE(error_for(tensor(1, {uint64_t{1} << 40}, 0, 0)).find("exceeds 2^31 - 1"), std::string::npos);
  EXPECT_NE(error_for(tensor(4, {0, 0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF}, 0, 0)).find("overflows"), std::string::npos);
  f = header(2, 0);
  for (int i = 0; i < 2; ++i) {
    put_string(f, "same");
    put<uint32_t>(f, 1);
    put<uint64_t>(f, 1);
    put<uint32_t>(f, 0);
    put<uint64_t>(f, 0);
  }
  f.resize(f.size() + 64, 0);
  EXPECT_NE(error_for(f).find("duplicate tensor name \"same\""), std::string::npos);
  f = header(0, 2);
  for (int i = 0; i < 2; ++i) {
    put_string(f, "k");
    put<uint32_t>(f, 0);
    f.push_back(1);
  }
  f.resize(f.size() + 24, 0);
  EXPECT_NE(error_for(f).find("duplicate metadata key \"k\""), std::string::npos);
  f = header(0, 1);
  put_string(f, "general.alignment");
  put<uint32_t>(f, 4);
  put<uint32_t>(f, 12);
  EXPECT_NE(error_for(f).find("not a positive multiple of 8"), std::string::npos);
  EXPECT_NE(error_of([&] {
              save_gguf(dir.path("s"), {{"b", array({true})}});
            }).find("GGUF has no bool type"),
            std::string::npos);
}

}  // namespace
}  // namespace nuvec::test
