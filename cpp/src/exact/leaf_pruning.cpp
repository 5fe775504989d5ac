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

// A vector of rows at a time, a leaf's lanes together (as prune_leaves, same bits).
void prune_greedy_leaves(const Arena& a, const LeafBoxes& boxes, std::int64_t rows, const std::uint64_t* sets,
                         Lanes& lanes, std::vector<double>& skipped_none, std::vector<double>& skipped_by,
                         double share) {
  const std::size_t d = static_cast<std::size_t>(a.n_features);
  const std::size_t n_leaves = static_cast<std::size_t>(boxes.n_leaves());
  constexpr std::size_t L = kLanes;
  skipped_none.assign(static_cast<std::size_t>(rows), 0.0);
  skipped_by.assign(static_cast<std::size_t>(rows) * d, 0.0);
  std::vector<double> bound(n_leaves * L), bucket;  // bound [leaf][lane]
  std::vector<int> cut;
  std::uint64_t S[kLanes];
  double W[kLanes], estimate[kLanes], m1[kLanes], m2[kLanes];
  bool pruned[kLanes];
  for (std::int64_t i0 = 0; i0 < rows; i0 += kLanes) {
    const std::size_t v = static_cast<std::size_t>(i0 / kLanes);
    const std::size_t n_in = static_cast<std::size_t>(std::min<std::int64_t>(kLanes, rows - i0));
    const std::size_t first = v * n_leaves * kLanes;
    for (std::size_t l = 0; l < n_in; ++l) {
      S[l] = sets[i0 + static_cast<std::int64_t>(l)] & ~boxes.set_features;
      estimate[l] = m1[l] = m2[l] = 0.0;
    }
    auto p_out_of = [&](std::size_t l, std::int32_t leaf, std::size_t at, double w) {
      const std::int8_t code = lanes.code[at];
      if (code == kNeverAlive) return -1.0;
      const std::uint64_t out = lanes.out[at];
      const std::uint64_t reach = S[l] | (code >= 0 ? bit(code) : 0);  // out(u) is inside it
      double p_set = 1.0, p_out = 1.0;
      for (std::uint64_t f = boxes.constrained[static_cast<std::size_t>(leaf)] & reach; f != 0; f &= f - 1) {
        const std::size_t j = static_cast<std::size_t>(__builtin_ctzll(f));
        if (((boxes.set_features >> j) & 1u) != 0) continue;  // by category: at most 1
        const double m = lanes.slot_mass(static_cast<std::int32_t>(v), static_cast<std::int32_t>(l),
                                         static_cast<std::size_t>(leaf), j);
        if ((S[l] >> j) & 1u) p_set *= m;
        if ((out >> j) & 1u) p_out *= m;
      }
      if (code == kNoneMissing) {
        m1[l] += w * p_set;
        m2[l] += w * w * p_set;
      }
      return p_out;
    };
    bound_leaves(a, boxes, lanes, first, n_in, bound, W, p_out_of, [&] {
      // The tree's variance with S perturbed, and the sums cleared for the next tree.
      for (std::size_t l = 0; l < n_in; ++l) {
        estimate[l] += std::max(0.0, m2[l] - m1[l] * m1[l]);
        m1[l] = m2[l] = 0.0;
      }
    });
    for (std::size_t l = 0; l < n_in; ++l) {
      pruned[l] = W[l] > 0.0 && std::isfinite(W[l]) && estimate[l] > 0.0 && std::isfinite(estimate[l]);
    }
    // One class per lane: the leaves alive with S and those alive with S + {j} share the budget.
    prune_vector(lanes, bound, first, n_in, pruned, 1, [](std::int8_t) { return std::size_t{0}; },
                 [&](std::size_t l, std::size_t) { return share * estimate[l] / (2.0 * W[l]); },
                 [&](std::size_t l, std::size_t at, double b) {
                   const std::int8_t code = lanes.code[at];
                   const std::size_t i = static_cast<std::size_t>(i0) + l;
                   (code == kNoneMissing ? skipped_none[i] : skipped_by[i * d + static_cast<std::size_t>(code)]) +=
                       2.0 * W[l] * b;
                 },
                 bucket, cut);
  }
}

}  // namespace pairs
}  // namespace pgexact
