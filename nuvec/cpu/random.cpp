// RandomBits: Threefry-2x32 over counters, bit-compatible with MLX and JAX.
//
// For each key the output is `bytes` = size * width bytes, i.e. `words` = ceil(bytes / 4) 32-bit words
// (little-endian; the last one may be cut short). With half = ceil(words / 2), the counter pair (i, i + half)
// hashes to the words placed at i and i + half; when `words` is odd the last pair has no partner and uses the
// counter 0 instead (JAX pads its counter array with a zero), and its second word is dropped. Keys of shape
// (..., 2) each produce one such run, in key order.

#include <algorithm>
#include <cstring>
#include <vector>

#include "nuvec/core/threefry.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

/// Counter pairs hashed per block; a multiple of every vector width, small enough to stay in registers/L1.
constexpr size_t block = 64;
/// Blocks per parallel_for chunk (about 64K hashes).
constexpr size_t grain = 1024;

struct Run {
  uint64_t bytes;  // output bytes per key
  uint64_t words;  // 32-bit words per key, the last possibly partial
  uint64_t half;   // counter pairs per key
};

/// Copies words [first, first + n) of one key's run from `src`, cut at the run's end.
void store_words(char* run_out, const Run& run, uint64_t first, uint64_t n, const uint32_t* src) {
  uint64_t begin = first * 4;
  if (begin >= run.bytes) {
    return;
  }
  uint64_t end = std::min(run.bytes, (first + n) * 4);
  std::memcpy(run_out + begin, src, end - begin);
}

/// Hashes counter pairs [first, first + n) of one key and writes their words.
void fill_block(uint32_t k0, uint32_t k1, const Run& run, uint64_t first, uint64_t n, char* run_out) {
  alignas(64) uint32_t x0[block];
  alignas(64) uint32_t x1[block];
  // Counters are 32-bit, as in MLX: runs longer than 2^32 words wrap.
  auto c0 = static_cast<uint32_t>(first);
  auto c1 = static_cast<uint32_t>(first + run.half);
  for (size_t l = 0; l < block; ++l) {
    x0[l] = c0 + static_cast<uint32_t>(l);
    x1[l] = c1 + static_cast<uint32_t>(l);
  }
  if (first + n + run.half > run.words) {  // the unpaired last counter of an odd run hashes with 0
    uint64_t last = run.words - run.half - first;
    if (last < n) {
      x1[last] = 0;
    }
  }
  for (size_t l = 0; l < block; ++l) {  // vectorizes: every lane runs the same 20 rounds
    nuvec::detail::threefry2x32(k0, k1, x0[l], x1[l]);
  }
  store_words(run_out, run, first, n, x0);
  store_words(run_out, run, first + run.half, n, x1);
}

}  // namespace

void run(const RandomBits& p, const Inputs& in, Outputs& out) {
  const auto& keys = in[0];
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));

  // Read the keys through their strides (a key is often a slice of split's output).
  size_t num_keys = keys.size() / 2;
  std::vector<uint32_t> key_values(num_keys * 2);
  {
    const auto* base = keys.data<uint32_t>();
    int batch_dims = keys.ndim() - 1;
    std::vector<int32_t> index(batch_dims, 0);
    int64_t last_stride = keys.strides(-1);
    for (size_t k = 0; k < num_keys; ++k) {
      int64_t offset = 0;
      for (int d = 0; d < batch_dims; ++d) {
        offset += index[d] * keys.strides(d);
      }
      key_values[2 * k] = base[offset];
      key_values[2 * k + 1] = base[offset + last_stride];
      for (int d = batch_dims - 1; d >= 0; --d) {
        if (++index[d] < keys.shape(d)) {
          break;
        }
        index[d] = 0;
      }
    }
  }

  Run run;
  run.bytes = static_cast<uint64_t>(shape_size(p.shape)) * static_cast<uint64_t>(p.width);
  run.words = (run.bytes + 3) / 4;
  run.half = (run.words + 1) / 2;
  if (num_keys == 0 || run.bytes == 0) {
    return;
  }
  uint64_t blocks_per_key = (run.half + block - 1) / block;
  auto* base = static_cast<char*>(o.raw_data());
  parallel_for(num_keys * blocks_per_key, grain, [&](size_t begin, size_t end) {
    for (size_t b = begin; b < end; ++b) {
      size_t k = b / blocks_per_key;
      uint64_t first = (b % blocks_per_key) * block;
      uint64_t n = std::min<uint64_t>(block, run.half - first);
      fill_block(key_values[2 * k], key_values[2 * k + 1], run, first, n, base + k * run.bytes);
    }
  });
}

}  // namespace nuvec::cpu
