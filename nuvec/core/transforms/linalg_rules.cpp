// Rules of the LAPACK-backed primitives: the matrix-calculus identities for
// inverse, solve, Cholesky, LU, symmetric and general eigendecompositions, QR
// and SVD; most jvps transpose the vjps. All are batched over leading axes, so
// vmap moves the mapped axis in front.

#include "nuvec/core/linalg.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

namespace {

array mT(const array& a) { return swapaxes(a, -1, -2); }

/// The decompositions' rules are written for real matrices (transposes, not conjugate transposes).
void require_real(std::string_view transform, std::string_view primitive, const array& a) {
  if (a.dtype() == complex64) {
    throw_no_rule(transform, primitive, "the derivative of a complex matrix's decomposition is not implemented");
  }
}

/// The part of a square matrix a triangular primitive reads.
array triangle(const array& a, bool upper) { return upper ? triu(a) : tril(a); }

/// X with T X = B for a triangular T stored in its upper (or lower) triangle.
array triangular_solve(const array& t, const array& b, bool upper) {
  return reapply(Solve{true, upper}, {t, b}, b.shape(), b.dtype());
}

array symmetrized(const array& a) { return (a + mT(a)) * 0.5F; }

/// a[..., r0:r1, c0:c1] on the last two axes (a stop of -1: the axis' end).
array block(const array& a, int r0, int r1, int c0, int c1) {
  Shape start(static_cast<size_t>(a.ndim()), 0);
  Shape stop = a.shape();
  size_t rows = start.size() - 2;
  start[rows] = r0;
  start[rows + 1] = c0;
  stop[rows] = r1 < 0 ? a.shape(-2) : r1;
  stop[rows + 1] = c1 < 0 ? a.shape(-1) : c1;
  return slice(a, start, stop);
}

/// B T^-T for a triangular T (upper or lower, as stored): the solve T X^T = B^T, transposed.
array times_inverse_transposed(const array& b, const array& t, bool upper) {
  return mT(triangular_solve(t, mT(b), upper));
}

Batched all_front(const Primitive& p, const VmapArgs& args) {
  std::vector<array> inputs;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    inputs.push_back(batched_front(args, i));
  }
  return reapply_front(p, std::move(inputs), args);
}

}  // namespace

// ---- Inverse

std::vector<array> vjp_of(const Inverse& p, const VjpArgs& args) {
  const auto& y = args.outputs[0];
  auto grad = negative(matmul(matmul(mT(y), args.cotangents[0]), mT(y)));
  return {p.triangular ? triangle(grad, p.upper) : grad};
}
std::vector<array> jvp_of(const Inverse& p, const JvpArgs& args) {
  const auto& y = args.outputs[0];
  auto t = p.triangular ? triangle(args.tangents[0], p.upper) : args.tangents[0];
  return {negative(matmul(matmul(y, t), y))};
}
Batched vmap_of(const Inverse& p, const VmapArgs& args) { return all_front(p, args); }

// ---- Solve (A, B) -> X

std::vector<array> vjp_of(const Solve& p, const VjpArgs& args) {
  const auto& a = args.primals[0];
  const auto& x = args.outputs[0];
  auto grad_b = reapply(Solve{p.triangular, !p.upper}, {mT(a), args.cotangents[0]}, x.shape(), x.dtype());
  std::vector<array> grads;
  for (int which : args.argnums) {
    if (which == 1) {
      grads.push_back(grad_b);
    } else {
      auto grad_a = negative(matmul(grad_b, mT(x)));
      grads.push_back(p.triangular ? triangle(grad_a, p.upper) : grad_a);
    }
  }
  return grads;
}
std::vector<array> jvp_of(const Solve& p, const JvpArgs& args) {
  const auto& a = args.primals[0];
  const auto& x = args.outputs[0];
  std::optional<array> rhs;
  if (const array* tb = tangent_of(args, 1)) {
    rhs = *tb;
  }
  if (const array* ta = tangent_of(args, 0)) {
    auto term = negative(matmul(p.triangular ? triangle(*ta, p.upper) : *ta, x));
    rhs = rhs ? add(*rhs, term) : term;
  }
  return reapply(p, {a, *rhs}, args.outputs);
}
Batched vmap_of(const Solve& p, const VmapArgs& args) { return all_front(p, args); }

