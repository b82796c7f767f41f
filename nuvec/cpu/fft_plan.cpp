// FFT plans and their butterflies.
//
// Stockham's autosort form of Cooley-Tukey (decimation in frequency): a stage of radix r over a current length
// n = r m, applied to `stride` interleaved sequences, reads x[q + stride (p + j m)] for j < r, takes their r-point
// DFT, multiplies output k by exp(-2 pi i pk / n) and writes it to y[q + stride (r p + k)]. The next stage then
// works on length m with stride r * stride. The output lands in natural order with no bit reversal, ping-ponging
// between the line and a scratch line. Once the stride holds a whole vector, one butterfly runs on a Highway vector of
// consecutive q (unit-stride loads and stores); the first stages, with shorter strides, run one q at a time.
//
// Lengths with a prime factor above 7 use Bluestein's algorithm: with c_k = exp(-i pi k^2 / n), jk = (k^2 + j^2 -
// (k - j)^2) / 2 turns the DFT into X_k = c_k sum_j (x_j c_j) conj(c_{k-j}), a circular convolution of length
// m >= 2n - 1 (a power of two) done with two transforms of length m and a precomputed transformed filter.
//
// Inverse transforms conjugate the input and output of the forward transform.

#include "nuvec/cpu/fft_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <list>
#include <mutex>
#include <numbers>
#include <tuple>
#include <type_traits>
#include <utility>

#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu::fft {

