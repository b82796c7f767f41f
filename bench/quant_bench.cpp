// quant_bench: times quantized_matmul against its bandwidth floor (decode) and against the float32 matmul (prefill).
//
//   row NAME median_ms=T floor_ms=F ratio=R read_gbs=B cached_ms=C ...
//                                               decode rows: each call takes another of several copies of the weight
//                                               (over 96 MiB in all, three times the L3 cache), as a model's layers
//                                               would, so the weights come from memory. floor_ms: reading the packed
//                                               weights, scales and biases of another copy (every byte summed on
//                                               nuvec's pool, nothing written), timed turn about with the decodes:
//                                               this VM's bandwidth moves by 2x within minutes, and a floor measured
//                                               apart judged the rows by another moment's machine. cached_ms: one
//                                               copy, called again and again (it stays in the L3 cache, so it may beat
//                                               the floor); float_path_ms (w (N, K)): streamed with NUVEC_QMM_INT8=0,
//                                               no int8 dot products; decode_gbs: the bytes read over median_ms.
//                                               decode_q4_0_t_x1 ...: the GGML block formats (quantized_matmul(x,
//                                               blocks, mode); q4_0x8, q4_0x16, q8_0x16, q4_kx16 and q6_kx16:
//                                               q4_0's, q8_0's, q4_k's and q6_k's repacked), random codes and scales;
//                                               decode_mxfp4_t_x1 ...: MLX's microscaled modes (mxfp4, mxfp8, nvfp4) of
//                                               the same weight; decode_f16_t_x1, decode_bf16_t_x1: matmul(x,
//                                               w_half.T), the weight in half precision (a half-precision model's
//                                               decode)
//   row NAME median_ms=T f32_ms=F ratio=R       prefill rows (t: transpose, nt: not): against matmul(x, w_float.T)
//                                               (under high and medium the t rows run on int8 levels of x);
//                                               prefill_q4_0x8_t_...: q4_0x8 blocks (int8 levels of x under high and
//                                               medium), with q4_0_tiles_ms the same blocks as q4_0 (decoded tiles)
//
// Each rep builds the graph and evaluates it; inputs are random and pre-evaluated. Options: --reps N (default 30),
// --rows N (rows of x in the decode rows, default 1; from 24 the q4_0x8, q8_0, q4_k and x16 rows take the prefill
// kernel under high and medium, and from 32 q6_k's, where the others decode tiles for the sgemm), --n N and --k K (the
// weight's shape, default 4096 x 4096; Llama-3.2-1B's are 2048 x 2048, 8192 x 2048, 2048 x 8192 and 128256 x 2048),
// --only TEXT (only the rows whose name holds TEXT), --matmul-precision highest|high|medium (nuvec's float32 matmul
// precision: int8 levels of x in the decode rows, two under high, and one for the block formats under medium).

#include <nuvec/cpu/thread_pool.h>
#include <nuvec/nuvec.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using nuvec::array;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Reads every byte of the arrays (packed weights, scales, biases) on nuvec's pool: 64-bit words summed in eight
/// chains per task, so that only reads reach memory. The floor of a decode that streams the same arrays.
uint64_t read_all(const std::vector<array>& arrays) {
  std::vector<uint64_t> sums(arrays.size());
  for (size_t a = 0; a < arrays.size(); ++a) {
    const auto* words = static_cast<const uint64_t*>(arrays[a].raw_data());
    const size_t count = arrays[a].nbytes() / sizeof(uint64_t);
    constexpr size_t block = size_t{1} << 13;  // words per task: 64 KiB
    std::vector<uint64_t> parts((count + block - 1) / block);
    nuvec::cpu::parallel_for(parts.size(), 1, [&](size_t b0, size_t b1) {
      for (size_t b = b0; b < b1; ++b) {
        uint64_t lane[8] = {};
        const size_t end = std::min(count, (b + 1) * block);
        size_t i = b * block;
        for (; i + 8 <= end; i += 8) {
          for (int j = 0; j < 8; ++j) {
            lane[j] += words[i + j];
          }
        }
        for (; i < end; ++i) {
          lane[0] += words[i];
        }
        parts[b] = lane[0] + lane[1] + lane[2] + lane[3] + lane[4] + lane[5] + lane[6] + lane[7];
      }
    });
    sums[a] = std::accumulate(parts.begin(), parts.end(), uint64_t{0});
  }
  return std::accumulate(sums.begin(), sums.end(), uint64_t{0});
}

