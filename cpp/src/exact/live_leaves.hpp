// Internal to the leaf-pair kernel (not installed): the leaves one pass can use.
#pragma once

#include <cstdint>
#include <vector>

#include "pair_lanes.hpp"

namespace pgexact {
namespace pairs {

// The leaves some lane of a pass needs: code below `limit` (1 for one set, n_steps for curves,
// kNeverAlive for a greedy step) and a nonzero weight. A pair with a leaf that is not live adds
// exactly zero in every lane, so the sweep skips it; where few leaves are live (a small set, an
// early greedy step, a block of one row), only the live pairs are enumerated, which is the
// whole point for calls of a few rows: their cost follows the pairs the question can reach,
// not the model's.
struct Liveness {
  std::vector<std::uint8_t> leaf, node;  // per global leaf; per arena node (a live leaf below)
  std::vector<std::int32_t> tree_live;   // per tree: its live leaves
  // Every tree's nodes, children before parents (the model's structure: built on first use and
  // kept for the call's later passes).
  std::vector<std::int32_t> order;
  std::int64_t n_live = 0;
  bool restricted = false;  // enumerate the live pairs afresh instead of reading kept lists
  bool sparse = false;      // so few that even a kept full list costs more to read
  LiveLeaves view() const { return LiveLeaves{leaf.data(), node.data()}; }
};

// Live leaves at or above this share of all leaves: the kept full lists are read (a dead pair
// costs a few loads there), below it the live pairs are enumerated afresh.
constexpr double kRestrictShare = 0.6;
// Live leaves below this share: their pairs are a few percent of all, and enumerating them
// afresh (about 50 ns a pair) costs less than reading a kept full list (a few ns a pair, dead
// or alive), so they are enumerated even where a full list is kept or would be (greedy steps
// of one row of a deep forest, after per-row pruning).
constexpr double kSparseShare = 0.15;

// Marks the live leaves of rows [0, rows) of the block (codes below `limit`, nonzero weights),
// the nodes with a live leaf below, each tree's live leaves, and whether to restrict.
void find_live(const Arena& a, const LeafBoxes& boxes, const Lanes& lanes, std::int64_t rows, std::int8_t limit,
               Liveness& live);

}  // namespace pairs
}  // namespace pgexact
