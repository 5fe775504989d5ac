#include "pair_lanes.hpp"

#include <cstdlib>

#ifdef PGEXACT_OPENMP
#include <omp.h>
#endif

#include "pgexact/exact/kernels.hpp"  // noise_moves

namespace pgexact {
namespace pairs {

// A block's per-row tables take up to 96 MiB, or up to 384 MiB where that reaches 64 rows:
// where a model's pair lists are too large to keep (a depth-10 forest's are about 10 GB), every
// block enumerates them again, and enumeration was 42 % of 64 rows of RandomForest(max_depth=10)
// on housing in blocks of 16 rows (6 MB a row); one block of 64 rows is 1.47x faster (56 -> 38
// s, adding 483 MiB to the process instead of 281). Models of smaller tables hold hundreds of
// rows in 96 MiB, and larger blocks only cost memory and locality there (1,500 rows of
// LightGBM in blocks of 384 MiB: 0.96x).
constexpr std::int64_t kBlockBytes = std::int64_t{96} << 20;
constexpr std::int64_t kLargeBlockBytes = std::int64_t{384} << 20;
constexpr std::int64_t kLargeBlockRows = 64;

std::int64_t block_rows(const Arena& a, const LeafBoxes& boxes, std::int64_t sums_per_row) {
  const std::int64_t per_row = 16 * static_cast<std::int64_t>(a.bounds.size()) + 17 * boxes.n_leaves() +
                               8 * boxes.n_slots + 8 * sums_per_row * a.n_trees();
  const std::int64_t bytes = std::max<std::int64_t>(per_row, 1);
  std::int64_t rows = std::max(kBlockBytes / bytes, std::min(kLargeBlockRows, kLargeBlockBytes / bytes));
  rows = std::max<std::int64_t>(8, std::min<std::int64_t>(rows, 4096));
  return rows / kLanes * kLanes;
}

void resize_lanes(const Arena& a, const LeafBoxes& boxes, std::int32_t vectors, Lanes& lanes) {
  lanes.vectors = vectors;
  lanes.n_bounds = static_cast<std::int64_t>(a.bounds.size());
  lanes.n_leaves = boxes.n_leaves();
  const auto v = static_cast<std::size_t>(vectors);
  lanes.table.assign(v * static_cast<std::size_t>(lanes.n_bounds) * 2 * kLanes, 0.0);
  lanes.out.assign(v * static_cast<std::size_t>(lanes.n_leaves) * kLanes, 0);
  lanes.weight.assign(v * static_cast<std::size_t>(lanes.n_leaves) * kLanes, 0.0);
  lanes.perturbable.assign(v * kLanes, 0);
  lanes.code.assign(lanes.out.size(), kNeverAlive);  // padding lanes: never alive
  lanes.n_slots = boxes.n_slots;
  lanes.boxes = &boxes;
  const std::size_t n_masses = v * static_cast<std::size_t>(boxes.n_slots) * kLanes;
  // PGEXACT_TABLE_MASSES=1 forces the table path (tests: it must give the same bits).
  const char* force = std::getenv("PGEXACT_TABLE_MASSES");
  lanes.table_masses = n_masses * sizeof(double) > kMassesBytes || (force != nullptr && force[0] == '1');
  if (lanes.table_masses) {
    lanes.masses.clear();
    lanes.masses.shrink_to_fit();
  } else {
    lanes.masses.assign(n_masses, 0.0);
  }
}

namespace {

// Fills lane l of vector v for row x.
void fill_lane(const Arena& a, const Noise& noise, const LeafBoxes& boxes, const double* x, std::int32_t v,
               std::int32_t l, Lanes& lanes, std::vector<std::pair<std::int32_t, std::uint64_t>>& stack) {
  std::uint64_t perturbable = 0;
  for (std::int32_t j = 0; j < a.n_features; ++j) {
    const std::int32_t begin = a.feature_bounds_begin[j];
    const std::int32_t end = a.feature_bounds_begin[j + 1];
    if (noise_moves(a, noise, j) && !std::isnan(x[j])) perturbable |= bit(j);
    // Additive noise: the interval table over the feature's boundaries (a feature perturbed by
    // category needs none: its entries carry their own probabilities, category_cells.hpp).
    const bool perturb = ((perturbable >> j) & 1u) != 0 && noise.additive(j);
    for (std::int32_t b = begin; b < end; ++b) {
      double* cell = lanes.table.data() + ((static_cast<std::size_t>(v) * lanes.n_bounds + b) * 2) * kLanes + l;
      double t = 0.0, ind = 0.0;
      if (perturb && b == end - 1) {
        ind = 1.0;  // +inf: T = -P(x' > +inf) = 0
      } else if (perturb && b > begin) {
        const double bound = a.bounds[b];
        const CdfPair c = noise_cdf(noise.family[j], noise.sigma[j], bound - x[j]);
        if (bound <= x[j]) {
          t = c.lower;
        } else {
          t = -c.upper;
          ind = 1.0;
        }
      }
      cell[0] = t;
      cell[kLanes] = ind;
    }
  }
  lanes.perturbable[static_cast<std::size_t>(v) * kLanes + l] = perturbable;
  // Each leaf's interval masses, with the very operations of the passes' mass() (so a slot
  // gives the bits the table would).
  const std::size_t d = static_cast<std::size_t>(a.n_features);
  const double* table = lanes.table.data() + (static_cast<std::size_t>(v) * lanes.n_bounds * 2) * kLanes + l;
  // (No pointer is formed into `masses` when it is empty: a model whose splits never narrow a
  // box has no slots.)
  const std::size_t masses_at = static_cast<std::size_t>(v) * static_cast<std::size_t>(lanes.n_slots) * kLanes + l;
  for (std::size_t leaf = 0; leaf < boxes.leaf_node.size() && !lanes.table_masses; ++leaf) {
    // (A feature perturbed by category is never a slot: its entries carry their own numbers.)
    for (std::uint64_t f = boxes.constrained[leaf] & ~boxes.set_features; f != 0; f &= f - 1) {
      const std::size_t j = static_cast<std::size_t>(__builtin_ctzll(f));
      const double* lo = table + static_cast<std::size_t>(boxes.lo[leaf * d + j]) * 2 * kLanes;
      const double* hi = table + static_cast<std::size_t>(boxes.hi[leaf * d + j]) * 2 * kLanes;
      const double m = (hi[0] - lo[0]) + (hi[kLanes] - lo[kLanes]);
      lanes.masses[masses_at + static_cast<std::size_t>(boxes.slot_of[leaf * d + j]) * kLanes] = m > 0.0 ? m : 0.0;
    }
  }
  // Route x through every tree, marking per leaf the features on which x leaves its path.
  const std::size_t base = static_cast<std::size_t>(v) * static_cast<std::size_t>(lanes.n_leaves);
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    double home = 0.0;
    stack.clear();
    stack.emplace_back(a.tree_root[t], 0);
    while (!stack.empty()) {
      const auto [n, mask] = stack.back();
      stack.pop_back();
      if (a.is_leaf(n)) {
        const std::int32_t leaf = boxes.node_leaf[n];
        lanes.out[(base + leaf) * kLanes + l] = mask;
        if (mask == 0) home = a.value[n];
        continue;
      }
      const std::int32_t j = a.feature[n];
      const bool left = a.goes_left(n, x[j]);
      stack.emplace_back(a.right[n], left ? (mask | bit(j)) : mask);
      stack.emplace_back(a.left[n], left ? mask : (mask | bit(j)));
    }
    for (std::int32_t leaf = boxes.tree_first[t]; leaf < boxes.tree_first[t + 1]; ++leaf) {
      lanes.weight[(base + leaf) * kLanes + l] = a.value[boxes.leaf_node[leaf]] - home;
    }
  }
}

}  // namespace

// Fills the lanes of rows r0 .. r0 + rows (padding lanes repeat the first row).
void fill_block(const Arena& a, const Noise& noise, const LeafBoxes& boxes, const double* X, std::int64_t r0,
                std::int64_t rows, int threads, Lanes& lanes) {
  const auto vectors = static_cast<std::int32_t>((rows + kLanes - 1) / kLanes);
  resize_lanes(a, boxes, vectors, lanes);
  const std::int64_t d = a.n_features;
  const std::int64_t slots = static_cast<std::int64_t>(vectors) * kLanes;
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    std::vector<std::pair<std::int32_t, std::uint64_t>> stack;
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t i = 0; i < slots; ++i) {
      const std::int64_t row = r0 + (i < rows ? i : 0);
      fill_lane(a, noise, boxes, X + row * d, static_cast<std::int32_t>(i / kLanes),
                static_cast<std::int32_t>(i % kLanes), lanes, stack);
    }
  }
  (void)threads;
}

