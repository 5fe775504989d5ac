#include "pgexact/exact/pair_kernel.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef PGEXACT_OPENMP
#include <omp.h>
#endif

#include "pgexact/exact/kernels.hpp"
#include "pgexact/exact/leaf_pairs.hpp"

namespace pgexact {
namespace {

// Rows per block: the pairs of a tree pair are enumerated once per block (and per greedy
// step), so a block holds as many rows as a fixed memory budget allows: per row, 16 bytes per
// boundary, 17 per leaf (out mask, weight, code), 8 per slot and the per-first-tree partial
// sums.
// Within a tree pair only the boundaries and leaves of its two trees are read, for every
// vector of rows, so a large block streams little more than a small one.
constexpr std::int64_t kBlockBytes = std::int64_t{96} << 20;

std::int64_t block_rows(const Arena& a, const LeafBoxes& boxes, std::int64_t sums_per_row) {
  const std::int64_t per_row = 16 * static_cast<std::int64_t>(a.bounds.size()) + 17 * boxes.n_leaves() +
                               8 * boxes.n_slots + 8 * sums_per_row * a.n_trees();
  std::int64_t rows = kBlockBytes / std::max<std::int64_t>(per_row, 1);
  rows = std::max<std::int64_t>(8, std::min<std::int64_t>(rows, 4096));
  return rows / kLanes * kLanes;
}

inline std::uint64_t bit(std::int32_t j) { return std::uint64_t{1} << j; }

// Sums are compensated (Neumaier): the error stays at a few ulps of the result however many
// terms of either sign go in, which matters where trees cancel each other out.
inline void add_compensated(double& sum, double& comp, double x) {
  const double t = sum + x;
  comp += (std::fabs(sum) >= std::fabs(x)) ? (sum - t) + x : (x - t) + sum;
  sum = t;
}

// Everything a block of rows contributes to the pair sums, laid out with rows in lanes.
struct Lanes {
  std::int32_t vectors = 0;  // lane vectors in the block
  std::int64_t n_bounds = 0, n_leaves = 0;
  std::vector<double> table;              // [vector][boundary][T | I][lane]
  std::vector<std::uint64_t> out;         // [vector][leaf][lane]: features x leaves the path on
  std::vector<double> weight;             // [vector][leaf][lane]: y_u - f_t(x)
  std::vector<std::uint64_t> perturbable;  // [vector][lane]: the noise moves it and it is not NaN
  std::vector<std::int8_t> code;          // [vector][leaf][lane]: see LaneView
  std::vector<double> masses;             // [vector][slot][lane]: leaf interval masses
  std::int64_t n_slots = 0;

