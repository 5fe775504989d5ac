#include "leaf_pruning.hpp"
#include "env_switch.hpp"

#include "pgexact/exact/pair_kernel.hpp"  // kDefaultTolerance

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace pgexact {
namespace pairs {

PruneBudget prune_budget(double tol) {
  const std::string mode = env_switch("PGEXACT_LEAF_PRUNING");
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
                         double share, int threads) {
  const std::size_t d = static_cast<std::size_t>(a.n_features);
  const std::size_t n_leaves = static_cast<std::size_t>(boxes.n_leaves());
  skipped_none.assign(static_cast<std::size_t>(rows), 0.0);
  skipped_by.assign(static_cast<std::size_t>(rows) * d, 0.0);
  for_each_vector(rows, n_leaves, threads, [&](PruneScratch& scratch, std::size_t v, std::int64_t i0, std::size_t n_in) {
    const std::size_t first = v * n_leaves * kLanes;
    // Per lane: S (padding lanes' leaves are dead), then the bounds of its leaves, W and the
    // estimate, in the registers of the level picked at run time (leaf_bounds.cpp).
    std::uint64_t S[kLanes] = {};
    double W[kLanes], estimate[kLanes];
    bool pruned[kLanes];
    for (std::size_t l = 0; l < n_in; ++l) S[l] = sets[i0 + static_cast<std::int64_t>(l)] & ~boxes.set_features;
    GreedyLeafBounds in;
    in.n_trees = a.n_trees();
    in.tree_first = boxes.tree_first.data();
    in.constrained = boxes.constrained.data();
    in.slot_of = boxes.slot_of.data();
    in.by_category = boxes.set_features;
    in.sets = S;
    in.bound = scratch.bound.data();
    in.W = W;
    in.estimate = estimate;
    pair_passes().greedy_leaf_bounds(lanes.view(static_cast<std::int32_t>(v)), in);
    for (std::size_t l = 0; l < n_in; ++l) {
      pruned[l] = W[l] > 0.0 && std::isfinite(W[l]) && estimate[l] > 0.0 && std::isfinite(estimate[l]);
    }
    // One class per lane: the leaves alive with S and those alive with S + {j} share the budget.
    prune_vector(lanes, scratch.bound, first, n_in, pruned, 1, [](std::int8_t) { return std::size_t{0}; },
                 [&](std::size_t l, std::size_t) { return share * estimate[l] / (2.0 * W[l]); },
                 [&](std::size_t l, std::size_t at, double b) {
                   const std::int8_t code = lanes.code[at];
                   const std::size_t i = static_cast<std::size_t>(i0) + l;
                   (code == kNoneMissing ? skipped_none[i] : skipped_by[i * d + static_cast<std::size_t>(code)]) +=
                       2.0 * W[l] * b;
                 },
                 scratch.bucket, scratch.cut);
  });
}

}  // namespace pairs
}  // namespace pgexact
