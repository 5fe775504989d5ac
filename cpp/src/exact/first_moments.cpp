// E f(x') and the first moments E[delta_j f(x + delta)] by walking each tree's reachable leaves.
#include "walk_common.hpp"

#include <stdexcept>
#include <vector>

#include "pgexact/exact/reference_kernel.hpp"

namespace pgexact {
namespace walk {
namespace {

double expected_row(const Arena& a, const Noise& noise, const std::uint8_t* perturbed, Workspace& ws) {
  std::int32_t last = -1;
  set_perturbed(a, noise, perturbed, ws, &last);
  ws.begin_set();
  double sum = 0.0;
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    double v = 0.0;
    double b = 0.0;
    tree_moments(a, ws, t, &v, &b);  // sets mu[t], also for a tree the noise cannot move
    sum += ws.mu[t];
  }
  return a.base_score[0] + sum;
}

// Adds, for every tree, sum over reachable leaves u of (y_u - f_t(x)) P(u) E[delta_j | box_u]
// to out[j]: the first moments E[delta_j f(x + delta)] (centring by f_t(x) changes nothing,
// as E[delta_j] = 0, but keeps the terms small).
void first_moments_row(const Arena& a, const Noise& noise, const std::uint8_t* all, Workspace& ws, double* out) {
  const double* x = ws.row;
  const std::int32_t d = a.n_features;
  std::int32_t last = -1;
  set_perturbed(a, noise, all, ws, &last);
  for (std::int32_t j = 0; j < d; ++j) {
    out[j] = 0.0;
    if (!ws.perturbed[j]) continue;
    const std::int32_t begin = a.feature_bounds_begin[j];
    const std::int32_t end = a.feature_bounds_begin[j + 1];
    for (std::int32_t k = begin; k < end; ++k) {
      ws.moment[k] = noise_partial_moment(noise.family[j], noise.sigma[j], a.bounds[k] - x[j]);
    }
  }
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    const double c_x = a.value[a.leaf_of(t, x)];
    walk_reachable(a, ws, ws.frames, ws.undo, a.tree_root[t], 1.0, [&](std::int32_t n, double p) {
      if (a.feature[n] >= 0) return;
      const double w = (a.value[n] - c_x) * p;
      if (w == 0.0) return;
      for (std::int32_t k = 0; k < d; ++k) {
        const std::int32_t lo = ws.box_lo[k];
        const std::int32_t hi = ws.box_hi[k];
        if (lo == a.feature_bounds_begin[k] && hi == a.feature_bounds_begin[k + 1] - 1) continue;  // E[delta_k] = 0
        const double m = mass(ws, lo, hi);
        if (m > 0.0) out[k] += w * ((ws.moment[hi] - ws.moment[lo]) / m);
      }
    });
  }
}

}  // namespace
}  // namespace walk

using walk::expected_row;
using walk::first_moments_row;

void expected_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                    const std::uint8_t* perturbed, bool mask_per_row, int n_threads, double* out,
                    RunControl* control) {
  noise.validate(a.n_features);
  check_perturbable(a, noise, perturbed, mask_per_row ? n_rows : 1);
  const std::int64_t d = a.n_features;
  // The walks' boxes are intervals only: categorical noise sums over the leaves' paths.
  const bool by_leaves = noise.has_categorical();
  const LeafPaths leaves = by_leaves ? LeafPaths(a) : LeafPaths(Arena());
  for_each_row(a, n_rows, n_threads, [&](Workspace& ws, std::int64_t i) {
    const std::uint8_t* mask = perturbed + (mask_per_row ? i * d : 0);
    if (by_leaves) {
      out[i] = expected_reference_row(a, leaves, noise, X + i * d, mask);
      return;
    }
    ws.begin_row(X + i * d);
    out[i] = expected_row(a, noise, mask, ws);
  }, control);
}

void first_moments_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                         int n_threads, double* out, RunControl* control) {
  noise.validate(a.n_features);
  const std::int64_t d = a.n_features;
  for (std::int64_t j = 0; j < d; ++j) {
    if (!noise.additive(j)) {
      throw std::invalid_argument("noise: first moments E[delta_j f] need additive noise on every feature");
    }
  }
  const std::vector<std::uint8_t> all(static_cast<std::size_t>(d), 1);
  check_perturbable(a, noise, all.data(), 1);
  for_each_row(a, n_rows, n_threads, [&](Workspace& ws, std::int64_t i) {
    ws.begin_row(X + i * d);
    first_moments_row(a, noise, all.data(), ws, out + i * d);
  }, control);
}

}  // namespace pgexact
