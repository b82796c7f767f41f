// RandomBits: Threefry-2x32 with 20 rounds over 32-bit counters, the very hash of nuvec/core/threefry.h, laid out
// as the CPU's random.cpp lays it out, so both devices give the same bits for a key. Each key's run of `bytes`
// bytes holds `words` 32-bit words (little-endian, the last possibly cut short); the counter pair (i, i + half)
// hashes to words i and i + half, and when `words` is odd the last pair hashes (i, 0) and keeps only its first word.
#include "nuvec/cuda/prelude.cuh"

template <int R>
inline void threefry_mix(uint32_t& x0, uint32_t& x1) {
  x0 += x1;
  x1 = (x1 << R) | (x1 >> (32 - R));
  x1 ^= x0;
}

/// Four rounds with the first (odd S) or second (even S) rotation set, then key injection S.
template <int S>
inline void threefry_block(const uint32_t (&ks)[3], uint32_t& x0, uint32_t& x1) {
  if constexpr (S % 2 == 1) {
    threefry_mix<13>(x0, x1);
    threefry_mix<15>(x0, x1);
    threefry_mix<26>(x0, x1);
    threefry_mix<6>(x0, x1);
  } else {
    threefry_mix<17>(x0, x1);
    threefry_mix<29>(x0, x1);
    threefry_mix<16>(x0, x1);
    threefry_mix<24>(x0, x1);
  }
  x0 += ks[S % 3];
  x1 += ks[(S + 1) % 3] + static_cast<uint32_t>(S);
}

inline void threefry2x32(uint32_t k0, uint32_t k1, uint32_t& x0, uint32_t& x1) {
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  threefry_block<1>(ks, x0, x1);
  threefry_block<2>(ks, x0, x1);
  threefry_block<3>(ks, x0, x1);
  threefry_block<4>(ks, x0, x1);
  threefry_block<5>(ks, x0, x1);
}

/// Word w of a run: one store when runs are whole words (then every run starts on a word), bytes otherwise.
inline void store_word(uint8_t* run, uint64_t bytes, uint64_t w, uint32_t value) {
  if (bytes % 4 == 0) {
    reinterpret_cast<uint32_t*>(run)[w] = value;
    return;
  }
  for (uint64_t b = 0; b < 4 && 4 * w + b < bytes; ++b) {
    run[4 * w + b] = static_cast<uint8_t>(value >> (8 * b));
  }
}

/// One thread per counter pair of each key; key k is keys[2k], keys[2k + 1].
extern "C" __global__ void nuvec_random_bits(uint8_t* __restrict__ out, const uint32_t* __restrict__ keys,
                                             uint64_t bytes, uint64_t words, uint64_t half, uint64_t total) {
  for (uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (uint64_t)gridDim.x * blockDim.x) {
    const uint64_t k = t / half;
    const uint64_t i = t - k * half;
    const bool paired = i + half < words;
    uint32_t x0 = static_cast<uint32_t>(i);
    uint32_t x1 = paired ? static_cast<uint32_t>(i + half) : 0u;
    threefry2x32(keys[2 * k], keys[2 * k + 1], x0, x1);
    uint8_t* run = out + k * bytes;
    store_word(run, bytes, i, x0);
    if (paired) {
      store_word(run, bytes, i + half, x1);
    }
  }
}
