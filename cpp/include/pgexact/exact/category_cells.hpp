// Cells and category sets of the categorically perturbed features, for the leaf-pair kernel.
//
// Under categorical noise x'_j takes finitely many values: the categories and the row's own
// x_j. Two values that every split on feature j sends the same way (the same "signature") are
// one cell: no leaf can tell them apart. A leaf's path on j admits a set A of cells, and two
// leaves' paths together admit the intersection. With W(A) the probability of the categories
// in A and W'(A) that of the others,
//   P(x'_j in A) = 1 - p W'(A)   if x_j is in A (it stays with probability 1 - p),
//                  p W(A)        otherwise,
// and x_j is in the paths' intersection exactly when x leaves neither path on j: the out masks
// the kernel computes per leaf and row by routing x. So an intersection needs two row-free
// numbers, 1 - p W' and p W, fixed when its pair is enumerated, and the row only picks one.
// The categories' cells are numbered first, in the order the noise lists the categories, and a
// cell's weight sums its categories in that order; W and W' then sum the cells' weights in
// cell order (by bytes of the set through tables when the cells fit one word), and 1 - p W' is
// exactly 1 when A holds every category. None of this depends on the rows' own cells, so the
// numbers depend only on which values A admits, and a row's value does not depend on which
// other rows share the call.
//
// The cells are built per call from the categories and the x_j of every row the call
// evaluates, so every value x'_j can take for those rows is a cell (whatever it is: an unseen
// category, a negative code, a fraction), and an empty intersection of cells is a pair no row
// of the call can reach on j. A node's prefix set (the cells its whole path from the root
// admits on j) is interned: a leaf's set is its prefix set, and the enumeration meets the set
// of a leaf u of one tree with the prefix sets of the nodes of another.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "pgexact/model/arena.hpp"
#include "pgexact/exact/noise.hpp"

namespace pgexact {

class CategoryCells {
 public:
  struct Feature {
    std::int32_t feature = -1;
    double change = 0.0;
    std::vector<std::int32_t> split_nodes;    // every node that splits on the feature
    std::int32_t n_cells = 0;
    std::int32_t words = 0;                   // 64-bit words per set
    std::vector<std::int32_t> category_cell;  // per category (the noise's order): its cell
    std::vector<double> category_weight;      // per category: its probability
    std::unordered_map<std::string, std::int32_t> cell_of_signature;
    std::vector<std::uint64_t> left;          // [split][word]: cells that go left at the split
    std::vector<std::uint64_t> bits;          // [set][word]: the interned prefix sets; 0 = all
    std::int32_t n_category_cells = 0;        // cells holding a category: 0 .. n_category_cells - 1
    std::vector<double> cell_weight;          // per category cell
    // One word of cells: per byte position b and byte value v, [256 b + v], the weight of the
    // category cells among v's set bits (inside) and among its clear bits (outside).
    std::vector<double> inside_by_byte, outside_by_byte;
    std::unordered_map<std::string, std::int32_t> id_of;

    std::int32_t n_sets() const { return words == 0 ? 0 : static_cast<std::int32_t>(bits.size() / words); }
    const std::uint64_t* set(std::int32_t id) const {
      return bits.data() + static_cast<std::size_t>(id) * static_cast<std::size_t>(words);
    }
    // Whether sets a and b share a cell.
    bool meet(std::int32_t a, std::int32_t b) const {
      const std::uint64_t* p = set(a);
      const std::uint64_t* q = set(b);
      for (std::int32_t w = 0; w < words; ++w) {
        if ((p[w] & q[w]) != 0) return true;
      }
      return false;
    }
    // For the intersection of sets a and b: 1 - p W' (x_j inside) and p W (outside).
    void probabilities(std::int32_t a, std::int32_t b, double* inside, double* outside) const;
  };

  // No categorical feature.
  explicit CategoryCells(const Arena& arena);
  // Cells of every feature the noise perturbs by category, from its categories and the rows.
  CategoryCells(const Arena& arena, const Noise& noise, const double* X, std::int64_t n_rows);

  bool empty() const { return features_.empty(); }
  // The feature's cells, or nullptr when it is not perturbed by category.
  const Feature* of(std::int32_t j) const { return index_[j] < 0 ? nullptr : &features_[index_[j]]; }
  Feature* of(std::int32_t j) { return index_[j] < 0 ? nullptr : &features_[index_[j]]; }
  // Position of a node among its feature's splits.
  std::int32_t split_of(std::int32_t node) const { return split_[node]; }
  // The id of (set ∩ the cells going to `left_side` at the split), interned.
  std::int32_t narrow(Feature& f, std::int32_t set, std::int32_t split, bool left_side);
  const std::vector<Feature>& features() const { return features_; }

 private:
  std::int32_t intern(Feature& f, const std::uint64_t* bits);

  std::vector<std::int32_t> index_;  // per feature
  std::vector<std::int32_t> split_;  // per node
  std::vector<Feature> features_;
};

}  // namespace pgexact
