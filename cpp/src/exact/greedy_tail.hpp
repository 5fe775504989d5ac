// Internal to the drivers (not installed): the last steps of a greedy ranking in one walk.
//
// Step k of a greedy ranking walks the candidates S + {j}; its last steps cost the most, for
// their sets perturb nearly every feature (XGBoost 100 x depth 6, d = 8, one row: steps 4-7
// took 0.28 of 0.37 s, each about one walk of the whole set). With r candidates left, every
// set the remaining steps can ask for is S + A, A a nonempty subset of the r: 2^r - 1 sets,
// which perturb nearly the same features, so they share nearly every state of one union walk
// (union_walk.hpp). One walk of them all costs about two walks of the whole set, where the r
// steps cost r walks; the steps then read their candidates' values from it. Measured (one
// row, 1 thread, rank over exact PGI^2 of a ranking, r = 0 / 3 / 4 / 5): XGBoost 100 x depth 6
// 3.06 / 2.24 / 1.98 / 1.89, CatBoost(200) 2.78 / 2.07 / 1.88 / 1.99, LightGBM 2.97 / 2.06 /
// 1.83 / 1.85, RandomForest(5) unbounded 2.01 / 1.49 / 1.39 / 1.48, RandomForest(20,
// max_depth=10) 1.80 / 1.59 / 1.69 / 1.88; r = 6 was slower than 4 on every one.
//
// A tail value is the union walk's for that set within tol, as a step's is; its bits depend on
// the sets of the walk (all of them fixed by the row and S), not on the thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "pgexact/exact/kernels.hpp"

namespace pgexact {

// Candidates left when a greedy ranking on the union walks takes its tail walk: 4, or fewer
// where 2^r - 1 lanes would not fit one walk's tables (union_walk_lanes).
std::int64_t greedy_tail_candidates(const Arena& arena);

class GreedyTail {
 public:
  // Walks, at greedy step `step`, per row i of X, the sets chosen_i + A for every nonempty
  // subset A of the row's remaining candidates (the features not chosen that the noise moves: `left` of them, the
  // same for every row), `weight` units of the control's progress per union-walk unit. The
  // caller planned weight * planned_units(arena, left, step) per row; a row whose walk is shorter
  // (fewer distinct sets) advances the difference.
  GreedyTail(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows, const std::uint8_t* chosen,
             std::int64_t step, std::int64_t left, int n_threads, double tol, RunControl* control, std::int64_t weight);

  // Union-walk units of one row's tail walk at most (its distinct sets may be fewer), taken at
  // greedy step `step` (at step 0 the single candidates are swept sets).
  static std::int64_t planned_units(const Arena& arena, std::int64_t left, std::int64_t step);

  // A later step's values: per row, its candidates S_i + {j} in feature order (as
  // greedy_step_variants lays them out), `per_row` of them.
  void step_values(const std::uint8_t* chosen, std::int64_t per_row, double* values) const;

 private:
  std::int64_t d_;
  std::int64_t n_rows_;
  std::int64_t left_;
  std::vector<std::int64_t> remaining_;  // [row][c]: the row's c-th remaining candidate
  std::vector<double> value_;            // [row][A]: PG^2 of S_i + A (A = 0 unused)
};

}  // namespace pgexact
