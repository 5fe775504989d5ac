// One build of the leaf-pair passes (pair_passes.hpp); CMake compiles this file once per
// x86-64 level with PGEXACT_ISA naming the namespace. Everything here lives in that namespace,
// helpers included, so the builds never share (and never swap) inline code.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "pgexact/exact/pair_passes.hpp"

#ifndef PGEXACT_ISA
#define PGEXACT_ISA isa_base
#endif
#include "lane_vectors.hpp"

namespace pgexact::PGEXACT_ISA {
namespace {

// Mass of an intersection on a feature j perturbed by category (pair_passes.hpp, PairView):
// both[0] where the lane's x_j is in both leaves' sets (x leaves neither path on j), else
// both[1].
__attribute__((always_inline)) inline vd category_mass(const LaneView& lanes, const LeafPair& p, std::int32_t j,
                                                       const double* both) {
  const vu out = load_u(lanes.out + static_cast<std::size_t>(p.u) * kLanes) |
                 load_u(lanes.out + static_cast<std::size_t>(p.v) * kLanes);
  const vu zero = {};
  const vd none = {};
  const vd inside = none + both[0];  // broadcast
  const vd outside = none + both[1];
  return select(((out >> j) & 1u) == zero, inside, outside);
}

// The code of a pair for prefixes (LaneView): the larger of its leaves' codes.
__attribute__((always_inline)) inline vb pair_code(const LaneView& lanes, const LeafPair& p) {
  const vb a = load_b(lanes.code + static_cast<std::size_t>(p.u) * kLanes);
  const vb b = load_b(lanes.code + static_cast<std::size_t>(p.v) * kLanes);
  return a > b ? a : b;
}

// ---- one pass over a tree pair's pairs, for one lane vector --------------------------------
// P(box) of a lane's set is the product of the masses of its perturbed features in the pair's
// fixed entry order (multiplying by 1.0 elsewhere is exact): the canonical product, the same
// in all three passes. Membership of a feature in each lane's set is precomputed once per call
// (a lane mask; for curves, the first prefix whose set holds it), so a factor costs a masked
// multiply.
//
// Terms are added plainly over the pairs of one leaf u of the first tree (a run: at most the
// leaves of the second tree intersecting u's box), then the run's sum is added, compensated,
// into the sums. A pair no lane needs, or a run whose u no lane needs, adds nothing; skipping
// it gives the bits that adding its exact zeros would.

// The entries of the pairs of a list, pair after pair: each pair's entries follow the previous
// pair's, so walking the list in order finds them by counting.
struct Entries {
  const std::uint8_t* feature;
  const std::uint8_t* slot;
  const std::int32_t* cut;
  const std::int32_t* slot_first;
  const double* category;

