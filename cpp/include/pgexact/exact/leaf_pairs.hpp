// The intersecting leaf pairs of two trees, enumerated once for many rows.
//
// PG2 is a sum over leaf pairs (u of tree t, v of tree s) of w_u w_v P(x' in B_u and x' in B_v)
// (see pair_kernel.hpp). Which pairs can have a nonzero probability does not depend on the row
// or on the perturbed set: with every feature perturbed, it is the pairs whose boxes intersect
// on every feature. A row only ever makes that set smaller (an unperturbed feature fixes x'_j =
// x_j), so one enumeration per tree pair serves every row, every perturbed set, every prefix of
// a ranking and every greedy candidate; the rows then only weigh the pairs.
//
// Boxes live in boundary-index space: on feature j a leaf admits x' in [bounds[lo], bounds[hi])
// with lo, hi indices into Arena::bounds (x' < boundary goes left, almost surely). An
// observed value is routed by the library's own rule, which is a function of the cell of the
// value for every finite value outside LightGBM's zero band, so two leaves can both hold an
// observed x_j only if their intervals intersect, or if x_j is NaN or in the zero band and both
// paths send that special value their way. The enumeration keeps such pairs too (conservative:
// the row weights decide), and gives an empty intersection the interval [lo, lo), whose
// probability is exactly zero when the feature is perturbed.
//
// A feature perturbed by category has sets of cells instead of intervals (category_cells.hpp):
// every split on it narrows by set, a leaf's "interval" on it is the id of its set (lo = hi),
// the walk keeps the id of the current node's prefix set there, and an empty meet of u's set
// with that prefix set ends the walk as an empty interval does. Its entries are always
// intersection entries, whose cut pair is (-1 - k, 0): k names the pair list's two row-free
// probabilities for the intersection (category_cells.hpp), of which the pass picks one per
// row by the leaves' out masks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pgexact/model/arena.hpp"
#include "pgexact/exact/category_cells.hpp"
#include "pgexact/exact/pair_passes.hpp"  // LeafPair

namespace pgexact {

// The box of every leaf of an arena: per leaf, [lo, hi) on every feature, and which of the two
// special observed values (NaN, zero) its path admits on each feature. Requires n_features <= 64.
struct LeafBoxes {
  std::int32_t n_features = 0;
  std::vector<std::int32_t> leaf_node;   // per leaf (global leaf index): its node in the arena
  std::vector<std::int32_t> tree_first;  // per tree: its first leaf index; n_trees + 1 entries
  std::vector<std::int32_t> node_leaf;   // per node: its leaf index, or -1
  std::vector<std::int32_t> lo, hi;      // [leaf * n_features + j]
  std::vector<std::uint64_t> constrained;  // per leaf: features its path narrows
  std::vector<std::uint64_t> nan_ok, zero_ok;  // per leaf: features on which the value reaches it
  // Per leaf and feature it cuts, a slot for the mass of its interval (rows compute them once;
  // a feature perturbed by category keeps its slot number but is never a slot entry):
  // a leaf's slots are consecutive from slot_first[leaf], in feature order; slot_of[leaf *
  // n_features + j] is -1 where the leaf does not cut j.
  std::vector<std::int32_t> slot_of;
  std::vector<std::int32_t> slot_first;  // n_leaves + 1 entries
  std::int32_t n_slots = 0;
  // Per node, what the pair walk reads, packed: the pair walk visits a node per leaf of the
  // other tree, so it should not call back into the arena.
  struct Node {
    std::int32_t left, right;  // children; left = -1 for a leaf
    // Boundary index of a numeric split; kNarrowsNothing if it never narrows a box;
    // kNarrowsSet for a split on a feature perturbed by category (see set_after).
    std::int32_t bound;
    std::int32_t leaf;         // leaf index for a leaf
    std::uint8_t feature;
    std::uint8_t nan_left, zero_left;  // where NaN and zero go at the split
  };
  static constexpr std::int32_t kNarrowsNothing = -1;
  static constexpr std::int32_t kNarrowsSet = -2;
  std::vector<Node> nodes;
  // Per node splitting on a feature perturbed by category, [2 node + side]: the id of the set
  // of cells its child's whole path admits on that feature (the prefix set).
  std::vector<std::int32_t> set_after;
  CategoryCells cells;
  std::uint64_t set_features = 0;  // features perturbed by category

