#pragma once

// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011), the
// counter-based hash behind JAX's and MLX's random keys. Shared by the CPU kernel of RandomBits and by the
// host-side split of the global key, so both give the same bits.

#include <cstddef>
#include <cstdint>

namespace nuvec::detail {

/// The key schedule's parity constant (Skein's C240).
inline constexpr uint32_t threefry_parity = 0x1BD11BDA;

template <int R>
[[gnu::always_inline]] inline void threefry_mix(uint32_t& x0, uint32_t& x1) {
  x0 += x1;
  x1 = (x1 << R) | (x1 >> (32 - R));
  x1 ^= x0;
}

/// Four rounds with the first (even) or second (odd) rotation set, then key injection `s` (1-based).
template <int S>
[[gnu::always_inline]] inline void threefry_block(const uint32_t (&ks)[3], uint32_t& x0, uint32_t& x1) {
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

/// Hashes the counter pair (x0, x1) in place under the key (k0, k1).
[[gnu::always_inline]] inline void threefry2x32(uint32_t k0, uint32_t k1, uint32_t& x0, uint32_t& x1) {
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ threefry_parity};
  x0 += ks[0];
  x1 += ks[1];
  threefry_block<1>(ks, x0, x1);
  threefry_block<2>(ks, x0, x1);
  threefry_block<3>(ks, x0, x1);
  threefry_block<4>(ks, x0, x1);
  threefry_block<5>(ks, x0, x1);
}

}  // namespace nuvec::detail
