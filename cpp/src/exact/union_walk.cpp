// Several sets of one row in one walk over their union (union_walk.hpp says why and how).
#include "union_walk.hpp"

#include <algorithm>
#include <vector>

#ifdef PGEXACT_OPENMP
#include <omp.h>
#endif

#include "lane_walk.hpp"

namespace pgexact {
namespace {

using walk::fixed_child;
using walk::LaneScratch;
using walk::LaneState;
using walk::LaneWalk;
using walk::lowest_bit;
using walk::with_bit;

// Tree pairs per chunk, at most: the chunk is the unit of work shared among threads and the
// grouping of the compensated sums (progress counts tree pairs: a chunk of a deep forest's
// takes seconds). Its size follows the number of tree pairs only (so no bit depends on the
// thread count): about 64 chunks where there are enough pairs, one pair a chunk for few trees
// (a forest of 5 trees has 10 pairs of seconds each).
constexpr std::size_t kMaxPairsPerChunk = 64;
constexpr std::size_t kTargetChunks = 64;

// Bytes of lane tables one walk may hold (shared by its threads): every prefix of a curve of
// ExtraTrees' default on housing (3.2 million nodes, 26 MB a lane: a conditional mean per node;
// the boundary CDFs are the row's, held once) fits with room to spare. More lanes than fit
// walk in groups, each group a walk of the whole model (ExtraTrees in two groups: 597 s a row
// against 499 s in one; fewer walks cost less).
constexpr std::size_t kTableBytes = std::size_t{512} << 20;

// Per tree, the features it splits on that share their bit of a feature mask (beyond 64
// features a bit stands for every feature j with the same j % 64) with another feature it
// splits on: tree t's at feature[begin[t] .. begin[t + 1]). Empty at up to 64 features.
struct SharedBitFeatures {
  std::vector<std::int32_t> begin, feature;
  explicit SharedBitFeatures(const Arena& a) : begin(static_cast<std::size_t>(a.n_trees()) + 1, 0) {
    std::vector<std::int64_t> seen(static_cast<std::size_t>(a.n_features), -1);
    std::vector<std::int32_t> stack, split;
    for (std::int64_t t = 0; t < a.n_trees() && a.n_features > 64; ++t) {
      split.clear();
      stack.assign(1, a.tree_root[t]);
      std::int32_t per_bit[64] = {};
      while (!stack.empty()) {
        const std::int32_t n = stack.back();
        stack.pop_back();
        const std::int32_t j = a.feature[n];
        if (j < 0) continue;
        if (seen[j] != t) {
          seen[j] = t;
          split.push_back(j);
          ++per_bit[j % 64];
        }
        stack.push_back(a.left[n]);
        stack.push_back(a.right[n]);
      }
      for (const std::int32_t j : split) {
        if (per_bit[j % 64] > 1) feature.push_back(j);
      }
      begin[t + 1] = static_cast<std::int32_t>(feature.size());
    }
  }
};

// The pair recursion over the union of the lanes' sets, for the tables prepare_variants built
// (one lane per walked variant, all of one row).
//
// Lanes whose sets agree on the features of trees t and s at the nodes they reach (pass 1's
// tree masks; lane_classes) walk the pair alike: the same P(box) at every state, the same
// conditional means and tree means, so the same Cov(f_t, f_s). Each such class of a pair's
// lanes walks as one lane, its first, within the smallest budget of the class (skipping less
// than a lane's own budget allows stays certified for it), and the others copy its covariance
// and skipped bound. XGBoost 100 x depth 6 at d = 100 (trees on about 33 features each): a
// row's curve has about 60 lanes live per tree pair in 23 classes. The walk's cost follows
// its live lanes only in part (a state's own work is much the same with few lanes as with
// many): one-row curves at d = 100 1.1-1.2x, CatBoost(200)'s one-row rankings on housing
// 1.1-1.2x (bench/RESULTS.md, session 20).
class UnionRecursion : LaneWalk {
 public:
  // `class_budget`: a copy of the lanes' budgets, which the walk overwrites with its classes';
  // `masks_by_tree`: pass 1's tree masks as [tree][lane] (walk_group).
  UnionRecursion(const Arena& a, const Workspace& tables, const LaneState& state, std::int32_t count,
                 const double* budget, double* class_budget, const SharedBitFeatures& shared_bits,
                 const std::uint64_t* masks_by_tree, double* cov, double* skipped)
      : LaneWalk(a, tables, state, count, class_budget, cov, skipped, LaneWalk::Cdfs::row),
        row_(tables.variant_row[0]), lane_budget_(budget), class_budget_(class_budget), shared_bits_(shared_bits),
        masks_by_tree_(masks_by_tree) {}

