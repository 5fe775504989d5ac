// Internal to the leaf-pair kernel (not installed): a block of rows in SIMD lanes.
//
// Everything a block of rows contributes to the pair sums (pair_kernel.hpp), laid out with the
// rows in lanes: boundary CDF tables, and per leaf its out mask, weight, interval masses and
// code; and the codes of one set, a greedy step or a greedy ranking's tail.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "pgexact/exact/leaf_pairs.hpp"
#include "pgexact/exact/noise.hpp"
#include "pgexact/exact/pair_passes.hpp"
#include "pgexact/model/arena.hpp"
#include "compensated_sum.hpp"

namespace pgexact {
namespace pairs {

// Rows per block: the pairs of a tree pair are enumerated once per block (and per greedy
// step), so a block holds as many rows as a fixed memory budget allows: per row, 16 bytes per
// boundary, 17 per leaf (out mask, weight, code), 8 per slot and the per-first-tree partial
// sums.
// Within a tree pair only the boundaries and leaves of its two trees are read, for every
// vector of rows, so a large block streams little more than a small one. A call of n_rows rows
// past one block goes in blocks of equal size (to a lane vector), as few as the budget allows.
std::int64_t block_rows(const Arena& a, const LeafBoxes& boxes, std::int64_t sums_per_row, std::int64_t n_rows);
// Lane vectors of the first block of a call of n_rows rows in blocks of `block` rows.
inline std::int64_t block_vectors(std::int64_t block, std::int64_t n_rows) {
  return (std::min(block, n_rows) + kLanes - 1) / kLanes;
}

// Bytes of slot masses a block may keep: deep forests have millions of leaves and a slot per
// leaf and feature cut, 64 bytes each for a vector of rows; beyond this the passes compute them
// from the tables instead (a little slower, same bits), so that no call adds more than about
// 1 GiB whatever the model. (Unless the model's lanes of 64 rows fit the large blocks' budget:
// masses_kept, pair_lanes.cpp.)
inline constexpr std::size_t kMassesBytes = std::size_t{256} << 20;
// A calibration computes slot masses from the tables past this: filling 250 MB of masses for 64
// rows of XGBoost(500 trees of depth 8), half of it the fresh pages' faults, was most of each of
// the estimate's two runs' set-up (0.80 -> 0.60 s for its 64-row ranking). The passes cost a
// little more per pair from the tables (8 rows: 1.14x), so such an estimate leans that way.
inline constexpr std::size_t kCalibrationMassesBytes = std::size_t{32} << 20;

inline std::uint64_t bit(std::int32_t j) { return std::uint64_t{1} << j; }

// Sums are compensated (compensated_sum.hpp).
using pgexact::add_compensated;

// The masses of the intervals between boundary cells lo and hi of a vector's table
// ([T | I][lane] each) in its eight lanes: the very operations of the passes' mass(), so that a
// kept slot, or one computed again, gives the bits the table would.
inline void interval_masses(const double* lo, const double* hi, double* masses) {
  for (int l = 0; l < kLanes; ++l) {
    const double m = (hi[l] - lo[l]) + (hi[kLanes + l] - lo[kLanes + l]);
    masses[l] = m > 0.0 ? m : 0.0;
  }
}

// A vector whose new elements are left uninitialised (resize does not zero them): a block's
// tables, routes and slot masses are written in full by fill_block, and zero-filling them first
// was a pass of its own over up to 576 MiB before the first unit of work, which also took the
// fresh pages' faults.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <typename T>
using BlockBuffer = std::vector<T, UninitializedAllocator<T>>;

// Everything a block of rows contributes to the pair sums, laid out with rows in lanes.
struct Lanes {
  std::int32_t vectors = 0;  // lane vectors in the block
  std::int64_t n_bounds = 0, n_leaves = 0;
  // (table, out, weight and masses: BlockBuffers, every element written by fill_block)
  BlockBuffer<double> table;              // [vector][boundary][T | I][lane]
  BlockBuffer<std::uint64_t> out;         // [vector][leaf][lane]: features x leaves the path on
  BlockBuffer<double> weight;             // [vector][leaf][lane]: y_u - f_t(x)
  std::vector<std::uint64_t> perturbable;  // [vector][lane]: the noise moves it and it is not NaN
  std::vector<std::int8_t> code;          // [vector][leaf][lane]: see LaneView
  BlockBuffer<double> masses;             // [vector][slot][lane]: leaf interval masses
  std::int64_t n_slots = 0;
  // Slot masses not kept (they would pass kMassesBytes): the passes compute them from the
  // tables and the leaves' boxes (LaneView), with the same operations and so the same bits.
  bool table_masses = false;
  // A calibration's block (RunControl::calibration: pgexact.estimate, results discarded) keeps
  // no slot masses past kCalibrationMassesBytes (resize_lanes), set by the driver.
  bool calibration = false;
  const LeafBoxes* boxes = nullptr;