// ---- Cholesky: A = L L^T (or U^T U)

std::vector<array> vjp_of(const Cholesky& p, const VjpArgs& args) {
  auto l = p.upper ? mT(args.outputs[0]) : args.outputs[0];
  auto l_bar = p.upper ? mT(args.cotangents[0]) : args.cotangents[0];
  // Phi: the lower triangle with the diagonal halved.
  auto m = matmul(mT(l), l_bar);
  auto phi = tril(m, -1) + tril(triu(m)) * 0.5F;
  // S = L^-T Phi L^-1, by two triangular solves with L^T.
  auto z = triangular_solve(mT(l), phi, true);
  auto s = mT(triangular_solve(mT(l), mT(z), true));
  return {symmetrized(s)};
}
std::vector<array> jvp_of(const Cholesky& p, const JvpArgs& args) { return jvp_by_transposing_vjp(p, args); }
Batched vmap_of(const Cholesky& p, const VmapArgs& args) { return all_front(p, args); }

// ---- Eigh: A = V diag(w) V^T

std::vector<array> vjp_of(const Eigh& p, const VjpArgs& args) {
  const auto& a = args.primals[0];
  require_real("vjp", Eigh::name, a);
  auto pair = p.compute_vectors ? args.outputs : reapply(Eigh{p.upper, true}, {a}, [&] {
    return std::vector<array>{args.outputs[0], a};
  }());
  const auto& w = pair[0];
  const auto& v = pair[1];
  auto inner = expand_dims(args.cotangents[0], -1) * eye(a.shape(-1), a.dtype());
  if (p.compute_vectors) {
    // F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it.
    auto gaps = expand_dims(w, -2) - expand_dims(w, -1);
    auto off = logical_not(astype(eye(a.shape(-1)), bool_));
    auto f = where(off, reciprocal(where(off, gaps, ones_like(gaps))), zeros_like(gaps));
    inner = inner + f * matmul(mT(v), args.cotangents[1]);
  }
  return {symmetrized(matmul(matmul(v, inner), mT(v)))};
}
std::vector<array> jvp_of(const Eigh& p, const JvpArgs& args) { return jvp_by_transposing_vjp(p, args); }
Batched vmap_of(const Eigh& p, const VmapArgs& args) { return all_front(p, args); }

// ---- QR (reduced)

namespace {

/// The vjp of a reduced QR with M >= N (R square).
array qr_vjp_tall(const array& q, const array& r, const array& q_bar, const array& r_bar) {
  auto m = matmul(r, mT(r_bar)) - matmul(mT(q_bar), q);
  // copyltu(M): the lower triangle mirrored onto the upper one.
  auto lower = tril(m, -1);
  auto copied = lower + mT(lower) + tril(triu(m));
  // A_bar = (Q_bar + Q copyltu(M)) R^-T.
  return times_inverse_transposed(q_bar + matmul(q, copied), r, true);
}

}  // namespace

std::vector<array> vjp_of(const QRF&, const VjpArgs& args) {
  const auto& a = args.primals[0];
  const auto& q = args.outputs[0];
  const auto& r = args.outputs[1];
  const auto& q_bar = args.cotangents[0];
  const auto& r_bar = args.cotangents[1];
  int m = a.shape(-2);
  if (m >= a.shape(-1)) {
    return {qr_vjp_tall(q, r, q_bar, r_bar)};
  }
  // M < N: A = [X Y] with X = Q R1 square and R2 = Q^T Y, so Y's cotangent is Q R2_bar and Q's gains Y R2_bar^T.
  auto y = block(a, 0, -1, m, -1);
  auto r2_bar = block(r_bar, 0, -1, m, -1);
  auto x_bar = qr_vjp_tall(q, block(r, 0, -1, 0, m), q_bar + matmul(y, mT(r2_bar)), block(r_bar, 0, -1, 0, m));
  return {concatenate({x_bar, matmul(q, r2_bar)}, -1)};
}
std::vector<array> jvp_of(const QRF& p, const JvpArgs& args) { return jvp_by_transposing_vjp(p, args); }
Batched vmap_of(const QRF& p, const VmapArgs& args) { return all_front(p, args); }

