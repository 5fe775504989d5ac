// PG2 with one perturbed feature: a sweep over that feature's boundaries.
#include "walk_common.hpp"


namespace pgexact {
namespace walk {

// PG2 when a single feature j is perturbed: f is then a step function of x'_j, so
// E[(f(x') - f(x))^2] is a sum over the pieces between consecutive boundaries of j. Each tree
// restricted to j is a search tree whose leaves, visited left first, come in increasing order;
// their value changes are accumulated per boundary, then one sweep adds mass * D^2 with
// D = f - f(x) on each piece. Every term is non-negative.
double pg2_single_feature(const Arena& a, Workspace& ws, std::int32_t j) {
  const double* x = ws.row;
  const std::int32_t begin = a.feature_bounds_begin[j];
  const std::int32_t end = a.feature_bounds_begin[j + 1];
  std::fill(ws.jump.begin() + begin, ws.jump.begin() + end, 0.0);
  double d0 = 0.0;  // f - f(x) on the leftmost piece
  auto& stack = ws.sweep;
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    const double c_x = a.value[a.leaf_of(t, x)];
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
        if (first) {
          d0 += y - c_x;
          first = false;
        } else {
          ws.jump[it.lo] += y - prev;  // leaves come in order: this one starts where the last ended
        }
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
  double total = 0.0;
  double d = d0;
  std::int32_t lo = begin;
  for (std::int32_t k = begin + 1; k < end - 1; ++k) {
    if (ws.jump[k] == 0.0) continue;
    if (d != 0.0) total += mass(ws, lo, k) * d * d;
    d += ws.jump[k];
    lo = k;
  }
  if (d != 0.0) total += mass(ws, lo, end - 1) * d * d;
  return total;
}

}  // namespace walk
}  // namespace pgexact
