// One build of the leaf-pair passes (pair_passes.hpp); CMake compiles this file once per
// x86-64 level with PGEXACT_ISA naming the namespace. Everything here lives in that namespace,
// helpers included, so the builds never share (and never swap) inline code.
#include <cmath>
#include <cstring>

#include "pgexact/pair_passes.hpp"

#ifndef PGEXACT_ISA
#define PGEXACT_ISA isa_base
#endif

// The lane helpers take and return 64-byte vectors; they are always inlined, so the ABI note
// GCC gives for builds without AVX-512 does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pgexact::PGEXACT_ISA {
namespace {

// Lane vectors as GCC/Clang vector extensions: the compiler maps them onto whatever SIMD the
// function is built for (one build per x86-64 level), and every clone does the same IEEE
// operations, so results do not depend on the instruction set picked at run time.
typedef double vd __attribute__((vector_size(kLanes * sizeof(double))));
typedef std::uint64_t vu __attribute__((vector_size(kLanes * sizeof(double))));
typedef std::int64_t vi __attribute__((vector_size(kLanes * sizeof(double))));

__attribute__((always_inline)) inline vd load_d(const double* p) {
  vd v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((always_inline)) inline vu load_u(const std::uint64_t* p) {
  vu v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((always_inline)) inline void store_d(double* p, vd v) { std::memcpy(p, &v, sizeof v); }
__attribute__((always_inline)) inline vd vabs(vd x) {
  const vu m = (vu)x & 0x7fffffffffffffffULL;
  return (vd)m;
}
// Whether any lane of a comparison result is set: an OR tree of shuffles (three steps rather
// than eight lane extractions).
__attribute__((always_inline)) inline bool any(vi mask) {
  vu t = (vu)mask;
  t |= __builtin_shuffle(t, (vu){4, 5, 6, 7, 0, 1, 2, 3});
  t |= __builtin_shuffle(t, (vu){2, 3, 0, 1, 6, 7, 4, 5});
  t |= __builtin_shuffle(t, (vu){1, 0, 3, 2, 5, 4, 7, 6});
  return t[0] != 0;
}
__attribute__((always_inline)) inline void add_compensated(double* sum, double* comp, vd x) {
  const vd s = load_d(sum);
  const vd t = s + x;
  const vd c = load_d(comp) + ((vabs(s) >= vabs(x)) ? (s - t) + x : (x - t) + s);
  store_d(sum, t);
  store_d(comp, c);
}
__attribute__((always_inline)) inline vd mass(const LaneView& lanes, std::int32_t lo, std::int32_t hi) {
  const double* a = lanes.table + static_cast<std::size_t>(lo) * 2 * kLanes;
  const double* b = lanes.table + static_cast<std::size_t>(hi) * 2 * kLanes;
  const vd m = (load_d(b) - load_d(a)) + (load_d(b + kLanes) - load_d(a + kLanes));
  const vd zero = {};
  return m > zero ? m : zero;
}
// Lane mask of the lanes whose set holds feature j.
__attribute__((always_inline)) inline vi holds(vu S, std::int32_t j) {
  const vu zero = {};
  return ((S >> j) & 1u) != zero;
}

// ---- one pass over a tree pair's pairs, for one lane vector --------------------------------
// P(box) of a lane's set is the product of the masses of its perturbed features in the pair's
// fixed entry order (multiplying by 1.0 elsewhere is exact): the canonical product, the same
// in all three passes. Membership of a feature in each lane's set is precomputed once per call
// as a lane mask, so a factor costs a masked multiply.
//
// Terms are added plainly over the pairs of one leaf u of the first tree (at most the leaves of
// the second tree intersecting u's box), then the run is added, compensated, into the sums:
// pairs come ordered by u.

// Mass of entry e of pair p: a leaf's precomputed slot, or the intersection from the tables.
__attribute__((always_inline)) inline vd entry_mass(const PairView& pl, const LaneView& lanes, const LeafPair& p,
                                                    std::int32_t e) {
  const std::int32_t lo = pl.lo[p.first + e];
  if (e < p.n_slots) return load_d(lanes.masses + static_cast<std::size_t>(lo) * kLanes);
  return mass(lanes, lo, pl.hi[p.first + e]);
}

// The plain running sum over the pairs of one leaf u, added compensated into sum/comp when the
// pairs move on to the next u.
struct RunSum {
  vd run = {};
  std::int32_t u;
  double* sum;
  double* comp;

  __attribute__((always_inline)) void at(std::int32_t next_u) {
    if (next_u == u) return;
    flush();
    u = next_u;
  }
  __attribute__((always_inline)) void flush() {
    add_compensated(sum, comp, run);
    run = vd{};
  }
};

// One past the highest feature in any lane of `sets`.
__attribute__((always_inline)) inline int top_feature(const std::uint64_t* sets) {
  const vu S = load_u(sets);
  std::uint64_t any_set = 0;
  for (int l = 0; l < kLanes; ++l) any_set |= S[l];
  return any_set == 0 ? 0 : 64 - __builtin_clzll(any_set);
}

// Lane masks of features 0 .. top - 1: all ones in the lanes whose set holds the feature.
__attribute__((always_inline)) inline void fill_membership(const std::uint64_t* sets, int top, vu* member) {
  const vu S = load_u(sets);
  const vu zero_u = {};
  for (int j = 0; j < top; ++j) member[j] = (vu)(((S >> j) & 1u) != zero_u);
}

// Lane masks of every feature up to the highest one in any lane of `sets`; returns that bound.
__attribute__((always_inline)) inline int membership(const std::uint64_t* sets, vu* member) {
  const int top = top_feature(sets);
  fill_membership(sets, top, member);
  return top;
}

__attribute__((always_inline)) inline vd times_if(vd P, vu member, vd D) {
  const vu zero_u = {};
  return (member != zero_u) ? P * D : P;
}

// PG2 of one set per lane.
void eval_set(const PairView& pl, const LaneView& lanes, const std::uint64_t* S_, double mult,
              double* sum, double* comp) {
  vu member[64];
  const int top = membership(S_, member);
  const vu S = load_u(S_);
  const vu zero_u = {};
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  const vd zero = {};
  RunSum runs{zero, pl.n_pairs > 0 ? pl.pairs[0].u : 0, sum, comp};
  for (std::size_t q = 0; q < pl.n_pairs; ++q) {
    const LeafPair& p = pl.pairs[q];
    runs.at(p.u);
    const vi alive = ((load_u(lanes.out + static_cast<std::size_t>(p.u) * kLanes) |
                       load_u(lanes.out + static_cast<std::size_t>(p.v) * kLanes)) & ~S) == zero_u;
    if (!any(alive)) continue;
    vd P = one;
    for (std::int32_t e = 0; e < p.count; ++e) {
      const std::int32_t j = pl.feature[p.first + e];
      if (j >= top || !any((vi)member[j])) continue;  // a factor of 1.0 in every lane
      P = times_if(P, member[j], entry_mass(pl, lanes, p, e));
    }
    const vd w = load_d(lanes.weight + static_cast<std::size_t>(p.u) * kLanes) *
                 load_d(lanes.weight + static_cast<std::size_t>(p.v) * kLanes);
    runs.run += alive ? (w * P) * mult : zero;
  }
  runs.flush();
}

// PG2 of every prefix of each lane's ranking (see CurveSets).
void eval_curve(const PairView& pl, const LaneView& lanes, const CurveSets& c, std::int64_t n_steps, double mult,
                double* sum, double* comp) {
  vd D[64];
  // [k][feature], features below `top`: sets grow along the prefixes, so the last prefix's
  // highest feature bounds them all (no set holds a feature at or above it).
  vu member[64 * 64];
  const int top = top_feature(c.sets + (n_steps - 1) * kLanes);
  for (std::int64_t k = 0; k < n_steps; ++k) fill_membership(c.sets + k * kLanes, top, member + k * 64);
  vd run[64];
  const vu zero_u = {};
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  const vd zero = {};
  for (std::int64_t k = 0; k < n_steps; ++k) run[k] = zero;
  std::int32_t run_u = pl.n_pairs > 0 ? pl.pairs[0].u : 0;
  for (std::size_t q = 0; q < pl.n_pairs; ++q) {
    const LeafPair& p = pl.pairs[q];
    if (p.u != run_u) {
      for (std::int64_t k = 0; k < n_steps; ++k) {
        add_compensated(sum + k * kLanes, comp + k * kLanes, run[k]);
        run[k] = zero;
      }
      run_u = p.u;
    }
    // First prefix at which some lane is alive: a lane is alive from the ranking position of
    // the last feature x leaves the box on, if every such feature is perturbed by then.
    std::int64_t k0 = n_steps;
    for (int l = 0; l < kLanes; ++l) {
      const std::uint64_t pos = lanes.out_pos[static_cast<std::size_t>(p.u) * kLanes + l] |
                                lanes.out_pos[static_cast<std::size_t>(p.v) * kLanes + l];
      if ((pos & c.never[l]) != 0) continue;
      const std::int64_t k = pos == 0 ? 0 : 63 - __builtin_clzll(pos);
      k0 = k < k0 ? k : k0;
    }
    if (k0 >= n_steps) continue;
    const vu out = load_u(lanes.out + static_cast<std::size_t>(p.u) * kLanes) |
                   load_u(lanes.out + static_cast<std::size_t>(p.v) * kLanes);
    const std::uint8_t* feature = pl.feature + p.first;
    for (std::int32_t e = 0; e < p.n_slots; ++e) D[e] = load_d(lanes.masses + static_cast<std::size_t>(pl.lo[p.first + e]) * kLanes);
    for (std::int32_t e = p.n_slots; e < p.count; ++e) D[e] = mass(lanes, pl.lo[p.first + e], pl.hi[p.first + e]);
    const vd w = load_d(lanes.weight + static_cast<std::size_t>(p.u) * kLanes) *
                 load_d(lanes.weight + static_cast<std::size_t>(p.v) * kLanes);
    // The products of all live prefixes side by side, entry by entry: each prefix multiplies
    // in the pair's fixed order, and the prefixes are independent chains the CPU overlaps
    // (one prefix after another would wait on each multiply's latency).
    vd P[64];
    for (std::int64_t k = k0; k < n_steps; ++k) P[k] = one;
    for (std::int32_t e = 0; e < p.count; ++e) {
      if (feature[e] >= top) continue;  // in no lane's set at any prefix: a factor of 1.0
      const vu* mj = member + feature[e];
      for (std::int64_t k = k0; k < n_steps; ++k) P[k] = times_if(P[k], mj[k * 64], D[e]);
    }
    for (std::int64_t k = k0; k < n_steps; ++k) {
      const vi alive = (out & ~load_u(c.sets + k * kLanes)) == zero_u;
      run[k] += alive ? (w * P[k]) * mult : zero;
    }
  }
  for (std::int64_t k = 0; k < n_steps; ++k) add_compensated(sum + k * kLanes, comp + k * kLanes, run[k]);
}

// One greedy step: PG2(S) per lane (canonical, into sum/comp) and, per feature i, corr[i][lane]
// with PG2(S + {i}) = PG2(S) + corr[i] for every candidate i (not in S, perturbable in the row).
void eval_greedy(const PairView& pl, const LaneView& lanes, const std::uint64_t* S_,
                 const std::uint64_t* cand_, double mult, double* sum, double* comp, double* corr) {
  vu member[64];
  const int top = membership(S_, member);
  const vu S = load_u(S_);
  const vu cand = load_u(cand_);
  vd D[64];
  const vu zero_u = {};
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  const vd zero = {};
  RunSum runs{zero, pl.n_pairs > 0 ? pl.pairs[0].u : 0, sum, comp};
  for (std::size_t q = 0; q < pl.n_pairs; ++q) {
    const LeafPair& p = pl.pairs[q];
    runs.at(p.u);
    const vu rest = (load_u(lanes.out + static_cast<std::size_t>(p.u) * kLanes) |
                     load_u(lanes.out + static_cast<std::size_t>(p.v) * kLanes)) & ~S;
    // Useful in a lane when the rest is {} or a single candidate.
    const vi useful = ((rest & (rest - 1u)) == zero_u) & ((rest & ~cand) == zero_u);
    if (!any(useful)) continue;
    vd P = one;
    for (std::int32_t e = 0; e < p.count; ++e) {
      const std::int32_t j = pl.feature[p.first + e];
      D[e] = entry_mass(pl, lanes, p, e);
      if (j < top) P = times_if(P, member[j], D[e]);
    }
    const vd w = load_d(lanes.weight + static_cast<std::size_t>(p.u) * kLanes) *
                 load_d(lanes.weight + static_cast<std::size_t>(p.v) * kLanes);
    const vd wp = (w * P) * mult;
    const vd base = (rest == zero_u) ? wp : zero;
    runs.run += base;
    for (std::int32_t e = 0; e < p.count; ++e) {
      const std::int32_t i = pl.feature[p.first + e];
      double* c = corr + static_cast<std::size_t>(i) * kLanes;
      // Every feature's correction is kept (the driver reads only the candidates' ones; a
      // feature that cannot be perturbed in a row is read as no correction).
      const vi counts = (rest & ~(std::uint64_t{1} << i)) == zero_u;
      store_d(c, load_d(c) + (counts ? wp * D[e] - base : zero));
    }
  }
  runs.flush();
}

}  // namespace

PairPasses passes() { return PairPasses{&eval_set, &eval_curve, &eval_greedy}; }

}  // namespace pgexact::PGEXACT_ISA
