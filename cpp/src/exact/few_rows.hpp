// Internal to the drivers (not installed): calls of one or two rows on the shared walks.
//
// The leaf-pair kernel (pair_kernel.hpp) pays for enumerating the leaf pairs of every tree pair
// once per block of up to eight rows, so a call of one row costs about what a call of eight
// does; the shared walks (shared_walks.cpp) cost per row, and on boosting-sized trees one row's
// walk is cheaper than that enumeration. Measured on California housing (1 thread, σ = 0.3,
// bench/RESULTS.md "Few rows on the walks"), leaf-pair time over walk time:
//   curve of one row: XGBoost 100 × depth 6 3.7, LightGBM default 2.3, CatBoost(200) 1.4,
//     RandomForest(20, max_depth=10) 1.1, RandomForest(5) unbounded 0.7;
//   greedy ranking of one row: 2.5, 1.9, 5.7, 1.9 on the first four; of two rows 1.4, 1.1,
//     3.7, 1.1.
// With two threads (the leaf pairs share a row's tree pairs among threads, the walks only its
// prefixes or candidates) the one-row curve gained 1.5-1.7x on XGBoost, 1.2-1.3x on LightGBM and
// HistGradientBoosting, and lost on CatBoost (0.86-0.90x), the greedy ranking still gained
// 1.3-6.7x (bench/RESULTS.md "Few rows on the walks"). So one-row sets and curves of trees of
// at most kFewRowsLeaves leaves on average, unless every tree is complete (CatBoost's oblivious
// trees), and greedy rankings of at most two rows (four of CatBoost's complete trees, whose
// greedy steps on the leaf pairs enumerate the most: 2.3x / 1.85x faster on the walks at four
// rows with one / two threads), go to the walks. The choice depends on the call's rows and the
// model only: not on the thread count (a row gets the same bits with any number of threads),
// nor on the pair store (a one-row call whose model's lists are kept would be a little faster
// on them, 0.06-0.10 s against 0.13 s on XGBoost 100 x depth 6, but then its bits would
// depend on what ran before it). Both kernels certify every result within `tol` of the exact
// value, so the same row in a call of one row and in a larger call agrees within 2 tol;
// Pruning::Pairs keeps a call on the leaf pairs whatever its rows (pgexact.dask's blocks of a
// larger call, so that they give the bits of the call on all rows).
//
// Threads share the work of one row: its variants (prefixes, greedy candidates) are walked in
// chunks, one chunk per thread at a time. A variant's value does not depend on which variants
// share its walk (pg2_variants), so the chunking changes no bit.
#pragma once
// (few_rows_on_walks, the choice itself, is declared in kernels.hpp.)

#include <cstdint>
#include <vector>

#include "pgexact/exact/kernels.hpp"

namespace pgexact {

// Variants per walk when `count` variants are shared out over the threads of `n_threads`.
std::int64_t few_rows_chunk(const Arena& arena, std::int64_t count, int n_threads);

// pg2_variants over `count` variants in chunks of at most `chunk`, dealt round the chunks (a
// curve's prefixes differ in cost), the chunks in parallel; each chunk is `units` units of the
// control's progress (the caller plans them) and a checkpoint.
void walk_chunks(const Arena& arena, const Noise& noise, const Variant* variants, std::int64_t count,
                 std::int64_t chunk, int n_threads, double tol, double* out, RunControl* control,
                 std::int64_t units = 1);

// The drivers' few-row paths: as pg2_batch, pg2_curve_batch and greedy_rank_batch.
void pg2_few_rows(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                  const std::uint8_t* perturbed, bool mask_per_row, int n_threads, double* out,
                  RunControl* control, double tol);
void curve_few_rows(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                    const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps, int n_threads,
                    double* out, RunControl* control, double tol);
void greedy_few_rows(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                     int n_threads, std::int64_t* ranking_out, double* curve_out, RunControl* control,
                     double tol);

// Every prefix of every one of `rows` rows as a variant, [row][prefix] (kernels.cpp); masks
// [row][prefix][feature]. `ranking`: the first row's (or the only) ranking.
void curve_prefix_variants(const Arena& arena, const double* X, std::int64_t rows, const std::int64_t* ranking,
                           bool ranking_per_row, std::int64_t n_steps, std::vector<std::uint8_t>& masks,
                           std::vector<Variant>& variants);

// One greedy step of `rows` rows (ranking.cpp): the variants, each row's candidate sets S_i + {j}
// in feature order (`total` of them), and the choice, per row the best candidate (ties to the
// lower index), recorded in chosen, last (its value), ranking_out and curve_out at `step`.
void greedy_step_variants(const Arena& arena, const Noise& noise, const double* X, std::int64_t rows,
                          const std::uint8_t* chosen, std::int64_t total, std::vector<std::uint8_t>& masks,
                          std::vector<Variant>& variants);
void greedy_step_choose(const Arena& arena, const Noise& noise, std::int64_t rows, std::int64_t step,
                        std::int64_t per_row, const double* values, std::uint8_t* chosen, double* last,
                        std::int64_t* ranking_out, double* curve_out);

// Fills the rest of a row's ranking with the features not chosen, in index order, repeating the
// last curve value (ranking.cpp).
void rank_the_rest(const std::uint8_t* chosen, std::int64_t d, std::int64_t step, double current,
                   std::int64_t* ranking, double* curve);

}  // namespace pgexact
