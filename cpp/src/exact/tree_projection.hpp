// Internal to the leaf-pair kernel (not installed): tree pairs projected onto the features both
// trees cut (pair_passes.hpp, ProjectedView, has the sum).
//
// Whether a pair (u, v) can have a nonzero term is decided on C alone: on a feature only one
// tree cuts, the other's box is the real line. So the leaves of each tree are grouped by their
// boxes on C (intervals, and whether the path admits NaN and zero there: an observed special
// value can put x in two boxes that do not meet, leaf_pairs.hpp), and the groups g, h whose
// boxes meet on C, or could both hold a special value, are the pairs of groups ("meets") the
// pass sums; their leaf pairs are exactly the pairs the enumeration would list. Which leaves
// group together and which groups meet depends on the model only: a tree's grouping on C is
// built once per call and shared by its pairs with the same C, and a plan (the meets, pointing
// at the two groupings) once per tree pair and call, both kept within budgets.
//
// Every pass of the leaf-pair kernel sums a projected tree pair where the call's Projections
// give a plan: sets, curves, greedy steps and the greedy tail (projected_pass.cpp).
//
// A projection pays where many leaves share a box on C: an oblivious tree (CatBoost) of depth 6
// on 4-5 features has 64 leaves but few distinct boxes on the 2-3 features a partner shares
// with it. Deep trees of a forest share nearly every feature and gain nothing: a plan is used
// only where its items (leaves, own entries, meets and their entries, times kProjectedWeight)
// cost less than the pairs' (pairs and their entries).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "pgexact/exact/leaf_pairs.hpp"
#include "pgexact/exact/pair_passes.hpp"
#include "pgexact/model/arena.hpp"

namespace pgexact {
namespace pairs {

// The leaves of one tree grouped by their boxes on C (and the special values their paths admit
// there): per leaf its group and its own entries (the features it cuts outside C, with their
// slots), in leaf order; per group a leaf of it, its size, its leaves' own entries and the hash
// of its box on C. It depends on the tree and C only, so a call keeps it for the tree's
// other pairs with the same C (Projections).
struct TreeGrouping {
  std::vector<ProjectedLeaf> leaves;
  std::vector<std::uint8_t> own_feature;
  std::vector<std::int32_t> own_slot;
  std::vector<std::int32_t> representative, group_size;
  std::vector<std::int64_t> own_entries;
  std::vector<std::uint64_t> group_key;
  // Per feature c of C (in C's order): the distinct intervals the groups' boxes have there
  // (lo, hi), and per group and c the index of its own ([group * |C| + c]).
  std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> intervals;
  std::vector<std::uint8_t> interval_of;
  // Per feature c of C and interval k of intervals[c], at interval_first[c] + k: the groups
  // whose box has that interval there (bit g: a tree of at most kMaxProjectedLeaves leaves has at
  // most 64 groups), and those of them whose paths admit NaN, zero there. A plan finds a group's
  // partners from these instead of trying every pair of groups (most meet on no interval).
  std::vector<std::uint64_t> groups_on, nan_groups_on, zero_groups_on;
  std::vector<std::size_t> interval_first;  // n_shared + 1 offsets
  // Where the groups are a full grid on C (one group per combination of the intervals, C not
  // empty): per cell of that grid, row-major over C (its first feature outermost), its group,
  // which the plans of the tree's pairs on C read (ProjectedGrid); else empty (leaves that differ
  // on C only by the special values their paths admit, or a tree that is not oblivious).
  std::vector<std::uint8_t> cell_group;
  // Per group, its cell where the groups are a full grid (the inverse of cell_group), else empty:
  // a pass keeps a grid's sums in cell order (projected_pass.cpp, GroupSumsLayout).
  std::vector<std::uint8_t> group_cell;
  std::int32_t n_groups() const { return static_cast<std::int32_t>(representative.size()); }
  std::size_t bytes() const {
    return leaves.size() * sizeof(ProjectedLeaf) + own_feature.size() * 5 + representative.size() * 24 +
           interval_of.size() + intervals.size() * 64 + groups_on.size() * 24 + interval_first.size() * 8 +
           cell_group.size() + group_cell.size() + 200;
  }
};

// The projection of one tree pair (t, s), t != s: the two trees' groupings on C (kept by the
// call's Projections, or a thread's scratch: then the plan is used at once and not kept), and
// the meets of their groups.
struct ProjectedPlan {
  const TreeGrouping* first = nullptr;
  const TreeGrouping* second = nullptr;
  std::vector<ProjectedMeet> meets;
  std::vector<std::uint8_t> meet_feature;
  std::vector<std::uint16_t> meet_interval;
  std::vector<std::int32_t> interval_cut;
  std::uint64_t features = 0, first_features = 0, second_features = 0;
  std::uint64_t shared = 0;  // C
  // Where both groupings are full grids on C and their contraction costs less than the meets
  // (grid.n_shared > 0): ProjectedGrid, on the groupings' cells (TreeGrouping::cell_group); the
  // meets are then never listed, or dropped (no pass reads them: a greedy step of more than 63
  // candidates would, so a pair splitting 64 features keeps them).
  ProjectedGrid grid;
  std::vector<GridFactor> grid_factors;