  const double* at_bound(std::int32_t v, std::int32_t b) const {
    return table.data() + ((static_cast<std::size_t>(v) * n_bounds + b) * 2) * kLanes;
  }
  LaneView view(std::int32_t v) const {
    const std::size_t leaves = static_cast<std::size_t>(v) * static_cast<std::size_t>(n_leaves) * kLanes;
    return LaneView{at_bound(v, 0), weight.data() + leaves, code.data() + leaves,
                    masses.data() + static_cast<std::size_t>(v) * static_cast<std::size_t>(n_slots) * kLanes,
                    out.data() + leaves};
  }
};

void resize_lanes(const Arena& a, const LeafBoxes& boxes, std::int32_t vectors, Lanes& lanes) {
  lanes.vectors = vectors;
  lanes.n_bounds = static_cast<std::int64_t>(a.bounds.size());
  lanes.n_leaves = boxes.n_leaves();
  const auto v = static_cast<std::size_t>(vectors);
  lanes.table.assign(v * static_cast<std::size_t>(lanes.n_bounds) * 2 * kLanes, 0.0);
  lanes.out.assign(v * static_cast<std::size_t>(lanes.n_leaves) * kLanes, 0);
  lanes.weight.assign(v * static_cast<std::size_t>(lanes.n_leaves) * kLanes, 0.0);
  lanes.perturbable.assign(v * kLanes, 0);
  lanes.code.assign(lanes.out.size(), kNeverAlive);  // padding lanes: never alive
  lanes.n_slots = boxes.n_slots;
  lanes.masses.assign(v * static_cast<std::size_t>(boxes.n_slots) * kLanes, 0.0);
}

// Fills lane l of vector v for row x.
void fill_lane(const Arena& a, const Noise& noise, const LeafBoxes& boxes, const double* x, std::int32_t v,
               std::int32_t l, Lanes& lanes, std::vector<std::pair<std::int32_t, std::uint64_t>>& stack) {
  std::uint64_t perturbable = 0;
  for (std::int32_t j = 0; j < a.n_features; ++j) {
    const std::int32_t begin = a.feature_bounds_begin[j];
    const std::int32_t end = a.feature_bounds_begin[j + 1];
    if (noise_moves(a, noise, j) && !std::isnan(x[j])) perturbable |= bit(j);
    // Additive noise: the interval table over the feature's boundaries (a feature perturbed by
    // category needs none: its entries carry their own probabilities, category_cells.hpp).
    const bool perturb = ((perturbable >> j) & 1u) != 0 && noise.additive(j);
    for (std::int32_t b = begin; b < end; ++b) {
      double* cell = lanes.table.data() + ((static_cast<std::size_t>(v) * lanes.n_bounds + b) * 2) * kLanes + l;
      double t = 0.0, ind = 0.0;
      if (perturb && b == end - 1) {
        ind = 1.0;  // +inf: T = -P(x' > +inf) = 0
      } else if (perturb && b > begin) {
        const double bound = a.bounds[b];
        const CdfPair c = noise_cdf(noise.family[j], noise.sigma[j], bound - x[j]);
        if (bound <= x[j]) {
          t = c.lower;
        } else {
          t = -c.upper;
          ind = 1.0;
        }
      }
      cell[0] = t;
      cell[kLanes] = ind;
    }
  }
  lanes.perturbable[static_cast<std::size_t>(v) * kLanes + l] = perturbable;
  // Each leaf's interval masses, with the very operations of the passes' mass() (so a slot
  // gives the bits the table would).
  const std::size_t d = static_cast<std::size_t>(a.n_features);
  const double* table = lanes.table.data() + (static_cast<std::size_t>(v) * lanes.n_bounds * 2) * kLanes + l;
  // (No pointer is formed into `masses` when it is empty: a model whose splits never narrow a
  // box has no slots.)
  const std::size_t masses_at = static_cast<std::size_t>(v) * static_cast<std::size_t>(lanes.n_slots) * kLanes + l;
  for (std::size_t leaf = 0; leaf < boxes.leaf_node.size(); ++leaf) {
    // (A feature perturbed by category is never a slot: its entries carry their own numbers.)
    for (std::uint64_t f = boxes.constrained[leaf] & ~boxes.set_features; f != 0; f &= f - 1) {
      const std::size_t j = static_cast<std::size_t>(__builtin_ctzll(f));
      const double* lo = table + static_cast<std::size_t>(boxes.lo[leaf * d + j]) * 2 * kLanes;
      const double* hi = table + static_cast<std::size_t>(boxes.hi[leaf * d + j]) * 2 * kLanes;
      const double m = (hi[0] - lo[0]) + (hi[kLanes] - lo[kLanes]);
      lanes.masses[masses_at + static_cast<std::size_t>(boxes.slot_of[leaf * d + j]) * kLanes] = m > 0.0 ? m : 0.0;
    }
  }
  // Route x through every tree, marking per leaf the features on which x leaves its path.
  const std::size_t base = static_cast<std::size_t>(v) * static_cast<std::size_t>(lanes.n_leaves);
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    double home = 0.0;
    stack.clear();
    stack.emplace_back(a.tree_root[t], 0);
    while (!stack.empty()) {
      const auto [n, mask] = stack.back();
      stack.pop_back();
      if (a.is_leaf(n)) {
        const std::int32_t leaf = boxes.node_leaf[n];
        lanes.out[(base + leaf) * kLanes + l] = mask;
        if (mask == 0) home = a.value[n];
        continue;
      }
      const std::int32_t j = a.feature[n];
      const bool left = a.goes_left(n, x[j]);
      stack.emplace_back(a.right[n], left ? (mask | bit(j)) : mask);
      stack.emplace_back(a.left[n], left ? mask : (mask | bit(j)));
    }
    for (std::int32_t leaf = boxes.tree_first[t]; leaf < boxes.tree_first[t + 1]; ++leaf) {
      lanes.weight[(base + leaf) * kLanes + l] = a.value[boxes.leaf_node[leaf]] - home;
    }
  }
}

// ---- drivers ----------------------------------------------------------------------------------

struct ThreadScratch {
  PairScratch box;
  PairList pairs;
};

// Fills the lanes of rows r0 .. r0 + rows (padding lanes repeat the first row).
void fill_block(const Arena& a, const Noise& noise, const LeafBoxes& boxes, const double* X, std::int64_t r0,
                std::int64_t rows, int threads, Lanes& lanes) {
  const auto vectors = static_cast<std::int32_t>((rows + kLanes - 1) / kLanes);
  resize_lanes(a, boxes, vectors, lanes);
  const std::int64_t d = a.n_features;
  const std::int64_t slots = static_cast<std::int64_t>(vectors) * kLanes;
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    std::vector<std::pair<std::int32_t, std::uint64_t>> stack;
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t i = 0; i < slots; ++i) {
      const std::int64_t row = r0 + (i < rows ? i : 0);
      fill_lane(a, noise, boxes, X + row * d, static_cast<std::int32_t>(i / kLanes),
                static_cast<std::int32_t>(i % kLanes), lanes, stack);
    }
  }
  (void)threads;
}

// Sets the leaves' codes (LaneView) of rows [begin, end) of the block: code_of(row, out mask)
// for each leaf. Padding lanes keep kNeverAlive.
template <typename CodeOf>
void code_leaves(std::int64_t begin, std::int64_t end, Lanes& lanes, CodeOf&& code_of) {
  const std::size_t stride = static_cast<std::size_t>(lanes.n_leaves) * kLanes;
  for (std::int64_t i = begin; i < end; ++i) {
    const std::size_t first = static_cast<std::size_t>(i / kLanes) * stride + static_cast<std::size_t>(i % kLanes);
    for (std::size_t at = first; at < first + stride; at += kLanes) lanes.code[at] = code_of(i, lanes.out[at]);
  }
}

// The leaves' codes for one set per row: 0 where the leaf admits x' with the row's set perturbed.
void code_set(const std::uint64_t* sets, std::int64_t rows, Lanes& lanes) {
  code_leaves(0, rows, lanes, [&](std::int64_t i, std::uint64_t out) {
    return (out & ~sets[i]) == 0 ? std::int8_t{0} : kNeverAlive;
  });
}

// The leaves' codes for a greedy step: set S and candidates per row.
void code_greedy(const std::uint64_t* sets, const std::uint64_t* candidates, std::int64_t rows, Lanes& lanes) {
  code_leaves(0, rows, lanes, [&](std::int64_t i, std::uint64_t out) {
    const std::uint64_t rest = out & ~sets[i];
    return rest == 0                                             ? kNoneMissing
           : (rest & (rest - 1)) == 0 && (rest & candidates[i]) != 0 ? static_cast<std::int8_t>(__builtin_ctzll(rest))
                                                                   : kNeverAlive;
  });
}

// The leaves' codes for a curve of two prefixes per row, sets [vector][prefix][lane].
void code_two_prefixes(const std::uint64_t* sets, std::int64_t rows, Lanes& lanes) {
  code_leaves(0, rows, lanes, [&](std::int64_t i, std::uint64_t out) {
    const std::size_t at = static_cast<std::size_t>(i / kLanes) * 2 * kLanes + static_cast<std::size_t>(i % kLanes);
    return (out & ~sets[at]) == 0 ? std::int8_t{0} : (out & ~sets[at + kLanes]) == 0 ? std::int8_t{1} : kNeverAlive;
  });
}


// ---- what a pass needs: live leaves, and leaves pruned per row ------------------------------