  const double* at_bound(std::int32_t v, std::int32_t b) const {
    return table.data() + ((static_cast<std::size_t>(v) * n_bounds + b) * 2) * kLanes;
  }
  LaneView view(std::int32_t v) const {
    const std::size_t leaves = static_cast<std::size_t>(v) * static_cast<std::size_t>(n_leaves) * kLanes;
    return LaneView{at_bound(v, 0), weight.data() + leaves, code.data() + leaves,
                    table_masses ? nullptr
                                 : masses.data() + static_cast<std::size_t>(v) * static_cast<std::size_t>(n_slots) * kLanes,
                    out.data() + leaves, boxes->lo.data(), boxes->hi.data(), boxes->n_features, v, vectors};
  }
};

void resize_lanes(const Arena& a, const LeafBoxes& boxes, std::int32_t vectors, Lanes& lanes);

// Fills the lanes of rows r0 .. r0 + rows (padding lanes repeat the first row).
void fill_block(const Arena& a, const Noise& noise, const LeafBoxes& boxes, const double* X, std::int64_t r0,
                std::int64_t rows, int threads, Lanes& lanes);

// Sets the leaves' codes (LaneView) of rows [begin, end) of the block: code_of(row, out mask)
// for each leaf. Padding lanes keep kNeverAlive. A leaf's lanes at a time: a row at a time read
// and wrote a cache line per leaf and row.
template <typename CodeOf>
void code_leaves(std::int64_t begin, std::int64_t end, Lanes& lanes, CodeOf&& code_of) {
  const std::size_t stride = static_cast<std::size_t>(lanes.n_leaves) * kLanes;
  for (std::int64_t v0 = begin / kLanes * kLanes; v0 < end; v0 += kLanes) {
    const std::int64_t i0 = std::max(begin, v0), i1 = std::min(end, v0 + kLanes);
    const std::size_t first = static_cast<std::size_t>(v0 / kLanes) * stride;
    for (std::size_t at = first; at < first + stride; at += kLanes) {
      for (std::int64_t i = i0; i < i1; ++i) {
        const std::size_t lane = at + static_cast<std::size_t>(i - v0);
        lanes.code[lane] = code_of(i, lanes.out[lane]);
      }
    }
  }
}


// The leaves' codes for one set per row: 0 where the leaf admits x' with the row's set perturbed.
void code_set(const std::uint64_t* sets, std::int64_t rows, Lanes& lanes);
// The leaves' codes for a greedy step: set S and candidates per row.
void code_greedy(const std::uint64_t* sets, const std::uint64_t* candidates, std::int64_t rows, Lanes& lanes);
// The leaves' codes for a greedy ranking's tail (TailSets): per row its set S (perturbable
// features) and its r remaining candidates tail[row][c]; a leaf's code is the subset of the
// candidates (bit c) on which x leaves its path, or kNeverAlive where it leaves it on another
// feature not in S or on a candidate the row cannot perturb (NaN).
void code_tail(const std::uint64_t* sets, const std::int32_t* tail, std::int64_t r, std::int64_t rows, Lanes& lanes);

}  // namespace pairs
}  // namespace pgexact