array random_matrix(const nuvec::Shape& shape, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.F, 1.F);
  std::vector<float> values(nuvec::shape_size(shape));
  for (auto& v : values) {
    v = dist(rng);
  }
  array a(values.begin(), shape, nuvec::float32);
  a.eval();
  return a;
}

/// The median time of fn(rep) over `reps` calls, after one warm-up call.
double time_ms(int reps, const std::function<array(int)>& fn) {
  fn(0).eval();  // warm up: buffers, thread pool, library initialisation
  std::vector<double> times;
  for (int rep = 0; rep < reps; ++rep) {
    auto t0 = Clock::now();
    auto out = fn(rep);
    out.eval();
    times.push_back(ms_since(t0));
  }
  return median(times);
}

/// Copies of a weight's arrays, over 96 MiB in all (three times the L3 cache), so that a decode that takes the next
/// copy each call reads its weight from memory.
std::vector<std::vector<array>> copies_of(const std::vector<array>& weight) {
  double bytes = 0;
  for (const auto& a : weight) {
    bytes += static_cast<double>(a.nbytes());
  }
  const auto count = static_cast<size_t>(std::ceil(double(size_t{96} << 20) / bytes));
  std::vector<std::vector<array>> copies;
  for (size_t c = 0; c < count; ++c) {
    std::vector<array> copy;
    for (const auto& a : weight) {
      copy.push_back(nuvec::copy(a));
    }
    nuvec::eval(copy);
    copies.push_back(copy);
  }
  return copies;
}

/// Times decode(copy) against reading the next copy (the floor), turn about so that both meet the same state of the
/// machine; prints the decode row's fields and returns the reads' checksum.
uint64_t time_streamed(int reps, const std::vector<std::vector<array>>& weights,
                       const std::function<array(const std::vector<array>&)>& decode) {
  double bytes = 0;
  for (const auto& a : weights[0]) {
    bytes += static_cast<double>(a.nbytes());
  }
  const size_t copies = weights.size();
  decode(weights[0]).eval();
  std::vector<double> decode_ms;
  std::vector<double> read_ms;
  uint64_t checksum = 0;
  for (int rep = 0; rep < reps; ++rep) {
    auto t0 = Clock::now();
    decode(weights[static_cast<size_t>(2 * rep) % copies]).eval();
    decode_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    checksum += read_all(weights[static_cast<size_t>(2 * rep + 1) % copies]);
    read_ms.push_back(ms_since(t0));
  }
  const double ms = median(decode_ms);
  const double floor_ms = median(read_ms);
  const double cached_ms = time_ms(reps, [&](int) { return decode(weights[0]); });
  std::printf(" median_ms=%.3f floor_ms=%.3f ratio=%.2f read_gbs=%.1f decode_gbs=%.1f cached_ms=%.3f", ms, floor_ms,
              ms / floor_ms, bytes / (floor_ms * 1e-3) / 1e9, bytes / (ms * 1e-3) / 1e9, cached_ms);
  return checksum;
}

/// A GGML block format as quantized_matmul takes it, and the offsets of each block's float16 scales.
struct BlockFormat {
  const char* mode;
  int values;
  int bytes;
  std::vector<int> scale_offsets;
};

const std::vector<BlockFormat>& block_formats() {
  static const std::vector<BlockFormat> all = {
      {"q4_0", 32, 18, {0}},         {"q4_0x8", 32, 18, {0}},   {"q4_0x16", 32, 18, {0}},
      {"q8_0", 32, 34, {0}},         {"q8_0x16", 32, 34, {0}},  {"q4_k", 256, 144, {0, 2}},
      {"q4_kx16", 256, 144, {0, 2}}, {"q6_k", 256, 210, {208}}, {"q6_kx16", 256, 210, {208}}};
  return all;
}