// The leaves some lane of a pass needs: code below `limit` (1 for one set, n_steps for curves,
// kNeverAlive for a greedy step) and a nonzero weight. A pair with a leaf that is not live adds
// exactly zero in every lane, so the sweep skips it; where few leaves are live (a small set, an
// early greedy step, a block of one row), only the live pairs are enumerated, which is the
// whole point for calls of a few rows: their cost follows the pairs the question can reach,
// not the model's.
struct Liveness {
  std::vector<std::uint8_t> leaf, node;  // per global leaf; per arena node (a live leaf below)
  std::vector<std::int32_t> tree_live;   // per tree: its live leaves
  std::vector<std::int32_t> order;       // scratch: a tree's nodes in pre-order
  std::int64_t n_live = 0;
  bool restricted = false;  // enumerate the live pairs afresh instead of reading kept lists
  LiveLeaves view() const { return LiveLeaves{leaf.data(), node.data()}; }
};

// Live leaves at or above this share of all leaves: the kept full lists are read (a dead pair
// costs a few loads there), below it the live pairs are enumerated afresh.
constexpr double kRestrictShare = 0.6;

void find_live(const Arena& a, const LeafBoxes& boxes, const Lanes& lanes, std::int64_t rows, std::int8_t limit,
               Liveness& live) {
  const std::size_t n_leaves = static_cast<std::size_t>(boxes.n_leaves());
  live.leaf.assign(n_leaves, 0);
  live.node.assign(static_cast<std::size_t>(a.n_nodes()), 0);
  live.tree_live.assign(static_cast<std::size_t>(a.n_trees()), 0);
  const std::size_t stride = n_leaves * kLanes;
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::size_t first = static_cast<std::size_t>(i / kLanes) * stride + static_cast<std::size_t>(i % kLanes);
    for (std::size_t leaf = 0, at = first; leaf < n_leaves; ++leaf, at += kLanes) {
      if (lanes.code[at] < limit && lanes.weight[at] != 0.0) live.leaf[leaf] = 1;
    }
  }
  live.n_live = 0;
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    // Pre-order, then children before parents by walking it backwards.
    live.order.clear();
    live.order.push_back(a.tree_root[t]);
    for (std::size_t k = 0; k < live.order.size(); ++k) {
      const std::int32_t n = live.order[k];
      if (!a.is_leaf(n)) {
        live.order.push_back(a.left[n]);
        live.order.push_back(a.right[n]);
      }
    }
    for (std::size_t k = live.order.size(); k-- > 0;) {
      const std::int32_t n = live.order[k];
      if (a.is_leaf(n)) {
        live.node[n] = live.leaf[static_cast<std::size_t>(boxes.node_leaf[n])];
        live.tree_live[t] += live.node[n];
      } else {
        live.node[n] = static_cast<std::uint8_t>(live.node[a.left[n]] | live.node[a.right[n]]);
      }
    }
    live.n_live += live.tree_live[t];
  }
  live.restricted = static_cast<double>(live.n_live) < kRestrictShare * static_cast<double>(n_leaves);
}

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
// kPruneCertify of the pruned result; a row that fails is computed again without pruning.
// Results stay within 1e-13 relative of the unpruned sums.
constexpr double kPruneShare = 1e-14;
constexpr double kPruneCertify = 1e-13;

// Whether per-row pruning is on: PGEXACT_LEAF_PRUNING=0 turns it off (tests and before/after
// benchmarks; read per call). PGEXACT_LEAF_PRUNING=reckless spends a budget of 1e-2 instead of
// kPruneShare, so that certificates fail and rows are recomputed: the tests of that path.
bool pruning_enabled() {
  const char* flag = std::getenv("PGEXACT_LEAF_PRUNING");
  return flag == nullptr || std::string(flag) != "0";
}
double prune_share() {
  const char* flag = std::getenv("PGEXACT_LEAF_PRUNING");
  return flag != nullptr && std::string(flag) == "reckless" ? 1e-2 : kPruneShare;
}

