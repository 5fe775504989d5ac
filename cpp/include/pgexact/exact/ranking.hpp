// Greedy PG^2 ranking: feature 1 maximises PG2(x, {i}); feature l+1 maximises PG2(x, S_l + {i}).
#pragma once

#include <cstdint>

#include "pgexact/model/arena.hpp"
#include "pgexact/exact/kernels.hpp"
#include "pgexact/exact/noise.hpp"

namespace pgexact {

// For each row: ranking_out[i, k] is the feature chosen at step k (ties to the lower index) and
// curve_out[i, k] = PG2(x_i, S_{k+1}). Features the noise never moves (fixed, or additive noise
// on a feature split by category) are ranked last, in index order (their curve entries repeat
// the previous value). Categorical noise: the leaf-pair kernel or, with Pruning::None, the
// reference. `tol`: the relative error the curve may have, certified (kernels.hpp's pg2_batch);
// the ranking is the unpruned one whatever it is.
void greedy_rank_batch(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                       int n_threads, Pruning pruning, std::int64_t* ranking_out, double* curve_out,
                       RunControl* control = nullptr, double tol = kDefaultTolerance);

}  // namespace pgexact
