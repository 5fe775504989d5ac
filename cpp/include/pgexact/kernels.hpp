// Exact PG^2 kernels.
//
// For one row x and a set S of perturbed features, with f = b + sum_t f_t over trees:
//   PG2(x, S) = (E f - f(x))^2 + sum_t Var f_t + 2 sum_{t<s} Cov(f_t, f_s)
// Every term is computed centred (leaf value minus the tree's mean, or minus its value at x),
// so there is no `E[f^2] - (E f)^2` cancellation, and the variance part is clamped at zero
// against the last rounding error: the result is never negative.
//
// E[f_t] and Var f_t come from one walk of the nodes reachable under S (an unperturbed feature
// fixes the branch). Cov(f_t, f_s) = sum_u (y_u - mu_t) E[(f_s - mu_s) 1(x' in box_u)], and the
// inner expectation walks tree s inside box_u. Three exact prunings make that cheap:
//   * trees whose reachable perturbed features are disjoint are independent: Cov = 0;
//   * where box_u does not cut a subtree's region on any feature the subtree splits on, the
//     subtree's contribution is its precomputed centred mass scaled by P(box_u and region);
//   * an interval that lies on one side of a split does not branch.
// Pruning::None turns the first two off: that is the paper's pair walk, kept as the reference.
#pragma once

#include <cstdint>
#include <vector>

#include "pgexact/arena.hpp"
#include "pgexact/noise.hpp"

namespace pgexact {

enum class Pruning : std::uint8_t { Full = 0, None = 1 };

// Per-thread scratch space, sized for one arena and reused across rows: no allocation happens
// in the hot loops once the first row has grown the stacks.
class Workspace {
 public:
  explicit Workspace(const Arena& arena);

  struct Bound {
    double b;      // boundary on the real line
    double lower;  // P(x' < b)
    double upper;  // P(x' > b)
  };
  struct Interval {
    Bound lo;
    Bound hi;
  };
  struct Frame {
    Interval c;         // new box interval on `feature` (when feature >= 0)
    double r_lo, r_hi;  // new region interval on `feature` (inner walk only)
    double p;
    std::uint64_t binding;
    std::int32_t node;
    std::int32_t depth;
    std::int32_t feature;
  };
  struct Undo {
    Interval c;
    double r_lo, r_hi;
    std::int32_t depth;
    std::int32_t feature;
  };

  struct SweepItem {
    std::int32_t node;
    std::int32_t lo;  // interval on the swept feature, as global boundary indices
    std::int32_t hi;
  };

  // Per node (valid when reach[n] == set_epoch).
  std::vector<double> p;        // P(x' in region of n)
  std::vector<double> centred;  // sum over leaves v below n of (y_v - mu_t) * P(v)
  std::vector<std::uint32_t> reach;
  // CDFs at each distinct boundary (Arena::bounds), cached for the current row (valid when
  // cdf_stamp[k] == row_epoch).
  std::vector<Bound> cdf;
  std::vector<std::uint32_t> cdf_stamp;
  std::vector<double> jump;  // per boundary: the jump of f there (single-feature sweep)
  // Per tree.
  std::vector<double> mu;
  std::vector<std::uint64_t> tree_mask;
  std::vector<std::int32_t> active;
  // Per feature.
  std::vector<Interval> box;
  std::vector<double> region_lo, region_hi;
  std::vector<std::uint8_t> perturbed;
  // Stacks.
  std::vector<Frame> frames, inner_frames;
  std::vector<Undo> undo, inner_undo;
  std::vector<std::int32_t> reached;
  std::vector<SweepItem> sweep;
  std::uint32_t row_epoch = 0;
  std::uint32_t set_epoch = 0;
  const double* row = nullptr;

  void begin_row(const double* x);
  void begin_set();
};

// PG2(x, S) for one row; perturbed[j] != 0 marks j in S. NaN entries of x are never perturbed.
double pg2_row(const Arena& arena, const Noise& noise, const std::uint8_t* perturbed, Workspace& ws,
               Pruning pruning);

// Checks that no perturbed feature has a categorical split and that the arena has one output.
// Throws std::invalid_argument naming the feature.
void check_perturbable(const Arena& arena, const std::uint8_t* perturbed, std::int64_t n_masks);

// PG2 for n rows; `perturbed` is one mask of n_features entries, or one per row.
void pg2_batch(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
               const std::uint8_t* perturbed, bool mask_per_row, int n_threads, Pruning pruning,
               double* out);

// PG2 of every prefix of a ranking: out[i, k] = PG2(x_i, first k+1 entries of the ranking),
// for k < n_steps. `ranking` is one permutation of n_features entries, or one per row.
void pg2_curve_batch(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                     const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps,
                     int n_threads, Pruning pruning, double* out);

// Resolves n_threads (<= 0: all available) the same way for every batch function.
int resolve_threads(int n_threads);

}  // namespace pgexact
