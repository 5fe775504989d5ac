#include "live_leaves.hpp"

#include <algorithm>

namespace pgexact {
namespace pairs {

void find_live(const Arena& a, const LeafBoxes& boxes, const Lanes& lanes, std::int64_t rows, std::int8_t limit,
               Liveness& live) {
  const std::size_t n_leaves = static_cast<std::size_t>(boxes.n_leaves());
  live.leaf.assign(n_leaves, 0);
  live.node.assign(static_cast<std::size_t>(a.n_nodes()), 0);
  live.tree_live.assign(static_cast<std::size_t>(a.n_trees()), 0);
  const std::size_t stride = n_leaves * kLanes;
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::size_t first = static_cast<std::size_t>(i / kLanes) * stride + static_cast<std::size_t>(i % kLanes);
    for (std::size_t leaf = 0, at = first; leaf < n_leaves; ++leaf, at += kLanes) {
      if (lanes.code[at] < limit && lanes.weight[at] != 0.0) live.leaf[leaf] = 1;
    }
  }
  if (live.order.empty()) {
    // Each tree in pre-order, reversed: children come before their parents.
    for (std::int64_t t = 0; t < a.n_trees(); ++t) {
      const std::size_t begin = live.order.size();
      live.order.push_back(a.tree_root[t]);
      for (std::size_t k = begin; k < live.order.size(); ++k) {
        const std::int32_t n = live.order[k];
        if (!a.is_leaf(n)) {
          live.order.push_back(a.left[n]);
          live.order.push_back(a.right[n]);
        }
      }
    }
    std::reverse(live.order.begin(), live.order.end());
  }
  for (const std::int32_t n : live.order) {
    live.node[n] = a.is_leaf(n) ? live.leaf[static_cast<std::size_t>(boxes.node_leaf[n])]
                                : static_cast<std::uint8_t>(live.node[a.left[n]] | live.node[a.right[n]]);
  }
  live.n_live = 0;
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    for (std::int32_t leaf = boxes.tree_first[t]; leaf < boxes.tree_first[t + 1]; ++leaf) {
      live.tree_live[t] += live.leaf[static_cast<std::size_t>(leaf)];
    }
    live.n_live += live.tree_live[t];
  }
  live.restricted = static_cast<double>(live.n_live) < kRestrictShare * static_cast<double>(n_leaves);
  live.sparse = static_cast<double>(live.n_live) < kSparseShare * static_cast<double>(n_leaves);
}

}  // namespace pairs
}  // namespace pgexact
