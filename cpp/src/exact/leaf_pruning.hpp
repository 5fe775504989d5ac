// Internal to the leaf-pair kernel (not installed): certified per-row leaf pruning.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "pair_lanes.hpp"

namespace pgexact {
namespace pairs {

// Per-row certified pruning. With w_u = y_u - f_t(x), every pair holding leaf u adds at most
// |w_u| |w_v| P(x' in B_u and B_v), and the leaves v of one tree s partition the space, so all
// the pairs of u together add at most
//   2 |w_u| P_S(B_u) W,   W = sum_s max_v |w_v|   (2: u as first or second leaf),
// where P_S(B_u) <= Pout(u), the product of u's interval masses over the features on which x
// leaves u's path (every other factor is at most 1, whatever prefix or set u is alive in).
// Deep trees have many leaves whose boxes lie far out in the noise's tails for a given row: a
// row drops, smallest bound first, the leaves whose bounds add up to at most kPruneShare of
// the sum of its trees' variances (an estimate of the result), and marks them dead in its own
// lane only (a row's values never depend on its neighbours). After the pass each result is
// certified: the bounds of the pruned leaves alive in that set or prefix must be at most
// `certify` (the call's tolerance) of the pruned result; a row that fails is computed again
// without pruning. Results stay within the tolerance, relative, of the unpruned sums: 1e-13 by
// default (pair_kernel.hpp's kDefaultTolerance), more where the caller allows it.
struct PruneBudget {
  bool on = false;
  double share = 0.0;    // spent on the estimate: a tenth of the tolerance
  double certify = 0.0;  // the tolerance
};

// The budget of a call with tolerance `tol`: off below kDefaultTolerance or where
// PGEXACT_LEAF_PRUNING=0 (tests and before/after benchmarks; read per call).
// PGEXACT_LEAF_PRUNING=reckless spends a share of 1e-2 whatever the tolerance, so that
// certificates fail and rows are recomputed: the tests of that path.
PruneBudget prune_budget(double tol);

// Bounds are pruned smallest first by binary exponent (a histogram, not a sort): bucket e holds
// the bounds with ilogb(b) - kPruneMinExp == e, clamped to [0, kPruneBuckets).
constexpr int kPruneMinExp = -1100, kPruneBuckets = 1200;
// (ilogb read off the exponent bits of a normal number, called twice per leaf and row: the
// library call showed in the profile of a forest's estimate; zeros, subnormals, infinities and
// NaN still go to it.)
inline int prune_bucket(double b) {
  std::uint64_t bits;
  std::memcpy(&bits, &b, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  const int e = biased != 0 && biased != 0x7ff ? biased - 1023 : std::ilogb(b);
  return std::min(kPruneBuckets - 1, std::max(0, e - kPruneMinExp));
}
// The last bucket of `bucket` (kPruneBuckets sums) that may be pruned: buckets [0, cut] add up
// to at most `budget`; -1 when the first already passes it.
inline int prune_cut(const double* bucket, double budget) {
  int cut = -1;
  double total = 0.0;
  for (int e = 0; e < kPruneBuckets; ++e) {
    total += bucket[e];
    if (total > budget) break;
    cut = e;
  }
  return cut;
}

// Threads for a pruning of `vectors` vectors: each thread keeps a bound per leaf and lane (a
// default ExtraTreesRegressor has 1.6 M leaves: 100 MiB), so no more than one per vector and
// than fit in kPruneScratchBytes (at least one).
inline constexpr std::size_t kPruneScratchBytes = std::size_t{128} << 20;
inline int prune_threads(int threads, std::int64_t vectors, std::size_t n_leaves) {
  const std::size_t per_thread = std::max<std::size_t>(n_leaves * kLanes * sizeof(double), 1);
  const auto fit = static_cast<std::int64_t>(kPruneScratchBytes / per_thread);
  return static_cast<int>(std::max<std::int64_t>(1, std::min({static_cast<std::int64_t>(threads), vectors, fit})));
}

// A thread's buffers for a pruning: bound[leaf][lane] and prune_vector's buckets and cuts.
struct PruneScratch {
  std::vector<double> bound, bucket;
  std::vector<int> cut;
};

// Calls vector(scratch, v, i0, n_in) for each vector v of rows [0, rows) (its rows i0 ..
// i0 + n_in), the vectors on up to `threads` threads (prune_threads), each thread with its own
// scratch (a bound per leaf and lane): `vector` runs concurrently, so it may write only its own
// vector's lanes and rows.
template <typename Vector>
void for_each_vector(std::int64_t rows, std::size_t n_leaves, int threads, Vector&& vector) {
  const std::int64_t vectors = (rows + kLanes - 1) / kLanes;
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(prune_threads(threads, vectors, n_leaves))
#endif
  {
    PruneScratch scratch;
    scratch.bound.resize(n_leaves * kLanes);
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t v = 0; v < vectors; ++v) {
      const std::int64_t i0 = v * kLanes;
      vector(scratch, static_cast<std::size_t>(v), i0, static_cast<std::size_t>(std::min<std::int64_t>(kLanes, rows - i0)));
    }
  }
  (void)threads;
}

// The second half of both prunings (prune_leaves and prune_greedy_leaves below), for the
// lanes of one vector whose `bound`s ([leaf][lane], -1 for a leaf that is no candidate) are in:
// per lane and class (class_of(code), of n_classes), the bounds in buckets, the last bucket
// within budget(lane, class), then the leaves at or below it marked dead, each bound handed
// first to skip(lane, at, bound) (`at`: the leaf's lane in the block, its code still set).
// Lanes with pruned[lane] false are left alone.
template <typename ClassOf, typename Budget, typename Skip>
void prune_vector(Lanes& lanes, const std::vector<double>& bound, std::size_t first, std::size_t n_in,
                  const bool* pruned, std::size_t n_classes, ClassOf&& class_of, Budget&& budget, Skip&& skip,
                  std::vector<double>& bucket, std::vector<int>& cut) {
  constexpr std::size_t L = kLanes, kBuckets = kPruneBuckets;
  const std::size_t n_leaves = bound.size() / L;
  bucket.assign(L * n_classes * kBuckets, 0.0);
  cut.assign(L * n_classes, -1);
  for (std::size_t leaf = 0; leaf < n_leaves; ++leaf) {
    for (std::size_t l = 0; l < n_in; ++l) {
      const double b = bound[leaf * L + l];
      if (!pruned[l] || !(b > 0.0)) continue;
      const std::size_t c = class_of(lanes.code[first + leaf * kLanes + l]);
      bucket[(l * n_classes + c) * kBuckets + static_cast<std::size_t>(prune_bucket(b))] += b;
    }
  }
  for (std::size_t l = 0; l < n_in; ++l) {
    if (!pruned[l]) continue;
    for (std::size_t c = 0; c < n_classes; ++c) {
      cut[l * n_classes + c] = prune_cut(bucket.data() + (l * n_classes + c) * kBuckets, budget(l, c));
    }
  }
  for (std::size_t leaf = 0; leaf < n_leaves; ++leaf) {
    for (std::size_t l = 0; l < n_in; ++l) {
      const double b = bound[leaf * L + l];
      if (!pruned[l] || b < 0.0) continue;
      const std::size_t at = first + leaf * kLanes + l;
      if (b > 0.0 && prune_bucket(b) > cut[l * n_classes + class_of(lanes.code[at])]) continue;
      skip(l, at, b);
      lanes.code[at] = kNeverAlive;
    }
  }
}

// Prunes the leaves of rows [0, rows) whose codes are below n_prefix (after the codes are set)
// and fills skipped[i * n_prefix + k] with the bound of row i's pruned leaves alive at prefix k
// (for one set, n_prefix = 1). set_of(i, k): the set row i perturbs at prefix k.
//
// The budget is spread over the prefixes: the result of prefix k is estimated by the sum of
// the trees' variances at that prefix, E_k (leaves alive there, each with its box's mass over
// the features of the prefix), and the leaves that become alive at prefix c may spend
// share * min_{k >= c} E_k / n_prefix, so that every prefix's pruned bound stays below
// `share` of its estimate. Within a class, the smallest bounds go first (by binary
// exponent: a histogram, not a sort).
// The rows are taken a vector (kLanes rows) at a time, a leaf's lanes together: the lanes'
// weights, codes, out masks and slot masses of a leaf share cache lines, which a row at a time
// read once per row (most of the set-up of 64 rows of a deep forest, the part of the estimate
// before the first unit of work). Each row's sums are the same operations in the same order.
// The bounds, W and the estimates are computed in the registers of the x86-64 level picked at
// run time (PairPasses::curve_leaf_bounds, leaf_bounds.cpp, whose lanes keep these bits).
// The vectors go to up to `threads` threads (prune_threads): each writes only its own lanes'
// codes and its own rows' `skipped` (set_of must be safe to call from several threads).
template <typename SetOf>
void prune_leaves(const Arena& a, const LeafBoxes& boxes, std::int64_t rows, std::int64_t n_prefix,
                  SetOf&& set_of, Lanes& lanes, std::vector<double>& skipped, double share, int threads) {
  skipped.assign(static_cast<std::size_t>(rows * n_prefix), 0.0);
  const std::size_t n_leaves = static_cast<std::size_t>(boxes.n_leaves());
  const std::size_t np = static_cast<std::size_t>(n_prefix);
  constexpr std::size_t L = kLanes;
  const PairPasses& passes = pair_passes();
  for_each_vector(rows, n_leaves, threads, [&](PruneScratch& scratch, std::size_t v, std::int64_t i0, std::size_t n_in) {
    const std::size_t first = v * n_leaves * kLanes;
    // Per lane: its last set (empty in padding lanes), where each feature enters its prefixes
    // ([feature][lane]), then the bounds of its leaves, W and the estimate ([prefix][lane]).
    std::uint64_t S[kLanes] = {};
    double position[64 * kLanes];
    std::fill(position, position + 64 * kLanes, static_cast<double>(n_prefix));
    std::vector<double> estimate(np * L, 0.0), budget(L * np);
    double W[kLanes];
    bool pruned[kLanes];
    for (std::size_t l = 0; l < n_in; ++l) {
      const std::int64_t i = i0 + static_cast<std::int64_t>(l);
      S[l] = set_of(i, n_prefix - 1) & ~boxes.set_features;
      for (std::int64_t k = n_prefix - 1; k >= 0; --k) {
        for (std::uint64_t f = set_of(i, k); f != 0; f &= f - 1) {
          position[__builtin_ctzll(f) * L + l] = static_cast<double>(k);
        }
      }
    }
    CurveLeafBounds in;
    in.n_trees = a.n_trees();
    in.tree_first = boxes.tree_first.data();
    in.constrained = boxes.constrained.data();
    in.slot_of = boxes.slot_of.data();
    in.n_prefix = n_prefix;
    in.sets = S;
    in.position = position;
    in.bound = scratch.bound.data();
    in.W = W;
    in.estimate = estimate.data();
    passes.curve_leaf_bounds(lanes.view(static_cast<std::int32_t>(v)), in);
    for (std::size_t l = 0; l < n_in; ++l) {
      pruned[l] = W[l] > 0.0 && std::isfinite(W[l]);
      if (!pruned[l]) continue;
      // Per class c: its share of the smallest estimate of the prefixes it is alive in.
      double smallest = estimate[(np - 1) * L + l];
      for (std::size_t c = np; c-- > 0;) {
        smallest = std::min(smallest, estimate[c * L + l]);
        budget[l * np + c] = std::isfinite(smallest) ? share * smallest / static_cast<double>(np) / (2.0 * W[l]) : 0.0;
      }
    }
    double* vector_skipped = skipped.data() + static_cast<std::size_t>(i0 * n_prefix);
    auto class_of = [](std::int8_t code) { return static_cast<std::size_t>(std::max<std::int8_t>(code, 0)); };
    prune_vector(lanes, scratch.bound, first, n_in, pruned, np, class_of,
                 [&](std::size_t l, std::size_t c) { return budget[l * np + c]; },
                 [&](std::size_t l, std::size_t at, double b) {
                   vector_skipped[l * np + class_of(lanes.code[at])] += 2.0 * W[l] * b;
                 },
                 scratch.bucket, scratch.cut);
    for (std::size_t l = 0; l < n_in; ++l) {
      for (std::size_t k = 1; k < np; ++k) vector_skipped[l * np + k] += vector_skipped[l * np + k - 1];
    }
  });
}

// Prunes, per row, the leaves of a greedy step (codes from code_greedy: alive with the row's set
// S, alive with S + {j} only, or dead) whose bounds add up to at most `share` of the sum of
// the trees' variances with S perturbed (nothing while that is zero: the first step), and
// fills skipped_none[i] with the bound of row i's pruned leaves alive with S (they may move
// PG2(S) and every candidate) and skipped_by[i * d + j] with that of those alive with S + {j}
// only (they may move candidate j alone). A candidate's value is then certain within
// skipped_none + skipped_by[j]: the driver keeps the choice only where the chosen candidate
// beats every other by more than their two bounds, and recomputes the row unpruned otherwise.
// The vectors go to up to `threads` threads, as in prune_leaves.
void prune_greedy_leaves(const Arena& a, const LeafBoxes& boxes, std::int64_t rows, const std::uint64_t* sets,
                         Lanes& lanes, std::vector<double>& skipped_none, std::vector<double>& skipped_by,
                         double share, int threads);

// Whether the pruned result `value` of a set or prefix is certified (see prune_leaves).
inline bool certified(double value, double skipped, const PruneBudget& budget) {
  return skipped == 0.0 || skipped <= budget.certify * (value - skipped);
}

}  // namespace pairs
}  // namespace pgexact
