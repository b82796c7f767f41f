// Kernels that write at computed positions: Scatter, ScatterAxis and the reducing SliceUpdate. Compiled after
// gather.cu's text (its walk and index helpers), with value_t (the storage type), compute_t and nv_load/nv_store
// between them prepended for the output's dtype (a data-moving `none` uses the unsigned type of its size).
// Out-of-range updates are dropped as the CPU's scatter.cpp does.
//
// Each update slice's destination (targets, -1 when dropped) is computed first. Duplicates then resolve as the
// CPU's sequential loop does: `none` keeps the last update (a first pass claims each destination for the largest
// slice number that writes it, the second writes only the claimed updates), the reducing types combine all of
// them with atomics (integers, max and min exactly; float sums and products in whatever order they arrive).
#include "nuvec/cuda/prelude.cuh"

/// ScatterType's order: none, sum, prod, max, min.
#define NV_NONE 0
#define NV_SUM 1
#define NV_PROD 2
#define NV_MAX 3

/// A scatter's start on an axis, or -1 when the update does not fit there.
inline int64_t checked_start(int64_t index, int64_t dim, int64_t size) {
  if (index < 0) {
    index += dim;
  }
  return index >= 0 && index <= dim - size ? index : -1;
}

/// The CPU's combine: half floats in float32, integers wrapping, bools as or/and, max and min propagating NaN
/// (ties keep the old value). A template, so that the branches of other types are discarded.
template <class C>
inline C combine(C old, C update, int op) {
  if constexpr (std::is_same_v<C, bool>) {
    return (op == NV_SUM || op == NV_MAX) ? (old || update) : (old && update);
  } else {
    if (op == NV_SUM || op == NV_PROD) {
      if constexpr (std::is_integral_v<C>) {
        return op == NV_SUM ? nv::wrap_add(old, update) : nv::wrap_mul(old, update);
      } else {
        return op == NV_SUM ? old + update : old * update;
      }
    }
    if (old != old) {
      return old;
    }
    if (update != update) {
      return update;
    }
    return (op == NV_MAX ? update > old : old > update) ? update : old;
  }
}

/// The unsigned word a compare-and-swap replaces: the element's own for 4 and 8 bytes, the aligned 32-bit word
/// holding it for 1 and 2 (the buffer's allocation granule covers that word).
typedef std::conditional_t<sizeof(value_t) == 8, unsigned long long, unsigned> nv_word;

inline value_t combined(value_t old, value_t update, int op) {
  return nv_store(combine(nv_load(old), nv_load(update), op));
}

/// *p = combine(*p, update) atomically: hardware adds for float, double and 4- and 8-byte integer sums (integer
/// adds wrap alike), a compare-and-swap loop for the rest. V is value_t, a template parameter so that the branches
/// of other types are discarded.
template <class V>
inline void atomic_combine(V* p, V update, int op) {
  if constexpr (std::is_same_v<V, float> || std::is_same_v<V, double>) {
    if (op == NV_SUM) {
      atomicAdd(p, update);
      return;
    }
  } else if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool> && sizeof(V) >= 4) {
    if (op == NV_SUM) {
      atomicAdd(reinterpret_cast<nv_word*>(p), static_cast<nv_word>(update));
      return;
    }
  }
  if constexpr (sizeof(V) >= 4) {
    nv_word* word = reinterpret_cast<nv_word*>(p);
    nv_word seen = *word;
    while (true) {
      const nv_word next = std::bit_cast<nv_word>(combined(std::bit_cast<V>(seen), update, op));
      if (next == seen) {
        return;
      }
      const nv_word found = atomicCAS(word, seen, next);
      if (found == seen) {
        return;
      }
      seen = found;
    }
  } else {
    typedef std::conditional_t<sizeof(V) == 1, uint8_t, uint16_t> bits_t;
    const auto address = reinterpret_cast<unsigned long long>(p);
    unsigned* word = reinterpret_cast<unsigned*>(address & ~3ull);
    const unsigned shift = static_cast<unsigned>(address & 3ull) * 8u;
    const unsigned mask = static_cast<unsigned>(static_cast<bits_t>(~0u)) << shift;
    unsigned seen = *word;
    while (true) {
      const auto old = std::bit_cast<V>(static_cast<bits_t>(seen >> shift));
      const auto bits = static_cast<unsigned>(std::bit_cast<bits_t>(combined(old, update, op)));
      const unsigned next = (seen & ~mask) | (bits << shift);
      if (next == seen) {
        return;
      }
      const unsigned found = atomicCAS(word, seen, next);
      if (found == seen) {
        return;
      }
      seen = found;
    }
  }
}

