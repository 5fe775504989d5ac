#include "pgexact/exact/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "pgexact/exact/pair_kernel.hpp"
#include "pgexact/exact/reference_kernel.hpp"
#include "few_rows.hpp"
#include "row_subsets.hpp"
#include "walk_common.hpp"

// The drivers of kernels.hpp: checks, threads and blocks of rows, and the choice of kernel per
// call (the leaf-pair kernel where it applies, else the shared walks, else one walk per set).
// Each algorithm lives in its own file: pair_kernel.cpp, shared_walks.cpp, pair_walk_deep.cpp,
// reference_walk.cpp, single_feature_sweep.cpp, tree_moments.cpp, first_moments.cpp.
namespace pgexact {

using walk::kMaxRecursionDepth;
using walk::pair_covariance_deep;
using walk::pg2_single_feature;
using walk::pg2_two_features;
using walk::two_feature_grid_fits;
using walk::set_perturbed;
using walk::tree_covariances_reference;
using walk::tree_moments;
using walk::walk_variants;

double pg2_row(const Arena& a, const Noise& noise, const std::uint8_t* perturbed, Workspace& ws,
               Pruning pruning, double tol) {
  if (noise.has_categorical()) {
    // Categorical noise: the leaf-pair kernel (pg2_pairs) or this unpruned reference.
    if (pruning != Pruning::None) throw std::invalid_argument(categorical_unsupported());
    return pg2_reference_row(a, LeafPaths(a), noise, ws.row, perturbed);  // slow by design
  }
  const std::int32_t d = a.n_features;
  std::int32_t last = -1;
  const std::int32_t count = set_perturbed(a, noise, perturbed, ws, &last);
  if (count == 0) return 0.0;
  if (count == 1 && pruning != Pruning::None) return pg2_single_feature(a, ws, last);
  if (count == 2 && pruning != Pruning::None) {
    std::int32_t first = 0;
    while (ws.perturbed[first] == 0) ++first;
    if (two_feature_grid_fits(a, first, last)) return pg2_two_features(a, ws, first, last);
  }
  if (pruning != Pruning::None && a.max_depth <= kMaxRecursionDepth) {
    // The pair walk for this one set (the shared walk with a single variant).
    const Variant one{ws.row, perturbed};
    const std::int32_t self = 0;
    double out = 0.0;
    walk_variants(a, noise, &one, &self, 1, tol, ws, &out);
    return out;
  }
  ws.begin_set();

  double bias = 0.0;
  double var = 0.0;
  ws.active.clear();
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    double v = 0.0;
    double b = 0.0;
    if (tree_moments(a, ws, t, &v, &b)) {
      ws.active.push_back(static_cast<std::int32_t>(t));
      var += v;
      bias += b;
    }
  }

  double cov = 0.0;
  if (pruning == Pruning::None) {
    for (std::size_t i = 0; i < ws.active.size(); ++i) {
      ws.partners.assign(ws.active.begin() + static_cast<std::ptrdiff_t>(i) + 1, ws.active.end());
      if (!ws.partners.empty()) {
        cov += tree_covariances_reference(a, ws, ws.active[i], ws.partners.data(), ws.partners.size());
      }
    }
  } else {
    // Trees deeper than the call stack allows: the explicit-stack pair recursion, no skipping.
    const bool exact_bits = d <= 64;
    for (std::size_t i = 0; i < ws.active.size(); ++i) {
      for (std::size_t k = i + 1; k < ws.active.size(); ++k) {
        const std::int32_t t = ws.active[i];
        const std::int32_t s = ws.active[k];
        // Trees with no reachable perturbed feature in common are independent.
        if ((ws.tree_mask[t] & ws.tree_mask[s]) != 0) cov += pair_covariance_deep(a, ws, t, s, exact_bits);
      }
    }
  }
  const double total_var = var + 2.0 * cov;
  return bias * bias + (total_var > 0.0 ? total_var : 0.0);
}

std::string additive_on_categories(std::int64_t j) {
  return "noise: feature " + std::to_string(j) +
         " has categorical splits and cannot be perturbed by additive noise; give it categorical noise "
         "(or fix it)";
}