// Prunes the leaves of rows [0, rows) whose codes are below n_prefix (after the codes are set)
// and fills skipped[i * n_prefix + k] with the bound of row i's pruned leaves alive at prefix k
// (for one set, n_prefix = 1). set_of(i, k): the set row i perturbs at prefix k.
//
// The budget is spread over the prefixes: the result of prefix k is estimated by the sum of
// the trees' variances at that prefix, E_k (leaves alive there, each with its box's mass over
// the features of the prefix), and the leaves that become alive at prefix c may spend
// kPruneShare * min_{k >= c} E_k / n_prefix, so that every prefix's pruned bound stays below
// kPruneShare of its estimate. Within a class, the smallest bounds go first (by binary
// exponent: a histogram, not a sort).
template <typename SetOf>
void prune_leaves(const Arena& a, const LeafBoxes& boxes, std::int64_t rows, std::int64_t n_prefix,
                  SetOf&& set_of, Lanes& lanes, std::vector<double>& skipped) {
  skipped.assign(static_cast<std::size_t>(rows * n_prefix), 0.0);
  const std::size_t d = static_cast<std::size_t>(a.n_features);
  const std::size_t n_leaves = static_cast<std::size_t>(boxes.n_leaves());
  const std::size_t np = static_cast<std::size_t>(n_prefix);
  constexpr int kMinExp = -1100, kBuckets = 1200;  // ilogb of the bounds, clamped to [-1100, 99]
  auto bucket_of = [](double b) {
    return static_cast<std::size_t>(std::min(kBuckets - 1, std::max(0, std::ilogb(b) - kMinExp)));
  };
  std::vector<double> bound(n_leaves), bucket(np * kBuckets), m1(np), m2(np), estimate(np), factor(np), budget(np);
  std::vector<int> cut(np);
  std::int32_t position[64];
  const double share = prune_share();
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
    const std::size_t first = v * n_leaves * kLanes + l;
    const double* masses = lanes.masses.data() + v * static_cast<std::size_t>(lanes.n_slots) * kLanes + l;
    const std::uint64_t S = set_of(i, n_prefix - 1) & ~boxes.set_features;
    for (std::size_t j = 0; j < d; ++j) position[j] = static_cast<std::int32_t>(np);
    for (std::int64_t k = n_prefix - 1; k >= 0; --k) {
      for (std::uint64_t f = set_of(i, k); f != 0; f &= f - 1) position[__builtin_ctzll(f)] = static_cast<std::int32_t>(k);
    }
    double W = 0.0;
    std::fill(estimate.begin(), estimate.end(), 0.0);
    for (std::int64_t t = 0; t < a.n_trees(); ++t) {
      double w_max = 0.0;
      std::fill(m1.begin(), m1.end(), 0.0);
      std::fill(m2.begin(), m2.end(), 0.0);
      for (std::int32_t leaf = boxes.tree_first[t]; leaf < boxes.tree_first[t + 1]; ++leaf) {
        const std::size_t at = first + static_cast<std::size_t>(leaf) * kLanes;
        bound[static_cast<std::size_t>(leaf)] = -1.0;  // not alive: not a candidate
        const double w = lanes.weight[at];
        if (lanes.code[at] >= n_prefix || w == 0.0) continue;
        const std::size_t c = static_cast<std::size_t>(std::max<std::int8_t>(lanes.code[at], 0));
        const std::uint64_t out = lanes.out[at];
        double base = 1.0, p_out = 1.0;
        std::fill(factor.begin() + static_cast<std::ptrdiff_t>(c), factor.end(), 1.0);
        for (std::uint64_t f = boxes.constrained[static_cast<std::size_t>(leaf)] & S; f != 0; f &= f - 1) {
          const std::size_t j = static_cast<std::size_t>(__builtin_ctzll(f));
          const double m = masses[static_cast<std::size_t>(boxes.slot_of[static_cast<std::size_t>(leaf) * d + j]) * kLanes];
          const auto k = static_cast<std::size_t>(position[j]);
          if (k <= c) base *= m; else if (k < np) factor[k] *= m;
          if ((out >> j) & 1u) p_out *= m;
        }
        double p = base;
        for (std::size_t k = c; k < np; ++k) {
          if (k > c) p *= factor[k];
          m1[k] += w * p;
          m2[k] += w * w * p;
        }
        bound[static_cast<std::size_t>(leaf)] = std::fabs(w) * p_out;
        w_max = std::max(w_max, std::fabs(w));
      }
      W += w_max;
      for (std::size_t k = 0; k < np; ++k) estimate[k] += std::max(0.0, m2[k] - m1[k] * m1[k]);
    }
    if (!(W > 0.0) || !std::isfinite(W)) continue;
    // Per class c: its share of the smallest estimate of the prefixes it is alive in.
    double smallest = estimate[np - 1];
    for (std::size_t c = np; c-- > 0;) {
      smallest = std::min(smallest, estimate[c]);
      budget[c] = std::isfinite(smallest) ? share * smallest / static_cast<double>(np) / (2.0 * W) : 0.0;
    }
    std::fill(bucket.begin(), bucket.end(), 0.0);
    for (std::size_t leaf = 0; leaf < n_leaves; ++leaf) {
      const double b = bound[leaf];
      if (!(b > 0.0)) continue;
      const std::size_t c = static_cast<std::size_t>(std::max<std::int8_t>(lanes.code[first + leaf * kLanes], 0));
      bucket[c * kBuckets + bucket_of(b)] += b;
    }
    for (std::size_t c = 0; c < np; ++c) {
      cut[c] = -1;  // buckets [0, cut] of class c are pruned
      double total = 0.0;
      for (int e = 0; e < kBuckets; ++e) {
        total += bucket[c * kBuckets + static_cast<std::size_t>(e)];
        if (total > budget[c]) break;
        cut[c] = e;
      }
    }
    double* row_skipped = skipped.data() + static_cast<std::size_t>(i * n_prefix);
    for (std::size_t leaf = 0; leaf < n_leaves; ++leaf) {
      const double b = bound[leaf];
      if (b < 0.0) continue;
      const std::size_t at = first + leaf * kLanes;
      const std::size_t c = static_cast<std::size_t>(std::max<std::int8_t>(lanes.code[at], 0));
      if (b > 0.0 && static_cast<int>(bucket_of(b)) > cut[c]) continue;
      row_skipped[c] += 2.0 * W * b;
      lanes.code[at] = kNeverAlive;
    }
    for (std::size_t k = 1; k < np; ++k) row_skipped[k] += row_skipped[k - 1];
  }
}

// Whether the pruned result `value` of a set or prefix is certified (see prune_leaves).
inline bool certified(double value, double skipped) {
  return skipped == 0.0 || skipped <= kPruneCertify * (value - skipped);
}

// Runs body(scratch, t) for every first tree t, in parallel, then nothing else: callers keep
// per-t partial sums and add them in order of t.
template <typename Body>
void for_each_first_tree(const Arena& a, int threads, Body&& body) {
  const std::int64_t n_trees = a.n_trees();
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    ThreadScratch scratch;
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t t = 0; t < n_trees; ++t) body(scratch, t);
  }
  (void)threads;
}

// Leaves of the first tree per enumerated chunk: a chunk's list holds at most 64 times the
// leaves of the second tree, so per-thread memory stays bounded however deep the trees.
constexpr std::int32_t kChunkLeaves = 64;

inline std::int32_t chunks_of(const LeafBoxes& boxes, std::int64_t t) {
  return (boxes.tree_first[t + 1] - boxes.tree_first[t] + kChunkLeaves - 1) / kChunkLeaves;
}

// Enumerated pairs kept for the rest of one call (later blocks of rows, later greedy steps),
// list by list, until a fixed budget is spent; the others are enumerated again each time.
// Which lists are kept depends on thread timing, but a list is the same whether kept or
// enumerated again, so results do not. Lists of first tree t are only ever touched by the one
// thread running t in a pass, so each t has its own map and no lock is needed.
class PairCache {
 public:
  explicit PairCache(std::int64_t n_trees) : kept_(static_cast<std::size_t>(n_trees)) {}

