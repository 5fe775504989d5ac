// Exact PG2 from enumerated leaf pairs, with rows in SIMD lanes.
//
// Centre every tree at its value for the row, g_t(x') = f_t(x') - f_t(x). Then
//   PG2(x, S) = E[(sum_t g_t)^2] = sum_t sum_s sum_{u in t, v in s} w_u w_v P(x' in B_u and B_v),
// w_u = y_u - f_t(x), and the probability factorises over features:
//   P = prod_{j not in S} [x_j routed into u and v on j] * prod_{j in S} P(x'_j in I_uj and I_vj).
// The first product is 1 exactly when the features on which x leaves u's or v's path, out(u) |
// out(v) (bit masks the row computes once per leaf by routing x with the library's own rule),
// are all perturbed; otherwise the pair adds nothing. The second is a product of interval
// masses D_j = F(hi) - F(lo), where each CDF value is kept on the side of x where it is small
// (T = P(x' < b) below x, -P(x' > b) above) plus the indicator I = [b > x], so
//   D_j = (T[hi] - T[lo]) + (I[hi] - I[lo])
// keeps the relative precision of far tails and is 1 exactly on the real line.
//
// Which pairs intersect does not depend on the row (leaf_pairs.hpp), so the kernel enumerates
// them once per tree pair and block of rows, and evaluates each pair for 8 rows at a time with
// the rows in SIMD lanes: boundary tables are laid out [boundary][row], leaf weights and leaf
// codes [leaf][row]. A leaf's code is one byte that condenses its out mask against what the
// pass perturbs (the first prefix from which out(u) is perturbed, or the one candidate still
// missing in a greedy step), so a pair's first factor is a byte max, not a mask test. A row's value never depends on its lane neighbours: every lane does the
// same operations in the same order, pairs no lane needs are skipped (their terms would be
// exactly zero), and the product over a pair's features is always taken in increasing feature
// order. So a row's value is the same bits whatever rows share the block and whatever the
// thread count.
//
// A pass enumerates only pairs of live leaves (some lane admits x' in the leaf for the pass's
// sets, with a nonzero weight): the others add exactly zero. Each row also prunes, in its own
// lane, leaves whose boxes lie far out in its noise's tails, within a certified budget (see
// prune_leaves in pair_kernel.cpp: every result is checked after the pass and a row that fails
// is computed again unpruned); the budget is spent per set and per prefix, so PG2 of a set, a
// column of a prefix curve and a greedy step's chosen set agree within 1e-13 relative, not bit
// for bit.
//
// Sums: per lane, compensated (Neumaier) over the pairs of one first tree t, then over t in
// order; the per-t partial sums are kept apart so that tree rows can be spread over threads and
// still be added in one fixed order. The result is clamped at zero against the last rounding.
//
// One pass over the pairs serves, per lane: one set (pg2); every prefix of the lane's ranking
// (pg2_curve: the pair's masses are computed once and multiplied for each prefix it is alive
// in); every candidate S + {i} of a greedy step (a pair with out-set R = out \ S adds
// w P_S D_i to candidate i when R is {} or {i}, so one pass ranks all candidates, and the same
// pass yields PG2(S) in the canonical order for the curve).
//
// Tree pairs whose leaves agree on the features both trees cut (CatBoost's oblivious trees) are
// summed by groups of such leaves instead of leaf pairs, in every pass (tree_projection.hpp;
// within rounding of the pairs' sums, so a row's value still never depends on its neighbours).
//
// Features perturbed by category (noise.hpp) enter as sets of cells (category_cells.hpp): a
// pair's entry on such a feature carries two row-free probabilities (x_j in both leaves' sets or
// not), and the pass picks one per lane from the leaves' out masks; the product order, the
// liveness codes and every property above are unchanged.
#pragma once

#include <cstdint>

#include "pgexact/model/arena.hpp"
#include "pgexact/exact/noise.hpp"
#include "pgexact/exact/run_control.hpp"

namespace pgexact {

// How far a result may be from the unpruned sum, relative, each result certified (see
// leaf_pruning.hpp): the default is rounding level; a caller may allow more (a larger budget
// prunes more leaves on deep trees); below the default, nothing is pruned.
inline constexpr double kDefaultTolerance = 1e-13;

// Whether the pair kernel handles this arena: one output, 1..64 features, depth at most 256.
bool pairs_apply(const Arena& arena);

// The share of pg2_pairs' progress units, on n_rows rows, that plan the tree pairs it
// projects (pair_sweep.hpp, sweep_units): pgexact.estimate scales a pass it times by the
// candidates of a greedy ranking, which plans its tree pairs once.
double pg2_planning_share(const Arena& arena, const Noise& noise, std::int64_t n_rows);

// Rows per block of a pg2_pairs call on n_rows rows (pair_lanes.hpp, block_rows; 0 where the
// kernel does not apply): a call past one block's budget goes in as few blocks as the budget
// allows, of equal size to a lane vector.
std::int64_t pg2_block_rows(const Arena& arena, std::int64_t n_rows);

// PG2 for n rows; `perturbed` is one mask of n_features entries, or one per row.
void pg2_pairs(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
               const std::uint8_t* perturbed, bool mask_per_row, int n_threads, double* out,
               RunControl* control = nullptr, double tol = kDefaultTolerance);

// out[i, k] = PG2(x_i, first k+1 entries of the ranking) for k < n_steps.
void pg2_curve_pairs(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                     const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps, int n_threads,
                     double* out, RunControl* control = nullptr, double tol = kDefaultTolerance);

// Greedy ranking (ties to the lower index; features the noise never moves last) and its
// curve, curve_out[i, k] = PG2(x_i, first k+1 chosen features), within 1e-13 of pg2_curve's. The
// steps prune per row too (leaf_pruning.hpp): a choice stands only where the chosen candidate
// beats every other by more than their bounds, else the row is ranked again unpruned, so the
// ranking is the unpruned one. `one_row_in_lanes`: a call of one row (as a whole: not a block
// of a larger call, whose rows must keep that call's bits) compares each step's sets side by
// side in the SIMD lanes, unpruned: its curve has pg2's bits of an unpruned leaf-pair set from
// the third entry on, within 2 tol of the same row in a larger call (not its bits).
void greedy_rank_pairs(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                       int n_threads, std::int64_t* ranking_out, double* curve_out,
                       RunControl* control = nullptr, double tol = kDefaultTolerance,
                       bool one_row_in_lanes = false);

}  // namespace pgexact