/// Each slice's destination offset with one more indexed axis: -1 once a start does not fit; the walk over the
/// index shape gives the index's offset and a base offset that `first` starts from (ScatterAxis's position off the
/// axis; 0 for Scatter). keys, when given, gets the slice's position on the indexed axes (`key_stride` each).
extern "C" __global__ void nuvec_scatter_targets(int64_t* targets, int64_t* keys, const void* indices, int kind,
                                                 nv_walk<2> walk, int64_t count, int64_t dim, int64_t size,
                                                 int64_t stride, int64_t key_stride, int first) {
  NV_GRID_LOOP(n, count) {
    int64_t at[2];
    walk_offsets(walk, n, at);
    const int64_t start = checked_start(load_index(indices, at[0], kind), dim, size);
    const int64_t target = first ? at[1] : targets[n];
    targets[n] = target < 0 || start < 0 ? -1 : target + start * stride;
    if (keys != nullptr) {
      keys[n] = (first ? 0 : keys[n]) + start * key_stride;
    }
  }
}

/// `none`'s first pass: winner[key] = the largest slice number that writes there. With keys (slices that cannot
/// overlap), one key per slice, `total` slices; without, the destination element is the key, `total` elements.
extern "C" __global__ void nuvec_scatter_claim(unsigned* winner, const int64_t* targets, const int64_t* keys,
                                               nv_walk<2> walk, int64_t slice_size, int64_t total) {
  NV_GRID_LOOP(i, total) {
    const int64_t n = keys != nullptr ? i : i / slice_size;
    const int64_t target = targets != nullptr ? targets[n] : 0;
    if (target < 0) {
      continue;
    }
    int64_t key = 0;
    if (keys != nullptr) {
      key = keys[n];
    } else {
      int64_t at[2];
      walk_offsets(walk, i, at);
      key = target + at[1];
    }
    atomicMax(winner + key, static_cast<unsigned>(n));
  }
}

/// Combines element i of the updates into out: the walk over the updates' shape gives their offset and the
/// destination's within its slice (0 on the index axes), added to the slice's target (0 without targets). `none`
/// writes only where the slice won its key (every update without a winner array); `atomic` is off where no two
/// updates share a destination.
extern "C" __global__ void nuvec_scatter(value_t* out, const value_t* __restrict__ updates, const int64_t* targets,
                                         const int64_t* keys, const unsigned* winner, nv_walk<2> walk,
                                         int64_t slice_size, int64_t total, int op, int atomic) {
  NV_GRID_LOOP(i, total) {
    const int64_t n = i / slice_size;
    const int64_t target = targets != nullptr ? targets[n] : 0;
    if (target < 0) {
      continue;
    }
    int64_t at[2];
    walk_offsets(walk, i, at);
    value_t* d = out + target + at[1];
    const value_t update = updates[at[0]];
    if (op == NV_NONE) {
      if (winner == nullptr || winner[keys != nullptr ? keys[n] : target + at[1]] == static_cast<unsigned>(n)) {
        *d = update;
      }
    } else if (atomic) {
      atomic_combine(d, update, op);
    } else {
      *d = combined(*d, update, op);
    }
  }
}
