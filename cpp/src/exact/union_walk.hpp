// Internal to the drivers (not installed): several sets of ONE row in one walk over their union.
//
// The shared walks (shared_walks.cpp) let each (row, set) variant decide for itself, so that
// its value is the bits it gets alone: variants that decide differently part and walk on
// separately. A one-row curve's prefixes part at every split on a feature that one prefix
// perturbs and the next does not, so its walk cost about twice the walk of the largest prefix
// alone (XGBoost 100 x depth 6, one row: 0.114 s against 0.055 s). Here the sets are lanes of
// one walk over the union U of their features. A lane k that does not perturb a feature of U
// conditions on x instead: at a split on it, the child x goes to keeps P_k(box), the other
// gets 0. The walk's decisions are the union's (which side to split) or per lane where the
// lane's own test is sound for it (independence of the two subtrees given the box, certified
// skipping): a lane's states are a refinement of those it would visit alone, so its value is
// the same sum over the same leaf pairs, grouped differently: within tol of its exact value
// (certified as the other walks), not its solo walk's bits. A lane dead at a state (x left the
// box on a feature it fixes, or its probability underflows) is dropped there; a state with no
// live lane ends.
//
// For a greedy step the lanes are the candidates S + {j}: U is every candidate, and a state
// from which x has left the box on two candidates is dead for every lane, so a step visits
// what the leaf-pair kernel's "one missing feature" rule keeps.
//
// Threads share the tree pairs, in fixed chunks whose sums are added in chunk order: the bits
// do not depend on the thread count. They do depend on which sets share the walk (a lane's
// grouping follows the union), so callers group a call's sets in a fixed way.
#pragma once

#include <cstdint>

#include "distinct_sets.hpp"
#include "pgexact/exact/kernels.hpp"

namespace pgexact {

// PG2 of the variants of `sets` (distinct_sets: each distinct set walked once), all of one
// row: out[v] for every variant v they were made of, each within tol (relative) of the exact
// value, certified. Sets with at most one perturbed feature take pg2_row; the others share
// walks in consecutive groups whose tables fit a fixed budget. A swept set and each tree pair
// walked are `weight` units of the control's progress each (weight * union_walk_units),
// planned here unless `planned` (the caller planned them).
void walk_union(const Arena& arena, const Noise& noise, const DistinctSets& sets, int n_threads, double tol,
                double* out, RunControl* control, bool planned = false, std::int64_t weight = 1);

// walk_union where the caller planned `expected` units for it (a bound, before the sets were
// known): plans the excess first, or advances the shortfall after (fewer distinct sets).
void walk_union_within(const Arena& arena, const Noise& noise, const DistinctSets& sets, int n_threads, double tol,
                       double* out, RunControl* control, std::int64_t expected, std::int64_t weight);

// Lanes one walk holds at most: their tables (a conditional mean per node) within a fixed
// budget; more lanes walk in groups, each a walk of the whole model.
std::int32_t union_walk_lanes(const Arena& arena);

// The units walk_union advances: for `swept` sets of at most one perturbed feature and `lanes`
// others, and for `sets`.
std::int64_t union_walk_units(const Arena& arena, std::int64_t swept, std::int64_t lanes);
std::int64_t union_walk_units(const Arena& arena, const Noise& noise, const DistinctSets& sets);

}  // namespace pgexact
