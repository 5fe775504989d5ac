// Pass 1 of the walk kernels (kernels.hpp): per tree, the reachable nodes' probabilities and centred masses.
#include "walk_common.hpp"


namespace pgexact {
namespace walk {

// Pass 1 for one tree: P(region) of every reachable node, mu, the centred subtree masses, the
// tree's variance and its share of the bias E f_t - f_t(x). Returns false if no perturbed
// feature is reachable (the tree is then constant under the perturbation).
bool tree_moments(const Arena& a, Workspace& ws, std::int64_t t, double* var_out, double* bias_out) {
  const double* x = ws.row;
  ws.reached.clear();
  std::uint64_t mask = 0;
  double mu = 0.0;
  walk_reachable(a, ws, ws.frames, ws.undo, a.tree_root[t], 1.0, [&](std::int32_t n, double p) {
    ws.p[n] = p;
    ws.reach[n] = ws.set_epoch;
    ws.reached.push_back(n);
    const std::int32_t j = a.feature[n];
    if (j < 0) {
      mu += a.value[n] * p;
    } else if (ws.perturbed[j]) {
      mask |= feature_bit(j);
    }
  });
  ws.mu[t] = mu;
  ws.tree_mask[t] = mask;
  if (mask == 0) return false;

  // Children follow their parent in pre-order, so the reversed list is a valid post-order.
  const double c_x = a.value[a.leaf_of(t, x)];
  double var = 0.0;
  double bias = 0.0;
  for (auto it = ws.reached.rbegin(); it != ws.reached.rend(); ++it) {
    const std::int32_t n = *it;
    if (a.feature[n] < 0) {
      const double dev = a.value[n] - mu;
      ws.centred[n] = dev * ws.p[n];
      ws.cmean[n] = dev;
      var += dev * dev * ws.p[n];
      bias += (a.value[n] - c_x) * ws.p[n];
      continue;
    }
    double s = 0.0;
    if (ws.reach[a.left[n]] == ws.set_epoch) s += ws.centred[a.left[n]];
    if (ws.reach[a.right[n]] == ws.set_epoch) s += ws.centred[a.right[n]];
    ws.centred[n] = s;
    ws.cmean[n] = ws.p[n] > 0.0 ? s / ws.p[n] : 0.0;
  }
  *var_out = var;
  *bias_out = bias;
  return true;
}

}  // namespace walk
}  // namespace pgexact