namespace {

constexpr size_t cache_capacity = 16;            // plans kept per kind and precision
constexpr size_t stage_grain = size_t{1} << 14;  // elements of a stage per work item

/// cos and sin of -2 pi num / den, computed from an angle of at most pi / 4 and rotated by quarter turns, so the
/// roots at multiples of pi / 2 are exact (cos(pi / 2) is 0, not 6e-17) and small integer signals transform exactly,
/// as pocketfft's (MLX's) do.
std::pair<double, double> unit_root(uint64_t num, uint64_t den) {
  num %= den;
  const uint64_t quadrant = 4 * num / den;
  const uint64_t rest = 4 * num - quadrant * den;  // the angle within the quadrant is (pi / 2) rest / den
  const double quarter = std::numbers::pi / 2;
  double c = 0.0;
  double s = 0.0;
  if (2 * rest <= den) {
    const double t = quarter * static_cast<double>(rest) / static_cast<double>(den);
    c = std::cos(t);
    s = std::sin(t);
  } else {
    const double t = quarter * static_cast<double>(den - rest) / static_cast<double>(den);
    c = std::sin(t);
    s = std::cos(t);
  }
  for (uint64_t q = 0; q < quadrant; ++q) {
    std::tie(c, s) = std::pair{-s, c};
  }
  return {c, -s};
}

/// cos and sin of -2 pi t / R for t < R: the roots of unity an R-point DFT uses.
template <int R, class T>
struct Roots {
  T c[R];
  T s[R];
  Roots() {
    for (int t = 0; t < R; ++t) {
      const auto [cos_t, sin_t] = unit_root(static_cast<uint64_t>(t), R);
      c[t] = static_cast<T>(cos_t);
      s[t] = static_cast<T>(sin_t);
    }
  }
};

/// x broadcast to V (a Highway vector of T, or T itself).
template <class V, class T>
inline V splat(T x) {
  if constexpr (std::is_same_v<V, T>) {
    return x;
  } else {
    return hn::Set(hn::DFromV<V>(), x);
  }
}

/// The R-point DFT of (ar, ai) into (br, bi); V is T or a vector of T (lane by lane).
template <int R, class V, class T>
inline void dft(const V (&ar)[R], const V (&ai)[R], V (&br)[R], V (&bi)[R], const Roots<R, T>& w) {
  if constexpr (R == 2) {
    br[0] = ar[0] + ar[1];
    bi[0] = ai[0] + ai[1];
    br[1] = ar[0] - ar[1];
    bi[1] = ai[0] - ai[1];
  } else if constexpr (R == 4) {
    const V t0r = ar[0] + ar[2], t0i = ai[0] + ai[2];
    const V t1r = ar[0] - ar[2], t1i = ai[0] - ai[2];
    const V t2r = ar[1] + ar[3], t2i = ai[1] + ai[3];
    const V t3r = ar[1] - ar[3], t3i = ai[1] - ai[3];
    br[0] = t0r + t2r;
    bi[0] = t0i + t2i;
    br[2] = t0r - t2r;
    bi[2] = t0i - t2i;
    br[1] = t1r + t3i;  // t1 - i t3
    bi[1] = t1i - t3r;
    br[3] = t1r - t3i;  // t1 + i t3
    bi[3] = t1i + t3r;
  } else {
    // Odd R: pair a_j with a_{R-j}, so each output needs (R - 1) / 2 products of sums and of differences.
    constexpr int h = (R - 1) / 2;
    V pr[h + 1], pi[h + 1], mr[h + 1], mi[h + 1];
    br[0] = ar[0];
    bi[0] = ai[0];
    for (int j = 1; j <= h; ++j) {
      pr[j] = ar[j] + ar[R - j];
      pi[j] = ai[j] + ai[R - j];
      mr[j] = ar[j] - ar[R - j];
      mi[j] = ai[j] - ai[R - j];
      br[0] = br[0] + pr[j];
      bi[0] = bi[0] + pi[j];
    }
    for (int k = 1; k <= h; ++k) {
      V er = ar[0], ei = ai[0], or_ = splat<V>(T(0)), oi = splat<V>(T(0));
      for (int j = 1; j <= h; ++j) {
        const int t = (j * k) % R;
        er = er + pr[j] * splat<V>(w.c[t]);
        ei = ei + pi[j] * splat<V>(w.c[t]);
        or_ = or_ + mi[j] * splat<V>(w.s[t]);
        oi = oi - mr[j] * splat<V>(w.s[t]);
      }
      br[k] = er - or_;
      bi[k] = ei - oi;
      br[R - k] = er + or_;
      bi[R - k] = ei + oi;
    }
  }
}

/// Loads and stores of V (a vector or one T).
template <class V, class T>
inline V load(const T* p) {
  if constexpr (std::is_same_v<V, T>) {
    return *p;
  } else {
    return hn::LoadU(hn::DFromV<V>(), p);
  }
}
template <class V, class T>
inline void store(V v, T* p) {
  if constexpr (std::is_same_v<V, T>) {
    *p = v;
  } else {
    hn::StoreU(v, hn::DFromV<V>(), p);
  }
}

/// One butterfly on V (a vector of consecutive q, or one q): inputs at x[in + j in_step], outputs times the twiddles
/// (wr, wi) at y[out + k out_step].
template <int R, class V, class T>
inline void butterfly(const T* xr, const T* xi, T* yr, T* yi, size_t in, size_t in_step, size_t out, size_t out_step,
                      const V (&wr)[R], const V (&wi)[R], const Roots<R, T>& roots) {
  V ar[R], ai[R], br[R], bi[R];
  for (int j = 0; j < R; ++j) {
    ar[j] = load<V>(xr + in + j * in_step);
    ai[j] = load<V>(xi + in + j * in_step);
  }
  dft<R>(ar, ai, br, bi, roots);
  store(br[0], yr + out);
  store(bi[0], yi + out);
  for (int k = 1; k < R; ++k) {
    store(br[k] * wr[k] - bi[k] * wi[k], yr + out + k * out_step);
    store(br[k] * wi[k] + bi[k] * wr[k], yi + out + k * out_step);
  }
}

/// The butterflies of p in [p0, p1) of a stage, for every q: whole vectors of q where the stride allows, else one q
/// at a time with p innermost.
template <int R, class T>
void stage_block(size_t p0, size_t p1, size_t m, size_t s, const T* xr, const T* xi, T* yr, T* yi, const T* twr,
                 const T* twi) {
  static const Roots<R, T> roots;
  using D = hn::ScalableTag<T>;
  using V = hn::Vec<D>;
  const size_t lanes = hn::Lanes(D());
  if (s >= lanes) {
    V wr[R], wi[R];
    for (size_t p = p0; p < p1; ++p) {
      for (int k = 1; k < R; ++k) {
        wr[k] = hn::Set(D(), twr[(k - 1) * m + p]);
        wi[k] = hn::Set(D(), twi[(k - 1) * m + p]);
      }
      size_t q = 0;
      for (; q + lanes <= s; q += lanes) {
        butterfly<R>(xr, xi, yr, yi, q + s * p, s * m, q + s * R * p, s, wr, wi, roots);
      }
      T swr[R] = {}, swi[R] = {};
      for (int k = 1; k < R; ++k) {
        swr[k] = twr[(k - 1) * m + p];
        swi[k] = twi[(k - 1) * m + p];
      }
      for (; q < s; ++q) {
        butterfly<R>(xr, xi, yr, yi, q + s * p, s * m, q + s * R * p, s, swr, swi, roots);
      }
    }
    return;
  }
  T wr[R] = {}, wi[R] = {};
  for (size_t q = 0; q < s; ++q) {
    for (size_t p = p0; p < p1; ++p) {
      for (int k = 1; k < R; ++k) {
        wr[k] = twr[(k - 1) * m + p];
        wi[k] = twi[(k - 1) * m + p];
      }
      butterfly<R>(xr, xi, yr, yi, q + s * p, s * m, q + s * R * p, s, wr, wi, roots);
    }
  }
}

/// One Stockham stage of radix R from (xr, xi) to (yr, yi), split over p across the thread pool.
template <int R, class T>
void run_stage(const typename ComplexPlan<T>::Stage& st, const T* xr, const T* xi, T* yr, T* yi) {
  const size_t grain = std::max<size_t>(1, stage_grain / (R * st.stride));
  parallel_for(st.m, grain, [&](size_t p0, size_t p1) {
    stage_block<R, T>(p0, p1, st.m, st.stride, xr, xi, yr, yi, st.twiddle_re.data(), st.twiddle_im.data());
  });
}

/// The radices of n (fours first, then a two, threes, fives and sevens), or empty when n has another prime factor.
std::vector<int> factorize(size_t n) {
  std::vector<int> radices;
  for (int r : {4, 2, 3, 5, 7}) {
    while (n % static_cast<size_t>(r) == 0) {
      radices.push_back(r);
      n /= static_cast<size_t>(r);
    }
  }
  if (n != 1) {
    radices.clear();
  }
  return radices;
}

size_t next_power_of_two(size_t n) {
  size_t m = 1;
  while (m < n) {
    m *= 2;
  }
  return m;
}

template <class T>
void negate(T* x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    x[i] = -x[i];
  }
}

