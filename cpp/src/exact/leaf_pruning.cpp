#include "leaf_pruning.hpp"

#include "pgexact/exact/pair_kernel.hpp"  // kDefaultTolerance

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace pgexact {
namespace pairs {

PruneBudget prune_budget(double tol) {
  const char* flag = std::getenv("PGEXACT_LEAF_PRUNING");
  const std::string mode = flag == nullptr ? "" : flag;
  PruneBudget budget;
  // `!(tol >= ...)` also turns pruning off for a NaN the bindings should have refused.
  if (mode == "0" || !(tol >= kDefaultTolerance)) return budget;
  budget.on = true;
  budget.certify = tol;
  budget.share = mode == "reckless" ? 1e-2 : tol / 10.0;
  return budget;
}

void prune_greedy_leaves(const Arena& a, const LeafBoxes& boxes, std::int64_t rows, const std::uint64_t* sets,
                         Lanes& lanes, std::vector<double>& skipped_none, std::vector<double>& skipped_by,
                         double share) {
  const std::size_t d = static_cast<std::size_t>(a.n_features);
  const std::size_t n_leaves = static_cast<std::size_t>(boxes.n_leaves());
  skipped_none.assign(static_cast<std::size_t>(rows), 0.0);
  skipped_by.assign(static_cast<std::size_t>(rows) * d, 0.0);
  std::vector<double> bound(n_leaves), bucket(kPruneBuckets);
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
    const std::size_t first = v * n_leaves * kLanes + l;
    const std::uint64_t S = sets[i] & ~boxes.set_features;
    double W = 0.0, estimate = 0.0;
    for (std::int64_t t = 0; t < a.n_trees(); ++t) {
      double w_max = 0.0, m1 = 0.0, m2 = 0.0;
      for (std::int32_t leaf = boxes.tree_first[t]; leaf < boxes.tree_first[t + 1]; ++leaf) {
        const std::size_t at = first + static_cast<std::size_t>(leaf) * kLanes;
        bound[static_cast<std::size_t>(leaf)] = -1.0;  // not alive: not a candidate
        const double w = lanes.weight[at];
        const std::int8_t code = lanes.code[at];
        if (code == kNeverAlive || w == 0.0) continue;
        const std::uint64_t out = lanes.out[at];
        const std::uint64_t reach = S | (code >= 0 ? bit(code) : 0);  // out(u) is inside it
        double p_set = 1.0, p_out = 1.0;
        for (std::uint64_t f = boxes.constrained[static_cast<std::size_t>(leaf)] & reach; f != 0; f &= f - 1) {
          const std::size_t j = static_cast<std::size_t>(__builtin_ctzll(f));
          if (((boxes.set_features >> j) & 1u) != 0) continue;  // by category: at most 1
          const double m = lanes.slot_mass(static_cast<std::int32_t>(v), static_cast<std::int32_t>(l),
                                           static_cast<std::size_t>(leaf), j);
          if ((S >> j) & 1u) p_set *= m;
          if ((out >> j) & 1u) p_out *= m;
        }
        if (code == kNoneMissing) {
          m1 += w * p_set;
          m2 += w * w * p_set;
        }
        bound[static_cast<std::size_t>(leaf)] = std::fabs(w) * p_out;
        w_max = std::max(w_max, std::fabs(w));
      }
      W += w_max;
      estimate += std::max(0.0, m2 - m1 * m1);
    }
    if (!(W > 0.0) || !std::isfinite(W) || !(estimate > 0.0) || !std::isfinite(estimate)) continue;
    const double budget = share * estimate / (2.0 * W);
    std::fill(bucket.begin(), bucket.end(), 0.0);
    for (std::size_t leaf = 0; leaf < n_leaves; ++leaf) {
      if (bound[leaf] > 0.0) bucket[static_cast<std::size_t>(prune_bucket(bound[leaf]))] += bound[leaf];
    }
    const int cut = prune_cut(bucket.data(), budget);
    for (std::size_t leaf = 0; leaf < n_leaves; ++leaf) {
      const double b = bound[leaf];
      if (b < 0.0 || (b > 0.0 && prune_bucket(b) > cut)) continue;
      const std::size_t at = first + leaf * kLanes;
      const std::int8_t code = lanes.code[at];
      (code == kNoneMissing ? skipped_none[static_cast<std::size_t>(i)]
                            : skipped_by[static_cast<std::size_t>(i) * d + static_cast<std::size_t>(code)]) += 2.0 * W * b;
      lanes.code[at] = kNeverAlive;
    }
  }
}

}  // namespace pairs
}  // namespace pgexact
