// Exact PG^2 kernels.
//
// For one row x and a set S of perturbed features, with f = b + sum_t f_t over trees:
//   PG2(x, S) = (E f - f(x))^2 + sum_t Var f_t + 2 sum_{t<s} Cov(f_t, f_s)
// Every term is computed centred (leaf value minus the tree's mean, or minus its value at x),
// so there is no `E[f^2] - (E f)^2` cancellation, and the variance part is clamped at zero
// against the last rounding error: the result is never negative.
//
// Pass 1 walks, per tree, the nodes reachable under S (an unperturbed feature fixes the
// branch), giving P(region) of each node, the tree's mean mu_t and each subtree's centred mass
// sum_{leaves v below n} (y_v - mu_t) P(v). Pass 2 adds the covariances of tree pairs:
//   * trees whose reachable perturbed features are disjoint are independent: Cov = 0;
//   * Cov(f_t, f_s) is a recursion over node pairs (n, m) inside the box R_n and R_m. When the
//     two subtrees split on disjoint perturbed features and neither region cuts the other on
//     the features below it, the subtrees are independent given the box and the pair
//     contributes P(box) * E[f_t - mu_t | R_n] * E[f_s - mu_s | R_m], read off pass 1;
//   * a node pair whose whole contribution is certified tiny, P(box) * max|f_t - mu_t| *
//     max|f_s - mu_s| below a per-pair share of 1e-13 of the diagonal terms, is skipped and its
//     bound added up; if twice the total bound exceeds 1e-12 of the result, the covariances are
//     recomputed without skipping. Results stay within 1e-12 relative of the exact value;
//   * with one perturbed feature, f is a step function of it: a sort-and-sweep (here a
//     bucket sweep over the feature's distinct boundaries) costs O(leaves + boundaries);
//   * several (row, set) variants share one pair recursion (pg2_variants): the prefixes of a
//     ranking, the candidates of a greedy step, blocks of rows. Each variant's decisions are
//     its own, so its value is the one it gets alone, bit for bit; the batch drivers use it
//     whenever shares_walks() holds (the fast kernels, depth at most 256); pg2_row is that walk
//     for a single set, or the explicit-stack recursion for deeper trees.
// Pruning::None computes Cov by the paper's pre-order pair walk over all leaf pairs of all
// tree pairs instead: the reference the fast paths are tested and benchmarked against.
//
// Categorical noise (noise.hpp): the walks' boxes are intervals, so PG2 with a feature
// perturbed by category is computed by the leaf-pair kernel (pair_kernel.hpp, whose boxes can
// be sets of cells) or, with Pruning::None, by the unpruned leaf-pair reference
// (reference_kernel.hpp); E f(x') by that reference's leaf sum. Fixed features are never
// perturbed, like NaN entries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#ifdef PGEXACT_OPENMP
#include <omp.h>
#endif

#include "pgexact/model/arena.hpp"
#include "pgexact/exact/noise.hpp"
#include "pgexact/exact/pair_kernel.hpp"  // kDefaultTolerance
#include "pgexact/exact/run_control.hpp"

namespace pgexact {

// Full: the fastest exact kernel: enumerated leaf pairs with rows in SIMD lanes
// (pair_kernel.hpp) where it applies, except calls of one or two rows that the shared walks do
// faster (few_rows.cpp), else shared walks. Pairs: Full without that few-row choice (a block
// of a larger call gets that call's bits). Walk: the node-pair walks shared between rows and
// sets. Separate: the walks without sharing (one pair recursion per PG2). None: the paper's
// unpruned pair walk, the reference. Walk and Separate are kept for tests and for
// before/after benchmarks in one run.
enum class Pruning : std::uint8_t { Full = 0, None = 1, Separate = 2, Walk = 3, Pairs = 4 };

// Whether the kernel is one of the two fastest (Full or Pairs).
inline bool fastest(Pruning pruning) { return pruning == Pruning::Full || pruning == Pruning::Pairs; }

// One perturbed set of one row: `mask` has n_features entries, nonzero = perturbed.
struct Variant {
  const double* row;
  const std::uint8_t* mask;
};

// Per-thread scratch space, sized for one arena and reused across rows: no allocation happens
// in the hot loops once the first row has grown the stacks.
class Workspace {
 public:
  explicit Workspace(const Arena& arena);

  // P(x' < b) and P(x' > b) at one boundary, each computed in its own tail.
  struct Cdf {
    double lower;
    double upper;
  };
  // Intervals are pairs of indices into Arena::bounds (within one feature's block).
  struct Frame {
    double p;
    std::uint64_t cut_a;  // features on which the box is narrower than the first region
    std::uint64_t cut_b;  // ... than the second region (pair recursion only)
    std::int32_t a;       // node (first tree)
    std::int32_t b;       // node (second tree, pair recursion only)
    std::int32_t depth;
    std::int32_t feature;  // interval changed on entry, or -1
    std::int32_t side;     // which region changes with the box: 0 = first, 1 = second
    std::int32_t box_lo, box_hi, region_lo, region_hi;
  };
  struct Undo {
    std::int32_t depth, feature, side;
    std::int32_t box_lo, box_hi, region_lo, region_hi;
  };
  struct SweepItem {
    std::int32_t node;
    std::int32_t lo;  // interval on the swept feature
    std::int32_t hi;
  };