/// The stage loop of a radix factorize() gives.
template <class T>
auto stage_loop(int radix) {
  using Loop = void (*)(const typename ComplexPlan<T>::Stage&, const T*, const T*, T*, T*);
  const Loop loops[] = {nullptr,         nullptr,         run_stage<2, T>, run_stage<3, T>,
                        run_stage<4, T>, run_stage<5, T>, nullptr,         run_stage<7, T>};
  return loops[radix];
}

/// A cache of the last few plans of one kind, most recent first. Plans are built outside the lock (building a
/// Bluestein plan asks the cache for its power-of-two plan).
template <class P>
std::shared_ptr<const P> cached(size_t n) {
  static std::mutex mutex;
  static std::list<std::pair<size_t, std::shared_ptr<const P>>> entries;
  {
    std::lock_guard lock(mutex);
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      if (it->first == n) {
        entries.splice(entries.begin(), entries, it);
        return entries.front().second;
      }
    }
  }
  auto plan = std::make_shared<const P>(n);
  std::lock_guard lock(mutex);
  entries.emplace_front(n, plan);
  if (entries.size() > cache_capacity) {
    entries.pop_back();
  }
  return plan;
}

}  // namespace

// ---------------------------------------------------------------- complex plans

template <class T>
ComplexPlan<T>::ComplexPlan(size_t n) : n_(n) {
  const auto radices = factorize(n);
  if (!radices.empty() || n == 1) {
    size_t length = n;
    size_t stride = 1;
    for (int r : radices) {
      Stage st{length / static_cast<size_t>(r), stride, {}, {}, stage_loop<T>(r)};
      st.twiddle_re.resize((r - 1) * st.m);
      st.twiddle_im.resize((r - 1) * st.m);
      for (int k = 1; k < r; ++k) {
        for (size_t p = 0; p < st.m; ++p) {
          const auto [c, s] = unit_root(p * static_cast<size_t>(k), length);
          st.twiddle_re[(k - 1) * st.m + p] = static_cast<T>(c);
          st.twiddle_im[(k - 1) * st.m + p] = static_cast<T>(s);
        }
      }
      length = st.m;
      stride *= static_cast<size_t>(r);
      stages_.push_back(std::move(st));
    }
    return;
  }
  m_ = next_power_of_two(2 * n - 1);
  sub_ = complex_plan<T>(m_);
  chirp_re_.resize(n);
  chirp_im_.resize(n);
  // The filter is transformed in double whatever T is, so a float plan starts from an accurate filter.
  std::vector<double> fr(m_, 0.0), fi(m_, 0.0);
  for (size_t k = 0; k < n; ++k) {
    // The angle -pi k^2 / n, with k^2 taken mod 2n so it stays small and exact.
    const auto k2 = static_cast<uint64_t>(k) * k % (2 * static_cast<uint64_t>(n));
    const auto [c, s] = unit_root(k2, 2 * static_cast<uint64_t>(n));
    chirp_re_[k] = static_cast<T>(c);
    chirp_im_[k] = static_cast<T>(s);
    fr[k] = c;
    fi[k] = -s;
    if (k > 0) {
      fr[m_ - k] = c;
      fi[m_ - k] = -s;
    }
  }
  const auto wide = complex_plan<double>(m_);
  std::vector<double> scratch(wide->scratch_size());
  wide->forward(fr.data(), fi.data(), scratch.data());
  filter_re_.resize(m_);
  filter_im_.resize(m_);
  const double scale = 1.0 / static_cast<double>(m_);
  for (size_t k = 0; k < m_; ++k) {
    filter_re_[k] = static_cast<T>(fr[k] * scale);
    filter_im_[k] = static_cast<T>(fi[k] * scale);
  }
}