std::string categorical_unsupported() {
  return "noise: categorical perturbation is computed by the leaf-pair kernel (one output, at most 64 "
         "features, depth at most 256) or the unpruned reference; fix the categorical features (None) "
         "or use Monte Carlo";
}

void check_values(const Arena& a) {
  double largest = 0.0;
  for (std::int64_t n = 0; n < a.n_nodes(); ++n) {
    if (a.is_leaf(static_cast<std::int32_t>(n))) largest = std::max(largest, std::fabs(a.value[n]));
  }
  if (!(largest <= kMaxLeafValue)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", largest);
    throw std::invalid_argument(std::string("model: a leaf value of ") + text +
                                " is beyond 1e100; PG2 sums products of leaf-value differences, which overflow "
                                "double precision there (rescale the model's output)");
  }
}

void check_perturbable(const Arena& a, const Noise& noise, const std::uint8_t* perturbed, std::int64_t n_masks) {
  if (a.n_outputs != 1) throw std::invalid_argument("output: kernels need a single-output model");
  check_values(a);
  const std::int32_t d = a.n_features;
  for (std::int32_t j = 0; j < d; ++j) {
    if (!a.categorical_feature[j] || !noise.additive(j)) continue;
    for (std::int64_t r = 0; r < n_masks; ++r) {
      if (perturbed[r * d + j]) throw std::invalid_argument(additive_on_categories(j));
    }
  }
}

int resolve_threads(int n_threads, std::int64_t n_rows) {
#ifdef PGEXACT_OPENMP
  if (n_threads <= 0) n_threads = omp_get_max_threads();
  const std::int64_t cores = std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  const std::int64_t cap = std::max<std::int64_t>(1, std::min<std::int64_t>(n_rows, 4 * cores));
  return static_cast<int>(std::min<std::int64_t>(n_threads, cap));
#else
  (void)n_threads;
  (void)n_rows;
  return 1;
#endif
}

std::int64_t rows_per_block(std::int64_t n_rows, int n_threads, std::int64_t cap) {
  const int threads = resolve_threads(n_threads, n_rows);
  const std::int64_t parts = threads > 1 ? 4 * static_cast<std::int64_t>(threads) : 1;
  return std::max<std::int64_t>(1, std::min<std::int64_t>(cap, (n_rows + parts - 1) / parts));
}