  ProjectedView view() const {
    ProjectedView v;
    const TreeGrouping* trees[2] = {first, second};
    for (int side = 0; side < 2; ++side) {
      v.leaves[side] = trees[side]->leaves.data();
      v.own_feature[side] = trees[side]->own_feature.data();
      v.own_slot[side] = trees[side]->own_slot.data();
      // (null, not data(), where empty: a scratch grouping keeps its room when it is reused)
      v.group_cell[side] = trees[side]->group_cell.empty() ? nullptr : trees[side]->group_cell.data();
    }
    v.n_first = static_cast<std::int32_t>(first->leaves.size());
    v.n_second = static_cast<std::int32_t>(second->leaves.size());
    v.groups_first = first->n_groups();
    v.groups_second = second->n_groups();
    v.meets = meets.data();
    v.n_meets = meets.size();
    v.meet_feature = meet_feature.data();
    v.meet_interval = meet_interval.data();
    v.n_meet_entries = meet_feature.size();
    v.interval_cut = interval_cut.data();
    v.n_intervals = interval_cut.size() / 2;
    v.features = features;
    v.first_features = first_features;
    v.second_features = second_features;
    v.shared = shared;
    if (grid.n_shared > 0) {
      v.grid = &grid;
      v.grid_factors = grid_factors.data();
    }
    return v;
  }
  std::size_t bytes() const {
    return meets.size() * sizeof(ProjectedMeet) + meet_feature.size() * 3 + interval_cut.size() * 4 +
           grid_factors.size() * sizeof(GridFactor) +
           sizeof(ProjectedGrid) + 128;
  }
  void clear();
  void clear_grid();  // no grid (what a failed build_grid filled is dropped)
};

// What a thread builds plans with: the plan, and the groupings of its two trees where the call
// keeps none.
struct PlanScratch {
  ProjectedPlan plan;
  TreeGrouping first, second;
  std::vector<std::int32_t> entries;  // project_tree_pair's per-feature tables of meet entries
  std::vector<std::uint64_t> partner_masks;  // and its partner masks per feature and interval
};

// A plan is used where its items, times this, are fewer than the pairs' (see above); set from
// measurements (bench/RESULTS.md, sessions 17 and 20). 2.0 until the group sums were kept for
// a tree's other pairs with the same C (session 18: a pair's leaves are then mostly not summed
// again) and plans found partners as bits: at 0.75, CatBoost(1000)'s 16-row PGI² took 5.7
// against 7.5 s and its 8-row ranking 13.2 against 14.9 s, CatBoost(200)'s 64-row PGI² 0.8-0.9
// against 0.9-1.3 s, the other models alike (every plan buildable made XGBoost's and LightGBM's
// rankings twice as slow).
inline constexpr double kProjectedWeight = 0.75;

// Per tree: the features its leaves' boxes cut, and every feature it splits on.
struct TreeFeatures {
  std::vector<std::uint64_t> cut, split;
  TreeFeatures(const Arena& a, const LeafBoxes& boxes);
};

// Whether the contraction of ProjectedGrid sums the projected pairs whose groups are grids:
// PGEXACT_PROJECTED_GRID=0 turns it off (tests and before/after comparisons: the meets are
// summed everywhere). Read per call.
bool use_projected_grid();

// Whether plans on grids count their meets instead of listing them (project_tree_pair):
// PGEXACT_COUNT_GRID_MEETS=0 lists them (tests: the same plans, so the same bits). Read per call.
bool count_grid_meets();

// Groups the leaves of tree t by their boxes on C into `grouping`.
void group_leaves(const LeafBoxes& boxes, std::int64_t t, std::uint64_t C, TreeGrouping& grouping);

// Builds the plan of trees t != s, grouped by their boxes on C = the features both cut (first,
// second), into `plan`; returns whether to use it: unless `always`, where it costs less than
// the pairs. `split_first`, `split_second`: the features each tree splits on; `entries`,
// `partner_masks`: the caller's scratch; `grid`: whether the plan may contract grids
// (ProjectedGrid), and where it can, `count_meets`: whether it counts the meets it decides by
// instead of listing them (the same counts).
bool project_tree_pair(const Arena& a, const LeafBoxes& boxes, const TreeGrouping& first, const TreeGrouping& second,
                       std::uint64_t C, std::uint64_t split_first, std::uint64_t split_second, bool always,
                       ProjectedPlan& plan, std::vector<std::int32_t>& entries,
                       std::vector<std::uint64_t>& partner_masks, bool grid = false, bool count_meets = true);

// A thread's group sums of projected tree pairs in a sweep (TreeGroupSums). A tree's sums depend
// only on the tree, the features C it shares with the other and the vector of rows, so the
// pairs of (tree, C) after the first read them instead of summing the tree's leaves again:
// a tile's first trees meet every later tree (CatBoost(1000) on housing: about 27 distinct C
// per tree for 999 second trees), and a second tree meets the tile's first trees one after the
// other. Kept from the start of a tile of trees (whose rows do not change) within a budget of
// `chunks` MiB; past it, get() returns null and the pass sums the tree per pair, with the same
// bits.
class GroupSumCache {
 public:
  explicit GroupSumCache(std::size_t chunks = kDefaultChunks) : max_chunks_(chunks) {}
  // The budget of a thread's cache of its tile's first trees, in MiB, on `threads` threads: the
  // sums of a tile of 16 CatBoost trees on housing, its 27 C each and 8 vectors of rows, take
  // about 20 MiB for a curve and 45 MiB for a greedy tail (16 sets); at 16 MiB most were summed
  // again per pair (CatBoost(200), 64-row ranking: 4.27 -> 3.89 s at 64 MiB; curves alike or
  // a little faster). A tile of 64 such trees (first_tree_tile) takes four times that: at 64
  // MiB the 64-row ranking of CatBoostRegressor() took 37.2 s, at 128 MiB 35.1 s and at 192
  // MiB 33.5 s (16 trees a tile and 64 MiB: 36.1 s), but on two threads the call then added
  // 250 MB more than before, close to the 1 GiB a call may add. Taken as filled, so smaller
  // calls take less. At most 128 MiB a thread and 256 MiB a call, never under the 16 MiB of
  // the second tree's cache.
  static std::size_t first_tree_chunks(int threads) {
    const std::size_t per_thread = std::size_t{256} / static_cast<std::size_t>(std::max(threads, 1));
    return std::max<std::size_t>(kDefaultChunks, std::min<std::size_t>(128, per_thread));
  }
  GroupSumCache(const GroupSumCache&) = delete;
  GroupSumCache& operator=(const GroupSumCache&) = delete;
  // Forgets every sum: a new tile of trees from t0 (or a new block of rows).
  void start_tile(std::int64_t t0);
  // The sums of tree t (of the tile) on C for vector `vector` of n_vectors (unfilled the first
  // time), with room for `groups` groups in up to n_sets sets, and their live flags where
  // `with_live`; null past the budget.
  TreeGroupSums* get(std::int64_t t, std::uint64_t C, std::int32_t vector, std::int32_t n_vectors, std::int32_t groups,
                     std::int64_t n_sets, bool with_live);