template <class T>
size_t ComplexPlan<T>::scratch_size() const {
  return m_ > 0 ? 2 * m_ + sub_->scratch_size() : 2 * n_;
}

template <class T>
void ComplexPlan<T>::forward(T* re, T* im, T* scratch) const {
  if (m_ > 0) {
    bluestein(re, im, scratch);
  } else {
    stockham(re, im, scratch);
  }
}

template <class T>
void ComplexPlan<T>::backward(T* re, T* im, T* scratch) const {
  negate(im, n_);
  forward(re, im, scratch);
  negate(im, n_);
}

template <class T>
void ComplexPlan<T>::stockham(T* re, T* im, T* scratch) const {
  T* xr = re;
  T* xi = im;
  T* yr = scratch;
  T* yi = scratch + n_;
  for (const auto& st : stages_) {
    st.run(st, xr, xi, yr, yi);
    std::swap(xr, yr);
    std::swap(xi, yi);
  }
  if (xr != re) {
    std::copy(xr, xr + n_, re);
    std::copy(xi, xi + n_, im);
  }
}

template <class T>
void ComplexPlan<T>::bluestein(T* re, T* im, T* scratch) const {
  T* ar = scratch;
  T* ai = scratch + m_;
  T* sub_scratch = scratch + 2 * m_;
  for (size_t k = 0; k < n_; ++k) {
    ar[k] = re[k] * chirp_re_[k] - im[k] * chirp_im_[k];
    ai[k] = re[k] * chirp_im_[k] + im[k] * chirp_re_[k];
  }
  std::fill(ar + n_, ar + m_, T(0));
  std::fill(ai + n_, ai + m_, T(0));
  sub_->forward(ar, ai, sub_scratch);
  for (size_t k = 0; k < m_; ++k) {
    const T r = ar[k] * filter_re_[k] - ai[k] * filter_im_[k];
    ai[k] = ar[k] * filter_im_[k] + ai[k] * filter_re_[k];
    ar[k] = r;
  }
  sub_->backward(ar, ai, sub_scratch);
  for (size_t k = 0; k < n_; ++k) {
    re[k] = ar[k] * chirp_re_[k] - ai[k] * chirp_im_[k];
    im[k] = ar[k] * chirp_im_[k] + ai[k] * chirp_re_[k];
  }
}

// ---------------------------------------------------------------- real plans

template <class T>
RealPlan<T>::RealPlan(size_t n) : n_(n) {
  if (n % 2 == 1) {
    complex_ = complex_plan<T>(n);
    return;
  }
  const size_t h = n / 2;
  complex_ = complex_plan<T>(h);
  twiddle_re_.resize(h + 1);
  twiddle_im_.resize(h + 1);
  for (size_t k = 0; k <= h; ++k) {
    const auto [c, s] = unit_root(k, n);
    twiddle_re_[k] = static_cast<T>(c);
    twiddle_im_[k] = static_cast<T>(s);
  }
}

