// Sort, ArgSort, Partition, ArgPartition and SearchSorted.
//
// Every real dtype is sorted through order-preserving unsigned keys of its own width: integers flip their sign bit,
// floats (half types included) flip all bits when negative and the sign bit otherwise, and every NaN becomes the
// largest key, so NaNs go last as in NumPy and comparisons are integer comparisons. Sort and Partition decode the
// keys back (the encoding is lossless except for NaN payloads); the index ops pack a key of up to 32 bits with its
// index into one uint64 (unique items, so any sort of them is stable), and use a (key, index) pair for 64-bit keys.
// The index ops and SearchSorted map -0.0 to +0.0 first, so equal values tie; Sort keeps -0.0 before +0.0.
//
// Full sorts of 16- to 64-bit keys and of packed (key, index) items use Highway's VQSort (vectorized quicksort; 3x
// an LSD radix sort on 2^24 keys here). One-byte keys and (64-bit key, index) pairs in rows of radix_min_row or
// more use an LSD radix sort on bytes (passes whose byte is the same for the whole row are skipped; the first pass
// encodes as it reads the input and the last decodes as it writes the output), shorter ones std::sort. Partition uses std::nth_element on the keys. complex64 is
// ordered as NumPy orders it (lexicographic, NaNs last) through a comparison function instead of keys.
//
// Rows along any axis: each row is gathered from the input's strides into a contiguous scratch row, and written to
// the row-contiguous output with the output's stride along the axis. Rows are split across the thread pool.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <type_traits>
#include <vector>

#include <hwy/contrib/sort/vqsort.h>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/element_types.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/strided.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

constexpr int64_t radix_min_row = 1024;  // below this, std::sort beats the radix passes' fixed cost
constexpr size_t grain_elements = size_t{1} << 15;

// ---------------------------------------------------------------- keys

/// The unsigned key of T's width.
template <class T>
using key_t = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

/// Order-preserving key; with canonical_zero, -0.0 gets +0.0's key.
template <class T, bool canonical_zero>
key_t<T> encode(T x) {
  using K = key_t<T>;
  constexpr K sign = K{1} << (8 * sizeof(K) - 1);
  const auto bits = std::bit_cast<K>(x);
  if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
    return bits;
  } else if constexpr (std::is_integral_v<T>) {
    return bits ^ sign;
  } else {
    constexpr K inf = std::bit_cast<K>(T(std::numeric_limits<float>::infinity()));
    if ((bits & K(~sign)) > inf) {
      return K(~K{0});
    }
    if constexpr (canonical_zero) {
      if (bits == sign) {
        return sign;
      }
    }
    return K(bits ^ (K(K{0} - K(bits >> (8 * sizeof(K) - 1))) | sign));
  }
}

template <class T>
T decode(key_t<T> key) {
  using K = key_t<T>;
  constexpr K sign = K{1} << (8 * sizeof(K) - 1);
  if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
    return std::bit_cast<T>(key);
  } else if constexpr (std::is_integral_v<T>) {
    return std::bit_cast<T>(K(key ^ sign));
  } else {
    return std::bit_cast<T>(K(key ^ (K(K(key >> (8 * sizeof(K) - 1)) - K{1}) | sign)));
  }
}

/// NumPy's complex order: numbers without NaN parts first (lexicographic on real, imag), then a NaN imaginary part
/// (by real), then a NaN real part (by imag), then both NaN.
bool complex_less(complex64_t a, complex64_t b) {
  auto nan_class = [](complex64_t z) { return (std::isnan(z.real()) ? 2 : 0) + (std::isnan(z.imag()) ? 1 : 0); };
  const int ca = nan_class(a);
  const int cb = nan_class(b);
  if (ca != cb) {
    return ca < cb;
  }
  if (ca == 0) {
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  }
  return ca == 1 ? a.real() < b.real() : ca == 2 && a.imag() < b.imag();
}

// ---------------------------------------------------------------- index items

/// A key of up to 32 bits and its index in one integer: ordering items orders keys, then indices.
template <class K>
struct PackedItems {
  using Item = uint64_t;
  static Item make(K key, uint32_t index) { return (uint64_t{key} << 32) | index; }
  static uint32_t index(Item item) { return static_cast<uint32_t>(item); }
  static constexpr int first_byte = 4;
};