/// n rows of k values in a block format: random codes, each float16 scale drawn in [0.002, 0.05).
array random_blocks(const BlockFormat& f, int n, int k, std::mt19937& rng) {
  const size_t row_bytes = static_cast<size_t>(k / f.values * f.bytes);
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * row_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.002F, 0.05F);
  for (auto& b : bytes) {
    b = static_cast<uint8_t>(byte(rng));
  }
  for (size_t block = 0; block < bytes.size() / static_cast<size_t>(f.bytes); ++block) {
    for (int offset : f.scale_offsets) {
      const nuvec::float16_t h(scale(rng));
      std::memcpy(bytes.data() + block * static_cast<size_t>(f.bytes) + static_cast<size_t>(offset), &h.bits, 2);
    }
  }
  array a(bytes.begin(), {n, static_cast<int>(row_bytes)}, nuvec::uint8);
  a.eval();
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 30;
  int rows = 1;
  int n = 4096;
  int k = 4096;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (std::string(argv[i]) == "--rows" && i + 1 < argc) {
      rows = std::atoi(argv[++i]);
    } else if (std::string(argv[i]) == "--n" && i + 1 < argc) {
      n = std::atoi(argv[++i]);
    } else if (std::string(argv[i]) == "--k" && i + 1 < argc) {
      k = std::atoi(argv[++i]);
    } else if (std::string(argv[i]) == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (std::string(argv[i]) == "--matmul-precision" && i + 1 < argc) {
      nuvec::set_float32_matmul_precision(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--rows N] [--n N] [--k K] [--only TEXT] [--matmul-precision P]\n",
                   argv[0]);
      return 2;
    }
  }
  if (reps < 1 || rows < 1 || n < 1 || k < 256 || k % 256 != 0) {
    std::fprintf(stderr, "%s: --reps, --rows and --n must be at least 1, --k a multiple of 256\n", argv[0]);
    return 2;
  }
  const auto wanted = [&](const std::string& name) { return name.find(only) != std::string::npos; };
  std::printf("threads %d\n", nuvec::cpu::num_threads());

  std::mt19937 rng(7);
  auto w = random_matrix({n, k}, rng);
  auto x = random_matrix({rows, k}, rng);
  // w quantized for quantized_matmul(x, ..., transpose): (N, K) transposed, else (K, N) grouped along N; the same
  // product.
  const auto quantized_w = [&](bool transpose, int bits) {
    return nuvec::quantize(transpose ? w : nuvec::transpose(w), 64, bits);
  };
  for (int bits : {4, 8}) {
    for (bool transpose : {true, false}) {
      const std::string name =
          "decode_" + std::to_string(bits) + "bit_" + (transpose ? "t" : "nt") + "_x" + std::to_string(rows);
      if (!wanted(name)) {
        continue;
      }
      auto q = quantized_w(transpose, bits);
      nuvec::eval(q);
      const auto weights = copies_of(q);
      auto decode = [&](const std::vector<array>& wq) {
        return nuvec::quantized_matmul(x, wq[0], wq[1], wq[2], transpose, 64, bits);
      };
      std::printf("row %s", name.c_str());
      const uint64_t checksum = time_streamed(reps, weights, decode);
      if (transpose) {  // the int8 kernels take w (N, K) only
        setenv("NUVEC_QMM_INT8", "0", 1);
        std::printf(" float_path_ms=%.3f",
                    time_ms(reps, [&](int rep) { return decode(weights[static_cast<size_t>(rep) % weights.size()]); }));
        unsetenv("NUVEC_QMM_INT8");
      }
      std::printf(" (checksum %llu)\n", static_cast<unsigned long long>(checksum % 1000));
    }
  }
  for (const auto dtype : {nuvec::float16, nuvec::bfloat16}) {
    const std::string name =
        std::string("decode_") + (dtype == nuvec::float16 ? "f16" : "bf16") + "_t_x" + std::to_string(rows);
    if (!wanted(name)) {
      continue;
    }
    const auto weights = copies_of({nuvec::astype(w, dtype)});
    std::printf("row %s", name.c_str());
    const uint64_t checksum = time_streamed(
        reps, weights, [&](const std::vector<array>& wh) { return nuvec::matmul(x, nuvec::transpose(wh[0])); });
    std::printf(" (checksum %llu)\n", static_cast<unsigned long long>(checksum % 1000));
  }
  for (const std::string mode : {"mxfp4", "mxfp8", "nvfp4"}) {
    const std::string name = "decode_" + mode + "_t_x" + std::to_string(rows);
    if (!wanted(name)) {
      continue;
    }
    const auto weights = copies_of(nuvec::quantize(w, std::nullopt, std::nullopt, mode));
    std::printf("row %s", name.c_str());
    const uint64_t checksum = time_streamed(reps, weights, [&](const std::vector<array>& wq) {
      return nuvec::quantized_matmul(x, wq[0], wq[1], std::nullopt, true, std::nullopt, std::nullopt, mode);
    });
    std::printf(" (checksum %llu)\n", static_cast<unsigned long long>(checksum % 1000));
  }
  for (const auto& format : block_formats()) {
    const std::string name = std::string("decode_") + format.mode + "_t_x" + std::to_string(rows);
    if (!wanted(name)) {
      continue;
    }
    array blocks = random_blocks(format, n, k, rng);
    if (const auto mode = nuvec::parse_quantization_mode(format.mode); nuvec::plain_layout(*mode) != *mode) {
      // The plain format's blocks with each group of rows interleaved.
      const std::string plain(nuvec::mode_name(nuvec::plain_layout(*mode)));
      blocks = nuvec::repack_blocks(blocks, plain, format.mode);
    }
    const auto weights = copies_of({blocks});
    std::printf("row %s", name.c_str());
    const uint64_t checksum = time_streamed(
        reps, weights, [&](const std::vector<array>& wq) { return nuvec::quantized_matmul(x, wq[0], format.mode); });
    std::printf(" (checksum %llu)\n", static_cast<unsigned long long>(checksum % 1000));
  }
  auto xp = random_matrix({512, k}, rng);
  std::optional<double> f32_ms;  // timed for the first prefill row wanted
  for (int bits : {4, 8}) {
    for (bool transpose : {true, false}) {
      const std::string name = "prefill_" + std::to_string(bits) + "bit_" + (transpose ? "t" : "nt") + "_512x" +
                               std::to_string(k) + "x" + std::to_string(n);
      if (!wanted(name)) {
        continue;
      }
      if (!f32_ms) {
        f32_ms = time_ms(std::max(3, reps / 6), [&](int) { return nuvec::matmul(xp, nuvec::transpose(w)); });
      }
      auto q = quantized_w(transpose, bits);
      nuvec::eval(q);
      const double deq_ms =
          time_ms(std::max(3, reps / 6), [&](int) { return nuvec::dequantize(q[0], q[1], q[2], 64, bits); });
      const double ms = time_ms(std::max(3, reps / 6), [&](int) {
        return nuvec::quantized_matmul(xp, q[0], q[1], q[2], transpose, 64, bits);
      });
      std::printf("row %s median_ms=%.2f f32_ms=%.2f ratio=%.2f dequantize_ms=%.2f\n", name.c_str(), ms, *f32_ms,
                  ms / *f32_ms, deq_ms);
    }
  }
  const std::string name = "prefill_q4_0x8_t_512x" + std::to_string(k) + "x" + std::to_string(n);
  if (wanted(name)) {
    if (!f32_ms) {
      f32_ms = time_ms(std::max(3, reps / 6), [&](int) { return nuvec::matmul(xp, nuvec::transpose(w)); });
    }
    array blocks = random_blocks(block_formats()[0], n, k, rng);
    array interleaved = nuvec::repack_blocks(blocks, "q4_0", "q4_0x8");
    nuvec::eval({blocks, interleaved});
    const double tiles_ms =
        time_ms(std::max(3, reps / 6), [&](int) { return nuvec::quantized_matmul(xp, blocks, "q4_0"); });
    const double ms =
        time_ms(std::max(3, reps / 6), [&](int) { return nuvec::quantized_matmul(xp, interleaved, "q4_0x8"); });
    std::printf("row %s median_ms=%.2f f32_ms=%.2f ratio=%.2f q4_0_tiles_ms=%.2f\n", name.c_str(), ms, *f32_ms,
                ms / *f32_ms, tiles_ms);
  }
  return 0;
}