template <class T>
size_t RealPlan<T>::scratch_size() const {
  return (n_ % 2 == 1 ? 0 : n_) + complex_->scratch_size();
}

template <class T>
void RealPlan<T>::forward(T* re, T* im, T* scratch) const {
  if (n_ % 2 == 1) {
    std::fill(im, im + n_, T(0));
    complex_->forward(re, im, scratch);
    return;
  }
  // z_j = x_{2j} + i x_{2j+1}; with Z = DFT(z), the even samples' DFT is E_k = (Z_k + conj(Z_{h-k})) / 2, the odd
  // ones' is O_k = (Z_k - conj(Z_{h-k})) / 2i, and X_k = E_k + exp(-2 pi i k / n) O_k.
  const size_t h = n_ / 2;
  T* zr = scratch;
  T* zi = scratch + h;
  for (size_t j = 0; j < h; ++j) {
    zr[j] = re[2 * j];
    zi[j] = re[2 * j + 1];
  }
  complex_->forward(zr, zi, scratch + n_);
  for (size_t k = 0; k <= h; ++k) {
    const size_t a = k == h ? 0 : k;
    const size_t b = k == 0 ? 0 : h - k;
    const T er = (zr[a] + zr[b]) / 2;
    const T ei = (zi[a] - zi[b]) / 2;
    const T dr = (zr[a] - zr[b]) / 2;
    const T di = (zi[a] + zi[b]) / 2;
    const T orr = di;  // O = -i D
    const T oi = -dr;
    re[k] = er + twiddle_re_[k] * orr - twiddle_im_[k] * oi;
    im[k] = ei + twiddle_re_[k] * oi + twiddle_im_[k] * orr;
  }
}

template <class T>
void RealPlan<T>::backward(T* re, T* im, T* scratch) const {
  im[0] = 0;
  if (n_ % 2 == 1) {
    for (size_t k = 1; 2 * k < n_; ++k) {
      re[n_ - k] = re[k];
      im[n_ - k] = -im[k];
    }
    complex_->backward(re, im, scratch);
    return;
  }
  // Undoes the forward pass: 2 E_k = X_k + conj(X_{h-k}), 2 O_k = (X_k - conj(X_{h-k})) exp(2 pi i k / n), and
  // Z_k = 2 (E_k + i O_k) is transformed back; the factor 2 makes the unscaled result n times x.
  const size_t h = n_ / 2;
  im[h] = 0;
  T* zr = scratch;
  T* zi = scratch + h;
  for (size_t k = 0; k < h; ++k) {
    const T sr = re[k] + re[h - k];
    const T si = im[k] - im[h - k];
    const T dr = re[k] - re[h - k];
    const T di = im[k] + im[h - k];
    const T wr = twiddle_re_[k];
    const T wi = -twiddle_im_[k];
    const T or_ = wr * dr - wi * di;
    const T oi = wr * di + wi * dr;
    zr[k] = sr - oi;  // + i O
    zi[k] = si + or_;
  }
  complex_->backward(zr, zi, scratch + n_);
  for (size_t j = 0; j < h; ++j) {
    re[2 * j] = zr[j];
    re[2 * j + 1] = zi[j];
  }
}

template <class T>
std::shared_ptr<const ComplexPlan<T>> complex_plan(size_t n) {
  return cached<ComplexPlan<T>>(n);
}

template <class T>
std::shared_ptr<const RealPlan<T>> real_plan(size_t n) {
  return cached<RealPlan<T>>(n);
}

template class ComplexPlan<float>;
template class ComplexPlan<double>;
template class RealPlan<float>;
template class RealPlan<double>;
template std::shared_ptr<const ComplexPlan<float>> complex_plan<float>(size_t);
template std::shared_ptr<const ComplexPlan<double>> complex_plan<double>(size_t);
template std::shared_ptr<const RealPlan<float>> real_plan<float>(size_t);
template std::shared_ptr<const RealPlan<double>> real_plan<double>(size_t);

}  // namespace nuvec::cpu::fft
