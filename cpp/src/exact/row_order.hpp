// Internal to the leaf-pair kernel (not installed): which rows share a vector of lanes.
//
// A pass over a tree pair works kLanes rows at a time, one per SIMD lane, and skips a pair (or a
// first-tree leaf's whole run of pairs) only where no lane of the vector needs it: where every
// lane's row has pruned one of its leaves (its box lies far out in that row's noise) or leaves
// its path outside the lane's set. Rows close together under the noise keep mostly the same
// leaves, so a vector of near rows skips more of the pairs than a vector of rows in the order
// the caller gave them. Measured (pg2_curve, 1 thread, housing rows, sigma 0.3): eight copies of
// each row in a vector ran XGBRegressor()'s 64 rows 1.5x faster than the same rows spread over
// the vectors, and near neighbours gained 1.15-1.2x at 256 rows (bench/RESULTS.md, session 26).
//
// A row's values never depend on which lane or vector it is in (every lane does the same
// operations in the same order, and a skipped pair adds exact zeros), so the kernel may fill
// its vectors in any order and put the values back where the rows were: the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "pgexact/exact/noise.hpp"
#include "pgexact/exact/run_control.hpp"

namespace pgexact {
namespace pairs {

// An order of the n_rows rows of X (row-major, d columns) that puts near rows (distance in units
// of each feature's noise) in the same vectors of kLanes: order[k] is the row that goes k-th.
// Empty where the order would change nothing (one vector of rows or fewer) or where
// PGEXACT_ROW_ORDER=0 (tests and before/after benchmarks: the rows in the caller's order).
// It reads `control`'s stop between chunks (0.1 s per 100,000 rows: a call of millions of rows
// still stops within a second) and is then incomplete: the caller returns.
std::vector<std::int64_t> lane_order(const Noise& noise, const double* X, std::int64_t n_rows, std::int64_t d,
                                     const RunControl* control);

}  // namespace pairs
}  // namespace pgexact
