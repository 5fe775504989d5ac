// Internal to the drivers (not installed): calls of one or two rows on the walks.
//
// The leaf-pair kernel (pair_kernel.hpp) pays for enumerating the leaf pairs of every tree pair
// once per block of up to eight rows, so a call of one row costs about what a call of eight
// does; the walks cost per row. So:
// - a set or curve of one row takes one walk over the union of its sets (union_walk.hpp),
//   whatever the model: leaf-pair time over union-walk time for a one-row curve (housing,
//   1 thread, σ = 0.3, bench/RESULTS.md "One row on the union walk") XGBoost default 3.9,
//   XGBoost(max_depth=8) 3.0, LightGBM default 2.9, LightGBM(num_leaves=255) 2.1,
//   CatBoost(200) 1.8, RandomForest(5) unbounded 1.6, RandomForest(max_depth=10) 1.1,
//   RandomForest(20, max_depth=10) 1.1; 1.2-1.5x faster than the shared walks of the prefixes
//   (except, of complete trees of 32 or 64 leaves, CatBoost's depth 5 and its default 6, a
//   one-row curve and a set of every feature the trees split on, which the projected pairs sum
//   faster: few_rows.cpp). Its threads share the tree pairs, so a
//   second thread helps (1.5-2x on boosting models; the shared walks could only share a row's
//   prefixes, and lost on CatBoost's trees);
// - a greedy ranking of at most two rows takes a union walk per row and step (of complete
//   trees of at most 64 leaves, CatBoost's oblivious ones, whose tree pairs the leaf pairs'
//   side projects: one row of depth 4, none of depth 5 or CatBoost's default 6, few_rows.cpp),
//   its lanes the step's candidates S + {j}: leaf pairs over the shared walks that took them
//   before, one row, 2.5 (XGBoost), 1.9 (LightGBM), 5.7
//   (CatBoost(200)), 1.9 (RandomForest(20, max_depth=10)); two rows 1.4, 1.1, 3.7, 1.1; four
//   rows of CatBoost(200) 2.3 / 1.85 with one / two threads; the union walk is 1.2x faster
//   than the shared walks on one row of XGBoost 100 x depth 6, 1.0-1.2x on CatBoost(200) (1-4
//   rows), 1.0-1.1x on forests (0.9x at two rows of an unbounded forest), 2x at d = 100
//   (bench/RESULTS.md, session 11). Where the leaf pairs do not apply (over 64 features), the
//   fastest kernels take the union walks for curves and greedy rankings of any rows.
// Every union walk walks each distinct set once (distinct_sets.hpp).
// The choice depends on the call's rows and the model only: not on the thread count (a row
// gets the same bits with any number of threads), nor on the pair store (a one-row call whose
// model's lists are kept could read them, but then its bits would depend on what ran before
// it). Both kernels certify every result within `tol` of the exact value, so the same row in a
// call of one row and in a larger call agrees within 2 tol; Pruning::Pairs keeps a call on the
// leaf pairs whatever its rows (pgexact.dask's blocks of a larger call, so that they give the
// bits of the call on all rows).
//
// Pruning::Walk's calls of one or two rows share a row's variants (prefixes, greedy
// candidates) among the threads in chunks (walk_chunks): a variant's value does not depend on
// which variants share its walk (pg2_variants), so the chunking changes no bit. (Pruning::Pairs
// takes the union walks where the leaf pairs do not apply, so that pgexact.dask's blocks get
// the bits of the whole call.)
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

// The drivers' few-row paths: one row's set (as pg2_batch) and curve (as pg2_curve_batch) on
// the union walk; prefix curves of one or two rows on the shared walks (Pruning::Walk); greedy
// rankings of few rows (as greedy_rank_batch), on a union walk per row and step
// (on_union_walk: the fastest kernels) or on the shared walks (Pruning::Walk).
void pg2_one_row(const Arena& arena, const Noise& noise, const double* x, const std::uint8_t* perturbed,
                 int n_threads, double* out, RunControl* control, double tol);
// Each row's curve on its own union walk, the rows one after the other (every walk's tree pairs
// shared among the threads): one row's curve, and the fastest kernels' curves where the leaf
// pairs do not apply (over 64 features), any rows.
void curve_rows_on_union(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                         const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps, int n_threads,
                         double* out, RunControl* control, double tol);
void curve_few_rows(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                    const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps, int n_threads,
                    double* out, RunControl* control, double tol);
void greedy_few_rows(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                     int n_threads, std::int64_t* ranking_out, double* curve_out, RunControl* control,
                     double tol, bool on_union_walk);

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