  explicit Entries(const PairView& pl)
      : feature(pl.feature), slot(pl.slot), cut(pl.cut), slot_first(pl.slot_first), category(pl.category) {}
  // Moves past pair p's entries (call once per pair, skipped or not, after reading them).
  __attribute__((always_inline)) void next(const LeafPair& p) {
    feature += p.count;
    slot += p.n_slots;
    cut += 2 * (p.count - p.n_slots);
  }
  // Moves to the end of `run` (the start of the next one).
  __attribute__((always_inline)) void jump(const PairView& pl, const LeafRun& run) {
    feature = pl.feature + run.feature_end;
    slot = pl.slot + run.slot_end;
    cut = pl.cut + run.cut_end;
  }
  // Mass of entry e of pair p: a leaf's precomputed slot, or the intersection from the tables.
  __attribute__((always_inline)) vd mass_of(const LaneView& lanes, const LeafPair& p, std::int32_t e) const {
    vd m;
    masses_of<1>(&lanes, p, e, &m);
    return m;
  }
  // mass_of for V vectors of rows at once (the same operations per vector): the entry's place
  // is found once for all of them.
  template <int V>
  __attribute__((always_inline)) void masses_of(const LaneView* lanes, const LeafPair& p, std::int32_t e,
                                                vd* out) const {
    if (e < p.n_slots) {
      const std::uint8_t b = slot[e];
      const std::int32_t leaf = (b & kSlotOfV) != 0 ? p.v : p.u;
      if (lanes[0].masses == nullptr) {  // the leaf's own interval, from the tables
        const std::size_t at =
            static_cast<std::size_t>(leaf) * static_cast<std::size_t>(lanes[0].n_features) + feature[e];
#pragma GCC unroll 2
        for (int x = 0; x < V; ++x) out[x] = mass(lanes[x], lanes[x].leaf_lo[at], lanes[x].leaf_hi[at]);
        return;
      }
      const std::size_t at = static_cast<std::size_t>(slot_first[leaf] + (b & ~kSlotOfV)) * kLanes;
#pragma GCC unroll 2
      for (int x = 0; x < V; ++x) out[x] = load_d(lanes[x].masses + at);
      return;
    }
    const std::int32_t* c = cut + 2 * (e - p.n_slots);
    if (c[0] < 0) {
      const double* both = category + 2 * static_cast<std::size_t>(-1 - c[0]);
#pragma GCC unroll 2
      for (int x = 0; x < V; ++x) out[x] = category_mass(lanes[x], p, feature[e], both);
      return;
    }
#pragma GCC unroll 2
    for (int x = 0; x < V; ++x) out[x] = mass(lanes[x], c[0], c[1]);
  }
  // Lane 0 of mass_of, with scalar loads: the same operations on the same operands.
  double mass_of_lane0(const LaneView& lanes, const LeafPair& p, std::int32_t e) const {
    if (e < p.n_slots) {
      const std::uint8_t b = slot[e];
      const std::int32_t leaf = (b & kSlotOfV) != 0 ? p.v : p.u;
      if (lanes.masses == nullptr) {
        const std::size_t at = static_cast<std::size_t>(leaf) * static_cast<std::size_t>(lanes.n_features) + feature[e];
        return mass_lane0(lanes, lanes.leaf_lo[at], lanes.leaf_hi[at]);
      }
      return lanes.masses[static_cast<std::size_t>(slot_first[leaf] + (b & ~kSlotOfV)) * kLanes];
    }
    const std::int32_t* c = cut + 2 * (e - p.n_slots);
    if (c[0] < 0) {
      const double* both = category + 2 * static_cast<std::size_t>(-1 - c[0]);
      const std::uint64_t out = lanes.out[static_cast<std::size_t>(p.u) * kLanes] |
                                lanes.out[static_cast<std::size_t>(p.v) * kLanes];
      return ((out >> feature[e]) & 1u) == 0 ? both[0] : both[1];
    }
    return mass_lane0(lanes, c[0], c[1]);
  }
};

// Calls pair(p, at) for every pair of every run whose leaf u admits some lane's x' (live(u);
// `at` is then at p's entries), and end_run() after each such run; steps over the other runs
// whole: where u excludes every lane, so do all its pairs.
template <typename Live, typename Pair, typename EndRun>
__attribute__((always_inline)) inline void for_each_run(const PairView& pl, Live&& live, Pair&& pair,
                                                        EndRun&& end_run) {
  Entries at(pl);
  std::size_t q = 0;
  for (std::size_t r = 0; r < pl.n_runs; ++r) {
    const LeafRun& run = pl.runs[r];
    if (!live(run.u)) {
      q = run.pair_end;
      at.jump(pl, run);
      continue;
    }
    for (; q < run.pair_end; ++q) {
      pair(pl.pairs[q], at);
      at.next(pl.pairs[q]);
    }
    end_run();
  }
}

// Whether leaf u's code (LaneView) is below `bound` in some lane.
__attribute__((always_inline)) inline bool some_lane_below(const LaneView& lanes, std::int32_t u, std::int64_t bound) {
  return min_lane(load_b(lanes.code + static_cast<std::size_t>(u) * kLanes)) < bound;
}


// Whether leaf u's code is below `bound` in some lane of one of V vectors (their runs: a
// pass over V vectors steps over a run only where it is dead in all of them).
template <int V>
__attribute__((always_inline)) inline bool some_vector_below(const LaneView* lanes, std::int32_t u,
                                                             std::int64_t bound) {
  bool below = false;
  for (int x = 0; x < V; ++x) below = below || some_lane_below(lanes[x], u, bound);
  return below;
}

// Lane masks of features 0 .. top - 1: all ones in the lanes whose set (S, a set per lane)
// holds the feature.
__attribute__((always_inline)) inline void fill_membership(vu S, int top, vu* member) {
  const vu zero_u = {};
  for (int j = 0; j < top; ++j) member[j] = (vu)(((S >> j) & 1u) != zero_u);
}

// Lane masks of every feature up to the highest one in any lane of `sets`; returns that bound.
__attribute__((always_inline)) inline int membership(const std::uint64_t* sets, vu* member) {
  const int top = top_feature(sets);
  fill_membership(load_u(sets), top, member);
  return top;
}

__attribute__((always_inline)) inline vd times_if(vd P, vu member, vd D) {
  const vu zero_u = {};
  return select(member != zero_u, P * D, P);
}

// PG2 of one set per lane, for V vectors of rows at once (as eval_curves). Inlined into its
// wrappers: called, the V = 1 build ran 3-13 % slower than the function it replaced.
template <int V>
__attribute__((always_inline)) inline void eval_sets(const PairView& pl, const LaneView* lanes,
                                                     const std::uint64_t* const* S_, double mult, double* const* sum,
                                                     double* const* comp) {
  int top = 0;
  for (int x = 0; x < V; ++x) top = std::max(top, top_feature(S_[x]));
  vu member[V][64];
  for (int x = 0; x < V; ++x) fill_membership(load_u(S_[x]), top, member[x]);
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  const vd zero = {};
  vd run[V];  // plain sums over the pairs of one leaf u
  for (int x = 0; x < V; ++x) run[x] = zero;
  for_each_run(
      pl, [&](std::int32_t u) { return some_vector_below<V>(lanes, u, 1); },
      [&](const LeafPair& p, const Entries& at) {
        vi alive[V];
        bool dead = true;
        for (int x = 0; x < V; ++x) {
          const vb code = pair_code(lanes[x], p);
          dead = dead && min_lane(code) > 0;
          alive[x] = widen<std::int64_t>(code) == 0;
        }
        if (dead) return;
        vd P[V];
        for (int x = 0; x < V; ++x) P[x] = one;
        for (std::int32_t e = 0; e < p.count; ++e) {
          const std::int32_t j = at.feature[e];
          if (j >= top) continue;  // a factor of 1.0 in every lane
          // (One test of the vectors' masks ORed: a test per vector made the V = 1 build 13 %
          // slower.)
          vu in_some = member[0][j];
          for (int x = 1; x < V; ++x) in_some |= member[x][j];
          if (!any((vi)in_some)) continue;
          vd De[V];
          at.masses_of<V>(lanes, p, e, De);
#pragma GCC unroll 2
          for (int x = 0; x < V; ++x) P[x] = times_if(P[x], member[x][j], De[x]);
        }
#pragma GCC unroll 2
        for (int x = 0; x < V; ++x) {
          const vd w = load_d(lanes[x].weight + static_cast<std::size_t>(p.u) * kLanes) *
                       load_d(lanes[x].weight + static_cast<std::size_t>(p.v) * kLanes);
          run[x] += select(alive[x], (w * P[x]) * mult, zero);
        }
      },
      [&] {
        for (int x = 0; x < V; ++x) {
          add_compensated(sum[x], comp[x], run[x]);
          run[x] = zero;
        }
      });
}

void eval_set(const PairView& pl, const LaneView& lanes, const std::uint64_t* S_, double mult,
              double* sum, double* comp) {
  eval_sets<1>(pl, &lanes, &S_, mult, &sum, &comp);
}

// Prefix chains evaluated side by side: enough to hide the multiply latency, few enough that
// the chains past the last live prefix cost little (about four prefixes are live per pair on
// the benchmark models; 2 and 8 chains measured slower).
constexpr int kChains = 4;

// Adds a pair's chains (products of prefixes k .. k + kChains - 1), weighted, to the prefixes
// running sums where the lane is alive (from: per lane, the pair's first live prefix).
__attribute__((always_inline)) inline void add_chains(const vd* P, std::int64_t k, std::int64_t n_steps, vi from,
                                                      vd w, double mult, vd* run) {
  const vd zero = {};
  const std::int64_t live = n_steps - k < kChains ? n_steps - k : kChains;
  for (std::int64_t i = 0; i < live; ++i) {
    const vi alive = from <= (k + i);
    run[k + i] += select(alive, (w * P[i]) * mult, zero);
  }
}

// PG2 of every prefix of each lane's ranking (see CurveSets), for V vectors of rows at once:
// each pair's entries are read and placed once for all V (the pass walks a tree pair's list
// once per V vectors instead of once per vector). Every lane gets the operations it gets with
// V = 1 in the same order: a pair or run live in another vector only adds exact zeros here,
// and chains that start below this vector's first live prefix compute the same products.
// Inlined into its wrappers, as eval_sets.
template <int V>
__attribute__((always_inline)) inline void eval_curves(const PairView& pl, const LaneView* lanes, const CurveSets* c,
                                                       std::int64_t n_steps, double mult, double* const* sum,
                                                       double* const* comp) {
  // Per feature below `top` (sets grow along the prefixes, so the last prefix's highest feature
  // bounds them all), the first prefix whose set holds it, per lane: the feature is a factor of
  // prefix k's product exactly where enters <= k.
  int top = 0;
  for (int x = 0; x < V; ++x) top = std::max(top, top_feature(c[x].sets + (n_steps - 1) * kLanes));
  vi enters[V][64];
  for (int x = 0; x < V; ++x) {
    for (int j = 0; j < top; ++j) {
      vi first = {kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive};
      if (c[x].enters != nullptr) {
        first = (vi)load_u(reinterpret_cast<const std::uint64_t*>(c[x].enters + j * kLanes));
      } else {
        for (std::int64_t k = n_steps - 1; k >= 0; --k) {
          first = select(holds(load_u(c[x].sets + k * kLanes), j), vi{} + k, first);
        }
      }
      enters[x][j] = first;
    }
  }
  vd D[V][64];
  vd run[V][64];
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  const vd zero = {};
  for (int x = 0; x < V; ++x) {
    for (std::int64_t k = 0; k < n_steps; ++k) run[x][k] = zero;
  }
  for_each_run(
      pl, [&](std::int32_t u) { return some_vector_below<V>(lanes, u, n_steps); },
      [&](const LeafPair& p, const Entries& at) {
        // A lane is alive from the later of the two leaves' first live prefixes; the pair is
        // skipped when no lane is alive at any prefix.
        vb from_b[V];
        for (int x = 0; x < V; ++x) from_b[x] = pair_code(lanes[x], p);
        vb earliest = from_b[0];
        for (int x = 1; x < V; ++x) earliest = earliest < from_b[x] ? earliest : from_b[x];
        const std::int64_t k0 = min_lane(earliest);
        if (k0 >= n_steps) return;
        // The products of the live prefixes, kChains at a time in registers: each prefix
        // multiplies in the pair's fixed order, and the chains are independent, so the CPU
        // overlaps them (one prefix after another would wait on each multiply's latency). Chains
        // past the last prefix are computed and dropped: cheaper than branching on them. The
        // first group computes the masses as it goes; later groups (long rankings) reuse them.
        std::int32_t n = 0;  // entries that are a factor at some prefix: their masses and features
        std::uint8_t factor_feature[64];
        vi from[V];  // per lane, the pair's first live prefix
        vd w[V];     // the pair's weight
        {
          vd P[V][kChains];
#pragma GCC unroll 8
          for (int x = 0; x < V; ++x) {
#pragma GCC unroll 8
            for (int i = 0; i < kChains; ++i) P[x][i] = one;
          }
          for (std::int32_t e = 0; e < p.count; ++e) {
            const std::int32_t j = at.feature[e];
            if (j >= top) continue;  // in no lane's set at any prefix: a factor of 1.0
            vd De[V];
            at.masses_of<V>(lanes, p, e, De);
#pragma GCC unroll 2
            for (int x = 0; x < V; ++x) {
              const vi f = enters[x][j];
              D[x][n] = De[x];
#pragma GCC unroll 8
              for (int i = 0; i < kChains; ++i) P[x][i] = select(f <= (k0 + i), P[x][i] * De[x], P[x][i]);
            }
            factor_feature[n++] = static_cast<std::uint8_t>(j);
          }
          // Read after the entries' loop, not before it: held across it, they took four of the
          // AVX2 build's sixteen registers and GCC kept chains on the stack instead.
#pragma GCC unroll 2
          for (int x = 0; x < V; ++x) {
            from[x] = widen<std::int64_t>(from_b[x]);
            w[x] = load_d(lanes[x].weight + static_cast<std::size_t>(p.u) * kLanes) *
                   load_d(lanes[x].weight + static_cast<std::size_t>(p.v) * kLanes);
            add_chains(P[x], k0, n_steps, from[x], w[x], mult, run[x]);
          }
        }
        for (std::int64_t k = k0 + kChains; k < n_steps; k += kChains) {
#pragma GCC unroll 2
          for (int x = 0; x < V; ++x) {
            vd P[kChains];
#pragma GCC unroll 8
            for (int i = 0; i < kChains; ++i) P[i] = one;
            for (std::int32_t e = 0; e < n; ++e) {
              const vi f = enters[x][factor_feature[e]];
              const vd De = D[x][e];
#pragma GCC unroll 8
              for (int i = 0; i < kChains; ++i) P[i] = select(f <= (k + i), P[i] * De, P[i]);
            }
            add_chains(P, k, n_steps, from[x], w[x], mult, run[x]);
          }
        }
      },
      [&] {
        for (int x = 0; x < V; ++x) {
          for (std::int64_t k = 0; k < n_steps; ++k) {
            add_compensated(sum[x] + k * kLanes, comp[x] + k * kLanes, run[x][k]);
            run[x][k] = zero;
          }
        }
      });
}

void eval_curve(const PairView& pl, const LaneView& lanes, const CurveSets& c, std::int64_t n_steps, double mult,
                double* sum, double* comp) {
  eval_curves<1>(pl, &lanes, &c, n_steps, mult, &sum, &comp);
}

// PG2 of every prefix of the ranking of lane 0 alone, the prefixes in the lanes (PairPasses).
void eval_curve_row(const PairView& pl, const LaneView& lanes, const CurveSets& c, std::int64_t n_steps,
                    double mult, double* sum, double* comp) {
  // Per feature below `top`, the first prefix of lane 0's ranking whose set holds it.
  std::uint64_t last = c.sets[(n_steps - 1) * kLanes];
  const int top = last == 0 ? 0 : 64 - __builtin_clzll(last);
  std::int64_t enters[64];
  for (int j = 0; j < top; ++j) {
    enters[j] = kNeverAlive;
    for (std::int64_t k = n_steps - 1; k >= 0; --k) {
      if ((c.sets[k * kLanes] >> j) & 1u) enters[j] = k;
    }
  }
  const std::int64_t groups = (n_steps + kLanes - 1) / kLanes;
  const vi lane_k = {0, 1, 2, 3, 4, 5, 6, 7};
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  const vd zero = {};
  vd run[64 / kLanes];  // run[g][l]: the plain sum of prefix 8 g + l over the pairs of one u
  for (std::int64_t g = 0; g < groups; ++g) run[g] = zero;
  vd D[64];
  std::int64_t factor_enters[64];
  for_each_run(
      pl, [&](std::int32_t u) { return lanes.code[static_cast<std::size_t>(u) * kLanes] < n_steps; },
      [&](const LeafPair& p, const Entries& at) {
        const std::int8_t cu = lanes.code[static_cast<std::size_t>(p.u) * kLanes];
        const std::int8_t cv = lanes.code[static_cast<std::size_t>(p.v) * kLanes];
        const std::int64_t from = cu > cv ? cu : cv;
        if (from >= n_steps) return;
        // the same operands and operations as lane 0 of eval_curve
        const double w = lanes.weight[static_cast<std::size_t>(p.u) * kLanes] *
                         lanes.weight[static_cast<std::size_t>(p.v) * kLanes];
        std::int32_t n = 0;
        for (std::int32_t e = 0; e < p.count; ++e) {
          const std::int32_t j = at.feature[e];
          if (j >= top) continue;
          D[n] = one * at.mass_of_lane0(lanes, p, e);  // lane 0's mass, broadcast
          factor_enters[n++] = enters[j];
        }
        for (std::int64_t g = from / kLanes; g < groups; ++g) {
          const vi k = lane_k + g * kLanes;
          vd P = one;
          for (std::int32_t e = 0; e < n; ++e) P = select(factor_enters[e] <= k, P * D[e], P);
          const vi alive = (k >= from) & (k < n_steps);
          run[g] += select(alive, (w * P) * mult, zero);
        }
      },
      [&] {
        for (std::int64_t k = 0; k < n_steps; ++k) {
          add_compensated_lane0(sum + k * kLanes, comp + k * kLanes, run[k / kLanes][k % kLanes]);
        }
        for (std::int64_t g = 0; g < groups; ++g) run[g] = zero;
      });
}

// One greedy step: PG2(S) per lane (canonical, into sum/comp) and, per feature i, corr[i][lane]
// with PG2(S + {i}) = PG2(S) + corr[i] for every candidate i (not in S, perturbable in the row).
void eval_greedy(const PairView& pl, const LaneView& lanes, const std::uint64_t* S_, double mult, double* sum,
                 double* comp, double* corr) {
  vu member[64];
  const int top = membership(S_, member);
  // Features in every lane's set: no lane reads their corrections (they are no candidates).
  std::uint64_t in_every_set = ~std::uint64_t{0};
  for (int l = 0; l < kLanes; ++l) in_every_set &= S_[l];
  vd D[64];
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  const vd zero = {};
  vd run = zero;  // plain sum over the pairs of one leaf u
  for_each_run(
      pl, [&](std::int32_t u) { return some_lane_below(lanes, u, kNeverAlive); },
      [&](const LeafPair& p, const Entries& at) {
        // The one feature the pair misses in each lane (kNoneMissing: none; kNeverAlive: dead).
        const vb a = load_b(lanes.code + static_cast<std::size_t>(p.u) * kLanes);
        const vb b = load_b(lanes.code + static_cast<std::size_t>(p.v) * kLanes);
        const vb missing_b = a == kNoneMissing ? b : (b == kNoneMissing || a == b) ? a : kNeverAlive;
        if (all_never_alive(missing_b)) return;
        const vi missing = widen<std::int64_t>(missing_b);
        vd P = one;
        for (std::int32_t e = 0; e < p.count; ++e) {
          const std::int32_t j = at.feature[e];
          D[e] = at.mass_of(lanes, p, e);
          if (j < top) P = times_if(P, member[j], D[e]);
        }
        const vd w = load_d(lanes.weight + static_cast<std::size_t>(p.u) * kLanes) *
                     load_d(lanes.weight + static_cast<std::size_t>(p.v) * kLanes);
        const vd wp = (w * P) * mult;
        const vd base = select(missing == kNoneMissing, wp, zero);
        run += base;
        for (std::int32_t e = 0; e < p.count; ++e) {
          const std::int32_t i = at.feature[e];
          if ((in_every_set >> i) & 1u) continue;
          double* c = corr + static_cast<std::size_t>(i) * kLanes;
          // The driver reads only the candidates' corrections (a feature that cannot be
          // perturbed in a row is read as no correction).
          const vi counts = (missing == kNoneMissing) | (missing == i);
          store_d(c, load_d(c) + select(counts, wp * D[e] - base, zero));
        }
      },
      [&] {
        add_compensated(sum, comp, run);
        run = zero;
      });
}

// PG2 of every set of a greedy ranking's tail (TailSets). Per pair, P(S) is the product of the
// masses of S's features in the pair's entry order (eval_set's operations: set 0 gets a set
// pass's bits), each candidate's mass q_c is picked out on the way, and set A's term is set 0's
// weighted term (w P(S)) mult times its candidates' q_c, in candidate order (built subset by
// subset): 2^r - 1 multiplies a pair instead of a product chain per set (16 chains took about
// four passes' time). A set's value is that of a set pass within rounding, as the steps' are; a
// candidate whose mass is 1.0 (no entry on it) leaves the term's bits as they are.
//
// Built once per number of candidates R: the 2^R sets' loop unrolls and their products stay in
// registers, and the lane masks of S and of each candidate are looked up per feature rather
// than shifted out of the sets per entry (the pass is bound by vector operations: the 64-row
// ranking of XGBoost() on housing spent 1.8 s in it instead of 2.5 s, in perf). The operations
// on the masses are the same, in the same order, for every R.
template <int R>
void eval_tail_r(const PairView& pl, const LaneView& lanes, const TailSets& c, double mult, double* sum,
                 double* comp) {
  constexpr int n_sets = 1 << R;
  // The last set holds every candidate: its highest feature bounds them all.
  const int top = top_feature(c.sets + (n_sets - 1) * kLanes);
  const vi none_set = {};
  // Per feature below top: the lanes whose S holds it, and per candidate the lanes whose
  // candidate it is (none where the row cannot perturb it).
  vu in_s[64];
  vu is_candidate[R][64];
  const vu S = load_u(c.sets);
  fill_membership(S, top, in_s);
  for (int k = 0; k < R; ++k) {
    fill_membership(load_u(c.sets + (std::int64_t{1} << k) * kLanes) & ~S, top, is_candidate[k]);
  }
  vd run[n_sets];
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  const vd zero = {};
  const vu zero_u = {};
#pragma GCC unroll 16
  for (int A = 0; A < n_sets; ++A) run[A] = zero;
  for_each_run(
      pl, [&](std::int32_t u) { return some_lane_below(lanes, u, n_sets); },
      [&](const LeafPair& p, const Entries& at) {
        const vb need_b = load_b(lanes.code + static_cast<std::size_t>(p.u) * kLanes) |
                          load_b(lanes.code + static_cast<std::size_t>(p.v) * kLanes);
        // Dead in every lane: a code is a subset of the R <= 4 candidates (below 0x7f and within
        // its bits) or kNeverAlive, so an OR of two is kNeverAlive exactly where one of them is.
        if (all_never_alive(need_b)) return;
        const vi need = widen<std::int64_t>(need_b);
        vd P = one;
        vd q[R];
#pragma GCC unroll 4
        for (int k = 0; k < R; ++k) q[k] = one;
        for (std::int32_t e = 0; e < p.count; ++e) {
          const std::int32_t j = at.feature[e];
          if (j >= top) continue;  // in no set: a factor of 1.0
          const vd De = at.mass_of(lanes, p, e);
          P = select(in_s[j] != zero_u, P * De, P);
#pragma GCC unroll 4
          for (int k = 0; k < R; ++k) q[k] = select(is_candidate[k][j] != zero_u, De, q[k]);
        }
        const vd w = load_d(lanes.weight + static_cast<std::size_t>(p.u) * kLanes) *
                     load_d(lanes.weight + static_cast<std::size_t>(p.v) * kLanes);
        // T[A]: the weighted term of set A, T[0] the set pass's (w P) mult and each larger set
        // one candidate's mass times a subset's term: one multiply a set instead of three (the
        // 64-row ranking of XGBoost() on housing 5.40 -> 4.99 s).
        vd T[n_sets];
        T[0] = (w * P) * mult;
        run[0] += select(need == none_set, T[0], zero);
#pragma GCC unroll 16
        for (int A = 1; A < n_sets; ++A) {
          T[A] = T[A & (A - 1)] * q[__builtin_ctz(static_cast<unsigned>(A))];
          const vi alive = (need & ~static_cast<std::int64_t>(A)) == none_set;
          run[A] += select(alive, T[A], zero);
        }
      },
      [&] {
#pragma GCC unroll 16
        for (int A = 0; A < n_sets; ++A) {
          add_compensated(sum + A * kLanes, comp + A * kLanes, run[A]);
          run[A] = zero;
        }
      });
}

void eval_tail(const PairView& pl, const LaneView& lanes, const TailSets& c, std::int64_t n_sets, double mult,
               double* sum, double* comp) {
  static_assert(kMaxTailCandidates == 4, "eval_tail has a build per number of candidates up to 4");
  switch (n_sets) {
    case 2: return eval_tail_r<1>(pl, lanes, c, mult, sum, comp);
    case 4: return eval_tail_r<2>(pl, lanes, c, mult, sum, comp);
    case 8: return eval_tail_r<3>(pl, lanes, c, mult, sum, comp);
    default: return eval_tail_r<4>(pl, lanes, c, mult, sum, comp);
  }
}

#if defined(__AVX512F__)
// Two vectors at once where they fit in registers: AVX-512's 32 hold both vectors' chains (64
// rows of XGBRegressor() on housing, 1 thread: curve 1.03 -> 0.88 s, sets 1.2x); with AVX2's
// 16 (a vector of eight lanes takes two) they spilled, curve 1.67 -> 1.90 s, and four vectors
// at once on AVX-512 1.60 s. Elsewhere the drivers take one vector at a time
// (PairPasses::curve_pair and set_pair null). A greedy step's pass two vectors at a time gained
// nothing (its per-feature corrections, loaded and stored per entry, are what it waits on).
void eval_curve_pair(const PairView& pl, const LaneView* lanes, const CurveSets* c, std::int64_t n_steps,
                     double mult, double* const* sum, double* const* comp) {
  eval_curves<2>(pl, lanes, c, n_steps, mult, sum, comp);
}
constexpr decltype(PairPasses::curve_pair) kCurvePair = &eval_curve_pair;
void eval_set_pair(const PairView& pl, const LaneView* lanes, const std::uint64_t* const* sets, double mult,
                   double* const* sum, double* const* comp) {
  eval_sets<2>(pl, lanes, sets, mult, sum, comp);
}
constexpr decltype(PairPasses::set_pair) kSetPair = &eval_set_pair;
#else
constexpr decltype(PairPasses::set_pair) kSetPair = nullptr;
constexpr decltype(PairPasses::curve_pair) kCurvePair = nullptr;
#endif

}  // namespace

PairPasses passes() {
  return PairPasses{&eval_set,       kSetPair,           &eval_curve,         kCurvePair,             &eval_greedy,
                    &eval_curve_row, &eval_tail,          &eval_projected,        &eval_projected_row,
                    &eval_projected_greedy, &eval_projected_tail, &curve_leaf_bounds, &greedy_leaf_bounds};
}

}  // namespace pgexact::PGEXACT_ISA
