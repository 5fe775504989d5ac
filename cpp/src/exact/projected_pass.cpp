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
  const vd zero = {};
  const std::int32_t n_groups = pv.groups_first + pv.groups_second;
  vd group_sum[2 * kMaxProjectedLeaves];
  bool group_live[2 * kMaxProjectedLeaves];
  // The meets' masses, computed at the first prefix that needs them (they do not depend on k).
  thread_local std::vector<double> meet_mass;
  bool masses_ready = false;
  vd value = zero;  // V_k * mult of the last prefix summed
  for (std::int64_t k = 0; k < n_steps; ++k) {
    if (((steps >> k) & 1u) == 0) {  // nothing changed since k - 1: the same value
      add_compensated(sum + k * kLanes, comp + k * kLanes, value);
      continue;
    }
    for (std::int32_t g = 0; g < n_groups; ++g) {
      group_sum[g] = zero;
      group_live[g] = false;
    }
    const std::int32_t n_leaves = pv.n_first + pv.n_second;
    std::size_t e = 0;  // own entries of leaf i start here
    for (std::int32_t i = 0; i < n_leaves; ++i) {
      const ProjectedLeaf& leaf = pv.leaves[i];
      const std::size_t at = static_cast<std::size_t>(leaf.leaf) * kLanes;
      const vb code = load_b(lanes.code + at);
      if (min_lane(code) > k) {
        e += leaf.n_own;
        continue;
      }
      const vi alive = __builtin_convertvector(code, vi) <= k;
      vd a = load_d(lanes.weight + at);
      for (std::int32_t o = 0; o < leaf.n_own; ++o, ++e) {
        const std::int32_t j = pv.own_feature[e];
        if (j >= top) continue;  // in no lane's set at any prefix: a factor of 1.0
        vd D;
        if (lanes.masses != nullptr) {
          D = load_d(lanes.masses + static_cast<std::size_t>(pv.own_slot[e]) * kLanes);
        } else {  // the leaf's own interval, from the tables (the same bits as a kept slot)
          const std::size_t box = static_cast<std::size_t>(leaf.leaf) * static_cast<std::size_t>(lanes.n_features) +
                                  static_cast<std::size_t>(j);
          D = mass(lanes, lanes.leaf_lo[box], lanes.leaf_hi[box]);
        }
        a = (enters[j] <= k) ? a * D : a;
      }
      const std::int32_t g = leaf.group + (i < pv.n_first ? 0 : pv.groups_first);
      group_sum[g] += alive ? a : zero;
      group_live[g] = true;
    }
    if (!masses_ready) {
      meet_mass.resize(pv.n_meet_entries * kLanes);
      for (std::size_t m = 0; m < pv.n_meet_entries; ++m) {
        store_d(meet_mass.data() + m * kLanes, mass(lanes, pv.meet_cut[2 * m], pv.meet_cut[2 * m + 1]));
      }
      masses_ready = true;
    }
    vd V = zero;
    std::size_t m = 0;  // entries of meet q start here
    for (std::size_t q = 0; q < pv.n_meets; ++q) {
      const ProjectedMeet& meet = pv.meets[q];
      const std::int32_t h = pv.groups_first + meet.h;
      if (!group_live[meet.g] || !group_live[h]) {  // an exact zero in every lane
        m += meet.count;
        continue;
      }
      vd P = group_sum[meet.g] * group_sum[h];
      for (std::int32_t x = 0; x < meet.count; ++x, ++m) {
        const std::int32_t j = pv.meet_feature[m];
        if (j >= top) continue;
        P = (enters[j] <= k) ? P * load_d(meet_mass.data() + m * kLanes) : P;
      }
      V += P;
    }
    value = V * mult;
    add_compensated(sum + k * kLanes, comp + k * kLanes, value);
  }
}

}  // namespace pgexact::PGEXACT_ISA
