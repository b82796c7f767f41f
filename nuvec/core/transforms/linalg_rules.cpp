// Rules of the LAPACK-backed primitives: the matrix-calculus identities for
// inverse, solve, Cholesky, symmetric eigendecomposition, QR and singular
// values; jvps transpose the vjps. All are batched over leading axes, so vmap
// moves the mapped axis in front.

#include "nuvec/core/linalg.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

namespace {

array mT(const array& a) { return swapaxes(a, -1, -2); }

/// The part of a square matrix a triangular primitive reads.
array triangle(const array& a, bool upper) { return upper ? triu(a) : tril(a); }

/// X with T X = B for a triangular T stored in its upper (or lower) triangle.
array triangular_solve(const array& t, const array& b, bool upper) {
  return reapply(Solve{true, upper}, {t, b}, b.shape(), b.dtype());
}

array symmetrized(const array& a) { return (a + mT(a)) * 0.5F; }

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

// ---- QR (reduced), for M >= N

std::vector<array> vjp_of(const QRF& p, const VjpArgs& args) {
  const auto& a = args.primals[0];
  if (a.shape(-2) < a.shape(-1)) {
    throw_no_rule("vjp", p.name, "is differentiable for M >= N only (the reduced Q is then unique).");
  }
  const auto& q = args.outputs[0];
  const auto& r = args.outputs[1];
  const auto& q_bar = args.cotangents[0];
  const auto& r_bar = args.cotangents[1];
  auto m = matmul(r, mT(r_bar)) - matmul(mT(q_bar), q);
  // copyltu(M): the lower triangle mirrored onto the upper one.
  auto lower = tril(m, -1);
  auto copied = lower + mT(lower) + tril(triu(m));
  auto b = q_bar + matmul(q, copied);
  // A_bar = b R^-T: solve R X^T = b^T.
  return {mT(triangular_solve(r, mT(b), true))};
}
std::vector<array> jvp_of(const QRF& p, const JvpArgs& args) { return jvp_by_transposing_vjp(p, args); }
Batched vmap_of(const QRF& p, const VmapArgs& args) { return all_front(p, args); }

// ---- SVD: singular values only

std::vector<array> vjp_of(const SVD& p, const VjpArgs& args) {
  if (p.compute_uv) {
    throw_no_rule("vjp", p.name, "is differentiable for singular values only (compute_uv = false).");
  }
  const auto& a = args.primals[0];
  auto usv = reapply(SVD{true}, {a}, [&] {
    int m = a.shape(-2);
    int n = a.shape(-1);
    Shape batch(a.shape().begin(), a.shape().end() - 2);
    auto with = [&](Shape tail) {
      Shape s = batch;
      s.insert(s.end(), tail.begin(), tail.end());
      return zeros(s, a.dtype());
    };
    return std::vector<array>{with({m, m}), args.outputs[0], with({n, n})};
  }());
  int k = args.outputs[0].shape(-1);
  Shape stop_u = usv[0].shape();
  stop_u.back() = k;
  Shape stop_v = usv[2].shape();
  stop_v[stop_v.size() - 2] = k;
  auto u = slice(usv[0], Shape(stop_u.size(), 0), stop_u);
  auto vt = slice(usv[2], Shape(stop_v.size(), 0), stop_v);
  return {matmul(u * expand_dims(args.cotangents[0], -2), vt)};
}
std::vector<array> jvp_of(const SVD& p, const JvpArgs& args) { return jvp_by_transposing_vjp(p, args); }
Batched vmap_of(const SVD& p, const VmapArgs& args) { return all_front(p, args); }

// ---- LU and general eigendecomposition

std::vector<array> vjp_of(const LUF& p, const VjpArgs&) {
  throw_no_rule("vjp", p.name, "has no derivative rule in nuvec (pivoting makes it piecewise); use solve or inv.");
}
std::vector<array> jvp_of(const LUF& p, const JvpArgs&) {
  throw_no_rule("jvp", p.name, "has no derivative rule in nuvec (pivoting makes it piecewise); use solve or inv.");
}
Batched vmap_of(const LUF& p, const VmapArgs& args) { return all_front(p, args); }

std::vector<array> vjp_of(const Eig& p, const VjpArgs&) {
  throw_no_rule("vjp", p.name, "of a non-symmetric matrix has complex, non-unique eigenvectors; use eigh.");
}
std::vector<array> jvp_of(const Eig& p, const JvpArgs&) {
  throw_no_rule("jvp", p.name, "of a non-symmetric matrix has complex, non-unique eigenvectors; use eigh.");
}
Batched vmap_of(const Eig& p, const VmapArgs& args) { return all_front(p, args); }

}  // namespace nuvec::detail
