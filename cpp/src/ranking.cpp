#include "pgexact/ranking.hpp"

#include <algorithm>
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
    const bool shared = shares_walks(a, pruning);
    const std::int64_t chunk = shared ? max_variants(a) : 1;
    auto& candidates = ws.row_candidates;
    auto& values = ws.row_values;
    for (; step < d; ++step) {
      // PG2(S + {j}) for every candidate j: in shared walks of up to `chunk` candidates, which
      // visit the states the candidates have in common (those of S) once.
      candidates.clear();
      for (std::int64_t j = 0; j < d; ++j) {
        if (!chosen[j] && !a.categorical_feature[j]) candidates.push_back(j);
      }
      values.assign(candidates.size(), 0.0);
      const auto n_cand = static_cast<std::int64_t>(candidates.size());
      for (std::int64_t c0 = 0; c0 < n_cand; c0 += chunk) {
        const std::int64_t count = std::min(chunk, n_cand - c0);
        if (!shared) {
          mask[candidates[c0]] = 1;
          values[c0] = pg2_row(a, noise, mask.data(), ws, pruning);
          mask[candidates[c0]] = 0;
          continue;
        }
        auto& masks = ws.variant_masks;
        masks.resize(static_cast<std::size_t>(count * d));
        for (std::int64_t v = 0; v < count; ++v) {
          std::copy(mask.begin(), mask.end(), masks.begin() + v * d);
          masks[v * d + candidates[c0 + v]] = 1;
        }
        pg2_variants_row(a, noise, masks.data(), static_cast<std::int32_t>(count), false, ws, values.data() + c0);
      }
      std::int64_t best = -1;
      double best_value = -1.0;
      for (std::int64_t c = 0; c < n_cand; ++c) {
        // Strictly greater: ties go to the lower index.
        if (values[c] > best_value) {
          best_value = values[c];
          best = candidates[c];
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
