#include "pgexact/exact/ranking.hpp"

#include "pgexact/exact/pair_kernel.hpp"
#include "few_rows.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace pgexact {

void rank_the_rest(const std::uint8_t* chosen, std::int64_t d, std::int64_t step, double current,
                   std::int64_t* ranking, double* curve) {
  for (std::int64_t j = 0; j < d && step < d; ++j) {
    if (!chosen[j]) {
      ranking[step] = j;
      curve[step] = current;
      ++step;
    }
  }
}

void greedy_step_variants(const Arena& a, const Noise& noise, const double* X, std::int64_t rows,
                          const std::uint8_t* chosen, std::int64_t total, std::vector<std::uint8_t>& masks,
                          std::vector<Variant>& variants) {
  const std::int64_t d = a.n_features;
  const auto du = static_cast<std::size_t>(d);
  masks.assign(static_cast<std::size_t>(total) * du, 0);
  variants.resize(static_cast<std::size_t>(total));
  for (std::int64_t i = 0, v = 0; i < rows; ++i) {
    const std::uint8_t* ch = chosen + static_cast<std::size_t>(i) * du;
    for (std::int64_t j = 0; j < d; ++j) {
      if (ch[j] || !noise_moves(a, noise, j)) continue;
      std::uint8_t* mv = masks.data() + static_cast<std::size_t>(v) * du;
      std::copy(ch, ch + d, mv);
      mv[j] = 1;
      variants[static_cast<std::size_t>(v)] = Variant{X + i * d, mv};
      ++v;
    }
  }
}

void greedy_step_choose(const Arena& a, const Noise& noise, std::int64_t rows, std::int64_t step, std::int64_t per_row,
                        const double* values, std::uint8_t* chosen, double* last, std::int64_t* ranking_out,
                        double* curve_out) {
  const std::int64_t d = a.n_features;
  for (std::int64_t i = 0; i < rows; ++i) {
    std::uint8_t* ch = chosen + static_cast<std::size_t>(i) * static_cast<std::size_t>(d);
    std::int64_t best = -1;
    double best_value = -1.0;
    for (std::int64_t j = 0, c = 0; j < d; ++j) {
      if (ch[j] || !noise_moves(a, noise, j)) continue;
      // Strictly greater: ties go to the lower index.
      const double value = values[i * per_row + c];
      if (value > best_value) {
        best_value = value;
        best = j;
      }
      ++c;
    }
    ch[best] = 1;
    last[i] = best_value;
    ranking_out[i * d + step] = best;
    curve_out[i * d + step] = best_value;
  }
}