void pg2_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
               const std::uint8_t* perturbed, bool mask_per_row, int n_threads, Pruning pruning,
               double* out, RunControl* control, double tol) {
  noise.validate(a.n_features);
  check_perturbable(a, noise, perturbed, mask_per_row ? n_rows : 1);
  if (pruning == Pruning::Full && few_rows_on_walks(a, noise, n_rows, FewRowsCall::Set) &&
      !one_row_set_on_pairs(a, noise, perturbed)) {
    if (!noise.has_categorical() && walk::swept_or_gridded(a, noise, perturbed, X)) {
      // One or two features: the sweep or the grid, as in a call of more rows (one row of
      // XGBoost(500, depth 8), two features: 119 ms on the union walk, 3 ms on the grid).
      Workspace ws(a);
      ws.begin_row(X);
      out[0] = pg2_row(a, noise, perturbed, ws, Pruning::Full, tol);
      return;
    }
    // One row, any model: one walk, its tree pairs shared among the threads (few_rows.hpp).
    pg2_one_row(a, noise, X, perturbed, n_threads, out, control, tol);
    return;
  }
  const std::int64_t d = a.n_features;
  if (fastest(pruning) && pairs_apply(a)) {
    // A row with one effectively perturbed feature (or none) is a sweep over that feature's
    // boundaries, O(leaves) instead of the pairs its feature reaches, and one with two a sum
    // over their grid's cells where it is small enough; the others go to the leaf-pair kernel.
    // The choice is the row's own (NaN entries are never perturbed), so a row's value still
    // does not depend on the other rows of the call.
    std::vector<std::int64_t> swept, paired;
    for (std::int64_t i = 0; i < n_rows; ++i) {
      const double* x = X + i * d;
      const std::uint8_t* mask = perturbed + (mask_per_row ? i * d : 0);
      (!noise.has_categorical() && walk::swept_or_gridded(a, noise, mask, x) ? swept : paired).push_back(i);
    }
    if (swept.empty()) {
      pg2_pairs(a, noise, X, n_rows, perturbed, mask_per_row, n_threads, out, control, tol);
      return;
    }
    for_each_row(a, static_cast<std::int64_t>(swept.size()), n_threads, [&](Workspace& ws, std::int64_t k) {
      const std::int64_t i = swept[static_cast<std::size_t>(k)];
      ws.begin_row(X + i * d);
      out[i] = pg2_row(a, noise, perturbed + (mask_per_row ? i * d : 0), ws, Pruning::Full, tol);
    }, control);
    if (paired.empty() || stopped(control)) return;
    const std::vector<double> rows = gather_rows(X, d, paired);
    const std::vector<std::uint8_t> masks = gather_rows(perturbed, d, paired, mask_per_row);
    std::vector<double> values(paired.size());
    const auto n_paired = static_cast<std::int64_t>(paired.size());
    pg2_pairs(a, noise, rows.data(), n_paired, masks.data(), true, n_threads, values.data(), control, tol);
    scatter_rows(values, 1, paired, out);
    return;
  }
  if (noise.has_categorical() && pruning != Pruning::None) throw std::invalid_argument(categorical_unsupported());
  if (shares_walks(a, pruning)) {
    // Blocks of rows, one shared walk each.
    const std::int64_t block = rows_per_block(n_rows, n_threads, max_variants(a));
    for_each_row(a, (n_rows + block - 1) / block, n_threads, [&](Workspace& ws, std::int64_t b) {
      const std::int64_t r0 = b * block;
      const std::int64_t count = std::min(block, n_rows - r0);
      Variant variants[kMaxVariants];
      for (std::int64_t i = 0; i < count; ++i) {
        variants[i] = Variant{X + (r0 + i) * d, perturbed + (mask_per_row ? (r0 + i) * d : 0)};
      }
      pg2_variants(a, noise, variants, static_cast<std::int32_t>(count), ws, out + r0, tol, control);
    }, control);
    return;
  }
  for_each_row(a, n_rows, n_threads, [&](Workspace& ws, std::int64_t i) {
    ws.begin_row(X + i * d);
    out[i] = pg2_row(a, noise, perturbed + (mask_per_row ? i * d : 0), ws, pruning, tol);
  }, control);
}

void curve_prefix_variants(const Arena& a, const double* X, std::int64_t rows, const std::int64_t* ranking,
                           bool ranking_per_row, std::int64_t n_steps, std::vector<std::uint8_t>& masks,
                           std::vector<Variant>& variants) {
  const std::int64_t d = a.n_features;
  const auto du = static_cast<std::size_t>(d);
  const std::int64_t total = rows * n_steps;
  masks.assign(static_cast<std::size_t>(total) * du, 0);
  variants.resize(static_cast<std::size_t>(total));
  for (std::int64_t v = 0; v < total; ++v) {
    const std::int64_t i = v / n_steps;
    const std::int64_t* rk = ranking + (ranking_per_row ? i * d : 0);
    std::uint8_t* mv = masks.data() + static_cast<std::size_t>(v) * du;
    for (std::int64_t q = 0; q <= v % n_steps; ++q) mv[rk[q]] = 1;
    variants[static_cast<std::size_t>(v)] = Variant{X + i * d, mv};
  }
}