struct WideItem {
  uint64_t key;
  uint32_t index;
  friend bool operator<(const WideItem& a, const WideItem& b) {
    return a.key < b.key || (a.key == b.key && a.index < b.index);
  }
};
struct WideItems {
  using Item = WideItem;
  static Item make(uint64_t key, uint32_t index) { return {key, index}; }
  static uint32_t index(Item item) { return item.index; }
  static constexpr int first_byte = 0;
};

template <class K>
using items_t = std::conditional_t<sizeof(K) <= 4, PackedItems<K>, WideItems>;

template <class I>
unsigned byte_of(I item, int b) {
  if constexpr (std::is_same_v<I, WideItem>) {
    return static_cast<unsigned>(item.key >> (8 * b)) & 0xFFU;
  } else {
    return static_cast<unsigned>(item >> (8 * b)) & 0xFFU;
  }
}

/// Stable LSD radix sort of the n items load(0), ..., load(n - 1) on bytes [first_byte, first_byte + bytes): calls
/// store(position, item) once per item with its sorted position. The first pass reads through `load` and the last
/// writes through `store`, so encoding and decoding cost no passes of their own; `a` and `b` are scratch.
template <class I, class Load, class Store>
void radix_sort(size_t n, int first_byte, int bytes, Load&& load, Store&& store, std::vector<I>& a,
                std::vector<I>& b) {
  std::array<std::array<size_t, 256>, 8> counts{};
  for (size_t i = 0; i < n; ++i) {
    const I item = load(i);
    for (int k = 0; k < bytes; ++k) {
      ++counts[k][byte_of(item, first_byte + k)];
    }
  }
  std::array<int, 8> passes{};
  int active = 0;
  const I first = load(0);
  for (int k = 0; k < bytes; ++k) {
    if (counts[k][byte_of(first, first_byte + k)] != n) {  // a byte shared by every item would move nothing
      size_t total = 0;
      for (auto& c : counts[k]) {
        total += std::exchange(c, total);
      }
      passes[active++] = k;
    }
  }
  if (active == 0) {
    for (size_t i = 0; i < n; ++i) {
      store(i, load(i));
    }
    return;
  }
  auto pass = [&](int k, auto&& get, auto&& put) {
    auto& offset = counts[passes[k]];
    const int byte = first_byte + passes[k];
    for (size_t i = 0; i < n; ++i) {
      const I item = get(i);
      put(offset[byte_of(item, byte)]++, item);
    }
  };
  if (active == 1) {
    pass(0, load, store);
    return;
  }
  a.resize(n);
  b.resize(n);
  I* src = b.data();
  I* dst = a.data();
  auto to_dst = [&](size_t pos, I item) { dst[pos] = item; };
  auto from_src = [&](size_t i) { return src[i]; };
  pass(0, load, to_dst);
  for (int k = 1; k + 1 < active; ++k) {
    std::swap(src, dst);
    pass(k, from_src, to_dst);
  }
  std::swap(src, dst);
  pass(active - 1, from_src, store);
}

// ---------------------------------------------------------------- rows

/// The rows of `a` along `axis`: where each starts in the input (strided) and in the row-contiguous output.
struct Rows {
  Rows(const array& a, int axis) : n(a.shape(axis)), in_stride(a.strides(axis)) {
    for (int i = 0; i < a.ndim(); ++i) {
      if (i != axis) {
        outer_shape.push_back(a.shape(i));
        outer_strides.push_back(a.strides(i));
      }
    }
    for (int i = axis + 1; i < a.ndim(); ++i) {
      out_stride *= a.shape(i);
    }
    count = n == 0 ? 0 : a.size() / static_cast<size_t>(n);
  }
  [[nodiscard]] int64_t in_offset(size_t r) const { return element_offset(r, outer_shape, outer_strides); }
  [[nodiscard]] int64_t out_offset(size_t r) const {
    const auto inner = static_cast<size_t>(out_stride);
    return static_cast<int64_t>((r / inner) * static_cast<size_t>(n) * inner + r % inner);
  }
  /// Runs fn(first_row, last_row) over the rows, split across the pool.
  template <class Fn>
  void parallel(Fn&& fn) const {
    parallel_for(count, std::max<size_t>(1, grain_elements / std::max<size_t>(1, static_cast<size_t>(n))), fn);
  }