  // Cov(f_t, f_s) of every lane of `live`, added plainly into cov[lane]; the bounds of the
  // states skipped into skipped[lane].
  void covariance(std::int64_t t, std::int64_t s, std::uint64_t live) {
    const std::int32_t n_classes = lane_classes(t, s, live);
    std::uint64_t walked = 0;
    for (std::int32_t c = 0; c < n_classes; ++c) {
      const std::uint64_t members = classes_[c];
      const auto first = static_cast<std::size_t>(lowest_bit(members));
      double budget = lane_budget_[first];
      for (std::uint64_t b = members & (members - 1); b != 0; b &= b - 1) {
        budget = std::min(budget, lane_budget_[lowest_bit(b)]);
      }
      class_budget_[first] = budget;
      walked |= std::uint64_t{1} << first;
    }
    begin_pair(t, s, walked);
    rec(a_.tree_root[t], a_.tree_root[s], 0, walked, 0, 0, 1.0);
    end_pair(walked);
    for (std::int32_t c = 0; c < n_classes; ++c) {
      const std::uint64_t members = classes_[c];
      const auto first = static_cast<std::size_t>(lowest_bit(members));
      for (std::uint64_t b = members & (members - 1); b != 0; b &= b - 1) {
        const auto v = static_cast<std::size_t>(lowest_bit(b));
        cov_[v] = cov_[first];
        skipped_[v] += pair_skipped_[first];
      }
    }
  }

 private:
  // p_floor: a lower bound of P(box) over the lanes of `live`, carried down (see split) where
  // the shared walks take the minimum over their lanes at each state: a loop over the lanes
  // that was 16% of this recursion at d = 100.
  void rec(std::int32_t n, std::int32_t m, std::int32_t level, std::uint64_t live, std::uint64_t cut_a,
           std::uint64_t cut_b, double p_floor) {
    const double* p = p_levels_ + static_cast<std::size_t>(level) * stride_;
    if (rec_if_one_lane(n, m, p, live, cut_a, cut_b)) return;
    // Splits on features no lane perturbs follow x; the box does not change.
    while (a_.feature[n] >= 0 && branch_[a_.feature[n]] == 0) n = fixed_child(a_, n, row_);
    while (a_.feature[m] >= 0 && branch_[a_.feature[m]] == 0) m = fixed_child(a_, m, row_);
    // Per lane: independence of the subtrees given the box (both leaves: independent for
    // every lane), certified skipping.
    const std::uint64_t sf_n = a_.feature[n] >= 0 ? a_.subtree_features[n] : 0;
    const std::uint64_t sf_m = a_.feature[m] >= 0 ? a_.subtree_features[m] : 0;
    const std::uint64_t cuts_n = cut_a & sf_n;
    const std::uint64_t cuts_m = cut_b & sf_m;
    live = settle_state(n, m, p, live, sf_n, sf_m, cuts_n, cuts_m, [p_floor](std::uint64_t) { return p_floor; });
    if (live == 0) return;
    // The side to split, for all lanes at once: the side whose own features the other region
    // cuts for some lane, otherwise the larger subtree. Any side is sound for every lane.
    int side;
    if ((variants_of(cuts_n) & live) != 0) {
      side = 0;
    } else if ((variants_of(cuts_m) & live) != 0) {
      side = 1;
    } else {
      side = a_.subtree_size[n] >= a_.subtree_size[m] ? 0 : 1;
    }
    split(side, n, m, level, live, cut_a, cut_b, p_floor);
  }

