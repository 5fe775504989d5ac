// PG2 with one perturbed feature: a sweep over that feature's boundaries.
#include <algorithm>

#include "walk_common.hpp"


namespace pgexact {
namespace walk {

// PG2 when a single feature j is perturbed: f is then a step function of x'_j, so
// E[(f(x') - f(x))^2] is a sum over the pieces between consecutive boundaries of j. Each tree
// restricted to j is a search tree whose leaves, visited left first, come in increasing order;
// their value changes are accumulated per boundary, then a sweep adds mass * D^2 with
// D = f - f(x) on each piece. Every term is non-negative.
//
// The sweep starts from the piece holding x_j, where D is summed tree by tree (y_t there less
// f_t(x): exactly zero for every tree whose leaf for x is that piece's, which is every tree
// unless x's own routing is special, a value on a boundary or LightGBM's zero), and goes
// outward, adding the jumps to the right and taking them away to the left. Started from the
// leftmost piece, D reached x's piece as a rounding residue of the jumps before it: PG2 of a
// feature f does not move within the noise's reach came out as (1 ulp)^2 instead of 0
// (a CatBoost model, uniform noise: 4.8e-35).
double pg2_single_feature(const Arena& a, Workspace& ws, std::int32_t j) {
  const double* x = ws.row;
  const std::int32_t begin = a.feature_bounds_begin[j];
  const std::int32_t end = a.feature_bounds_begin[j + 1];
  std::fill(ws.jump.begin() + begin, ws.jump.begin() + end, 0.0);
  // x_j lies between boundaries kx - 1 and kx (x' < boundary goes left).
  const std::int32_t kx = static_cast<std::int32_t>(
      std::upper_bound(a.bounds.begin() + begin + 1, a.bounds.begin() + end - 1, x[j]) - a.bounds.begin());
  double d_x = 0.0;  // f - f(x) on the piece holding x_j
  auto& stack = ws.sweep;
  if (ws.home_stamp != ws.row_epoch) {  // once per row, for every feature swept in it
    for (std::int64_t t = 0; t < a.n_trees(); ++t) ws.home[static_cast<std::size_t>(t)] = a.value[a.leaf_of(t, x)];
    ws.home_stamp = ws.row_epoch;
  }
  const std::uint64_t j_bit = std::uint64_t{1} << (j % 64);
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    // A tree that never splits on j is constant in x'_j: it adds no jump, and x's leaf adds
    // y - c_x = 0 to d_x (subtree_features: bit j % 64, so a clear bit is a proof).
    if ((a.subtree_features[a.tree_root[t]] & j_bit) == 0) continue;
    const double c_x = ws.home[static_cast<std::size_t>(t)];
    stack.clear();
    stack.push_back({a.tree_root[t], begin, end - 1});
    bool first = true;
    double prev = 0.0;
    while (!stack.empty()) {
      const Workspace::SweepItem it = stack.back();
      stack.pop_back();
      const std::int32_t n = it.node;
      const std::int32_t f = a.feature[n];
      if (f < 0) {
        const double y = a.value[n];
        if (it.lo < kx && kx <= it.hi) d_x += y - c_x;  // this tree's leaf on x's piece
        if (!first) ws.jump[it.lo] += y - prev;  // leaves come in order: this one starts where the last ended
        first = false;
        prev = y;
        continue;
      }
      if (f != j) {
        stack.push_back({fixed_child(a, n, x), it.lo, it.hi});
        continue;
      }
      const std::int32_t r = a.bound_index[n];
      const bool left = r > it.lo;
      const bool right = r < it.hi;
      // Right is pushed first so that the left child is visited first.
      if (right) stack.push_back({a.right[n], left ? r : it.lo, it.hi});
      if (left) stack.push_back({a.left[n], it.lo, right ? r : it.hi});
    }
  }
  // x's piece: from the last jump at or left of kx - 1 to the first at or right of kx.
  std::int32_t left = kx - 1;
  while (left > begin && ws.jump[left] == 0.0) --left;
  double total = 0.0;
  double d = d_x;
  std::int32_t lo = left;
  for (std::int32_t k = kx; k < end - 1; ++k) {  // x's piece, then rightwards
    if (ws.jump[k] == 0.0) continue;
    if (d != 0.0) total += mass(ws, lo, k) * d * d;
    d += ws.jump[k];
    lo = k;
  }
  if (d != 0.0) total += mass(ws, lo, end - 1) * d * d;
  d = d_x;
  for (std::int32_t hi = left; hi > begin;) {  // leftwards from x's piece
    d -= ws.jump[hi];
    std::int32_t k = hi - 1;
    while (k > begin && ws.jump[k] == 0.0) --k;
    if (d != 0.0) total += mass(ws, k, hi) * d * d;
    hi = k;
  }
  return total;
}

}  // namespace walk
}  // namespace pgexact
