// One build of the per-row leaf pruning's bounds (pair_passes.hpp, CurveLeafBounds and
// GreedyLeafBounds); CMake
// compiles this file once per x86-64 level with PGEXACT_ISA naming the namespace, as it does
// pair_passes.cpp, so the lanes of a vector of rows go together in the level's registers.
//
// Why here: a lane at a time, the bounds of 64 rows of XGBoost(500 trees of depth 8) took about
// 0.2 s of the 0.5 s before a call's first unit of work, most of an estimate's calibration
// (base-ISA scalar loops over 81,000 leaves x 8 vectors x their features and prefixes).
// The operations per lane are those of the lane-at-a-time loops this replaced (leaf_pruning.hpp
// before commit 1111e17), in the same order: a factor a lane does not take is 1.0 (x * 1.0 is
// x), and a sum a lane does not add to gets 0.0 (a sum that starts at +0.0 never reads -0.0),
// so every lane keeps its bits (compared on 52 results of five model families). The greedy
// step's bounds (greedy_leaf_bounds) replaced the lane-at-a-time loops of leaf_pruning.cpp
// (commit 1a28aa5) alike: both run side by side in one build, they agreed bit for bit on every
// vector of the greedy rankings of six model families with NaN rows at each level, and of the
// test suite's rankings (categorical noise among them). Those loops were 8 % of the samples of
// an estimate's calibration of a ranking of 64 rows of XGBoost(500, depth 8); these take 4 %.
#include "pgexact/exact/pair_passes.hpp"

#ifndef PGEXACT_ISA
#define PGEXACT_ISA isa_base
#endif
#include "lane_vectors.hpp"