  // The pairs of (t, s), s >= t, for chunk c of t's leaves; `keep`: whether a fresh list
  // should be kept (another sweep follows; else keeping would only copy it).
  const PairList& get(const Arena& a, const LeafBoxes& boxes, std::int64_t t, std::int64_t s, std::int32_t c,
                      bool keep, ThreadScratch& scratch) {
    auto& mine = kept_[static_cast<std::size_t>(t)];
    const std::int64_t key = s * 1048576 + c;
    const auto hit = mine.find(key);
    if (hit != mine.end()) return hit->second;
    const std::int32_t begin = boxes.tree_first[t] + c * kChunkLeaves;
    const std::int32_t end = std::min(boxes.tree_first[t + 1], begin + kChunkLeaves);
    scratch.pairs.clear();
    enumerate_pairs(a, boxes, t, s, begin, end, scratch.box, scratch.pairs);
    const PairList& fresh = scratch.pairs;
    if (!keep) return fresh;
    const auto bytes = static_cast<std::int64_t>(fresh.bytes() + 128);
    if (used_.fetch_add(bytes) + bytes <= kBudget) return mine.emplace(key, fresh.trimmed()).first->second;
    used_.fetch_sub(bytes);
    return fresh;
  }

 private:
  static constexpr std::int64_t kBudget = std::int64_t{192} << 20;
  std::vector<std::unordered_map<std::int64_t, PairList>> kept_;
  std::atomic<std::int64_t> used_{0};
};

// What every driver sets up once per call: the leaf boxes, the pair cache, the passes for this
// CPU and the thread count. run(body, again) calls body(t, pairs, mult) for every pair list
// (s >= t, chunk by chunk), in parallel over the first tree t; mult is 2 for t != s (the pairs
// of (s, t) are the same terms). `again`: whether another run follows that can reuse the lists.
class PairSweep {
 public:
  // The cells of features perturbed by category come from the noise and the call's rows X.
  PairSweep(const Arena& a, const Noise& noise, const double* X, int n_threads, std::int64_t n_rows,
            RunControl* control)
      : arena(a),
        boxes(a, CategoryCells(a, noise, X, n_rows)),
        passes(pair_passes()),
        threads(resolve_threads(n_threads, std::max<std::int64_t>(a.n_trees(), n_rows))),
        cache_(a.n_trees()),
        control_(control) {}

  // Progress: a tree pair (t, s >= t) of a sweep is leaves(t) * leaves(s) units (its pairs cost
  // about that much; the first trees of a boosted model are often the largest); `sweeps` sweeps.
  void plan_sweeps(std::int64_t sweeps) {
    std::int64_t sum = 0, squares = 0;
    for (std::int64_t t = 0; t < arena.n_trees(); ++t) {
      sum += leaves(t);
      squares += leaves(t) * leaves(t);
    }
    plan(control_, sweeps * ((sum * sum + squares) / 2));
  }
  std::int64_t leaves(std::int64_t t) const { return boxes.tree_first[t + 1] - boxes.tree_first[t]; }
  bool stopped() const { return pgexact::stopped(control_); }

  // With `live`, tree pairs of which one tree has no live leaf are skipped (their pairs add
  // exactly zero), and where live.restricted only the live pairs are enumerated (not kept).
  template <typename Body>
  void run(Body&& body, bool again, const Liveness* live = nullptr) {
    const LiveLeaves filter = live != nullptr ? live->view() : LiveLeaves{nullptr, nullptr};
    for_each_first_tree(arena, threads, [&](ThreadScratch& scratch, std::int64_t t) {
      for (std::int64_t s = t; s < arena.n_trees(); ++s) {
        if (stopped()) return;  // the caller discards a stopped call's sums
        const bool skip = live != nullptr && (live->tree_live[t] == 0 || live->tree_live[s] == 0);
        for (std::int32_t chunk = 0; chunk < chunks_of(boxes, t) && !skip; ++chunk) {
          if (live != nullptr && live->restricted) {
            const std::int32_t begin = boxes.tree_first[t] + chunk * kChunkLeaves;
            const std::int32_t end = std::min(boxes.tree_first[t + 1], begin + kChunkLeaves);
            scratch.pairs.clear();
            enumerate_pairs(arena, boxes, t, s, begin, end, scratch.box, scratch.pairs, &filter);
            body(t, scratch.pairs.view(boxes), s == t ? 1.0 : 2.0);
          } else {
            body(t, cache_.get(arena, boxes, t, s, chunk, again, scratch).view(boxes), s == t ? 1.0 : 2.0);
          }
        }
        advance(control_, leaves(t) * leaves(s));
      }
    });
  }

  const Arena& arena;
  const LeafBoxes boxes;
  const PairPasses& passes;
  const int threads;

 private:
  PairCache cache_;
  RunControl* control_;
};

// Adds the per-t partial sums (sum + comp, `width` values per t) in order of t into out, clamped.
void reduce_trees(const std::vector<double>& sum, const std::vector<double>& comp, std::int64_t n_trees,
                  std::size_t width, std::vector<double>& out) {
  out.assign(width, 0.0);
  std::vector<double> c(width, 0.0);
  for (std::int64_t t = 0; t < n_trees; ++t) {
    const std::size_t base = static_cast<std::size_t>(t) * width;
    for (std::size_t i = 0; i < width; ++i) add_compensated(out[i], c[i], sum[base + i] + comp[base + i]);
  }
  for (std::size_t i = 0; i < width; ++i) {
    const double value = out[i] + c[i];
    out[i] = value > 0.0 ? value : 0.0;
  }
}

void check_features(const Arena& a) {
  if (!pairs_apply(a)) throw std::invalid_argument("pair kernel: model not supported");
}

}  // namespace

const PairPasses& pair_passes() {
  static const PairPasses chosen = [] {
    // PGEXACT_PASSES=base|v3 caps the level (tests check that every level gives the same bits).
    const char* cap = std::getenv("PGEXACT_PASSES");
    const std::string level = cap == nullptr ? "" : cap;
    if (level == "base") return isa_base::passes();
#ifdef PGEXACT_ISA_LEVELS
    __builtin_cpu_init();
    if (level != "v3" && __builtin_cpu_supports("x86-64-v4")) return isa_v4::passes();
    if (__builtin_cpu_supports("x86-64-v3")) return isa_v3::passes();
#endif
    return isa_base::passes();
  }();
  return chosen;
}