  int64_t n;
  int64_t in_stride;
  int64_t out_stride = 1;
  size_t count = 0;
  Shape outer_shape;
  Strides outer_strides;
};

/// Whether `kth` selection or a full sort arranges a row.
enum class Arrange { sort, select };

template <class T>
void arrange_values(const array& a, array& out, int axis, Arrange how, int kth) {
  const Rows rows(a, axis);
  const T* x = a.data<T>();
  T* y = out.data<T>();
  const int64_t n = rows.n;
  rows.parallel([&](size_t begin, size_t end) {
    if constexpr (is_complex_v<T>) {
      std::vector<T> row(static_cast<size_t>(n));
      for (size_t r = begin; r < end; ++r) {
        const T* src = x + rows.in_offset(r);
        for (int64_t i = 0; i < n; ++i) {
          row[i] = src[i * rows.in_stride];
        }
        if (how == Arrange::sort) {
          std::sort(row.begin(), row.end(), complex_less);
        } else {
          std::nth_element(row.begin(), row.begin() + kth, row.end(), complex_less);
        }
        T* dst = y + rows.out_offset(r);
        for (int64_t i = 0; i < n; ++i) {
          dst[i * rows.out_stride] = row[i];
        }
      }
    } else {
      using K = key_t<T>;
      hwy::Sorter sorter;  // one per thread: it keeps scratch space
      std::vector<K> keys;
      std::vector<K> scratch;
      for (size_t r = begin; r < end; ++r) {
        const T* src = x + rows.in_offset(r);
        T* dst = y + rows.out_offset(r);
        const int64_t is = rows.in_stride;
        const int64_t os = rows.out_stride;
        auto load = [&](size_t i) { return encode<T, false>(src[static_cast<int64_t>(i) * is]); };
        auto store = [&](size_t i, K key) { dst[static_cast<int64_t>(i) * os] = decode<T>(key); };
        if constexpr (sizeof(K) == 1) {
          if (how == Arrange::sort && n >= radix_min_row) {
            radix_sort<K>(static_cast<size_t>(n), 0, 1, load, store, keys, scratch);
            continue;
          }
        }
        keys.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          keys[i] = load(static_cast<size_t>(i));
        }
        if (how == Arrange::select) {
          std::nth_element(keys.begin(), keys.begin() + kth, keys.end());
        } else if constexpr (sizeof(K) == 1) {
          std::sort(keys.begin(), keys.end());
        } else {
          sorter(keys.data(), keys.size(), hwy::SortAscending());
        }
        for (int64_t i = 0; i < n; ++i) {
          store(static_cast<size_t>(i), keys[i]);
        }
      }
    }
  });
}

template <class T>
void arrange_indices(const array& a, array& out, int axis, Arrange how, int kth) {
  const Rows rows(a, axis);
  const T* x = a.data<T>();
  auto* y = out.data<uint32_t>();
  const int64_t n = rows.n;
  rows.parallel([&](size_t begin, size_t end) {
    if constexpr (is_complex_v<T>) {
      std::vector<uint32_t> order(static_cast<size_t>(n));
      for (size_t r = begin; r < end; ++r) {
        const T* src = x + rows.in_offset(r);
        auto less = [&](uint32_t i, uint32_t j) { return complex_less(src[i * rows.in_stride], src[j * rows.in_stride]); };
        std::iota(order.begin(), order.end(), 0U);
        if (how == Arrange::sort) {
          std::stable_sort(order.begin(), order.end(), less);
        } else {
          std::nth_element(order.begin(), order.begin() + kth, order.end(), less);
        }
        uint32_t* dst = y + rows.out_offset(r);
        for (int64_t i = 0; i < n; ++i) {
          dst[i * rows.out_stride] = order[i];
        }
      }
    } else {
      using K = key_t<T>;
      using Items = items_t<K>;
      using Item = typename Items::Item;
      constexpr bool packed = std::is_same_v<Item, uint64_t>;
      hwy::Sorter sorter;  // one per thread: it keeps scratch space
      std::vector<Item> items;
      std::vector<Item> scratch;
      for (size_t r = begin; r < end; ++r) {
        const T* src = x + rows.in_offset(r);
        uint32_t* dst = y + rows.out_offset(r);
        const int64_t is = rows.in_stride;
        const int64_t os = rows.out_stride;
        auto load = [&](size_t i) {
          return Items::make(encode<T, true>(src[static_cast<int64_t>(i) * is]), static_cast<uint32_t>(i));
        };
        auto store = [&](size_t i, Item item) { dst[static_cast<int64_t>(i) * os] = Items::index(item); };
        // One-byte keys take a single counting pass; 64-bit keys with their indices are too wide for VQSort.
        if constexpr (!packed || sizeof(K) == 1) {
          if (how == Arrange::sort && n >= radix_min_row) {
            radix_sort<Item>(static_cast<size_t>(n), Items::first_byte, sizeof(K), load, store, items, scratch);
            continue;
          }
        }
        items.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          items[i] = load(static_cast<size_t>(i));
        }
        if (how == Arrange::select) {
          std::nth_element(items.begin(), items.begin() + kth, items.end());
        } else if constexpr (packed) {
          sorter(items.data(), items.size(), hwy::SortAscending());
        } else {
          std::sort(items.begin(), items.end());
        }
        for (int64_t i = 0; i < n; ++i) {
          store(static_cast<size_t>(i), items[i]);
        }
      }
    }
  });
}