// ---- SVD. With U and V, PyTorch's svd_backward: only the first K = min(M, N) columns of U and rows of Vt enter
// (the others are an arbitrary basis of the complement, whose cotangents are dropped as PyTorch does for
// full_matrices), and a loss must not depend on the signs of singular vectors.

std::vector<array> vjp_of(const SVD& p, const VjpArgs& args) {
  const auto& a = args.primals[0];
  require_real("vjp", SVD::name, a);
  int m = a.shape(-2);
  int n = a.shape(-1);
  int k = std::min(m, n);
  auto usv = p.compute_uv ? args.outputs : reapply(SVD{true}, {a}, [&] {
    Shape batch(a.shape().begin(), a.shape().end() - 2);
    auto with = [&](Shape tail) {
      Shape s = batch;
      s.insert(s.end(), tail.begin(), tail.end());
      return zeros(s, a.dtype());
    };
    return std::vector<array>{with({m, m}), args.outputs[0], with({n, n})};
  }());
  auto u = block(usv[0], 0, -1, 0, k);
  const auto& s = usv[1];
  auto vt = block(usv[2], 0, k, 0, -1);
  const auto& s_bar = args.cotangents[p.compute_uv ? 1 : 0];
  if (!p.compute_uv) {
    return {matmul(u * expand_dims(s_bar, -2), vt)};
  }
  auto u_bar = block(args.cotangents[0], 0, -1, 0, k);
  auto vt_bar = block(args.cotangents[2], 0, k, 0, -1);
  // inner = (skew(U^T U_bar) S + S skew(V^T V_bar)) / E + diag(S_bar), E_ij = s_j^2 - s_i^2 (1 on the diagonal,
  // where both skew parts vanish).
  auto skew = [](const array& x) { return x - mT(x); };
  auto uu = skew(matmul(mT(u), u_bar));
  auto vv = skew(matmul(vt, mT(vt_bar)));
  auto s2 = square(s);
  auto e = expand_dims(s2, -2) - expand_dims(s2, -1) + eye(k, s.dtype());
  auto inner = (uu * expand_dims(s, -2) + expand_dims(s, -1) * vv) / e + expand_dims(s_bar, -1) * eye(k, s.dtype());
  if (m > n) {
    // Plus (I - U U^T) U_bar S^-1, the part of U_bar outside U's span.
    auto scaled = u_bar / expand_dims(s, -2);
    return {matmul(matmul(u, inner) + scaled - matmul(u, matmul(mT(u), scaled)), vt)};
  }
  if (m < n) {
    // Plus S^-1 Vt_bar (I - V V^T).
    auto scaled = vt_bar / expand_dims(s, -1);
    return {matmul(u, matmul(inner, vt) + scaled - matmul(matmul(scaled, mT(vt)), vt))};
  }
  return {matmul(matmul(u, inner), vt)};
}
std::vector<array> jvp_of(const SVD& p, const JvpArgs& args) { return jvp_by_transposing_vjp(p, args); }
Batched vmap_of(const SVD& p, const VmapArgs& args) { return all_front(p, args); }

// ---- LU with partial pivoting: A = P X, X = L U (L unit lower M x K, U upper K x N, K = min(M, N)), the
// outputs' cotangent read as L_bar (strictly lower part) and U_bar (upper part). For square X, dX = dL U + L dU
// gives X_bar = L^-T (tril(L^T L_bar, -1) + triu(U_bar U^T)) U^-T. Tall and wide X split off the rows of L (or
// columns of U) past K, which are X's rows (columns) times U^-1 (L^-1), and fold their cotangents into the square
// part. The permutation is piecewise constant: it carries no derivative.

