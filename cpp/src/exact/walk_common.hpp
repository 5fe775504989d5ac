// Internal to the walk kernels (not installed): the node walks' shared pieces.
//
// The walk kernels (kernels.hpp: pass 1 per tree, the node-pair recursions, the single-feature
// sweep, first moments) all move a box through a tree with an undo log and read interval
// masses off the Workspace's boundary CDFs. The pieces they share live here, inline, so that
// each algorithm can sit in its own file at no cost in the hot loops.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "pgexact/exact/kernels.hpp"
#include "compensated_sum.hpp"

namespace pgexact {
namespace walk {

using Cdf = Workspace::Cdf;
using Frame = Workspace::Frame;
using Undo = Workspace::Undo;

// Probability of x' between two boundaries of one feature, taking the difference on the side
// where both CDF values are small, so that tail intervals keep their relative precision.
inline double mass(const Workspace& ws, std::int32_t lo, std::int32_t hi) {
  const Cdf& l = ws.cdf[lo];
  const Cdf& h = ws.cdf[hi];
  const double m = l.lower >= 0.5 ? l.upper - h.upper : h.lower - l.lower;
  return m > 0.0 ? m : 0.0;
}

inline std::uint64_t feature_bit(std::int32_t j) { return std::uint64_t{1} << (j % 64); }

// Sets or clears feature j's bit. With more than 64 features bits are shared, so a bit is
// only ever set: a superset of the true set keeps every pruning test conservative.
inline std::uint64_t with_bit(std::uint64_t mask, std::int32_t j, bool on, bool exact_bits) {
  const std::uint64_t bit = feature_bit(j);
  if (on) return mask | bit;
  return exact_bits ? (mask & ~bit) : mask;
}

inline std::int32_t fixed_child(const Arena& a, std::int32_t n, const double* x) {
  return a.goes_left(n, x[a.feature[n]]) ? a.left[n] : a.right[n];
}

// The box every walk starts from: the whole real line on every feature (bound indices of its
// block's -inf and +inf).
inline void whole_line(const Arena& a, std::vector<std::int32_t>& lo, std::vector<std::int32_t>& hi) {
  lo.resize(static_cast<std::size_t>(a.n_features));
  hi.resize(lo.size());
  for (std::int32_t j = 0; j < a.n_features; ++j) {
    lo[static_cast<std::size_t>(j)] = a.feature_bounds_begin[j];
    hi[static_cast<std::size_t>(j)] = a.feature_bounds_begin[j + 1] - 1;
  }
}


// Boundary CDFs of feature j for the current row (workspace.cpp).
void fill_feature_cdf(const Arena& a, const Noise& noise, Workspace& ws, std::int32_t j);

// Restores the intervals changed at depth >= depth.
inline void unwind(Workspace& ws, std::vector<Undo>& log, std::int32_t depth) {
  while (!log.empty() && log.back().depth >= depth) {
    const Undo& u = log.back();
    ws.box_lo[u.feature] = u.box_lo;
    ws.box_hi[u.feature] = u.box_hi;
    if (u.side >= 0) {
      ws.region_lo[u.side][u.feature] = u.region_lo;
      ws.region_hi[u.side][u.feature] = u.region_hi;
    }
    log.pop_back();
  }
}

// Makes the interval state that of frame f: undo the siblings' subtrees, apply f's change.
inline void enter(Workspace& ws, std::vector<Undo>& log, const Frame& f) {
  unwind(ws, log, f.depth);
  if (f.feature < 0) return;
  const std::int32_t j = f.feature;
  Undo u{f.depth, j, f.side, ws.box_lo[j], ws.box_hi[j], 0, 0};
  ws.box_lo[j] = f.box_lo;
  ws.box_hi[j] = f.box_hi;
  if (f.side >= 0) {
    u.region_lo = ws.region_lo[f.side][j];
    u.region_hi = ws.region_hi[f.side][j];
    ws.region_lo[f.side][j] = f.region_lo;
    ws.region_hi[f.side][j] = f.region_hi;
  }
  log.push_back(u);
}

inline Frame plain_frame(double p, std::int32_t node, std::int32_t depth) {
  return Frame{p, 0, 0, node, -1, depth, -1, -1, 0, 0, 0, 0};
}

inline Frame box_frame(double p, std::int32_t node, std::int32_t depth, std::int32_t j, std::int32_t lo,
                       std::int32_t hi) {
  return Frame{p, 0, 0, node, -1, depth, j, -1, lo, hi, 0, 0};
}

// Pushes the children of perturbed split n that the current box reaches, with their
// probabilities, narrowing the box (no regions): pass 1 and the reference walk.
inline void push_box_children(const Arena& a, Workspace& ws, std::vector<Frame>& frames, std::int32_t n,
                              double p, std::int32_t depth) {
  const std::int32_t j = a.feature[n];
  const std::int32_t r = a.bound_index[n];
  const std::int32_t lo = ws.box_lo[j];
  const std::int32_t hi = ws.box_hi[j];
  if (r <= lo) {
    frames.push_back(plain_frame(p, a.right[n], depth + 1));
  } else if (r >= hi) {
    frames.push_back(plain_frame(p, a.left[n], depth + 1));
  } else {
    const double m = mass(ws, lo, hi);
    const double pl = m > 0.0 ? p * (mass(ws, lo, r) / m) : 0.0;
    const double pr = m > 0.0 ? p * (mass(ws, r, hi) / m) : 0.0;
    frames.push_back(box_frame(pr, a.right[n], depth + 1, j, r, hi));
    frames.push_back(box_frame(pl, a.left[n], depth + 1, j, lo, r));
  }
}

// Visits, in pre-order, every node of the tree rooted at `root` that the perturbation can reach,
// with the box narrowed to the node's region: visit(n, p) gets the node and P(box) (times p0).
// Unperturbed splits follow x; the box is restored on return.
template <typename Visit>
void walk_reachable(const Arena& a, Workspace& ws, std::vector<Frame>& frames, std::vector<Undo>& log,
                    std::int32_t root, double p0, Visit&& visit) {
  frames.clear();
  frames.push_back(plain_frame(p0, root, 0));
  while (!frames.empty()) {
    const Frame f = frames.back();
    frames.pop_back();
    enter(ws, log, f);
    const std::int32_t n = f.a;
    visit(n, f.p);
    const std::int32_t j = a.feature[n];
    if (j < 0) continue;
    if (!ws.perturbed[j]) {
      frames.push_back(plain_frame(f.p, fixed_child(a, n, ws.row), f.depth + 1));
    } else {
      push_box_children(a, ws, frames, n, f.p, f.depth);
    }
  }
  unwind(ws, log, 0);
}

// One step of the pair recursion, shared by both versions: follows unperturbed splits (decided
// by x) without branching, then either reports that the two subtrees are independent given the
// box (returns true) or picks the side to split (*side = 0 for tree t's node n, 1 for m).
inline bool pair_settle(const Arena& a, const Workspace& ws, std::int32_t& n, std::int32_t& m,
                        std::uint64_t cut_a, std::uint64_t cut_b, int* side) {
  const double* x = ws.row;
  while (a.feature[n] >= 0 && !ws.perturbed[a.feature[n]]) n = fixed_child(a, n, x);
  while (a.feature[m] >= 0 && !ws.perturbed[a.feature[m]]) m = fixed_child(a, m, x);
  const std::uint64_t pmask = ws.perturbed_mask;
  const std::uint64_t fn = a.feature[n] >= 0 ? a.subtree_features[n] & pmask : 0;
  const std::uint64_t fm = a.feature[m] >= 0 ? a.subtree_features[m] & pmask : 0;
  const bool cut_n = (cut_a & fn) != 0;
  const bool cut_m = (cut_b & fm) != 0;
  // Given the box, subtrees on disjoint independent features, each restricted by the box only
  // where its own region already restricts it, are independent.
  if (!cut_n && !cut_m && (fn & fm) == 0) return true;
  // Split the side whose own features the other region cuts; otherwise the larger subtree.
  if (cut_n) {
    *side = 0;
  } else if (cut_m) {
    *side = 1;
  } else {
    *side = a.subtree_size[n] >= a.subtree_size[m] ? 0 : 1;
  }
  return false;
}

// Recursion depth of the pair walks (VariantRecursion) is at most the two trees' depths added;
// beyond this the explicit-stack version runs instead, so no model can overflow a thread's stack.
constexpr std::int32_t kMaxRecursionDepth = 256;

// Whether the row's set perturbs feature j: asked for, the noise moves it, and x_j is not NaN
// (a missing value stays missing).
inline bool perturbs_in_row(const Noise& noise, const std::uint8_t* mask, const double* x, std::int64_t j) {
  return mask[j] != 0 && !std::isnan(x[j]) && noise.perturbs(j);
}

// How many features the row's set perturbs, counted up to `cap`.
inline std::int32_t count_perturbed(const Noise& noise, const std::uint8_t* mask, const double* x, std::int64_t d,
                                    std::int32_t cap) {
  std::int32_t count = 0;
  for (std::int64_t j = 0; j < d && count < cap; ++j) count += perturbs_in_row(noise, mask, x, j) ? 1 : 0;
  return count;
}

// Marks the effectively perturbed features (requested and not NaN) and fills their boundary
// CDFs. Returns how many there are; *last is the highest one (workspace.cpp).
std::int32_t set_perturbed(const Arena& a, const Noise& noise, const std::uint8_t* perturbed, Workspace& ws,
                           std::int32_t* last);

// Pass 1 for one tree (tree_moments.cpp).
bool tree_moments(const Arena& a, Workspace& ws, std::int64_t t, double* var_out, double* bias_out);

// Cov(f_t, f_s) by the explicit-stack pair recursion, for trees too deep for the call stack
// (pair_walk_deep.cpp).
double pair_covariance_deep(const Arena& a, Workspace& ws, std::int64_t t, std::int64_t s, bool exact_bits);

// The paper's unpruned pre-order pair walk for first tree t (reference_walk.cpp).
double tree_covariances_reference(const Arena& a, Workspace& ws, std::int64_t t, const std::int32_t* partners,
                                  std::size_t n_partners);

// PG2 with the single feature j perturbed: the bucket sweep (single_feature_sweep.cpp).
double pg2_single_feature(const Arena& a, Workspace& ws, std::int32_t j);

// PG2 with the two features j != i perturbed (both effectively, their CDFs filled): a sum over
// the cells of their boundaries' grid (two_feature_grid.cpp), where two_feature_grid_fits.
// Corners of the grid at most: 2 MiB of sums a thread, and about a millisecond a set at most
// (a CatBoost or histogram-binned model has up to 255 pieces a feature, 66,000 corners);
// forests' continuous thresholds give far larger grids, which the pair kernels sum instead.
inline constexpr std::int64_t kMaxGridCorners = std::int64_t{1} << 17;
std::int64_t two_feature_grid_corners(const Arena& a, std::int32_t j, std::int32_t i);
inline bool two_feature_grid_fits(const Arena& a, std::int32_t j, std::int32_t i) {
  return two_feature_grid_corners(a, j, i) <= kMaxGridCorners;
}
double pg2_two_features(const Arena& a, Workspace& ws, std::int32_t j, std::int32_t i);

// Whether row x's set (mask) perturbs at most one feature, or two whose grid fits: pg2_row
// then sweeps or sums the grid instead of walking pairs.
inline bool swept_or_gridded(const Arena& a, const Noise& noise, const std::uint8_t* mask, const double* x) {
  std::int32_t features[2], count = 0;
  for (std::int64_t j = 0; j < a.n_features && count <= 2; ++j) {
    if (!perturbs_in_row(noise, mask, x, j)) continue;
    if (count < 2) features[count] = static_cast<std::int32_t>(j);
    ++count;
  }
  return count <= 1 || (count == 2 && two_feature_grid_fits(a, features[0], features[1]));
}

// Pass 1 of every walked variant into ws's per-variant tables (conditional means per node,
// boundary CDFs, tree means and masks, its row and features, the variants perturbing each
// feature; see Workspace), with each variant's bias E f - f(x) and sum_t Var f_t, compensated
// over trees; with n_pairs, also the tree pairs dependent for some variant (ws.partners,
// ws.pair_live) and how many each variant has (shared_walks.cpp). Variants of one row may
// read its boundary CDFs from ws.cdf instead (`lane_cdfs` false: no per-variant copies).
void prepare_variants(const Arena& a, const Noise& noise, const Variant* variants, const std::int32_t* walked,
                      std::int32_t n_walked, Workspace& ws, double* bias, double* var, std::int64_t* n_pairs,
                      bool lane_cdfs = true);

// One variant's certified-skipping budget per tree pair: a tenth of tol times its diagonal part
// (bias^2 + sum Var), shared out over its n_pairs dependent tree pairs; tol 0 skips nothing.
// The walks check after the pass that twice what they skipped is within tol of the result.
inline double skip_budget(double tol, double bias, double var, std::int64_t n_pairs) {
  return tol > 0.0 && n_pairs > 0 ? 0.1 * tol * (bias * bias + var) / static_cast<double>(n_pairs) : 0.0;
}

// The shared node-pair walk of several variants (shared_walks.cpp): each result within tol
// (relative) of the exact value, certified; tol 0 skips nothing. A stopped control ends the
// walk early (its outputs are then meaningless).
void walk_variants(const Arena& a, const Noise& noise, const Variant* variants, const std::int32_t* walked,
                   std::int32_t n_walked, double tol, Workspace& ws, double* out,
                   const RunControl* control = nullptr);

}  // namespace walk
}  // namespace pgexact
