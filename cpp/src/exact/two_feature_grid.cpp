// PG2 with two perturbed features: a sum over the cells of their boundaries' grid.
#include <algorithm>
#include <cmath>
#include <limits>

#include "walk_common.hpp"

namespace pgexact {
namespace walk {
namespace {

// Pieces of feature j: the intervals between consecutive boundaries of its block (the first
// boundary is -inf, the last +inf).
inline std::int64_t pieces(const Arena& a, std::int32_t j) {
  return a.feature_bounds_begin[j + 1] - a.feature_bounds_begin[j] - 1;
}

// s + e = a + b exactly (Knuth's two-sum).
inline void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double bb = s - a;
  e = (a - (s - bb)) + (b - bb);
}

}  // namespace

std::int64_t two_feature_grid_corners(const Arena& a, std::int32_t j, std::int32_t i) {
  return (pieces(a, j) + 1) * (pieces(a, i) + 1);
}

// With every other feature fixed at x, f is a step function of (x'_j, x'_i), constant on the
// cells of the grid of j's and i's boundaries (almost surely: x' lands on a boundary with
// probability zero), and E[(f(x') - f(x))^2] = sum over cells of P(cell) D(cell)^2 with
// D = f - f(x). Each tree restricted to the two features is a search tree over rectangles of
// cells; a leaf adds y - f_t(x) (zero for the leaf x reaches, which is skipped) to its
// rectangle, as four signed entries at the rectangle's corners, and D is their prefix sum over
// both axes. Every addition, the corners' own included, carries its rounding error (two-sum):
// the entries of a rectangle that does not hold a cell cancel there only up to the residue of
// that compensation, far below any difference of leaf values, so a cell's D within that
// residue of zero is zero (plain sums left one ulp of the entries: 4.8e-35 where the model is
// flat, and the test of it failed). So x's own cell and every cell no tree changes get exactly
// 0, and a model that does not move within the noise's reach gives exactly 0, as the
// single-feature sweep does. Every term is non-negative. Cells of equal D
// next to each other along i, and rows of equal D next to each other along j, are summed with
// the mass of their union: fewer and wider intervals, each mass one difference of CDFs.
double pg2_two_features(const Arena& a, Workspace& ws, std::int32_t j, std::int32_t i) {
  const double* x = ws.row;
  const std::int32_t begin_j = a.feature_bounds_begin[j];
  const std::int32_t begin_i = a.feature_bounds_begin[i];
  const std::int64_t n_j = pieces(a, j), n_i = pieces(a, i);
  const auto width = static_cast<std::size_t>(n_i + 1);  // corners per row
  const std::size_t corners = static_cast<std::size_t>(n_j + 1) * width;
  std::vector<double>& high = ws.grid_high;
  std::vector<double>& low = ws.grid_low;
  high.assign(corners, 0.0);
  low.assign(corners, 0.0);
  if (ws.home_stamp != ws.row_epoch) {  // once per row (as the single-feature sweep)
    for (std::int64_t t = 0; t < a.n_trees(); ++t) ws.home[static_cast<std::size_t>(t)] = a.value[a.leaf_of(t, x)];
    ws.home_stamp = ws.row_epoch;
  }
  const std::uint64_t bits = feature_bit(j) | feature_bit(i);
  double scale = 0.0;  // sum of the entries' magnitudes: bounds the prefix sums' residue
  // Entries meet at shared corners: each corner's sum carried with its rounding errors too.
  auto add = [&](std::size_t corner, double v) {
    double e;
    two_sum(high[corner], v, high[corner], e);
    low[corner] += e;
  };
  auto& stack = ws.grid_stack;
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    // A tree that splits on neither feature is constant: it changes no cell.
    if ((a.subtree_features[a.tree_root[t]] & bits) == 0) continue;
    const double c_x = ws.home[static_cast<std::size_t>(t)];
    stack.clear();
    stack.push_back({a.tree_root[t], begin_j, begin_j + static_cast<std::int32_t>(n_j), begin_i,
                     begin_i + static_cast<std::int32_t>(n_i)});
    while (!stack.empty()) {
      const Workspace::GridItem it = stack.back();
      stack.pop_back();
      const std::int32_t n = it.node;
      const std::int32_t f = a.feature[n];
      if (f < 0) {
        const double v = a.value[n] - c_x;
        if (v == 0.0) continue;
        const std::size_t lo_j = static_cast<std::size_t>(it.lo_j - begin_j), hi_j = static_cast<std::size_t>(it.hi_j - begin_j);
        const std::size_t lo_i = static_cast<std::size_t>(it.lo_i - begin_i), hi_i = static_cast<std::size_t>(it.hi_i - begin_i);
        add(lo_j * width + lo_i, v);
        add(hi_j * width + lo_i, -v);
        add(lo_j * width + hi_i, -v);
        add(hi_j * width + hi_i, v);
        scale += 4.0 * std::fabs(v);
        continue;
      }
      if (f != j && f != i) {
        stack.push_back({fixed_child(a, n, x), it.lo_j, it.hi_j, it.lo_i, it.hi_i});
        continue;
      }
      // As the single-feature sweep: the children the box reaches, the right pushed first.
      const std::int32_t r = a.bound_index[n];
      if (f == j) {
        const bool left = r > it.lo_j, right = r < it.hi_j;
        if (right) stack.push_back({a.right[n], left ? r : it.lo_j, it.hi_j, it.lo_i, it.hi_i});
        if (left) stack.push_back({a.left[n], it.lo_j, right ? r : it.hi_j, it.lo_i, it.hi_i});
      } else {
        const bool left = r > it.lo_i, right = r < it.hi_i;
        if (right) stack.push_back({a.right[n], it.lo_j, it.hi_j, left ? r : it.lo_i, it.hi_i});
        if (left) stack.push_back({a.left[n], it.lo_j, it.hi_j, it.lo_i, right ? r : it.hi_i});
      }
    }
  }
  if (scale == 0.0) return 0.0;  // no tree changes within the grid
  // Prefix sums along i within each row, then down each column, each carried with its
  // rounding errors; high then holds D per cell.
  // Rows four at a time: each row's chain of additions is the same, and four chains side by
  // side hide the latency of each (a two-sum waits on the one before it).
  constexpr std::size_t kRows = 4;
  for (std::size_t r0 = 0; r0 < static_cast<std::size_t>(n_j); r0 += kRows) {
    const std::size_t rows = std::min(kRows, static_cast<std::size_t>(n_j) - r0);
    double s[kRows] = {}, c[kRows] = {};
    for (std::size_t b = 0; b < static_cast<std::size_t>(n_i); ++b) {
      for (std::size_t k = 0; k < rows; ++k) {
        const std::size_t at = (r0 + k) * width + b;
        double e;
        two_sum(s[k], high[at], s[k], e);
        c[k] += e + low[at];
        high[at] = s[k];
        low[at] = c[k];
      }
    }
  }
  std::vector<double>& column_high = ws.grid_column_high;
  std::vector<double>& column_low = ws.grid_column_low;
  column_high.assign(width, 0.0);
  column_low.assign(width, 0.0);
  constexpr double eps = std::numeric_limits<double>::epsilon();
  const double residue = 4.0 * static_cast<double>((n_j + n_i + 2) * (n_j + n_i + 2)) * eps * eps * scale;
  for (std::size_t r = 0; r < static_cast<std::size_t>(n_j); ++r) {
    for (std::size_t b = 0; b < static_cast<std::size_t>(n_i); ++b) {
      double s, e;
      two_sum(column_high[b], high[r * width + b], s, e);
      column_high[b] = s;
      column_low[b] += e + low[r * width + b];
      const double d = s + column_low[b];
      high[r * width + b] = std::fabs(d) <= residue ? 0.0 : d;
    }
  }
  // Per row, the sum over runs of equal D of mass * D^2; rows equal to the one before join
  // its run of rows.
  double total = 0.0;
  std::size_t run_begin = 0;  // first row of the current run of equal rows
  double run_sum = 0.0;       // the run's row sum
  auto row_sum = [&](std::size_t r) {
    const double* d = high.data() + r * width;
    double sum = 0.0;
    std::size_t b0 = 0;
    for (std::size_t b = 1; b <= static_cast<std::size_t>(n_i); ++b) {
      if (b < static_cast<std::size_t>(n_i) && d[b] == d[b0]) continue;
      if (d[b0] != 0.0) {
        sum += mass(ws, begin_i + static_cast<std::int32_t>(b0), begin_i + static_cast<std::int32_t>(b)) * d[b0] * d[b0];
      }
      b0 = b;
    }
    return sum;
  };
  auto close_run = [&](std::size_t end) {
    if (run_sum != 0.0) {
      total += mass(ws, begin_j + static_cast<std::int32_t>(run_begin), begin_j + static_cast<std::int32_t>(end)) * run_sum;
    }
  };
  run_sum = row_sum(0);
  for (std::size_t r = 1; r < static_cast<std::size_t>(n_j); ++r) {
    if (std::equal(high.begin() + static_cast<std::ptrdiff_t>(r * width),
                   high.begin() + static_cast<std::ptrdiff_t>(r * width + static_cast<std::size_t>(n_i)),
                   high.begin() + static_cast<std::ptrdiff_t>((r - 1) * width))) {
      continue;
    }
    close_run(r);
    run_begin = r;
    run_sum = row_sum(r);
  }
  close_run(static_cast<std::size_t>(n_j));
  return total;
}

}  // namespace walk
}  // namespace pgexact
