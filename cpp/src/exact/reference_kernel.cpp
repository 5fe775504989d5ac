#include "pgexact/exact/reference_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "pgexact/exact/kernels.hpp"  // noise_moves

namespace pgexact {
namespace {

using Step = LeafPaths::Step;

bool follows(const Arena& a, const std::vector<const Step*>& steps, double value) {
  for (const Step* s : steps) {
    if (a.goes_left(s->node, value) != s->left) return false;
  }
  return true;
}

// P(x'_j follows every step) for one feature's steps of one or two paths.
double feature_probability(const Arena& a, const Noise& noise, const double* x, bool perturbed, std::int32_t j,
                           const std::vector<const Step*>& steps) {
  const double xj = x[j];
  const bool moves = perturbed && !std::isnan(xj) && noise_moves(a, noise, j);
  if (!moves) return follows(a, steps, xj) ? 1.0 : 0.0;
  if (noise.categorical(j)) {
    // 1 - p W' when x_j is kept on the paths, p W otherwise (W: the categories that follow).
    double in = 0.0, out = 0.0;
    for (std::int64_t k = noise.cat_begin[j]; k < noise.cat_begin[j + 1]; ++k) {
      (follows(a, steps, noise.cat_value[k]) ? in : out) += noise.cat_weight[k];
    }
    return follows(a, steps, xj) ? 1.0 - noise.change[j] * out : noise.change[j] * in;
  }
  // Additive: x' in (lo, hi), both ends from the numeric splits' boundaries.
  double lo = -INFINITY, hi = INFINITY;
  for (const Step* s : steps) {
    if (s->left) hi = std::min(hi, a.boundary[s->node]);
    else lo = std::max(lo, a.boundary[s->node]);
  }
  if (!(lo < hi)) return 0.0;
  const CdfPair l = noise_cdf(noise.family[j], noise.sigma[j], lo - xj);
  const CdfPair h = noise_cdf(noise.family[j], noise.sigma[j], hi - xj);
  const double m = lo - xj >= 0.0 ? l.upper - h.upper : h.lower - l.lower;  // from the nearer tail
  return m > 0.0 ? m : 0.0;
}

// P(x' reaches u and v) (u == v: P(x' reaches u)).
double pair_probability(const Arena& a, const Noise& noise, const double* x, const std::uint8_t* perturbed,
                        const std::vector<Step>& pu, const std::vector<Step>& pv, std::vector<const Step*>& steps) {
  double p = 1.0;
  std::size_t iu = 0, iv = 0;
  while (iu < pu.size() || iv < pv.size()) {
    const std::int32_t j = std::min(iu < pu.size() ? pu[iu].feature : a.n_features,
                                    iv < pv.size() ? pv[iv].feature : a.n_features);
    steps.clear();
    for (; iu < pu.size() && pu[iu].feature == j; ++iu) steps.push_back(&pu[iu]);
    for (; iv < pv.size() && pv[iv].feature == j; ++iv) steps.push_back(&pv[iv]);
    p *= feature_probability(a, noise, x, perturbed[j] != 0, j, steps);
    if (p == 0.0) return 0.0;
  }
  return p;
}

void add_compensated(double& sum, double& comp, double v) {
  const double t = sum + v;
  comp += (std::fabs(sum) >= std::fabs(v)) ? (sum - t) + v : (v - t) + sum;
  sum = t;
}

}  // namespace

LeafPaths::LeafPaths(const Arena& a) {
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    std::vector<std::pair<std::int32_t, std::vector<Step>>> stack{{a.tree_root[t], {}}};
    while (!stack.empty()) {
      auto [n, steps] = std::move(stack.back());
      stack.pop_back();
      if (a.is_leaf(n)) {
        std::sort(steps.begin(), steps.end(), [](const Step& p, const Step& q) {
          return p.feature != q.feature ? p.feature < q.feature : p.node < q.node;
        });
        path.push_back(std::move(steps));
        node.push_back(n);
        tree.push_back(static_cast<std::int32_t>(t));
        continue;
      }
      std::vector<Step> right = steps;
      right.push_back(Step{a.feature[n], n, false});
      steps.push_back(Step{a.feature[n], n, true});
      stack.emplace_back(a.right[n], std::move(right));
      stack.emplace_back(a.left[n], std::move(steps));
    }
  }
}

double pg2_reference_row(const Arena& a, const LeafPaths& leaves, const Noise& noise, const double* x,
                         const std::uint8_t* perturbed) {
  std::vector<double> home(static_cast<std::size_t>(a.n_trees()));
  for (std::int64_t t = 0; t < a.n_trees(); ++t) home[t] = a.value[a.leaf_of(t, x)];
  std::vector<const Step*> steps;
  double sum = 0.0, comp = 0.0;
  const std::size_t n = leaves.node.size();
  for (std::size_t u = 0; u < n; ++u) {
    const double wu = a.value[leaves.node[u]] - home[leaves.tree[u]];
    if (wu == 0.0) continue;
    for (std::size_t v = 0; v < n; ++v) {
      const double wv = a.value[leaves.node[v]] - home[leaves.tree[v]];
      if (wv == 0.0) continue;
      const double p = pair_probability(a, noise, x, perturbed, leaves.path[u], leaves.path[v], steps);
      if (p != 0.0) add_compensated(sum, comp, wu * wv * p);
    }
  }
  const double total = sum + comp;
  return total > 0.0 ? total : 0.0;
}

double expected_reference_row(const Arena& a, const LeafPaths& leaves, const Noise& noise, const double* x,
                              const std::uint8_t* perturbed) {
  std::vector<const Step*> steps;
  double sum = 0.0, comp = 0.0;
  for (std::size_t u = 0; u < leaves.node.size(); ++u) {
    const double p = pair_probability(a, noise, x, perturbed, leaves.path[u], leaves.path[u], steps);
    if (p != 0.0) add_compensated(sum, comp, a.value[leaves.node[u]] * p);
  }
  return a.base_score[0] + (sum + comp);
}

}  // namespace pgexact
