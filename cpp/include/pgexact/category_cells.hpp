// Cells and category sets of the categorically perturbed features, for the leaf-pair kernel.
//
// Under categorical noise x'_j takes finitely many values: the categories and the row's own
// x_j. Two values that every split on feature j sends the same way (the same "signature") are
// one cell: no leaf can tell them apart. A leaf's path on j admits a set A of cells, and two
// leaves' paths together admit the intersection, so with W(A) the probability of the
// categories in A and W'(A) = 1 - W(A) that of the others,
//   P(x'_j in A) = 1 - p W'(A) if x_j is in A,   p W(A) otherwise.
// W and W' are each summed over the categories in their given order, and 1 - p W' is exactly
// 1 when A holds every category: a set's probability depends only on which values it admits,
// not on the cells, so a row's value does not depend on which other rows share the call. The
// cells are built per call from the categories and the x_j of every row the call evaluates,
// so every row's own value is a cell, whatever it is (an unseen category, a negative code, a
// fraction).
//
// Sets are bitsets over cells, interned (one id per distinct set, 0 = every cell), so equal
// sets have equal ids. The kernel's boxes are pairs of boundary indices; a set becomes the
// pair (base + 2 id, base + 2 id + 1) of extended indices past the arena's boundaries (an empty
// set: (base + 2 id, base + 2 id), the kernel's empty interval), and a row writes
// T[base + 2 id] = 0, T[base + 2 id + 1] = P(x'_j in set), I = 0 for both: the pass's mass
// (T[hi] - T[lo]) + (I[hi] - I[lo]) is then that probability, with no change to the passes.
//
// The pair enumeration needs, inside the box of a leaf u of one tree, the box after a split of
// another tree: u's set meets the prefix set of that split's child (the cells its whole path
// from the root admits on j). Both sets are known before any row is seen, so the meets are
// tabulated once (leaf sets x prefix sets) and the enumeration, run by many threads, only
// reads the table.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "pgexact/arena.hpp"
#include "pgexact/noise.hpp"

namespace pgexact {

class CategoryCells {
 public:
  struct Feature {
    std::int32_t feature = -1;
    double change = 0.0;
    std::vector<std::int32_t> split_nodes;  // every node that splits on the feature
    std::int32_t n_cells = 0;
    std::int32_t words = 0;                 // 64-bit words per set
    std::vector<std::int32_t> category_cell;  // per category (the noise's order): its cell
    std::vector<double> category_weight;      // per category: its probability
    std::unordered_map<std::string, std::int32_t> cell_of_signature;
    std::vector<std::uint64_t> left;        // [split][word]: cells that go left at the split
    std::vector<std::uint64_t> bits;        // [set][word]
    std::vector<double> inside, outside;    // per set: W(set) and W'(set)
    std::vector<std::uint8_t> empty;        // per set
    std::unordered_map<std::string, std::int32_t> id_of;
    std::int32_t base = 0;                  // extended boundary index of set 0
    std::vector<std::int32_t> leaf_rank;    // per set: rank among the leaves' sets, or -1
    std::int32_t n_prefix = 0;              // sets the meet table has columns for
    std::vector<std::int32_t> meet;         // [leaf rank][set] -> id of the intersection

    std::int32_t n_sets() const { return static_cast<std::int32_t>(inside.size()); }
    bool has(std::int32_t set, std::int32_t cell) const {
      return ((bits[static_cast<std::size_t>(set) * static_cast<std::size_t>(words) + static_cast<std::size_t>(cell) / 64] >>
               (cell % 64)) & 1u) != 0;
    }
    // Box indices of a set (see the file comment).
    std::int32_t lo(std::int32_t set) const { return base + 2 * set; }
    std::int32_t hi(std::int32_t set) const { return base + 2 * set + (empty[set] ? 0 : 1); }
    std::int32_t set_of(std::int32_t lo_index) const { return (lo_index - base) / 2; }
  };

  // No categorical feature: empty, and the arena's boundaries are all the indices there are.
  explicit CategoryCells(const Arena& arena);
  // Cells of every feature the noise perturbs by category, from its categories and the rows.
  CategoryCells(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows);

  bool empty() const { return features_.empty(); }
  // The feature's cells, or nullptr when it is not perturbed by category.
  const Feature* of(std::int32_t j) const { return index_[j] < 0 ? nullptr : &features_[index_[j]]; }
  Feature* of(std::int32_t j) { return index_[j] < 0 ? nullptr : &features_[index_[j]]; }
  // Position of a node among its feature's splits.
  std::int32_t split_of(std::int32_t node) const { return split_[node]; }

  // The id of a set (bits: `words` words), interned.
  std::int32_t intern(Feature& f, const std::uint64_t* bits);
  // The id of (set ∩ cells going to `left_side` at the split), interned.
  std::int32_t narrow(Feature& f, std::int32_t set, std::int32_t split, bool left_side);
  // Tabulates leaf set x prefix set meets and lays the sets out after the arena's boundaries.
  // `leaf_sets[f]` are the distinct ids of leaves' sets of feature f (index order of features).
  void finish(const Arena& arena, const std::vector<std::vector<std::int32_t>>& leaf_sets);
  std::int32_t meet(const Feature& f, std::int32_t leaf_set, std::int32_t prefix_set) const {
    return f.meet[static_cast<std::size_t>(f.leaf_rank[leaf_set]) * static_cast<std::size_t>(f.n_prefix) +
                  static_cast<std::size_t>(prefix_set)];
  }
  // The cell of an observed (non-NaN) value of the feature; -1 if the call never saw it.
  std::int32_t cell_of(const Arena& arena, const Feature& f, double x) const;
  // P(x'_j in set) for a row whose value lies in `cell`.
  static double probability(const Feature& f, std::int32_t set, std::int32_t cell) {
    return f.has(set, cell) ? 1.0 - f.change * f.outside[set] : f.change * f.inside[set];
  }

  std::vector<Feature>& features() { return features_; }
  const std::vector<Feature>& features() const { return features_; }
  // Boundary indices: the arena's, then two per set of every feature.
  std::int64_t n_bounds() const { return n_bounds_; }

 private:
  std::vector<std::int32_t> index_;  // per feature
  std::vector<std::int32_t> split_;  // per node
  std::vector<Feature> features_;
  std::int64_t n_bounds_ = 0;
};

}  // namespace pgexact