 private:
  static constexpr std::size_t kChunkDoubles = std::size_t{1} << 17;  // 1 MiB
  static constexpr std::size_t kDefaultChunks = 16;
  std::size_t max_chunks_;  // the budget, in chunks
  // Room for `n` doubles, aligned to a lane vector, or null past the budget.
  double* allocate(std::size_t n);
  // The room of one entry: false past the budget.
  bool make_room(TreeGroupSums& entry, std::size_t cells, bool with_live);
  std::int64_t t0_ = 0;
  // Per tree of the tile: its C's and the index of their first vector's entry.
  std::vector<std::vector<std::pair<std::uint64_t, std::size_t>>> seen_;
  std::vector<std::unique_ptr<TreeGroupSums>> entries_;
  std::size_t n_entries_ = 0;
  std::vector<std::unique_ptr<double[]>> chunks_;
  std::size_t chunk_ = 0, used_ = 0;  // the chunk being filled, and doubles used in it
};

// Whether sweeps keep group sums (GroupSumCache): PGEXACT_KEEP_GROUP_SUMS=0 turns it off (tests:
// the pass then sums both trees per pair, with the same bits). Read per call.
bool keep_group_sums();

// How a call uses projections: PGEXACT_PROJECTION=0 never (the leaf pairs everywhere: tests
// and before/after benchmarks), =always wherever a plan can be built (tests of the pass on every
// kind of tree), else where it costs less. Read per call.
enum class ProjectionUse : std::uint8_t { Never, Cheaper, Always };
ProjectionUse projection_use();

// The plans of one call: built on first use of a tree pair and kept, within a budget, for the
// call's later blocks of rows; past the budget a plan is built again into the caller's
// scratch each time. The groupings they are built from are kept per (tree, C) within a budget
// of their own (a tree of CatBoost(1000) on housing has about 27 distinct C for 999 partners),
// behind a lock per tree (any thread may ask for a second tree's); a plan on a grouping past
// that budget is used once and not kept. Plans of first tree t are only touched by the thread
// running t in a sweep (as PairCache's lists), so no lock is needed. Which plans and groupings
// are kept depends on thread timing, but they are the same whether kept or built again, and
// whether a tree pair is projected depends on the model alone, so results do not.
class Projections {
 public:
  Projections(const Arena& a, const LeafBoxes& boxes);
  // The plan of (t, s), s > t, or null where the pair is summed from its leaf pairs (a plan
  // past the budget is scratch.plan).
  const ProjectedPlan* get(std::int64_t t, std::int64_t s, PlanScratch& scratch);
  // Whether any tree pair may be projected (otherwise get() is never asked to plan).
  bool may_project() const { return use_ != ProjectionUse::Never; }
  // Whether to keep plans for later sweeps: not where the call sweeps its tree pairs once (a
  // set or curve of one block of rows), where keeping only copies them (CatBoost(1000), 64-row
  // PGI2: about 5 % of the call once plans without meets mostly fit the budget).
  void keep_plans(bool keep) { keep_ = keep; }

