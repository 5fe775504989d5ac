// The unpruned reference for every kind of noise, categorical perturbation included.
//
// With w_u = y_u - f_t(x) for each leaf u of tree t (centred at the row's own value),
//   PG2(x, S) = sum_{t, s} sum_{u in t, v in s} w_u w_v P(x' reaches u and v),
//   E f(x')   = b + sum_t sum_{u in t} y_u P(x' reaches u),
// and P factorises over features: each feature's factor reads the two leaves' paths directly,
// split by split, with no boxes, cells or pruning:
//   * j not perturbed (not in S, NaN, or fixed by the noise): 1 if every split of both paths
//     on j sends x_j the path's way (the library's own rule), else 0;
//   * additive noise: the mass of the interval the numeric splits of both paths leave;
//   * categorical: (1 - p) [x_j follows both paths] + p sum_c w_c [category c follows both].
// Every leaf pair is visited: O(leaves^2) per row. The fast kernel (the leaf-pair enumeration
// with cells, pair_kernel.hpp) is tested against it; it is not meant to be fast.
#pragma once

#include <cstdint>
#include <vector>

#include "pgexact/model/arena.hpp"
#include "pgexact/exact/noise.hpp"

namespace pgexact {

// Every leaf of an arena with its path, the path's splits sorted by feature: built once per
// call, read by every row.
struct LeafPaths {
  struct Step {
    std::int32_t feature;
    std::int32_t node;
    bool left;
  };
  std::vector<std::vector<Step>> path;
  std::vector<std::int32_t> node, tree;

  explicit LeafPaths(const Arena& arena);
};

// PG2(x, S) for one row; perturbed[j] != 0 marks j in S.
double pg2_reference_row(const Arena& arena, const LeafPaths& leaves, const Noise& noise, const double* x,
                         const std::uint8_t* perturbed);

// E f(x') for one row, x' perturbed on the masked features.
double expected_reference_row(const Arena& arena, const LeafPaths& leaves, const Noise& noise, const double* x,
                              const std::uint8_t* perturbed);

}  // namespace pgexact