  // Per node (valid when reach[n] == set_epoch).
  std::vector<double> p;        // P(x' in region of n)
  std::vector<double> centred;  // sum over leaves v below n of (y_v - mu_t) * P(v)
  std::vector<double> cmean;    // E[f_t - mu_t | x' in region of n] = centred / p
  std::vector<std::uint32_t> reach;
  // Per boundary (Arena::bounds), for the current row; a feature's block is filled the first
  // time the feature is perturbed in the row (feature_stamp[j] == row_epoch).
  std::vector<Cdf> cdf;
  std::vector<std::uint32_t> feature_stamp;
  std::vector<double> jump;  // per boundary: the jump of f there (single-feature sweep)
  // Per tree, for the current row (valid when home_stamp == row_epoch): the value of the leaf x
  // reaches, which the single-feature sweep of every feature of the row reads.
  std::vector<double> home;
  std::uint32_t home_stamp = 0;
  std::vector<double> moment;  // per boundary: noise_partial_moment there (first moments)
  // Per tree.
  std::vector<double> mu;
  std::vector<std::uint64_t> tree_mask;
  std::vector<std::int32_t> active;
  std::vector<std::int32_t> partners;
  // Per feature: the current box and the two regions of the pair recursion.
  std::vector<std::int32_t> box_lo, box_hi;
  std::vector<std::int32_t> region_lo[2], region_hi[2];
  std::vector<std::uint8_t> perturbed;
  std::uint64_t perturbed_mask = 0;
  std::vector<std::uint8_t> row_mask, row_flags;  // per-row scratch of the batch drivers
  std::vector<double> row_values, row_last;
  std::vector<Variant> row_variants;
  // Stacks.
  std::vector<Frame> frames, inner_frames;
  std::vector<Undo> undo, inner_undo;
  std::vector<std::int32_t> reached;
  std::vector<SweepItem> sweep;
  // The two-feature grid (two_feature_grid.cpp): per cell corner, the value changes entering
  // there, then the compensated prefix sums' high and low parts; per column, the running sums.
  struct GridItem {
    std::int32_t node;
    std::int32_t lo_j, hi_j, lo_i, hi_i;  // the box on the two perturbed features
  };
  std::vector<GridItem> grid_stack;
  std::vector<double> grid_high, grid_low, grid_column_high, grid_column_low;
  // Shared walks (pg2_variants): per variant, the pass-1 conditional means ([node][variant]),
  // boundary CDFs ([boundary][variant]), tree means and masks, its row and the features it
  // perturbs; per feature, the variants perturbing it; per recursion level, P(box) and the
  // nodes reached, per variant; per dependent tree pair, the variants it is dependent for. The
  // drivers' masks.
  std::vector<double> variant_cmean, variant_mu, variant_p;
  std::vector<Cdf> variant_cdf;
  std::vector<std::uint64_t> variant_tree_mask, variant_branch, variant_features, pair_live;
  std::vector<const double*> variant_row;
  std::vector<std::int32_t> variant_nodes;
  std::vector<std::uint8_t> variant_masks;
  std::uint32_t row_epoch = 0;
  std::uint32_t set_epoch = 0;
  const double* row = nullptr;