 private:
  static constexpr std::int64_t kBudget = std::int64_t{256} << 20;
  static constexpr std::int64_t kGroupingBudget = std::int64_t{64} << 20;
  // Builds the plan of (t, s) into scratch.plan; whether to use it: both trees have at most
  // kMaxProjectedLeaves leaves, and (unless `always`) the trees cut different features and the
  // plan costs less than the pairs (project_tree_pair). (No feature is perturbed by category:
  // the constructor turns projections off otherwise.)
  bool project(std::int64_t t, std::int64_t s, PlanScratch& scratch);
  // The grouping of tree t on C: kept, or built into `scratch`.
  const TreeGrouping& grouping(std::int64_t t, std::uint64_t C, TreeGrouping& scratch);
  const Arena& arena_;
  const LeafBoxes& boxes_;
  ProjectionUse use_;
  bool grid_;  // use_projected_grid()
  bool count_meets_;  // count_grid_meets()
  bool keep_ = true;
  std::unique_ptr<TreeFeatures> features_;
  // Per first tree t (allocated on its first use), per s - t - 1: kUndecided, kLeafPairs,
  // kProjectedNotKept, or the index of its kept plan in kept_[t]. (An index, not a hash map from
  // s: a map's lookups and nodes, made and freed per tree pair, were about a tenth of a one-row
  // ranking of CatBoost(1000), whose 500,000 plans are kept for its later steps. It takes 4 bytes
  // a tree pair instead of the byte of a decision: 2 MB for 1,000 trees, 50 MB for 5,000.)
  static constexpr std::int32_t kUndecided = -1, kLeafPairs = -2, kProjectedNotKept = -3;
  std::vector<std::vector<std::int32_t>> decided_;
  std::vector<std::deque<ProjectedPlan>> kept_;
  std::atomic<std::int64_t> used_{0};
  // Per tree: its kept groupings by C, under its lock.
  std::vector<std::vector<std::pair<std::uint64_t, std::unique_ptr<TreeGrouping>>>> groupings_;
  std::unique_ptr<std::mutex[]> grouping_locks_;
  std::atomic<std::int64_t> grouping_bytes_{0};
};

}  // namespace pairs
}  // namespace pgexact