void allocate(array& out) { out.set_data(allocator::malloc(out.nbytes())); }

}  // namespace

void run(const Sort& p, const Inputs& in, Outputs& out) {
  allocate(out[0]);
  dispatch(in[0].dtype(), [&]<class T>(type_tag<T>) { arrange_values<T>(in[0], out[0], p.axis, Arrange::sort, 0); });
}

void run(const ArgSort& p, const Inputs& in, Outputs& out) {
  allocate(out[0]);
  dispatch(in[0].dtype(), [&]<class T>(type_tag<T>) { arrange_indices<T>(in[0], out[0], p.axis, Arrange::sort, 0); });
}

void run(const Partition& p, const Inputs& in, Outputs& out) {
  allocate(out[0]);
  dispatch(in[0].dtype(),
           [&]<class T>(type_tag<T>) { arrange_values<T>(in[0], out[0], p.axis, Arrange::select, p.kth); });
}

void run(const ArgPartition& p, const Inputs& in, Outputs& out) {
  allocate(out[0]);
  dispatch(in[0].dtype(),
           [&]<class T>(type_tag<T>) { arrange_indices<T>(in[0], out[0], p.axis, Arrange::select, p.kth); });
}

void run(const SearchSorted& p, const Inputs& in, Outputs& out) {
  const auto& sorted = in[0];
  const auto& values = in[1];
  auto& o = out[0];
  allocate(o);
  auto* y = o.data<int64_t>();
  dispatch(sorted.dtype(), [&]<class T>(type_tag<T>) {
    const auto n = static_cast<size_t>(sorted.shape(0));
    // Contiguous copies: the sorted array is read many times, the values once each.
    auto a = std::make_unique<T[]>(n);  // not vector: T may be bool
    copy_strided(sorted.shape(), sorted.raw_data(), sorted.dtype(), sorted.strides(), a.get(), sorted.dtype(), {1});
    const size_t m = values.size();
    auto v = std::make_unique<T[]>(m);
    copy_strided(values.shape(), values.raw_data(), values.dtype(), values.strides(), v.get(), values.dtype(),
                 row_major_strides(values.shape()));
    auto search = [&](const auto* keys, auto&& key_of, auto&& less) {
      parallel_for(m, grain_elements / 16, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
          const auto key = key_of(v[i]);
          const auto* at = p.right ? std::upper_bound(keys, keys + n, key, less) : std::lower_bound(keys, keys + n, key, less);
          y[i] = at - keys;
        }
      });
    };
    if constexpr (is_complex_v<T>) {
      search(a.get(), [](T x) { return x; }, complex_less);
    } else {
      std::vector<key_t<T>> keys(n);
      std::transform(a.get(), a.get() + n, keys.begin(), encode<T, true>);
      search(keys.data(), encode<T, true>, std::less<>{});
    }
  });
}

}  // namespace nuvec::cpu
