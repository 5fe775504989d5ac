// One build of the projected pass (pair_passes.hpp, PairPasses::projected); CMake compiles this
// file once per x86-64 level, like pair_passes.cpp, with PGEXACT_ISA naming the namespace.
//
// A projected tree pair (ProjectedView) is summed per prefix k of the lanes' rankings:
//   A(g) = sum over live leaves u of group g of w_u * prod_{own entries e of u, perturbed at k} D_e
// for both trees' groups, then
//   V_k = sum over meets (g, h) of A(g) A(h) prod_{entries of the meet, perturbed at k} D,
// each lane on its own (a dead leaf adds an exact zero in its lane). A leaf is live at k where
// its code (LaneView) is at most k, and a feature is a factor where it entered the lane's set
// at or before k: both change only at prefixes where some lane's set gains a feature either
// tree splits on (a code is the position of the last feature x leaves the leaf's path on), so
// every other prefix's value is the previous one's, bit for bit, and is added again without
// being summed again. A row's value never depends on its lane neighbours: every lane does the
// same operations in the same order, and what is skipped (a leaf or a group no lane has live)
// adds exact zeros.
#include <algorithm>
#include <cstring>
#include <vector>

#ifndef PGEXACT_ISA
#define PGEXACT_ISA isa_base
#endif
#include "lane_vectors.hpp"