  // Splits side's node for the lanes of `live`: a lane perturbing the node's feature scales
  // its P(box) by the child's share of the box's mass; a lane fixing it keeps its P(box) in
  // the child x goes to and drops out of the other.
  void split(int side, std::int32_t n, std::int32_t m, std::int32_t level, std::uint64_t live, std::uint64_t cut_a,
             std::uint64_t cut_b, double p_floor) {
    const double* p = p_levels_ + static_cast<std::size_t>(level) * stride_;
    double* pc = p_levels_ + static_cast<std::size_t>(level + 1) * stride_;
    const std::int32_t node = side == 0 ? n : m;
    const std::int32_t j = a_.feature[node];
    const std::uint64_t scaling = live & branch_[j];
    const std::uint64_t fixing = live & ~branch_[j];
    const std::int32_t x_child = fixing != 0 ? fixed_child(a_, node, row_) : -1;
    // The box's mass on j, from any lane that perturbs j (their CDFs there are the row's).
    const std::size_t first = scaling != 0 ? static_cast<std::size_t>(lowest_bit(scaling)) : 0;
    const double m_box = scaling != 0 ? mass_of(first, box_lo_[j], box_hi_[j]) : 0.0;
    branch(side, n, m, cut_a, cut_b, [&](std::int32_t cn, std::int32_t cm, std::uint64_t ca, std::uint64_t cb,
                                         const ChildBox& box) PGEXACT_ALWAYS_INLINE {
      std::uint64_t child_live = 0;
      // Each lane's P(box) is its parent's times the share, or its parent's: at least the
      // parent floor times the share (at most 1; rounding is monotone).
      double child_floor = p_floor;
      if (scaling != 0) {
        // P(child's box) = p * (mass(child) / mass(box)): child_p's operations, the share once.
        const double share = !box.cut ? 1.0 : m_box > 0.0 ? mass_of(first, box.child_lo, box.child_hi) / m_box : 0.0;
        child_floor = p_floor * std::min(share, 1.0);
        for (std::uint64_t b = scaling; b != 0; b &= b - 1) {
          const auto v = static_cast<std::size_t>(lowest_bit(b));
          const double pv = box.cut ? p[v] * share : p[v];
          if (!(pv > 0.0)) continue;
          pc[v] = pv;
          child_live |= std::uint64_t{1} << v;
        }
      }
      if ((side == 0 ? cn : cm) == x_child) {
        for (std::uint64_t b = fixing; b != 0; b &= b - 1) {
          const auto v = static_cast<std::size_t>(lowest_bit(b));
          pc[v] = p[v];
          child_live |= std::uint64_t{1} << v;
        }
      }
      if (child_live != 0) rec(cn, cm, level + 1, child_live, ca, cb, child_floor);
    });
  }