namespace pgexact::PGEXACT_ISA {
namespace {

// A leaf's masses on one of its features in the lanes (lj: leaf * n_features + feature): its
// slot's, or from the tables where the block keeps no slot masses.
PGEXACT_AI vd leaf_mass(const LaneView& lanes, const std::int32_t* slot_of, std::size_t lj) {
  return lanes.masses != nullptr ? load_d(lanes.masses + static_cast<std::size_t>(slot_of[lj]) * kLanes)
                                 : mass(lanes, lanes.leaf_lo[lj], lanes.leaf_hi[lj]);
}

}  // namespace

void curve_leaf_bounds(const LaneView& lanes, const CurveLeafBounds& in) {
  constexpr int kMaxPrefixes = 64;
  const std::int64_t np = in.n_prefix;
  const std::size_t d = static_cast<std::size_t>(lanes.n_features);
  const vd zero = {};
  const vd one = zero + 1.0;
  const vd none = zero - 1.0;
  // Codes and prefixes are compared as doubles (exact below 2^53): the baseline build has no
  // 64-bit integer comparison (SSE4.2 brought it), and went a lane at a time on one.
  const vd never = zero - 1.0;  // a prefix no feature enters at
  const vd n_prefix = zero + static_cast<double>(np);
  const vu S = load_u(in.sets);
  vd m1[kMaxPrefixes], m2[kMaxPrefixes], estimate[kMaxPrefixes];
  for (std::int64_t k = 0; k < np; ++k) estimate[k] = load_d(in.estimate + k * kLanes);
  vd W = zero;
  // Per feature of the leaf that some lane takes: its masses, and the prefix it enters each
  // lane at (`never` in the lanes that do not take it).
  vd mass_of[kMaxPrefixes];
  vd enters_at[kMaxPrefixes];
  for (std::int64_t t = 0; t < in.n_trees; ++t) {
    vd w_max = zero;
    for (std::int64_t k = 0; k < np; ++k) m1[k] = m2[k] = zero;
    for (std::int32_t leaf = in.tree_first[t]; leaf < in.tree_first[t + 1]; ++leaf) {
      const std::size_t u = static_cast<std::size_t>(leaf);
      const std::size_t at = u * kLanes;
      const vd w = load_d(lanes.weight + at);
      const vd code = widen<double>(load_b(lanes.code + at));
      const vi alive = (w != zero) & (code < n_prefix);
      if (!any(alive)) {
        store_d(in.bound + at, none);
        continue;
      }
      const vd c = select(code > zero, code, zero);  // the first prefix the leaf is alive at
      const vu taken = (vu)alive & S;
      std::uint64_t reach = 0;
      for (int l = 0; l < kLanes; ++l) reach |= taken[l];
      const vu out = load_u(lanes.out + at);
      vd base = one, p_out = one;
      int n_taken = 0;
      for (std::uint64_t f = in.constrained[u] & reach; f != 0; f &= f - 1) {
        const auto j = static_cast<std::int32_t>(__builtin_ctzll(f));
        const vd m = leaf_mass(lanes, in.slot_of, u * d + static_cast<std::size_t>(j));
        const vi takes = holds(taken, j);
        const vd k = load_d(in.position + static_cast<std::size_t>(j) * kLanes);
        base *= select(takes & (k <= c), m, one);
        p_out *= select(takes & holds(out, j), m, one);
        mass_of[n_taken] = m;
        enters_at[n_taken] = select(takes, k, never);
        ++n_taken;
      }
      const vd w_abs = vabs(w);
      store_d(in.bound + at, select(alive, w_abs * p_out, none));
      w_max = select(alive & (w_max < w_abs), w_abs, w_max);
      // The leaf's mass at each prefix from c on: base at c, then each later prefix's masses.
      const vd ww = w * w;
      vd p = base;
      for (std::int64_t k = 0; k < np; ++k) {
        const vd kv = zero + static_cast<double>(k);
        if (k > 0) {
          vd factor = one;
          for (int e = 0; e < n_taken; ++e) factor *= select(enters_at[e] == kv, mass_of[e], one);
          p = select(kv > c, p * factor, p);
        }
        const vi live = alive & (kv >= c);
        m1[k] += select(live, w * p, zero);
        m2[k] += select(live, ww * p, zero);
      }
    }
    for (std::int64_t k = 0; k < np; ++k) {
      const vd variance = m2[k] - m1[k] * m1[k];
      estimate[k] += select(variance > zero, variance, zero);
    }
    W += w_max;
  }
  for (std::int64_t k = 0; k < np; ++k) store_d(in.estimate + k * kLanes, estimate[k]);
  store_d(in.W, W);
}

void greedy_leaf_bounds(const LaneView& lanes, const GreedyLeafBounds& in) {
  const std::size_t d = static_cast<std::size_t>(lanes.n_features);
  const vd zero = {};
  const vd one = zero + 1.0;
  const vd none = zero - 1.0;
  // Codes compared as doubles, as in curve_leaf_bounds.
  const vd none_missing = zero + static_cast<double>(kNoneMissing);
  const vd never = zero + static_cast<double>(kNeverAlive);
  const vu S = load_u(in.sets);
  vd estimate = zero, W = zero;
  for (std::int64_t t = 0; t < in.n_trees; ++t) {
    vd w_max = zero, m1 = zero, m2 = zero;
    for (std::int32_t leaf = in.tree_first[t]; leaf < in.tree_first[t + 1]; ++leaf) {
      const std::size_t u = static_cast<std::size_t>(leaf);
      const std::size_t at = u * kLanes;
      const vd w = load_d(lanes.weight + at);
      const std::int8_t* codes = lanes.code + at;
      const vd code = widen<double>(load_b(codes));
      const vi alive = (w != zero) & (code != never);
      if (!any(alive)) {
        store_d(in.bound + at, none);
        continue;
      }
      // The features some lane takes: S, and the candidate the leaf needs, in its alive lanes.
      const vu taken = (vu)alive & S;
      std::uint64_t reach = 0;
      for (int l = 0; l < kLanes; ++l) {
        reach |= taken[l];
        if (alive[l] != 0 && codes[l] >= 0) reach |= std::uint64_t{1} << codes[l];
      }
      const vu out = load_u(lanes.out + at);
      vd p_set = one, p_out = one;
      for (std::uint64_t f = in.constrained[u] & reach & ~in.by_category; f != 0; f &= f - 1) {
        const auto j = static_cast<std::int32_t>(__builtin_ctzll(f));
        const vd m = leaf_mass(lanes, in.slot_of, u * d + static_cast<std::size_t>(j));
        const vi in_s = holds(taken, j);
        const vi needed = in_s | (alive & (code == zero + static_cast<double>(j)));
        p_set *= select(in_s, m, one);
        p_out *= select(needed & holds(out, j), m, one);
      }
      const vd w_abs = vabs(w);
      store_d(in.bound + at, select(alive, w_abs * p_out, none));
      w_max = select(alive & (w_max < w_abs), w_abs, w_max);
      const vi with_s = alive & (code == none_missing);
      m1 += select(with_s, w * p_set, zero);
      m2 += select(with_s, (w * w) * p_set, zero);
    }
    const vd variance = m2 - m1 * m1;
    estimate += select(variance > zero, variance, zero);
    W += w_max;
  }
  store_d(in.estimate, estimate);
  store_d(in.W, W);
}

}  // namespace pgexact::PGEXACT_ISA