bool pairs_apply(const Arena& a) {
  return a.n_outputs == 1 && a.n_features >= 1 && a.n_features <= 64 && a.max_depth <= 256;
}

namespace {

// Rows whose pruned results were not certified, computed again without pruning: the rows'
// values do not depend on the other rows of a call, so a call of just those rows gives them.
template <typename Compute>
void recompute_rows(const std::vector<std::int64_t>& failed, const double* X, std::int64_t d, std::int64_t width,
                    double* out, Compute&& compute) {
  if (failed.empty()) return;
  std::vector<double> rows(failed.size() * static_cast<std::size_t>(d));
  for (std::size_t k = 0; k < failed.size(); ++k) {
    std::copy(X + failed[k] * d, X + (failed[k] + 1) * d, rows.begin() + static_cast<std::ptrdiff_t>(k) * d);
  }
  std::vector<double> values(failed.size() * static_cast<std::size_t>(width));
  compute(rows.data(), static_cast<std::int64_t>(failed.size()), values.data());
  for (std::size_t k = 0; k < failed.size(); ++k) {
    std::copy(values.begin() + static_cast<std::ptrdiff_t>(k) * width,
              values.begin() + static_cast<std::ptrdiff_t>(k + 1) * width, out + failed[k] * width);
  }
}

void pg2_pairs_impl(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                    const std::uint8_t* perturbed, bool mask_per_row, int n_threads, double* out,
                    RunControl* control, bool prune) {
  PairSweep sweep(a, noise, X, n_threads, n_rows, control);
  const LeafBoxes& boxes = sweep.boxes;
  const int threads = sweep.threads;
  const std::int64_t d = a.n_features;
  const std::int64_t n_trees = a.n_trees();
  Lanes lanes;
  Liveness live;
  std::vector<double> sum, comp, total, skipped;
  std::vector<std::int64_t> failed;
  std::vector<std::uint64_t> sets;
  const std::int64_t block = block_rows(a, boxes, 2);
  sweep.plan_sweeps((n_rows + block - 1) / block);
  for (std::int64_t r0 = 0; r0 < n_rows && !sweep.stopped(); r0 += block) {
    const std::int64_t rows = std::min(block, n_rows - r0);
    fill_block(a, noise, boxes, X, r0, rows, threads, lanes);
    const std::size_t width = static_cast<std::size_t>(lanes.vectors) * kLanes;
    sets.assign(width, 0);
    for (std::size_t i = 0; i < static_cast<std::size_t>(rows); ++i) {
      const std::uint8_t* mask = perturbed + (mask_per_row ? (r0 + static_cast<std::int64_t>(i)) * d : 0);
      std::uint64_t s = 0;
      for (std::int64_t j = 0; j < d; ++j) s |= mask[j] ? bit(static_cast<std::int32_t>(j)) : 0;
      sets[i] = s & lanes.perturbable[i];
    }
    code_set(sets.data(), rows, lanes);
    if (prune) {
      prune_leaves(a, boxes, rows, 1, [&](std::int64_t i, std::int64_t) { return sets[static_cast<std::size_t>(i)]; },
                   lanes, skipped);
    }
    find_live(a, boxes, lanes, rows, 1, live);
    sum.assign(static_cast<std::size_t>(n_trees) * width, 0.0);
    comp.assign(sum.size(), 0.0);
    sweep.run([&](std::int64_t t, const PairView& view, double mult) {
      double* st = sum.data() + static_cast<std::size_t>(t) * width;
      double* ct = comp.data() + static_cast<std::size_t>(t) * width;
      for (std::int32_t v = 0; v < lanes.vectors; ++v) {
        sweep.passes.set(view, lanes.view(v), sets.data() + v * kLanes, mult, st + v * kLanes, ct + v * kLanes);
      }
    }, r0 + block < n_rows, &live);
    reduce_trees(sum, comp, n_trees, width, total);
    std::copy(total.begin(), total.begin() + rows, out + r0);
    for (std::int64_t i = 0; prune && i < rows; ++i) {
      if (!certified(total[static_cast<std::size_t>(i)], skipped[static_cast<std::size_t>(i)])) failed.push_back(r0 + i);
    }
  }
  if (sweep.stopped()) return;
  // (mask rows follow the failed rows when there is one mask per row)
  std::vector<std::uint8_t> masks;
  for (const std::int64_t r : failed) {
    const std::uint8_t* m = perturbed + (mask_per_row ? r * d : 0);
    masks.insert(masks.end(), m, m + d);
  }
  recompute_rows(failed, X, d, 1, out, [&](const double* rows_x, std::int64_t n, double* values) {
    pg2_pairs_impl(a, noise, rows_x, n, masks.data(), true, n_threads, values, control, false);
  });
}

}  // namespace

void pg2_pairs(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
               const std::uint8_t* perturbed, bool mask_per_row, int n_threads, double* out,
               RunControl* control) {
  check_features(a);
  pg2_pairs_impl(a, noise, X, n_rows, perturbed, mask_per_row, n_threads, out, control, pruning_enabled());
}