  // Boxes of a model whose features are all perturbed additively (or not at all).
  explicit LeafBoxes(const Arena& arena);
  // Boxes with `cells` for the features perturbed by category.
  LeafBoxes(const Arena& arena, CategoryCells&& cells);
  std::int32_t n_leaves() const { return static_cast<std::int32_t>(leaf_node.size()); }
};

// The pairs of one tree pair (or chunk of it) and their entries. The arrays are grown ahead in
// large steps and filled through pointers (`n_*` say how much is filled): per-pair growth was
// a good part of the enumeration's time. A kept list is a trimmed copy.
struct PairList {
  std::vector<LeafRun> runs;
  std::vector<LeafPair> pairs;
  std::vector<std::uint8_t> feature;  // per entry
  std::vector<std::uint8_t> slot;     // per slot entry (PairView)
  std::vector<std::int32_t> cut;      // per intersection entry: lo, hi
  std::vector<double> category;       // per category entry: P inside, P outside
  std::size_t n_pairs = 0, n_features = 0, n_slots = 0, n_cuts = 0, n_category = 0;

  PairView view(const LeafBoxes& boxes) const {
    return PairView{runs.data(), runs.size(), pairs.data(), n_pairs, feature.data(), slot.data(), cut.data(),
                    boxes.slot_first.data(), category.data()};
  }
  std::size_t bytes() const {
    return runs.size() * sizeof(LeafRun) + n_pairs * sizeof(LeafPair) + n_features + n_slots + 4 * n_cuts +
           8 * n_category;
  }
  void clear() {
    runs.clear();
    n_pairs = n_features = n_slots = n_cuts = n_category = 0;
  }
  // Closes the run of leaf u (if it has pairs).
  void end_run(std::int32_t u) {
    const std::uint32_t begin = runs.empty() ? 0 : runs.back().pair_end;
    if (n_pairs == begin) return;
    runs.push_back(LeafRun{u, static_cast<std::uint32_t>(n_pairs), static_cast<std::uint32_t>(n_features),
                           static_cast<std::uint32_t>(n_slots), static_cast<std::uint32_t>(n_cuts)});
  }
  // Room for the two probabilities of one more category entry.
  void make_room_category() {
    if (category.size() < n_category + 2) category.resize(std::max<std::size_t>(1024, 2 * category.size()));
  }
  // Room for one more pair of up to 64 entries.
  void make_room() {
    if (pairs.size() < n_pairs + 1) pairs.resize(std::max<std::size_t>(1024, 2 * pairs.size()));
    if (feature.size() < n_features + 64) feature.resize(std::max<std::size_t>(8192, 2 * feature.size()));
    if (slot.size() < n_slots + 64) slot.resize(std::max<std::size_t>(8192, 2 * slot.size()));
    if (cut.size() < n_cuts + 128) cut.resize(std::max<std::size_t>(8192, 2 * cut.size()));
  }
  PairList trimmed() const {
    PairList copy;
    copy.runs = runs;
    copy.pairs.assign(pairs.begin(), pairs.begin() + static_cast<std::ptrdiff_t>(n_pairs));
    copy.feature.assign(feature.begin(), feature.begin() + static_cast<std::ptrdiff_t>(n_features));
    copy.slot.assign(slot.begin(), slot.begin() + static_cast<std::ptrdiff_t>(n_slots));
    copy.cut.assign(cut.begin(), cut.begin() + static_cast<std::ptrdiff_t>(n_cuts));
    copy.category.assign(category.begin(), category.begin() + static_cast<std::ptrdiff_t>(n_category));
    copy.n_pairs = n_pairs;
    copy.n_features = n_features;
    copy.n_slots = n_slots;
    copy.n_cuts = n_cuts;
    copy.n_category = n_category;
    return copy;
  }
};

// The leaves and nodes one pass can use (pair_kernel.cpp): a pair whose leaves are not both live
// adds exactly zero in every lane of the pass (a dead leaf, or a zero weight), so it need not be
// enumerated; a node is live when some leaf below it is, and the walk of the second tree stops
// at dead nodes. Skipping a pair leaves the order of the others as it was.
struct LiveLeaves {
  const std::uint8_t* leaf;  // per global leaf index
  const std::uint8_t* node;  // per arena node
};

// Per-thread scratch of the enumeration.
struct PairScratch {
  std::vector<std::int32_t> lo, hi;  // current box, per feature
};

// Appends to `out` the intersecting leaf pairs of trees t and s (t != s), in a fixed order
// (leaves of t in order, then a depth-first walk of s, left first). With t == s: every leaf
// with itself.
// Only the leaves u of t with index in [u_begin, u_end) (global leaf indices): large trees are
// enumerated a chunk of leaves at a time, so a list never outgrows a chunk. With `live`, only
// the pairs of two live leaves (the list without the others, in the same order).
void enumerate_pairs(const Arena& arena, const LeafBoxes& boxes, std::int64_t t, std::int64_t s,
                     std::int32_t u_begin, std::int32_t u_end, PairScratch& scratch, PairList& out,
                     const LiveLeaves* live = nullptr);

}  // namespace pgexact