namespace pgexact::PGEXACT_ISA {

void eval_projected(const ProjectedView& pv, const LaneView& lanes, const CurveSets& c, std::int64_t n_steps,
                    double mult, double* sum, double* comp) {
  const int top = top_feature(c.sets + (n_steps - 1) * kLanes);
  // Per feature below `top`, the first prefix whose set holds it, per lane (as eval_curve), and
  // the prefixes at which some lane's set gains it.
  vi enters[64];
  std::uint64_t steps = 1;  // prefix 0, then where a split feature of either tree enters
  for (int j = 0; j < top; ++j) {
    const vi never = {kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive,
                      kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive};
    vi first = never;
    for (std::int64_t k = n_steps - 1; k >= 0; --k) first = holds(load_u(c.sets + k * kLanes), j) ? k : first;
    enters[j] = first;
    if (((pv.features >> j) & 1u) == 0) continue;
    for (int l = 0; l < kLanes; ++l) {
      if (first[l] < n_steps) steps |= std::uint64_t{1} << first[l];
    }
  }
  // The prefixes summed (the others repeat the value before them): step[i] is the i-th.
  std::int64_t step[64];
  std::int32_t n_summed = 0;
  for (std::uint64_t f = steps; f != 0; f &= f - 1) step[n_summed++] = __builtin_ctzll(f);
  const vd zero = {};
  const std::int32_t n_groups = pv.groups_first + pv.groups_second;
  // Per summed prefix i and group g, A(g) at [i * n_groups + g]; per group, the first summed
  // prefix at which one of its leaves is live in some lane (n_summed: none).
  thread_local std::vector<vd> group_sum;
  group_sum.assign(static_cast<std::size_t>(n_summed) * static_cast<std::size_t>(n_groups), zero);
  std::int32_t group_from[2 * kMaxProjectedLeaves];
  for (std::int32_t g = 0; g < n_groups; ++g) group_from[g] = n_summed;
  // Leaves: each loads its weight and own masses once and adds its product at every summed
  // prefix from its first live one, in leaf order at each prefix.
  const std::int32_t n_leaves = pv.n_first + pv.n_second;
  std::size_t e = 0;  // own entries of leaf i start here
  for (std::int32_t i = 0; i < n_leaves; ++i) {
    const ProjectedLeaf& leaf = pv.leaves[i];
    const std::size_t at = static_cast<std::size_t>(leaf.leaf) * kLanes;
    const vb code_b = load_b(lanes.code + at);
    const std::int8_t first_live = min_lane(code_b);
    std::int32_t from = 0;
    while (from < n_summed && step[from] < first_live) ++from;
    if (from == n_summed) {
      e += leaf.n_own;
      continue;
    }
    const vi code = __builtin_convertvector(code_b, vi);
    const vd w = load_d(lanes.weight + at);
    vd D[64];
    vi in_from[64];
    std::int32_t n = 0;  // own entries that are a factor at some prefix
    for (std::int32_t o = 0; o < leaf.n_own; ++o, ++e) {
      const std::int32_t j = pv.own_feature[e];
      if (j >= top) continue;  // in no lane's set at any prefix: a factor of 1.0
      if (lanes.masses != nullptr) {
        D[n] = load_d(lanes.masses + static_cast<std::size_t>(pv.own_slot[e]) * kLanes);
      } else {  // the leaf's own interval, from the tables (the same bits as a kept slot)
        const std::size_t box = static_cast<std::size_t>(leaf.leaf) * static_cast<std::size_t>(lanes.n_features) +
                                static_cast<std::size_t>(j);
        D[n] = mass(lanes, lanes.leaf_lo[box], lanes.leaf_hi[box]);
      }
      in_from[n++] = enters[j];
    }
    const std::int32_t g = leaf.group + (i < pv.n_first ? 0 : pv.groups_first);
    if (from < group_from[g]) group_from[g] = from;
    vd* out = group_sum.data() + g;
    for (std::int32_t si = from; si < n_summed; ++si) {
      const std::int64_t k = step[si];
      vd a = w;
      for (std::int32_t x = 0; x < n; ++x) a = (in_from[x] <= k) ? a * D[x] : a;
      const vi alive = code <= k;
      out[static_cast<std::size_t>(si) * static_cast<std::size_t>(n_groups)] += alive ? a : zero;
    }
  }
  // Meets: each computes its masses once and adds its product at every summed prefix from the
  // later of its groups' first live ones, in meet order at each prefix.
  thread_local std::vector<vd> value;
  value.assign(static_cast<std::size_t>(n_summed), zero);
  std::size_t m = 0;  // entries of meet q start here
  for (std::size_t q = 0; q < pv.n_meets; ++q) {
    const ProjectedMeet& meet = pv.meets[q];
    const std::int32_t h = pv.groups_first + meet.h;
    const std::int32_t from = std::max(group_from[meet.g], group_from[h]);
    if (from == n_summed) {  // an exact zero in every lane at every prefix
      m += meet.count;
      continue;
    }
    vd D[64];
    vi in_from[64];
    std::int32_t n = 0;
    for (std::int32_t x = 0; x < meet.count; ++x, ++m) {
      const std::int32_t j = pv.meet_feature[m];
      if (j >= top) continue;
      D[n] = mass(lanes, pv.meet_cut[2 * m], pv.meet_cut[2 * m + 1]);
      in_from[n++] = enters[j];
    }
    const vd* A = group_sum.data();
    for (std::int32_t si = from; si < n_summed; ++si) {
      const std::size_t row = static_cast<std::size_t>(si) * static_cast<std::size_t>(n_groups);
      vd P = A[row + static_cast<std::size_t>(meet.g)] * A[row + static_cast<std::size_t>(h)];
      const std::int64_t k = step[si];
      for (std::int32_t x = 0; x < n; ++x) P = (in_from[x] <= k) ? P * D[x] : P;
      value[static_cast<std::size_t>(si)] += P;
    }
  }
  // The prefixes in order: a summed one's value, or the last summed one's again.
  vd last = zero;
  std::int32_t si = 0;
  for (std::int64_t k = 0; k < n_steps; ++k) {
    if (si < n_summed && step[si] == k) last = value[static_cast<std::size_t>(si++)] * mult;
    add_compensated(sum + k * kLanes, comp + k * kLanes, last);
  }
}

}  // namespace pgexact::PGEXACT_ISA