namespace {

/// The row permutation of an LUF node. lu_factor drops it, and a dropped output is a stand-in without data: the
/// factorization then runs again for it.
array permutation(const VjpArgs& args) {
  const auto& perm = args.outputs[2];
  for (const auto& sibling : args.outputs[0].siblings()) {
    if (sibling.id() == perm.id()) {
      return perm;
    }
  }
  return reapply(LUF{}, {args.primals[0]}, args.outputs)[2];
}

}  // namespace

std::vector<array> vjp_of(const LUF&, const VjpArgs& args) {
  const auto& lu = args.outputs[0];
  auto perm = permutation(args);
  const auto& ct = args.cotangents[0];
  int m = lu.shape(-2);
  int n = lu.shape(-1);
  int k = std::min(m, n);
  auto l = block(tril(lu, -1), 0, -1, 0, k) + eye(m, k, 0, lu.dtype());
  auto u = block(triu(lu), 0, k, 0, -1);
  auto l_bar = block(tril(ct, -1), 0, -1, 0, k);
  auto u_bar = block(triu(ct), 0, k, 0, -1);
  array x_bar = ct;
  if (m >= n) {
    auto l1 = block(l, 0, k, 0, -1);
    auto l1_bar = block(l_bar, 0, k, 0, -1);
    auto core = matmul(u_bar, mT(u));
    if (m > n) {
      core = core - matmul(mT(block(l, k, -1, 0, -1)), block(l_bar, k, -1, 0, -1));
    }
    core = tril(matmul(mT(l1), l1_bar), -1) + triu(core);
    x_bar = times_inverse_transposed(triangular_solve(mT(l1), core, true), u, true);
    if (m > n) {
      x_bar = concatenate({x_bar, times_inverse_transposed(block(l_bar, k, -1, 0, -1), u, true)}, -2);
    }
  } else {
    auto u1 = block(u, 0, -1, 0, k);
    auto u2 = block(u, 0, -1, k, -1);
    auto u2_bar = block(u_bar, 0, -1, k, -1);
    auto core =
        tril(matmul(mT(l), l_bar) - matmul(u2_bar, mT(u2)), -1) + triu(matmul(block(u_bar, 0, -1, 0, k), mT(u1)));
    x_bar = concatenate({times_inverse_transposed(triangular_solve(mT(l), core, true), u1, true),
                         triangular_solve(mT(l), u2_bar, true)},
                        -1);
  }
  // A's row i is X's row perm[i].
  return {take_along_axis(x_bar, expand_dims(perm, -1), -2)};
}
std::vector<array> jvp_of(const LUF& p, const JvpArgs& args) { return jvp_by_transposing_vjp(p, args); }
Batched vmap_of(const LUF& p, const VmapArgs& args) { return all_front(p, args); }

// ---- Eig: A V = V diag(w) with unit (complex) eigenvector columns, PyTorch's linalg_eig_backward:
// A_bar = Re(V^-H (diag(w_bar) + (V^H V_bar - V^H V diag(Re(diag(V^H V_bar)))) / conj(E)) V^H),
// E_ij = w_j - w_i off the diagonal (the diagonal holds w_bar). Each eigenvector's phase is arbitrary: only losses
// that do not depend on it have a derivative (|V|, V V^H, ...). The outputs are complex64; complex matrices are
// handled as (real, imaginary) pairs of A's dtype, so only real LAPACK solves are needed.