  // The classes of the lanes of `live` for tree pair (t, s) into classes_ (see the class
  // comment), each in lane order; returns how many. Lanes walk a tree alike where they perturb
  // the same features among those at the nodes they reach (their trees' masks of pass 1): from
  // the root on, every node either reaches is on a feature both perturb or both follow x on.
  // Beyond 64 features a mask's bit stands for several features, so a class is split further
  // by each feature the tree splits on whose bit its mask has and another feature of the tree
  // shares (SharedBitFeatures): a feature whose bit the mask lacks is perturbed by none of its
  // lanes at a node they reach, and one alone on its bit by all of them. A partition that
  // depends on the pair and the sets only.
  std::int32_t lane_classes(std::int64_t t, std::int64_t s, std::uint64_t live) {
    // The lanes' masks of the two trees, side by side (the tables hold them per lane).
    const std::uint64_t* mask_t = masks_by_tree_ + static_cast<std::size_t>(t) * stride_;
    const std::uint64_t* mask_s = masks_by_tree_ + static_cast<std::size_t>(s) * stride_;
    std::int32_t n = 0;
    for (std::uint64_t left = live; left != 0;) {
      const auto v = static_cast<std::size_t>(lowest_bit(left));
      const std::uint64_t mt = mask_t[v];
      const std::uint64_t ms = mask_s[v];
      std::uint64_t members = 0;
      for (std::uint64_t b = left; b != 0; b &= b - 1) {
        const auto w = static_cast<std::size_t>(lowest_bit(b));
        if (mask_t[w] == mt && mask_s[w] == ms) members |= std::uint64_t{1} << w;
      }
      left &= ~members;
      const std::int32_t first = n;
      classes_[n++] = members;
      if (exact_bits_) continue;
      const std::uint64_t tree_mask[2] = {mt, ms};
      const std::int64_t trees[2] = {t, s};
      for (int side = 0; side < 2; ++side) {
        const std::int64_t tree = trees[side];
        for (std::int32_t i = shared_bits_.begin[tree]; i < shared_bits_.begin[tree + 1]; ++i) {
          const std::int32_t j = shared_bits_.feature[i];
          if (((tree_mask[side] >> (j % 64)) & 1u) == 0) continue;
          const std::uint64_t perturbing = branch_[j];
          const std::int32_t before = n;
          for (std::int32_t c = first; c < before; ++c) {
            const std::uint64_t in = classes_[c] & perturbing;
            if (in == 0 || in == classes_[c]) continue;
            classes_[n++] = classes_[c] & ~perturbing;
            classes_[c] = in;
          }
        }
      }
    }
    return n;
  }

