// The paper's unpruned pre-order pair walk: the reference the fast walk kernels are tested against.
#include "walk_common.hpp"


namespace pgexact {
namespace walk {


// E[(f_s - mu_s) 1(x' in box)] for the current box, walking every leaf of s it reaches.
double box_expectation_reference(const Arena& a, Workspace& ws, std::int64_t s, double p_box) {
  const double mu = ws.mu[s];
  double total = 0.0;
  walk_reachable(a, ws, ws.inner_frames, ws.inner_undo, a.tree_root[s], p_box, [&](std::int32_t m, double p) {
    if (a.feature[m] < 0) total += (a.value[m] - mu) * p;
  });
  return total;
}

// The paper's pre-order pair walk: sum over leaves u of t of (y_u - mu_t) times
// E[(f_s - mu_s) 1(box_u)] for every later active tree s, with no pruning.
double tree_covariances_reference(const Arena& a, Workspace& ws, std::int64_t t, const std::int32_t* partners,
                                  std::size_t n_partners) {
  const double mu = ws.mu[t];
  double total = 0.0;
  walk_reachable(a, ws, ws.frames, ws.undo, a.tree_root[t], 1.0, [&](std::int32_t n, double p) {
    if (a.feature[n] >= 0) return;
    double inner = 0.0;
    for (std::size_t k = 0; k < n_partners; ++k) inner += box_expectation_reference(a, ws, partners[k], p);
    total += (a.value[n] - mu) * inner;
  });
  return total;
}

}  // namespace walk
}  // namespace pgexact
