#include "pgexact/ranking.hpp"

#include <stdexcept>
#include <vector>

namespace pgexact {

void greedy_rank_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                       int n_threads, Pruning pruning, std::int64_t* ranking_out, double* curve_out) {
  noise.validate(a.n_features);
  if (a.n_outputs != 1) throw std::invalid_argument("output: kernels need a single-output model");
  const std::int64_t d = a.n_features;
  for_each_row(a, n_rows, n_threads, [&](Workspace& ws, std::int64_t i) {
    ws.begin_row(X + i * d);
    auto& chosen = ws.row_flags;
    auto& mask = ws.row_mask;
    chosen.assign(static_cast<std::size_t>(d), 0);
    mask.assign(static_cast<std::size_t>(d), 0);
    double current = 0.0;
    std::int64_t step = 0;
    for (; step < d; ++step) {
      std::int64_t best = -1;
      double best_value = -1.0;
      for (std::int64_t j = 0; j < d; ++j) {
        if (chosen[j] || a.categorical_feature[j]) continue;
        mask[j] = 1;
        const double v = pg2_row(a, noise, mask.data(), ws, pruning);
        mask[j] = 0;
        // Strictly greater: ties go to the lower index.
        if (v > best_value) {
          best_value = v;
          best = j;
        }
      }
      if (best < 0) break;  // only categorical features are left
      chosen[best] = 1;
      mask[best] = 1;
      current = best_value;
      ranking_out[i * d + step] = best;
      curve_out[i * d + step] = current;
    }
    for (std::int64_t j = 0; j < d && step < d; ++j) {
      if (!chosen[j]) {
        ranking_out[i * d + step] = j;
        curve_out[i * d + step] = current;
        ++step;
      }
    }
  });
}

}  // namespace pgexact
