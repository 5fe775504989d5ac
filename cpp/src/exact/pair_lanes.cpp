#include "pair_lanes.hpp"
#include "env_switch.hpp"

#include <cstdlib>

#ifdef PGEXACT_OPENMP
#include <omp.h>
#endif

#include "pgexact/exact/kernels.hpp"  // noise_moves

namespace pgexact {
namespace pairs {

// A block's per-row tables take up to 96 MiB, or up to 576 MiB where that reaches 64 rows:
// where a model's pair lists are too large to keep (a depth-10 forest's are about 10 GB), every
// block enumerates them again, and enumeration was 42 % of 64 rows of RandomForest(max_depth=10)
// on housing in blocks of 16 rows (6 MB a row); one block of 64 rows is 1.47x faster (56 -> 38
// s, adding 483 MiB to the process instead of 281). At 384 MiB, 64 rows of LightGBM(500 trees
// of 255 leaves; 9.0 MB a row, 6.7 of them slot masses) went in two blocks of 32, each
// enumerating the lists again (a third of the call's samples); in one block the curve of 64
// rows took 481 s of CPU instead of 557 (1.16x, the same bits), its process 1023 MiB at its
// peak instead of 756. Models of smaller tables hold hundreds of rows in 96 MiB, and larger
// blocks only cost memory and locality there (1,500 rows of LightGBM in blocks of 384 MiB:
// 0.96x).
constexpr std::int64_t kBlockBytes = std::int64_t{96} << 20;
constexpr std::int64_t kLargeBlockBytes = std::int64_t{576} << 20;
constexpr std::int64_t kLargeBlockRows = 64;

namespace {
// Bytes of a row's lanes (Lanes): its tables (its boundary table, its leaves' out masks,
// weights and codes), and with them its slot masses.
std::int64_t table_bytes_per_row(const Arena& a, const LeafBoxes& boxes) {
  return 16 * static_cast<std::int64_t>(a.bounds.size()) + 17 * boxes.n_leaves();
}
std::int64_t lane_bytes_per_row(const Arena& a, const LeafBoxes& boxes) {
  return table_bytes_per_row(a, boxes) + 8 * boxes.n_slots;
}

// Whether a block of `vectors` lane vectors keeps its slot masses: within kMassesBytes, or where
// the model's lanes of kLargeBlockRows rows fit kLargeBlockBytes (then no block of it is larger
// than that budget, which is there for such blocks: one block of 64 rows of LightGBM(500 trees
// of 255 leaves) holds 431 MB of masses). A deep forest's block is past both: the masses of 8
// rows of a default RandomForest on housing would add 380 MiB to a call, for 1.05x in
// pgexact.estimate.
bool masses_kept(const Arena& a, const LeafBoxes& boxes, std::int64_t vectors) {
  const auto n_masses = static_cast<std::size_t>(vectors) * static_cast<std::size_t>(boxes.n_slots) * kLanes;
  return n_masses * sizeof(double) <= kMassesBytes || lane_bytes_per_row(a, boxes) * kLargeBlockRows <= kLargeBlockBytes;
}

// Rows per block for `per_row` bytes a row, before the cap and the rounding to lane vectors.
std::int64_t rows_within_budget(std::int64_t per_row) {
  const std::int64_t bytes = std::max<std::int64_t>(per_row, 1);
  const std::int64_t rows = std::max(kBlockBytes / bytes, std::min(kLargeBlockRows, kLargeBlockBytes / bytes));
  return std::max<std::int64_t>(8, std::min<std::int64_t>(rows, 4096));
}
}  // namespace

std::int64_t block_rows(const Arena& a, const LeafBoxes& boxes, std::int64_t sums_per_row, std::int64_t n_rows) {
  const std::int64_t sums = 8 * sums_per_row * a.n_trees();
  std::int64_t rows = rows_within_budget(lane_bytes_per_row(a, boxes) + sums);
  // A block that will not keep its slot masses (masses_kept; nor will a larger one) is sized
  // without them: a default RandomForest on housing has 17 MB of tables a row and 56 MB of
  // masses, and went in blocks of 8 rows holding 136 MB, each enumerating its lists again (60 %
  // of the samples of such a block); now in blocks of up to 24 rows (16 rows in one block
  // instead of two: 928 -> 652 s of CPU, 1.42x, the same bits).
  if (!masses_kept(a, boxes, (rows + kLanes - 1) / kLanes)) {
    rows = rows_within_budget(table_bytes_per_row(a, boxes) + sums);
  }
  // PGEXACT_BLOCK_ROWS caps it (tests: calls of several blocks on small models).
  const std::string cap = env_switch("PGEXACT_BLOCK_ROWS");
  if (!cap.empty()) rows = std::min(rows, std::max<std::int64_t>(8, std::atoll(cap.c_str())));
  rows = rows / kLanes * kLanes;
  if (n_rows <= rows) return rows;
  // As many blocks as the budget needs, of equal size (to a lane vector): every block pays the
  // same enumeration whatever its rows, so a short last block bought nothing, while the others
  // were larger than they needed to be: with blocks of 384 MiB, 64 rows of LightGBM(500 trees of
  // 255 leaves) went in 40 + 24, the 40 past the slot masses' budget (kMassesBytes), where 32 +
  // 32 kept them.
  const std::int64_t blocks = (n_rows + rows - 1) / rows;
  const std::int64_t even = (n_rows + blocks - 1) / blocks;
  return (even + kLanes - 1) / kLanes * kLanes;
}

void resize_lanes(const Arena& a, const LeafBoxes& boxes, std::int32_t vectors, Lanes& lanes) {
  lanes.vectors = vectors;
  lanes.n_bounds = static_cast<std::int64_t>(a.bounds.size());
  lanes.n_leaves = boxes.n_leaves();
  const auto v = static_cast<std::size_t>(vectors);
  // (Not zeroed: fill_block writes every element of table, out, weight and masses.)
  lanes.table.resize(v * static_cast<std::size_t>(lanes.n_bounds) * 2 * kLanes);
  lanes.out.resize(v * static_cast<std::size_t>(lanes.n_leaves) * kLanes);
  lanes.weight.resize(v * static_cast<std::size_t>(lanes.n_leaves) * kLanes);
  lanes.perturbable.assign(v * kLanes, 0);
  lanes.code.assign(lanes.out.size(), kNeverAlive);  // padding lanes: never alive
  lanes.n_slots = boxes.n_slots;
  lanes.boxes = &boxes;
  const std::size_t n_masses = v * static_cast<std::size_t>(boxes.n_slots) * kLanes;
  // PGEXACT_TABLE_MASSES=1 forces the table path (tests: it must give the same bits).
  lanes.table_masses = !masses_kept(a, boxes, vectors) || env_switch("PGEXACT_TABLE_MASSES") == "1" ||
                       (lanes.calibration && n_masses * sizeof(double) > kCalibrationMassesBytes);
  if (lanes.table_masses) {
    lanes.masses.clear();
    lanes.masses.shrink_to_fit();
  } else {
    lanes.masses.resize(n_masses);
  }
}

namespace {

// Fills lane l of vector v for row x: its boundary table and the features it can perturb.
void fill_lane(const Arena& a, const Noise& noise, const double* x, std::int32_t v, std::int32_t l, Lanes& lanes) {
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
}

// Each leaf's interval masses for the lanes of vector v, once their tables are filled: a vector
// at a time, so that a slot's lanes are written together (one row at a time wrote one double
// of every slot's cache line per row: 57 % of filling 64 rows of RandomForest(max_depth=10),
// and most of the estimate's set-up). Each lane's mass is the very operations of the passes'
// mass() on its own table cells (so a slot gives the bits the table would).
void fill_masses(const LeafBoxes& boxes, std::int32_t v, Lanes& lanes) {
  if (lanes.table_masses) return;
  const std::size_t d = static_cast<std::size_t>(boxes.n_features);
  const double* table = lanes.table.data() + (static_cast<std::size_t>(v) * lanes.n_bounds * 2) * kLanes;
  // (No pointer is formed into `masses` when it is empty: a model whose splits never narrow a
  // box has no slots.)
  const std::size_t masses_at = static_cast<std::size_t>(v) * static_cast<std::size_t>(lanes.n_slots) * kLanes;
  for (std::size_t leaf = 0; leaf < boxes.leaf_node.size(); ++leaf) {
    for (std::uint64_t f = boxes.constrained[leaf]; f != 0; f &= f - 1) {
      const std::size_t j = static_cast<std::size_t>(__builtin_ctzll(f));
      double* slot = lanes.masses.data() + masses_at + static_cast<std::size_t>(boxes.slot_of[leaf * d + j]) * kLanes;
      if ((boxes.set_features >> j) & 1u) {
        // A feature perturbed by category is never read from a slot (its entries carry their
        // own numbers): zeros, so that no slot is left unwritten.
        std::fill(slot, slot + kLanes, 0.0);
        continue;
      }
      interval_masses(table + static_cast<std::size_t>(boxes.lo[leaf * d + j]) * 2 * kLanes,
                      table + static_cast<std::size_t>(boxes.hi[leaf * d + j]) * 2 * kLanes, slot);
    }
  }
}

// A node of a tree with, per lane, the features on which that lane's row leaves its path.
struct RouteFrame {
  std::int32_t node;
  std::uint64_t mask[kLanes];
};

// Routes the rows of vector v (rows[l] for lane l) through every tree, marking per leaf and lane
// the features on which the lane's row leaves the leaf's path (out), and the leaf's value less
// the value of the leaf the row reaches (weight). The lanes go down each tree together, one
// visit of a node for all of them, and a leaf's lanes are written together.
void route_vector(const Arena& a, const LeafBoxes& boxes, const double* const* rows, std::int32_t v, Lanes& lanes,
                  std::vector<RouteFrame>& stack) {
  const std::size_t base = static_cast<std::size_t>(v) * static_cast<std::size_t>(lanes.n_leaves);
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    double home[kLanes] = {};
    stack.clear();
    stack.push_back(RouteFrame{a.tree_root[t], {}});
    while (!stack.empty()) {
      const RouteFrame f = stack.back();
      stack.pop_back();
      const std::int32_t n = f.node;
      if (a.is_leaf(n)) {
        std::uint64_t* out = lanes.out.data() + (base + static_cast<std::size_t>(boxes.node_leaf[n])) * kLanes;
        for (int l = 0; l < kLanes; ++l) {
          out[l] = f.mask[l];
          if (f.mask[l] == 0) home[l] = a.value[n];
        }
        continue;
      }
      const std::int32_t j = a.feature[n];
      RouteFrame left{a.left[n], {}}, right{a.right[n], {}};
      for (int l = 0; l < kLanes; ++l) {
        const bool goes_left = a.goes_left(n, rows[l][j]);
        left.mask[l] = goes_left ? f.mask[l] : (f.mask[l] | bit(j));
        right.mask[l] = goes_left ? (f.mask[l] | bit(j)) : f.mask[l];
      }
      stack.push_back(right);
      stack.push_back(left);
    }
    for (std::int32_t leaf = boxes.tree_first[t]; leaf < boxes.tree_first[t + 1]; ++leaf) {
      double* weight = lanes.weight.data() + (base + static_cast<std::size_t>(leaf)) * kLanes;
      const double value = a.value[boxes.leaf_node[leaf]];
      for (int l = 0; l < kLanes; ++l) weight[l] = value - home[l];
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
    auto row_of = [&](std::int64_t i) { return X + (r0 + (i < rows ? i : 0)) * d; };
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t i = 0; i < slots; ++i) {
      fill_lane(a, noise, row_of(i), static_cast<std::int32_t>(i / kLanes), static_cast<std::int32_t>(i % kLanes),
                lanes);
    }
    // Then a vector at a time: the slot masses once every lane's table is in (the loop above
    // ends with a barrier), and the routes.
    std::vector<RouteFrame> stack;
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int32_t v = 0; v < vectors; ++v) {
      fill_masses(boxes, v, lanes);
      const double* vector_rows[kLanes];
      for (int l = 0; l < kLanes; ++l) vector_rows[l] = row_of(static_cast<std::int64_t>(v) * kLanes + l);
      route_vector(a, boxes, vector_rows, v, lanes, stack);
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