void pg2_curve_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                     const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps,
                     int n_threads, Pruning pruning, double* out, RunControl* control, double tol) {
  noise.validate(a.n_features);
  if (a.n_outputs != 1) throw std::invalid_argument("output: kernels need a single-output model");
  check_values(a);
  const std::int64_t d = a.n_features;
  if (n_steps < 0 || n_steps > d) throw std::invalid_argument("ranking: number of steps out of range");
  // Validate every ranking before any thread starts: a permutation of 0..d-1, and no feature
  // with categorical splits among the first n_steps.
  const std::int64_t n_rankings = ranking_per_row ? n_rows : 1;
  {
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(d));
    for (std::int64_t r = 0; r < n_rankings; ++r) {
      std::fill(seen.begin(), seen.end(), 0);
      for (std::int64_t k = 0; k < d; ++k) {
        const std::int64_t j = ranking[r * d + k];
        if (j < 0 || j >= d || seen[j]) {
          throw std::invalid_argument("ranking: row " + std::to_string(r) + " is not a permutation of 0.." +
                                      std::to_string(d - 1));
        }
        seen[j] = 1;
        if (k < n_steps && a.categorical_feature[j] && noise.additive(j)) {
          throw std::invalid_argument(additive_on_categories(j));
        }
      }
    }
  }
  if (pruning == Pruning::Full && few_rows_on_walks(a, noise, n_rows, FewRowsCall::Curve)) {
    // One row, any model: one walk over the union of its prefixes (few_rows.hpp).
    curve_rows_on_union(a, noise, X, 1, ranking, false, n_steps, n_threads, out, control, tol);
    return;
  }
  if (fastest(pruning) && pairs_apply(a)) {
    pg2_curve_pairs(a, noise, X, n_rows, ranking, ranking_per_row, n_steps, n_threads, out, control, tol);
    return;
  }
  if (noise.has_categorical() && pruning != Pruning::None) throw std::invalid_argument(categorical_unsupported());
  if (shares_walks(a, pruning) && n_steps > 0) {
    if (fastest(pruning)) {
      // The leaf pairs do not apply (over 64 features): each row on its own union walk, as one
      // row's call (and pgexact.dask's blocks, Pairs) takes it. At d = 100 a row costs 0.12 s
      // there against 0.29 s in the blocks below (XGBoost 100 x depth 6, 1 thread, 4 rows).
      curve_rows_on_union(a, noise, X, n_rows, ranking, ranking_per_row, n_steps, n_threads, out, control, tol);
      return;
    }
    if (n_rows <= 2) {
      // Too few rows to give every thread a block: the prefixes are shared out instead (each
      // prefix's value does not depend on which share its walk, so the bits are the same).
      curve_few_rows(a, noise, X, n_rows, ranking, ranking_per_row, n_steps, n_threads, out, control, tol);
      return;
    }
    // Blocks of rows; every prefix of every row of a block is a variant, walked in chunks of
    // at most max_variants(a).
    const std::int64_t max_v = max_variants(a);
    const std::int64_t block = rows_per_block(n_rows, n_threads, std::max<std::int64_t>(1, max_v / n_steps));
    for_each_row(a, (n_rows + block - 1) / block, n_threads, [&](Workspace& ws, std::int64_t b) {
      const std::int64_t r0 = b * block;
      const std::int64_t rows = std::min(block, n_rows - r0);
      const std::int64_t total = rows * n_steps;
      curve_prefix_variants(a, X + r0 * d, rows, ranking + (ranking_per_row ? r0 * d : 0), ranking_per_row, n_steps,
                            ws.variant_masks, ws.row_variants);
      for (std::int64_t v0 = 0; v0 < total; v0 += max_v) {
        const std::int64_t count = std::min(max_v, total - v0);
        pg2_variants(a, noise, ws.row_variants.data() + v0, static_cast<std::int32_t>(count), ws,
                     out + r0 * n_steps + v0, tol, control);
      }
    }, control);
    return;
  }
  for_each_row(a, n_rows, n_threads, [&](Workspace& ws, std::int64_t i) {
    ws.begin_row(X + i * d);
    const std::int64_t* rk = ranking + (ranking_per_row ? i * d : 0);
    auto& mask = ws.row_mask;
    mask.assign(static_cast<std::size_t>(d), 0);
    for (std::int64_t k = 0; k < n_steps; ++k) {
      mask[rk[k]] = 1;
      out[i * n_steps + k] = pg2_row(a, noise, mask.data(), ws, pruning, tol);
    }
  }, control);
}

}  // namespace pgexact
