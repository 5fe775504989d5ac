// The inner loops of the leaf-pair kernel (pair_kernel.hpp): one pass over the intersecting
// leaf pairs of a tree pair, for one vector of kLanes rows.
//
// They are built once per x86-64 level (baseline, v3 = AVX2, v4 = AVX-512) and picked at run
// time, so a package built from source runs anywhere and still uses the wide registers where
// they exist. Every build does the same IEEE operations in the same order (no contraction into
// fused multiply-adds, no reassociation), so results do not depend on the build picked. The
// interface is plain pointers: the per-level builds share no inline code with the rest.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pgexact {

// Rows per SIMD vector (8 doubles: one AVX-512 register, two AVX2 ones).
inline constexpr int kLanes = 8;

// One intersecting leaf pair (leaf_pairs.hpp): global leaf indices, and the features on which
// the intersection box is narrower than the real line, `count` entries from `first` in the
// feature/lo/hi lists. The first `n_slots` entries are intervals of one of the two leaves
// (the other does not cut them): their mass is precomputed per leaf, and `lo` holds its slot;
// the rest are proper intersections [lo, hi) computed from the boundary tables. Each group is
// in increasing feature order, slots first: the fixed order of the pair's product.
struct LeafPair {
  std::int32_t u, v;
  std::int32_t first, count;
  std::int32_t n_slots;
  std::uint64_t features;
};

struct PairView {
  const LeafPair* pairs;
  std::size_t n_pairs;
  const std::uint8_t* feature;
  const std::int32_t* lo;
  const std::int32_t* hi;
};

// One vector of rows: boundary tables [boundary][T | I][lane], per-leaf out masks and weights
// [leaf][lane], leaf interval masses [slot][lane]; for curves, the out masks again with bit k for the feature at ranking
// position k of the lane's row.
struct LaneView {
  const double* table;
  const std::uint64_t* out;
  const double* weight;
  const std::uint64_t* out_pos;
  const double* masses;  // [slot][lane]: mass of each leaf's interval on each feature it cuts
};

// The prefixes of one vector of rows: sets[k][lane] (features, growing with k) and never[lane]
// (ranking positions of features that are never perturbed: NaN in the row, categorical, or
// beyond n_steps).
struct CurveSets {
  const std::uint64_t* sets;
  const std::uint64_t* never;
};

// sum/comp: per-lane compensated sums (kLanes values; n_steps * kLanes for the curve);
// sets: per-lane sets (n_steps * kLanes for the curve); corr: [feature][lane], per feature of
// the model.
struct PairPasses {
  void (*set)(const PairView&, const LaneView&, const std::uint64_t* sets, double mult, double* sum, double* comp);
  void (*curve)(const PairView&, const LaneView&, const CurveSets&, std::int64_t n_steps, double mult, double* sum,
                double* comp);
  void (*greedy)(const PairView&, const LaneView&, const std::uint64_t* sets, const std::uint64_t* candidates,
                 double mult, double* sum, double* comp, double* corr);
};

// The passes for the CPU this runs on; the environment variable PGEXACT_PASSES=base or v3
// caps the level (read once; for tests and comparisons).
const PairPasses& pair_passes();

namespace isa_base { PairPasses passes(); }
namespace isa_v3 { PairPasses passes(); }
namespace isa_v4 { PairPasses passes(); }

}  // namespace pgexact
