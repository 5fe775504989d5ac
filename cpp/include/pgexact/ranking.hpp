// Greedy PG^2 ranking: feature 1 maximises PG2(x, {i}); feature l+1 maximises PG2(x, S_l + {i}).
#pragma once

#include <cstdint>

#include "pgexact/arena.hpp"
#include "pgexact/kernels.hpp"
#include "pgexact/noise.hpp"

namespace pgexact {

// For each row: ranking_out[i, k] is the feature chosen at step k (ties to the lower index) and
// curve_out[i, k] = PG2(x_i, S_{k+1}). Features with categorical splits are ranked last, in
// index order, and never perturbed (their curve entries repeat the previous value).
void greedy_rank_batch(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                       int n_threads, Pruning pruning, std::int64_t* ranking_out, double* curve_out,
                       RunControl* control = nullptr);

}  // namespace pgexact