namespace {

void pg2_curve_pairs_impl(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                          const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps, int n_threads,
                          double* out, RunControl* control, bool prune) {
  PairSweep sweep(a, noise, X, n_threads, n_rows, control);
  const LeafBoxes& boxes = sweep.boxes;
  const int threads = sweep.threads;
  const std::int64_t d = a.n_features;
  const std::int64_t n_trees = a.n_trees();
  Lanes lanes;
  Liveness live;
  std::vector<double> sum, comp, total, skipped;
  std::vector<std::int64_t> failed;
  std::vector<std::uint64_t> sets;  // see CurveSets
  const std::int64_t block = block_rows(a, boxes, 2 * n_steps);
  sweep.plan_sweeps((n_rows + block - 1) / block);
  for (std::int64_t r0 = 0; r0 < n_rows && !sweep.stopped(); r0 += block) {
    const std::int64_t rows = std::min(block, n_rows - r0);
    fill_block(a, noise, boxes, X, r0, rows, threads, lanes);
    const std::size_t lanes_total = static_cast<std::size_t>(lanes.vectors) * kLanes;
    const std::size_t width = lanes_total * static_cast<std::size_t>(n_steps);
    const auto steps = static_cast<std::size_t>(n_steps);
    sets.assign(width, 0);
    std::vector<std::int32_t> position(static_cast<std::size_t>(d));
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t* rk = ranking + (ranking_per_row ? (r0 + i) * d : 0);
      const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
      const std::uint64_t perturbable = lanes.perturbable[static_cast<std::size_t>(i)];
      // Ranking positions of features never perturbed in this row: NaN, fixed by the noise,
      // or beyond the last prefix.
      std::uint64_t s = 0, never = 0;
      for (std::int64_t k = 0; k < d; ++k) {
        const auto j = static_cast<std::int32_t>(rk[k]);
        position[j] = static_cast<std::int32_t>(k);
        if (k >= n_steps || ((perturbable >> j) & 1u) == 0) never |= bit(static_cast<std::int32_t>(k));
        if (k >= n_steps) continue;
        s |= bit(j);
        sets[(v * steps + static_cast<std::size_t>(k)) * kLanes + l] = s & perturbable;
      }
      // A leaf stops excluding x' at the position of the last feature x leaves its path on.
      code_leaves(i, i + 1, lanes, [&](std::int64_t, std::uint64_t leaves_out) {
        std::uint64_t pos = 0;
        for (std::uint64_t f = leaves_out; f != 0; f &= f - 1) pos |= bit(position[__builtin_ctzll(f)]);
        return (pos & never) != 0 ? kNeverAlive
               : pos == 0         ? std::int8_t{0}
                                  : static_cast<std::int8_t>(63 - __builtin_clzll(pos));
      });
    }
    if (prune) {
      prune_leaves(a, boxes, rows, n_steps, [&](std::int64_t i, std::int64_t k) {
        const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
        return sets[(v * steps + static_cast<std::size_t>(k)) * kLanes + l];
      }, lanes, skipped);
    }
    find_live(a, boxes, lanes, rows, static_cast<std::int8_t>(n_steps), live);
    sum.assign(static_cast<std::size_t>(n_trees) * width, 0.0);
    comp.assign(sum.size(), 0.0);
    const std::size_t per_vector = static_cast<std::size_t>(n_steps) * kLanes;
    sweep.run([&](std::int64_t t, const PairView& view, double mult) {
      double* st = sum.data() + static_cast<std::size_t>(t) * width;
      double* ct = comp.data() + static_cast<std::size_t>(t) * width;
      for (std::int32_t v = 0; v < lanes.vectors; ++v) {
        const CurveSets c{sets.data() + v * per_vector};
        sweep.passes.curve(view, lanes.view(v), c, n_steps, mult, st + v * per_vector, ct + v * per_vector);
      }
    }, r0 + block < n_rows, &live);
    reduce_trees(sum, comp, n_trees, width, total);
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
      bool ok = true;
      for (std::int64_t k = 0; k < n_steps; ++k) {
        const double value = total[(v * static_cast<std::size_t>(n_steps) + static_cast<std::size_t>(k)) * kLanes + l];
        out[(r0 + i) * n_steps + k] = value;
        if (prune) ok = ok && certified(value, skipped[static_cast<std::size_t>(i * n_steps + k)]);
      }
      if (!ok) failed.push_back(r0 + i);
    }
  }
  if (sweep.stopped()) return;
  std::vector<std::int64_t> rankings;
  for (const std::int64_t r : failed) {
    const std::int64_t* rk = ranking + (ranking_per_row ? r * d : 0);
    rankings.insert(rankings.end(), rk, rk + d);
  }
  recompute_rows(failed, X, d, n_steps, out, [&](const double* rows_x, std::int64_t n, double* values) {
    pg2_curve_pairs_impl(a, noise, rows_x, n, rankings.data(), true, n_steps, n_threads, values, control, false);
  });
}

}  // namespace

void pg2_curve_pairs(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                     const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps, int n_threads,
                     double* out, RunControl* control) {
  check_features(a);
  if (n_steps == 0) return;
  pg2_curve_pairs_impl(a, noise, X, n_rows, ranking, ranking_per_row, n_steps, n_threads, out, control,
                       pruning_enabled());
}