  const double* row_;  // every lane's
  const double* lane_budget_;  // each lane's own
  double* class_budget_;       // the walked lane's: its class's smallest
  const SharedBitFeatures& shared_bits_;
  const std::uint64_t* masks_by_tree_;  // [tree][lane]: pass 1's variant_tree_mask
  std::uint64_t classes_[kMaxVariants];
};

// One group of lanes (their tables within kTableBytes): pass 1 per lane, the tree pairs in
// chunks over the threads, the chunks' sums added in order, each lane certified.
void walk_group(const Arena& a, const Noise& noise, const Variant* variants, const std::int32_t* lanes,
                std::int32_t n_lanes, int n_threads, double tol, double* out, RunControl* control, std::int64_t weight) {
  const auto nl = static_cast<std::size_t>(n_lanes);
  double bias[kMaxVariants], var[kMaxVariants], budget[kMaxVariants];
  std::int64_t n_pairs[kMaxVariants];
  Workspace plan_ws(a);
  // One row: every lane reads the row's boundary CDFs (plan_ws.cdf), no copy per lane.
  walk::prepare_variants(a, noise, variants, lanes, n_lanes, plan_ws, bias, var, n_pairs, false);
  for (std::size_t v = 0; v < nl; ++v) budget[v] = walk::skip_budget(tol, bias[v], var[v], n_pairs[v]);
  // What the lane classes read, built once for the threads: the trees' features that share a
  // mask bit, and pass 1's tree masks [lane][tree] laid out [tree][lane] (a pair reads its two
  // trees' masks of every lane side by side).
  const SharedBitFeatures shared_bits(a);
  const std::size_t n_tree_masks = static_cast<std::size_t>(a.n_trees());
  std::vector<std::uint64_t> masks_by_tree(nl * n_tree_masks);
  for (std::size_t v = 0; v < nl; ++v) {
    for (std::size_t t = 0; t < n_tree_masks; ++t) {
      masks_by_tree[t * nl + v] = plan_ws.variant_tree_mask[v * n_tree_masks + t];
    }
  }
  const std::vector<std::int32_t>& partners = plan_ws.partners;
  const std::vector<std::uint64_t>& pair_live = plan_ws.pair_live;
  const std::size_t per_chunk = std::clamp<std::size_t>(pair_live.size() / kTargetChunks, 1, kMaxPairsPerChunk);
  const std::size_t n_chunks = (pair_live.size() + per_chunk - 1) / per_chunk;
  // Progress: the caller planned every tree pair of every group; the pairs independent for
  // every lane are done at once.
  const std::int64_t n_trees = a.n_trees();
  advance(control, weight * (n_trees * (n_trees - 1) / 2 - static_cast<std::int64_t>(pair_live.size())));
  // Per chunk and lane: the compensated sum of its tree pairs' covariances, and what it skipped.
  std::vector<double> sum(n_chunks * nl, 0.0), comp(n_chunks * nl, 0.0), skipped(n_chunks * nl, 0.0);
  const int threads = resolve_threads(n_threads, static_cast<std::int64_t>(n_chunks));
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    // Each thread its own box (a LaneScratch, not a Workspace: no arrays over the nodes); the
    // tables are plan_ws's, only read in here.
    LaneScratch scratch(a, n_lanes);
    double pair_cov[kMaxVariants] = {};
    double chunk_skipped[kMaxVariants] = {};
    double class_budget[kMaxVariants];
    std::copy(budget, budget + nl, class_budget);
    UnionRecursion walk(a, plan_ws, scratch.state(), n_lanes, budget, class_budget, shared_bits, masks_by_tree.data(),
                        pair_cov, chunk_skipped);
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::size_t c = 0; c < n_chunks; ++c) {
      if (stopped(control)) continue;
      double* sc = sum.data() + c * nl;
      double* cc = comp.data() + c * nl;
      std::fill(chunk_skipped, chunk_skipped + nl, 0.0);
      const std::size_t end = std::min(pair_live.size(), (c + 1) * per_chunk);
      for (std::size_t q = c * per_chunk; q < end; ++q) {
        // A checkpoint per tree pair: on deep forests a chunk takes seconds (a stopped call's
        // sums are discarded).
        if (stopped(control)) break;
        walk.covariance(partners[2 * q], partners[2 * q + 1], pair_live[q]);
        for (std::uint64_t b = pair_live[q]; b != 0; b &= b - 1) {
          const auto v = static_cast<std::size_t>(lowest_bit(b));
          add_compensated(sc[v], cc[v], pair_cov[v]);
          pair_cov[v] = 0.0;
        }
        advance(control, weight);
      }
      std::copy(chunk_skipped, chunk_skipped + nl, skipped.data() + c * nl);
    }
  }
  (void)threads;
  if (stopped(control)) return;
  for (std::size_t v = 0; v < nl; ++v) {
    double cov = 0.0, cov_comp = 0.0, skip = 0.0;
    for (std::size_t c = 0; c < n_chunks; ++c) {
      add_compensated(cov, cov_comp, sum[c * nl + v]);
      add_compensated(cov, cov_comp, comp[c * nl + v]);
      skip += skipped[c * nl + v];
    }
    cov += cov_comp;
    const double total_var = var[v] + 2.0 * cov;
    const double result = bias[v] * bias[v] + (total_var > 0.0 ? total_var : 0.0);
    out[lanes[v]] = result;
    if (2.0 * skip > tol * result) {
      // The diagonal part overstated the result (strong negative covariances): this lane again,
      // alone and without skipping.
      walk::walk_variants(a, noise, variants, lanes + v, 1, 0.0, plan_ws, out, control);
    }
  }
}

// Lanes per walk: their tables (a conditional mean per node) within kTableBytes, once per call
// whatever the thread count.
std::int32_t lanes_per_group(const Arena& a) {
  const std::size_t per_lane = 8 * static_cast<std::size_t>(a.n_nodes());
  return static_cast<std::int32_t>(
      std::max<std::size_t>(1, std::min<std::size_t>(kMaxVariants, kTableBytes / std::max<std::size_t>(per_lane, 1))));
}