void greedy_rank_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                       int n_threads, Pruning pruning, std::int64_t* ranking_out, double* curve_out,
                       RunControl* control, double tol) {
  noise.validate(a.n_features);
  if (a.n_outputs != 1) throw std::invalid_argument("output: kernels need a single-output model");
  check_values(a);
  const std::int64_t d = a.n_features;
  const auto du = static_cast<std::size_t>(d);
  if (fastest(pruning) && pairs_apply(a)) {
    if (pruning == Pruning::Full && few_rows_on_walks(a, noise, n_rows, FewRowsCall::Greedy)) {
      greedy_few_rows(a, noise, X, n_rows, n_threads, ranking_out, curve_out, control, tol, true);
      return;
    }
    // A call of one row as a whole (Kernel.pairs; a block of a larger call is Kernel.leaf_pairs,
    // pgexact._exact._kernels) compares its sets in the lanes.
    greedy_rank_pairs(a, noise, X, n_rows, n_threads, ranking_out, curve_out, control, tol, pruning == Pruning::Full);
    return;
  }
  if (noise.has_categorical() && pruning != Pruning::None) throw std::invalid_argument(categorical_unsupported());
  std::int64_t n_candidates = 0;
  for (std::int64_t j = 0; j < d; ++j) n_candidates += noise_moves(a, noise, j) ? 1 : 0;
  if (shares_walks(a, pruning) && n_candidates > 0) {
    if (fastest(pruning) || n_rows <= 2) {
      // The fastest kernels, where the leaf pairs do not apply (over 64 features), walk each
      // row's candidates on its union walk per step (few_rows.hpp), its threads sharing the tree
      // pairs, whatever the rows (d = 100: 3.4 s a row against 7.6 s in the blocks below,
      // XGBoost 100 x depth 6, 4 rows, 1 thread). Walk shares the steps' candidates of one or
      // two rows out on the shared walks (too few rows to give every thread a block), with the
      // bits of the blocks (a candidate's value does not depend on which share its walk).
      greedy_few_rows(a, noise, X, n_rows, n_threads, ranking_out, curve_out, control, tol, fastest(pruning));
      return;
    }
    // Blocks of rows ranked in lockstep: at each step every candidate set S_i + {j} of every
    // row of the block is a variant, walked in chunks of at most max_variants(a). The sets of
    // one row share the states of S_i; rows share what their walks have in common.
    const std::int64_t max_v = max_variants(a);
    const std::int64_t block = rows_per_block(n_rows, n_threads, std::max<std::int64_t>(1, max_v / n_candidates));
    for_each_row(a, (n_rows + block - 1) / block, n_threads, [&](Workspace& ws, std::int64_t b) {
      const std::int64_t r0 = b * block;
      const std::int64_t rows = std::min(block, n_rows - r0);
      auto& chosen = ws.row_flags;  // [row of block][feature]
      auto& masks = ws.variant_masks;
      auto& values = ws.row_values;
      auto& variants = ws.row_variants;
      auto& last = ws.row_last;  // per row of the block: PG2 of its chosen set
      chosen.assign(static_cast<std::size_t>(rows) * du, 0);
      last.assign(static_cast<std::size_t>(rows), 0.0);
      std::int64_t step = 0;
      for (; step < n_candidates; ++step) {
        const std::int64_t per_row = n_candidates - step;
        const std::int64_t total = rows * per_row;
        greedy_step_variants(a, noise, X + r0 * d, rows, chosen.data(), total, masks, variants);
        values.assign(static_cast<std::size_t>(total), 0.0);
        for (std::int64_t v0 = 0; v0 < total; v0 += max_v) {
          const std::int64_t count = std::min(max_v, total - v0);
          pg2_variants(a, noise, variants.data() + v0, static_cast<std::int32_t>(count), ws, values.data() + v0,
                       std::min(tol, kDefaultTolerance), control);
        }
        greedy_step_choose(a, noise, rows, step, per_row, values.data(), chosen.data(), last.data(),
                           ranking_out + r0 * d, curve_out + r0 * d);
      }
      for (std::int64_t i = 0; i < rows; ++i) {
        rank_the_rest(chosen.data() + static_cast<std::size_t>(i) * du, d, step, last[static_cast<std::size_t>(i)],
                      ranking_out + (r0 + i) * d, curve_out + (r0 + i) * d);
      }
    }, control);
    return;
  }
  for_each_row(a, n_rows, n_threads, [&](Workspace& ws, std::int64_t i) {
    ws.begin_row(X + i * d);
    auto& chosen = ws.row_flags;
    auto& mask = ws.row_mask;
    chosen.assign(du, 0);
    mask.assign(du, 0);
    double current = 0.0;
    std::int64_t step = 0;
    for (; step < d; ++step) {
      std::int64_t best = -1;
      double best_value = -1.0;
      for (std::int64_t j = 0; j < d; ++j) {
        if (chosen[j] || !noise_moves(a, noise, j)) continue;
        mask[j] = 1;
        const double v = pg2_row(a, noise, mask.data(), ws, pruning, std::min(tol, kDefaultTolerance));
        mask[j] = 0;
        // Strictly greater: ties go to the lower index.
        if (v > best_value) {
          best_value = v;
          best = j;
        }
      }
      if (best < 0) break;  // only features the noise never moves are left
      chosen[best] = 1;
      mask[best] = 1;
      current = best_value;
      ranking_out[i * d + step] = best;
      curve_out[i * d + step] = current;
    }
    rank_the_rest(chosen.data(), d, step, current, ranking_out + i * d, curve_out + i * d);
  }, control);
}

}  // namespace pgexact