  void begin_row(const double* x);
  void begin_set();
};

// PG2(x, S) for the row of the last ws.begin_row; perturbed[j] != 0 marks j in S. NaN entries
// of x are never perturbed. `tol`: as in pg2_variants (the walks' skipping).
double pg2_row(const Arena& arena, const Noise& noise, const std::uint8_t* perturbed, Workspace& ws,
               Pruning pruning, double tol = kDefaultTolerance);

// At most this many perturbed sets share one walk (one bit each).
inline constexpr std::int32_t kMaxVariants = 64;

// PG2 of `count` (row, set) variants at once, in one shared walk: out[v] for variants[v]. Any
// rows and sets; each value is the same, bit for bit, whatever else shares the walk, and within
// tol relative of the exact value (certified skipping of node pairs; tol 0 skips nothing).
// Requires shares_walks(arena, Pruning::Full) and count <= max_variants(arena). Moves ws to the
// rows of the variants (call ws.begin_row again after). A stopped control ends it early.
void pg2_variants(const Arena& arena, const Noise& noise, const Variant* variants, std::int32_t count,
                  Workspace& ws, double* out, double tol = kDefaultTolerance,
                  const RunControl* control = nullptr);

// Calls of one or two rows that Pruning::Full runs on the walks, which cost per row, rather
// than on the leaf pairs, whose enumeration costs per block of up to eight rows (few_rows.hpp
// has the measurements): sets and curves of one row, on one walk over the union of the row's
// sets (but curves of complete trees of 32 or 64 leaves on the projected pairs); greedy
// rankings of at most two rows (of complete trees of at most 64 leaves: one row of fewer than
// 32, none of 32 or 64) on a union walk per row and step (the last steps' in one,
// greedy_tail.hpp);
// never with a feature perturbed by category. `n_rows`: the rows of the whole call.
enum class FewRowsCall : std::uint8_t { Set, Curve, Greedy };
bool few_rows_on_walks(const Arena& arena, const Noise& noise, std::int64_t n_rows, FewRowsCall call);
// The exception among one-row sets: complete trees of 32 or 64 leaves and a set holding every
// feature the trees split on (`perturbed`: n_features entries) take the projected pairs.
bool one_row_set_on_pairs(const Arena& arena, const Noise& noise, const std::uint8_t* perturbed);

// Whether pg2_variants applies: the fastest kernels (Full, Pairs) or Walk, and depth at most 256.
bool shares_walks(const Arena& arena, Pruning pruning);

// Variants per shared walk (at most kMaxVariants) so that the per-variant tables stay within a
// fixed per-thread budget.
std::int32_t max_variants(const Arena& arena);

// Largest |leaf value| the kernels take: PG2 multiplies differences of leaf values and sums
// such products over all leaf pairs, so beyond this they could overflow to infinity (and an
// infinite weight times a zero probability is NaN, not the zero it stands for).
inline constexpr double kMaxLeafValue = 1e100;
// Throws std::invalid_argument ("model: ...") when a leaf value is beyond kMaxLeafValue.
void check_values(const Arena& arena);

// Checks that no feature with categorical splits is perturbed by additive noise, that the
// arena has one output and that its leaf values are in range. Throws std::invalid_argument
// naming the feature.
void check_perturbable(const Arena& arena, const Noise& noise, const std::uint8_t* perturbed, std::int64_t n_masks);

// Whether the noise can move feature j: not fixed, and not additive noise on a feature the
// model splits on by category (the Python layer never asks for that; such a feature stays put
// in a ranking and is refused in a set).
inline bool noise_moves(const Arena& arena, const Noise& noise, std::int64_t j) {
  return noise.perturbs(j) && (noise.categorical(j) || !arena.categorical_feature[j]);
}

// The errors for additive noise on a feature split by category, and for categorical noise in a
// kernel that cannot compute it.
std::string additive_on_categories(std::int64_t feature);
std::string categorical_unsupported();

// PG2 for n rows; `perturbed` is one mask of n_features entries, or one per row. `tol`: the
// relative error each result may have, certified (pair_kernel.hpp's kDefaultTolerance); the
// other kernels are exact whatever it is.
void pg2_batch(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
               const std::uint8_t* perturbed, bool mask_per_row, int n_threads, Pruning pruning,
               double* out, RunControl* control = nullptr, double tol = kDefaultTolerance);

// PG2 of every prefix of a ranking: out[i, k] = PG2(x_i, first k+1 entries of the ranking),
// for k < n_steps. `ranking` is one permutation of n_features entries, or one per row.
void pg2_curve_batch(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                     const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps,
                     int n_threads, Pruning pruning, double* out, RunControl* control = nullptr,
                     double tol = kDefaultTolerance);

// E[f(x')] for n rows: the expected raw output when the masked features are perturbed.
void expected_batch(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                    const std::uint8_t* perturbed, bool mask_per_row, int n_threads, double* out, RunControl* control = nullptr);

// out[i, j] = E[delta_j * f(x_i + delta)] with every feature perturbed (0 where x_ij is NaN,
// which stays missing). With PG2 of all features these give Yeh et al.'s infidelity exactly.
void first_moments_batch(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows,
                         int n_threads, double* out, RunControl* control = nullptr);

// Threads to start for n_threads (<= 0: all available), never more than there are rows or
// four per core: each thread costs a workspace, and results do not depend on the count.
int resolve_threads(int n_threads, std::int64_t n_rows);

// Rows per block of the shared-walk drivers, at most `cap`: one block for one thread, else
// about four blocks per thread (blocks differ in cost; more of them balance the threads
// better, fewer share more).
// Results do not depend on it.
std::int64_t rows_per_block(std::int64_t n_rows, int n_threads, std::int64_t cap);

// Runs body(ws, i) for every row i, in parallel over rows with one Workspace per thread. Rows
// are independent and each is computed by one thread in a fixed order, so the results are
// bit-identical for any thread count. With a control, each row is one unit of progress, and
// rows not started when it is stopped are skipped.
template <typename Body>
void for_each_row(const Arena& arena, std::int64_t n_rows, int n_threads, Body&& body,
                  RunControl* control = nullptr) {
  const int threads = resolve_threads(n_threads, n_rows);
  plan(control, n_rows);
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    Workspace ws(arena);
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t i = 0; i < n_rows; ++i) {
      if (stopped(control)) continue;
      body(ws, i);
      advance(control, 1);
    }
  }
  (void)threads;
}

}  // namespace pgexact