namespace {

struct Complex {
  array re;
  array im;
};

Complex split(const array& z, Dtype dtype) { return {astype(real(z), dtype), astype(imag(z), dtype)}; }

array joined(const Complex& z) {
  return astype(z.re, complex64) + astype(z.im, complex64) * array(complex64_t{0.0F, 1.0F});
}

Complex product(const Complex& a, const Complex& b) {
  return {matmul(a.re, b.re) - matmul(a.im, b.im), matmul(a.re, b.im) + matmul(a.im, b.re)};
}

Complex adjoint(const Complex& a) { return {mT(a.re), negative(mT(a.im))}; }

/// X with A X = B, through the real system [[Ar, -Ai], [Ai, Ar]] [Xr; Xi] = [Br; Bi].
Complex complex_solve(const Complex& a, const Complex& b) {
  auto system = concatenate({concatenate({a.re, negative(a.im)}, -1), concatenate({a.im, a.re}, -1)}, -2);
  auto x = linalg::solve(system, concatenate({b.re, b.im}, -2));
  int n = a.re.shape(-1);
  return {block(x, 0, n, 0, -1), block(x, n, -1, 0, -1)};
}

/// F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it, as a complex pair.
Complex inverse_gaps(const Complex& w) {
  int n = w.re.shape(-1);
  auto off = logical_not(astype(eye(n), bool_));
  auto gap_re = expand_dims(w.re, -2) - expand_dims(w.re, -1);
  auto gap_im = expand_dims(w.im, -2) - expand_dims(w.im, -1);
  auto norm = where(off, square(gap_re) + square(gap_im), ones_like(gap_re));
  auto zero = zeros_like(gap_re);
  return {where(off, gap_re / norm, zero), where(off, negative(gap_im) / norm, zero)};
}

Complex diagonal_matrix(const Complex& d) {
  int n = d.re.shape(-1);
  auto i = eye(n, d.re.dtype());
  return {expand_dims(d.re, -1) * i, expand_dims(d.im, -1) * i};
}

/// The eigenvalues and eigenvectors of A (computed again when the node gave only the values).
std::pair<Complex, Complex> eigen_pairs(const Eig& p, const array& a, const std::vector<array>& outputs) {
  auto pair = p.compute_vectors ? outputs
                                : reapply(Eig{true}, {a}, std::vector<array>{outputs[0], zeros(a.shape(), complex64)});
  return {split(pair[0], a.dtype()), split(pair[1], a.dtype())};
}

}  // namespace

std::vector<array> vjp_of(const Eig& p, const VjpArgs& args) {
  const auto& a = args.primals[0];
  require_real("vjp", Eig::name, a);
  auto [w, v] = eigen_pairs(p, a, args.outputs);
  auto inner = diagonal_matrix(split(args.cotangents[0], a.dtype()));
  if (p.compute_vectors) {
    auto vh = adjoint(v);
    auto vhg = product(vh, split(args.cotangents[1], a.dtype()));
    // Remove each column's component along its own (unit) eigenvector: V^H V diag(Re(diag(V^H V_bar))).
    auto along = expand_dims(diagonal(vhg.re, 0, -2, -1), -2);
    auto vhv = product(vh, v);
    Complex m{vhg.re - vhv.re * along, vhg.im - vhv.im * along};
    // m / conj(E) = m * conj(F) elementwise, F = 1 / E (0 on the diagonal).
    auto f = inverse_gaps(w);
    inner = {inner.re + m.re * f.re + m.im * f.im, inner.im + m.im * f.re - m.re * f.im};
  }
  // A_bar = Re(V^-H inner V^H): solve V^H Z = inner V^H.
  auto vh = adjoint(v);
  return {complex_solve(vh, product(inner, vh)).re};
}
std::vector<array> jvp_of(const Eig& p, const JvpArgs& args) {
  // X = V^-1 dA V: dw = diag(X); dV = V (F o X), less each column's component along itself that would change its
  // norm (Re(v_j^H dv_j) = 0).
  const auto& a = args.primals[0];
  require_real("jvp", Eig::name, a);
  auto [w, v] = eigen_pairs(p, a, args.outputs);
  Complex da{args.tangents[0], zeros_like(args.tangents[0])};
  auto x = complex_solve(v, product(da, v));
  std::vector<array> tangents{joined({diagonal(x.re, 0, -2, -1), diagonal(x.im, 0, -2, -1)})};
  if (p.compute_vectors) {
    auto f = inverse_gaps(w);
    auto dv = product(v, Complex{f.re * x.re - f.im * x.im, f.re * x.im + f.im * x.re});
    // Re(v_j^H dv_j) per column j.
    auto along = expand_dims(sum(v.re * dv.re + v.im * dv.im, -2), -2);
    tangents.push_back(joined({dv.re - v.re * along, dv.im - v.im * along}));
  }
  return tangents;
}
Batched vmap_of(const Eig& p, const VmapArgs& args) { return all_front(p, args); }

}  // namespace nuvec::detail