// Sets of at most one perturbed feature: 0 or the single-feature sweep, as pg2_variants does.
bool swept_set(const Arena& a, const Noise& noise, const Variant& v) {
  return walk::count_perturbed(noise, v.mask, v.row, a.n_features, 2) <= 1;
}

// walk_union for variants of distinct sets.
void walk_distinct(const Arena& a, const Noise& noise, const Variant* variants, std::int64_t count, int n_threads,
                   double tol, double* out, RunControl* control, bool planned, std::int64_t weight) {
  const std::int32_t group = lanes_per_group(a);
  // The swept sets, and the others as lanes.
  std::vector<std::int32_t> swept, lanes;
  for (std::int64_t v = 0; v < count; ++v) {
    (swept_set(a, noise, variants[v]) ? swept : lanes).push_back(static_cast<std::int32_t>(v));
  }
  // A unit of progress per swept set and per tree pair and group, all planned now (a group's
  // pairs are known once its pass 1 has run; planning them group by group made estimate project
  // the first group only: 167 s for 597 s on ExtraTrees' default).
  if (!planned) {
    plan(control, weight * union_walk_units(a, static_cast<std::int64_t>(swept.size()),
                                            static_cast<std::int64_t>(lanes.size())));
  }
  if (!swept.empty()) {
    // Their Workspace is freed before the walk's tables are built.
    Workspace ws(a);
    for (const std::int32_t v : swept) {
      ws.begin_row(variants[v].row);
      out[v] = pg2_row(a, noise, variants[v].mask, ws, Pruning::Full, tol);
      advance(control, weight);
    }
  }
  for (std::size_t g = 0; g < lanes.size() && !stopped(control); g += static_cast<std::size_t>(group)) {
    const auto n = static_cast<std::int32_t>(std::min(lanes.size() - g, static_cast<std::size_t>(group)));
    walk_group(a, noise, variants, lanes.data() + g, n, n_threads, tol, out, control, weight);
  }
}

}  // namespace

std::int32_t union_walk_lanes(const Arena& a) { return lanes_per_group(a); }

std::int64_t union_walk_units(const Arena& a, std::int64_t swept, std::int64_t lanes) {
  const std::int64_t group = lanes_per_group(a);
  const std::int64_t n_trees = a.n_trees();
  return swept + (lanes + group - 1) / group * (n_trees * (n_trees - 1) / 2);
}

std::int64_t union_walk_units(const Arena& a, const Noise& noise, const DistinctSets& sets) {
  std::int64_t swept = 0;
  for (const Variant& v : sets.variants) swept += swept_set(a, noise, v) ? 1 : 0;
  return union_walk_units(a, swept, sets.size() - swept);
}

void walk_union(const Arena& a, const Noise& noise, const DistinctSets& sets, int n_threads, double tol, double* out,
                RunControl* control, bool planned, std::int64_t weight) {
  // Each distinct set once (distinct_sets.hpp): fewer lanes, and often one group fewer.
  std::vector<double> values(static_cast<std::size_t>(sets.size()));
  walk_distinct(a, noise, sets.variants.data(), sets.size(), n_threads, tol, values.data(), control, planned, weight);
  sets.copy_values(values.data(), out);
}

void walk_union_within(const Arena& a, const Noise& noise, const DistinctSets& sets, int n_threads, double tol,
                       double* out, RunControl* control, std::int64_t expected, std::int64_t weight) {
  const std::int64_t units = weight * union_walk_units(a, noise, sets);
  if (units > expected) plan(control, units - expected);
  walk_union(a, noise, sets, n_threads, tol, out, control, true, weight);
  if (expected > units) advance(control, expected - units);
}

}  // namespace pgexact
