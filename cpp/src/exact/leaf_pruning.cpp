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

namespace {

// The first half of the greedy step's pruning (prune_greedy_leaves; prune_leaves has its own in
// leaf_bounds.cpp, the same loop in the level's registers), for the lanes of one vector (its
// leaves from `first` on): tree by tree, each leaf through
// p_out(leaf, at, w, p), which sets p[lane] for the lanes l < n_in of nonzero weight w[l] to
// the leaf's P_out there (its masses on the features x leaves its path on), adding to the lane's
// estimate, or to -1 where the leaf is no candidate; the leaf's bound |w| P_out into
// bound[leaf][lane] (-1 for no candidate), W[lane] the sum over trees of the largest |w| of a
// candidate, and tree_done() after each tree. A leaf's lanes go together: the masses of one of
// its slots are read once for all of them (a lane at a time looked the slot up again per lane:
// most of the set-up of 64 rows of a deep forest before its first unit of work).
template <typename POut, typename TreeDone>
void bound_leaves(const Arena& a, const LeafBoxes& boxes, const Lanes& lanes, std::size_t first, std::size_t n_in,
                  std::vector<double>& bound, double* W, POut&& p_out, TreeDone&& tree_done) {
  double w_max[kLanes], p[kLanes];
  std::fill(W, W + n_in, 0.0);
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    std::fill(w_max, w_max + kLanes, 0.0);
    for (std::int32_t leaf = boxes.tree_first[t]; leaf < boxes.tree_first[t + 1]; ++leaf) {
      const std::size_t at = first + static_cast<std::size_t>(leaf) * kLanes;
      const double* w = lanes.weight.data() + at;
      double* leaf_bound = bound.data() + static_cast<std::size_t>(leaf) * kLanes;
      p_out(leaf, at, w, p);
      for (std::size_t l = 0; l < n_in; ++l) {
        leaf_bound[l] = -1.0;  // not alive: not a candidate
        if (w[l] == 0.0 || p[l] < 0.0) continue;
        leaf_bound[l] = std::fabs(w[l]) * p[l];
        w_max[l] = std::max(w_max[l], std::fabs(w[l]));
      }
    }
    for (std::size_t l = 0; l < n_in; ++l) W[l] += w_max[l];
    tree_done();
  }
}

}  // namespace

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
    std::uint64_t S[kLanes];
    double W[kLanes], estimate[kLanes], m1[kLanes], m2[kLanes];
    bool pruned[kLanes];
    for (std::size_t l = 0; l < n_in; ++l) {
      S[l] = sets[i0 + static_cast<std::int64_t>(l)] & ~boxes.set_features;
      estimate[l] = m1[l] = m2[l] = 0.0;
    }
    // Per lane, in feature order as a lane at a time took them: the masses on the features
    // of S (the leaf's mass with S perturbed) and on those x leaves the path on (P_out).
    auto p_out_of = [&](std::int32_t leaf, std::size_t at, const double* w, double* p_out) {
      const auto u = static_cast<std::size_t>(leaf);
      bool alive[kLanes];
      std::uint64_t reach[kLanes], any = 0;  // out(u) is inside a lane's reach
      double p_set[kLanes], computed[kLanes];  // computed: masses from the tables
      for (std::size_t l = 0; l < n_in; ++l) {
        const std::int8_t code = lanes.code[at + l];
        alive[l] = w[l] != 0.0 && code != kNeverAlive;
        p_out[l] = alive[l] ? 1.0 : -1.0;
        reach[l] = alive[l] ? S[l] | (code >= 0 ? bit(code) : 0) : 0;
        p_set[l] = 1.0;
        any |= reach[l];
      }
      // (A feature by category is no slot: its factor is at most 1.)
      for (std::uint64_t f = boxes.constrained[u] & any & ~boxes.set_features; f != 0; f &= f - 1) {
        const std::size_t j = static_cast<std::size_t>(__builtin_ctzll(f));
        const double* m = lanes.slot_masses(static_cast<std::int32_t>(v), u, j, computed);
        // (Without branches on the lanes' bits: a factor a lane does not take is 1.0, and
        // x * 1.0 is x.)
        for (std::size_t l = 0; l < n_in; ++l) {
          const bool in = ((reach[l] >> j) & 1u) != 0;
          p_set[l] *= in && ((S[l] >> j) & 1u) != 0 ? m[l] : 1.0;
          p_out[l] *= in && ((lanes.out[at + l] >> j) & 1u) != 0 ? m[l] : 1.0;
        }
      }
      for (std::size_t l = 0; l < n_in; ++l) {
        if (!alive[l] || lanes.code[at + l] != kNoneMissing) continue;
        m1[l] += w[l] * p_set[l];
        m2[l] += w[l] * w[l] * p_set[l];
      }
    };
    bound_leaves(a, boxes, lanes, first, n_in, scratch.bound, W, p_out_of, [&] {
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