void greedy_rank_pairs(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows, int n_threads,
                       std::int64_t* ranking_out, double* curve_out, RunControl* control) {
  check_features(a);
  PairSweep sweep(a, noise, X, n_threads, n_rows, control);
  const LeafBoxes& boxes = sweep.boxes;
  const int threads = sweep.threads;
  const std::int64_t d = a.n_features;
  const std::int64_t n_trees = a.n_trees();
  std::uint64_t choosable = 0;  // features that can be chosen: the noise can move them
  std::int64_t n_candidates = 0;
  for (std::int64_t j = 0; j < d; ++j) {
    if (noise_moves(a, noise, j)) {
      choosable |= bit(static_cast<std::int32_t>(j));
      ++n_candidates;
    }
  }
  Lanes lanes;
  Liveness live;
  std::vector<double> sum, comp, total, corr, corr_total;
  std::vector<std::uint64_t> chosen, cand;
  const std::int64_t block = block_rows(a, boxes, 2 + d);
  sweep.plan_sweeps((n_rows + block - 1) / block * (n_candidates >= 2 ? n_candidates : n_candidates + 1));
  for (std::int64_t r0 = 0; r0 < n_rows && !sweep.stopped(); r0 += block) {
    const std::int64_t rows = std::min(block, n_rows - r0);
    fill_block(a, noise, boxes, X, r0, rows, threads, lanes);
    const std::size_t width = static_cast<std::size_t>(lanes.vectors) * kLanes;
    const std::size_t corr_width = width * static_cast<std::size_t>(d);  // [vector][feature][lane]
    chosen.assign(width, 0);
    cand.assign(width, 0);
    // Step `step` ranks the candidates of S (step features chosen) and, in the same pass, gives
    // PG2(S), the curve entry of step - 1; the last pass only does the latter.
    for (std::int64_t step = 0; step <= n_candidates && !sweep.stopped(); ++step) {
      if (n_candidates >= 2 && step == n_candidates - 1) {
        // One feature left: the choice is forced, and one pass over the two prefixes S and
        // S + {last} gives both curve entries (the bits the set passes would: each prefix's
        // products and sums are its own) instead of a greedy pass and a set pass.
        std::vector<std::uint64_t> two(2 * width);  // [vector][prefix][lane]
        for (std::size_t i = 0; i < width; ++i) {
          const std::size_t v = i / kLanes, l = i % kLanes;
          const std::uint64_t last = choosable & ~chosen[i];
          two[(2 * v) * kLanes + l] = chosen[i] & lanes.perturbable[i];
          two[(2 * v + 1) * kLanes + l] = (chosen[i] | last) & lanes.perturbable[i];
          if (i < static_cast<std::size_t>(rows)) {
            ranking_out[(r0 + static_cast<std::int64_t>(i)) * d + step] = __builtin_ctzll(last);
            chosen[i] |= last;
          }
        }
        code_two_prefixes(two.data(), rows, lanes);
        find_live(a, boxes, lanes, rows, 2, live);
        sum.assign(static_cast<std::size_t>(n_trees) * 2 * width, 0.0);
        comp.assign(sum.size(), 0.0);
        sweep.run([&](std::int64_t t, const PairView& view, double mult) {
          double* st = sum.data() + static_cast<std::size_t>(t) * 2 * width;
          double* ct = comp.data() + static_cast<std::size_t>(t) * 2 * width;
          for (std::int32_t v = 0; v < lanes.vectors; ++v) {
            const CurveSets c{two.data() + 2 * v * kLanes};
            sweep.passes.curve(view, lanes.view(v), c, 2, mult, st + 2 * v * kLanes, ct + 2 * v * kLanes);
          }
        }, r0 + block < n_rows, &live);
        reduce_trees(sum, comp, n_trees, 2 * width, total);
        for (std::int64_t i = 0; i < rows; ++i) {
          const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
          curve_out[(r0 + i) * d + step - 1] = total[(2 * v) * kLanes + l];
          curve_out[(r0 + i) * d + step] = total[(2 * v + 1) * kLanes + l];
        }
        break;
      }
      const bool ranking = step < n_candidates;
      std::vector<std::uint64_t> sets(width);
      for (std::size_t i = 0; i < width; ++i) {
        sets[i] = chosen[i] & lanes.perturbable[i];
        cand[i] = ranking ? (choosable & ~chosen[i] & lanes.perturbable[i]) : 0;
      }
      if (ranking) {
        code_greedy(sets.data(), cand.data(), rows, lanes);
      } else {
        code_set(sets.data(), rows, lanes);
      }
      find_live(a, boxes, lanes, rows, ranking ? kNeverAlive : std::int8_t{1}, live);
      sum.assign(static_cast<std::size_t>(n_trees) * width, 0.0);
      comp.assign(sum.size(), 0.0);
      corr.assign(ranking ? static_cast<std::size_t>(n_trees) * corr_width : 0, 0.0);
      sweep.run([&](std::int64_t t, const PairView& view, double mult) {
        double* st = sum.data() + static_cast<std::size_t>(t) * width;
        double* ct = comp.data() + static_cast<std::size_t>(t) * width;
        for (std::int32_t v = 0; v < lanes.vectors; ++v) {
          if (ranking) {
            double* rt = corr.data() + static_cast<std::size_t>(t) * corr_width + static_cast<std::size_t>(v) * static_cast<std::size_t>(d) * kLanes;
            sweep.passes.greedy(view, lanes.view(v), sets.data() + v * kLanes, mult, st + v * kLanes,
                                ct + v * kLanes, rt);
          } else {
            sweep.passes.set(view, lanes.view(v), sets.data() + v * kLanes, mult, st + v * kLanes, ct + v * kLanes);
          }
        }
      }, ranking || r0 + block < n_rows, &live);
      if (sweep.stopped()) return;  // unfinished sums: nothing to choose from
      reduce_trees(sum, comp, n_trees, width, total);
      if (step > 0) {
        for (std::int64_t i = 0; i < rows; ++i) curve_out[(r0 + i) * d + step - 1] = total[static_cast<std::size_t>(i)];
      }
      if (!ranking) break;
      corr_total.assign(corr_width, 0.0);
      for (std::int64_t t = 0; t < n_trees; ++t) {
        const double* rt = corr.data() + static_cast<std::size_t>(t) * corr_width;
        for (std::size_t i = 0; i < corr_width; ++i) corr_total[i] += rt[i];
      }
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
        const double base = total[static_cast<std::size_t>(i)];
        std::int64_t best = -1;
        double best_value = -1.0;
        for (std::int64_t j = 0; j < d; ++j) {
          if (((choosable >> j) & 1u) == 0 || ((chosen[static_cast<std::size_t>(i)] >> j) & 1u) != 0) continue;
          // A feature NaN in the row stays missing: perturbing it changes nothing.
          const bool moves = ((lanes.perturbable[static_cast<std::size_t>(i)] >> j) & 1u) != 0;
          const double value = moves ? base + corr_total[(v * static_cast<std::size_t>(d) + static_cast<std::size_t>(j)) * kLanes + l] : base;
          if (value > best_value) {  // strictly greater: ties go to the lower index
            best_value = value;
            best = j;
          }
        }
        chosen[static_cast<std::size_t>(i)] |= bit(static_cast<std::int32_t>(best));
        ranking_out[(r0 + i) * d + step] = best;
      }
    }
    // Features the noise never moves last, in index order, repeating the last curve value.
    for (std::int64_t i = 0; i < rows; ++i) {
      std::int64_t step = n_candidates;
      const double last = n_candidates > 0 ? curve_out[(r0 + i) * d + n_candidates - 1] : 0.0;
      for (std::int64_t j = 0; j < d; ++j) {
        if ((choosable >> j) & 1u) continue;
        ranking_out[(r0 + i) * d + step] = j;
        curve_out[(r0 + i) * d + step] = last;
        ++step;
      }
    }
  }
}

}  // namespace pgexact