// The leaves' codes for one set per row: 0 where the leaf admits x' with the row's set perturbed.
void code_set(const std::uint64_t* sets, std::int64_t rows, Lanes& lanes) {
  code_leaves(0, rows, lanes, [&](std::int64_t i, std::uint64_t out) {
    return (out & ~sets[i]) == 0 ? std::int8_t{0} : kNeverAlive;
  });
}

// The leaves' codes for a greedy step: set S and candidates per row.
void code_greedy(const std::uint64_t* sets, const std::uint64_t* candidates, std::int64_t rows, Lanes& lanes) {
  code_leaves(0, rows, lanes, [&](std::int64_t i, std::uint64_t out) {
    const std::uint64_t rest = out & ~sets[i];
    return rest == 0                                             ? kNoneMissing
           : (rest & (rest - 1)) == 0 && (rest & candidates[i]) != 0 ? static_cast<std::int8_t>(__builtin_ctzll(rest))
                                                                   : kNeverAlive;
  });
}

void code_tail(const std::uint64_t* sets, const std::int32_t* tail, std::int64_t r, std::int64_t rows, Lanes& lanes) {
  code_leaves(0, rows, lanes, [&](std::int64_t i, std::uint64_t out) {
    const std::int32_t* candidates = tail + i * r;
    const std::uint64_t movable = lanes.perturbable[static_cast<std::size_t>(i)];
    std::uint64_t rest = out & ~sets[i];
    std::int8_t need = 0;
    for (std::int64_t c = 0; c < r; ++c) {
      const std::uint64_t b = (std::uint64_t{1} << candidates[c]) & movable;
      if ((rest & b) != 0) need = static_cast<std::int8_t>(need | (1 << c));
      rest &= ~b;
    }
    return rest == 0 ? need : kNeverAlive;
  });
}

}  // namespace pairs
}  // namespace pgexact
