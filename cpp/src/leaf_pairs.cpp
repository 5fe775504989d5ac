#include "pgexact/leaf_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pgexact {
namespace {

inline std::uint64_t bit(std::int32_t j) { return std::uint64_t{1} << j; }

// Set bits of x, inline: this file is built for the baseline x86-64, where the builtin is a
// library call.
inline int bit_count(std::uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
}

// A numeric split the box can be narrowed by (categorical splits never narrow it: their
// features are never perturbed, and the row weights route observed values exactly).
inline bool narrows(const Arena& a, std::int32_t n) { return !a.categorical(n) && a.bound_index[n] >= 0; }

struct BoxWalker {
  const Arena& a;
  LeafBoxes& out;
  std::vector<std::int32_t> lo, hi;

  void walk(std::int32_t n, std::uint64_t constrained, std::uint64_t nan_ok, std::uint64_t zero_ok) {
    if (a.is_leaf(n)) {
      const auto leaf = static_cast<std::int32_t>(out.leaf_node.size());
      out.leaf_node.push_back(n);
      out.node_leaf[n] = leaf;
      out.lo.insert(out.lo.end(), lo.begin(), lo.end());
      out.hi.insert(out.hi.end(), hi.begin(), hi.end());
      out.constrained.push_back(constrained);
      out.nan_ok.push_back(nan_ok);
      out.zero_ok.push_back(zero_ok);
      return;
    }
    const std::int32_t j = a.feature[n];
    const bool nan_left = a.goes_left(n, NAN);
    const bool zero_left = a.goes_left(n, 0.0);
    for (int side = 0; side < 2; ++side) {
      const bool left = side == 0;
      const std::int32_t old_lo = lo[j], old_hi = hi[j];
      std::uint64_t c = constrained;
      if (narrows(a, n)) {
        const std::int32_t b = a.bound_index[n];
        if (left) hi[j] = std::max(lo[j], std::min(hi[j], b));
        else lo[j] = std::min(hi[j], std::max(lo[j], b));
        c |= bit(j);
      }
      const std::uint64_t nan_next = (nan_left == left) ? nan_ok : (nan_ok & ~bit(j));
      const std::uint64_t zero_next = (zero_left == left) ? zero_ok : (zero_ok & ~bit(j));
      walk(left ? a.left[n] : a.right[n], c, nan_next, zero_next);
      lo[j] = old_lo;
      hi[j] = old_hi;
    }
  }
};

// Appends the pair (u, v) with the current box: first the features on which the box is one
// leaf's own interval (a slot), then the proper intersections, each group in feature order.
// `cut_u` are the features on which v's path narrowed u's interval (elsewhere the box is u's).
void emit(const LeafBoxes& boxes, std::int32_t u, std::int32_t v, std::uint64_t cut_u, const std::int32_t* lo,
          const std::int32_t* hi, PairList& out) {
  const std::size_t d = static_cast<std::size_t>(boxes.n_features);
  const std::uint64_t u_own = boxes.constrained[u] & ~cut_u;
  const std::uint64_t features = boxes.constrained[u] | boxes.constrained[v];
  const auto count = static_cast<std::size_t>(bit_count(features));
  // Grown once per pair (and trimmed after) and written through pointers: per-entry
  // push_backs were a good part of the enumeration's time.
  const std::size_t f0 = out.feature.size(), s0 = out.slot.size(), c0 = out.cut.size();
  out.feature.resize(f0 + count);
  out.slot.resize(s0 + count);
  out.cut.resize(c0 + 2 * count);
  std::uint8_t* feature = out.feature.data() + f0;
  std::uint8_t* slot = out.slot.data() + s0;
  std::int32_t* cut = out.cut.data() + c0;
  const std::size_t ub = static_cast<std::size_t>(u) * d, vb = static_cast<std::size_t>(v) * d;
  std::uint64_t computed = 0;
  std::size_t n = 0;
  for (std::uint64_t f = features; f != 0; f &= f - 1) {
    const auto j = static_cast<std::size_t>(__builtin_ctzll(f));
    if ((u_own >> j) & 1u) {
      slot[n] = static_cast<std::uint8_t>(boxes.slot_of[ub + j] - boxes.slot_first[u]);
    } else if (boxes.lo[vb + j] == lo[j] && boxes.hi[vb + j] == hi[j]) {
      // v cuts j (else the box would be u's interval)
      slot[n] = static_cast<std::uint8_t>(kSlotOfV | (boxes.slot_of[vb + j] - boxes.slot_first[v]));
    } else {
      computed |= std::uint64_t{1} << j;
      continue;
    }
    feature[n++] = static_cast<std::uint8_t>(j);
  }
  const std::size_t n_slots = n;
  std::size_t c = 0;
  for (std::uint64_t f = computed; f != 0; f &= f - 1) {
    const int j = __builtin_ctzll(f);
    feature[n++] = static_cast<std::uint8_t>(j);
    cut[c++] = lo[j];
    cut[c++] = hi[j];
  }
  out.slot.resize(s0 + n_slots);
  out.cut.resize(c0 + c);
  out.pairs.push_back(LeafPair{u, v, static_cast<std::uint8_t>(count), static_cast<std::uint8_t>(n_slots)});
}

// Depth-first walk of tree s inside the box of one leaf u of another tree.
struct PairWalker {
  const LeafBoxes& boxes;
  PairScratch& box;
  PairList& out;
  std::int32_t u;
  std::uint64_t u_constrained, u_nan, u_zero;

  void walk(std::int32_t n, std::uint64_t nan_path, std::uint64_t zero_path, std::uint64_t cut_u) {
    const LeafBoxes::Node& node = boxes.nodes[n];
    if (node.left < 0) {
      emit(boxes, u, node.leaf, cut_u, box.lo.data(), box.hi.data(), out);
      return;
    }
    const std::int32_t j = node.feature;
    const std::int32_t b = node.bound;
    for (int side = 0; side < 2; ++side) {
      const bool left = side == 0;
      const std::int32_t old_lo = box.lo[j], old_hi = box.hi[j];
      if (b >= 0) {
        if (left) box.hi[j] = std::max(old_lo, std::min(old_hi, b));
        else box.lo[j] = std::min(old_hi, std::max(old_lo, b));
      }
      const std::uint64_t nan_next = ((node.nan_left != 0) == left) ? nan_path : (nan_path & ~bit(j));
      const std::uint64_t zero_next = ((node.zero_left != 0) == left) ? zero_path : (zero_path & ~bit(j));
      // Both leaves can hold a common value on j: an interval point, or a special value that
      // both paths route their way.
      const bool admissible = box.lo[j] < box.hi[j] || ((u_nan & nan_next) >> j & 1u) != 0 ||
                              ((u_zero & zero_next) >> j & 1u) != 0;
      const bool cut = box.lo[j] != old_lo || box.hi[j] != old_hi;
      if (admissible) walk(left ? node.left : node.right, nan_next, zero_next, cut ? (cut_u | bit(j)) : cut_u);
      box.lo[j] = old_lo;
      box.hi[j] = old_hi;
    }
  }
};

}  // namespace

LeafBoxes::LeafBoxes(const Arena& a) : n_features(a.n_features) {
  if (a.n_features > 64) throw std::invalid_argument("leaf boxes need at most 64 features");
  node_leaf.assign(static_cast<std::size_t>(a.n_nodes()), -1);
  BoxWalker walker{a, *this, {}, {}};
  walker.lo.resize(static_cast<std::size_t>(a.n_features));
  walker.hi.resize(static_cast<std::size_t>(a.n_features));
  for (std::int32_t j = 0; j < a.n_features; ++j) {
    walker.lo[j] = a.feature_bounds_begin[j];          // -inf
    walker.hi[j] = a.feature_bounds_begin[j + 1] - 1;  // +inf
  }
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    tree_first.push_back(static_cast<std::int32_t>(leaf_node.size()));
    walker.walk(a.tree_root[t], 0, ~std::uint64_t{0}, ~std::uint64_t{0});
  }
  tree_first.push_back(static_cast<std::int32_t>(leaf_node.size()));
  slot_of.assign(leaf_node.size() * static_cast<std::size_t>(n_features), -1);
  for (std::size_t leaf = 0; leaf < leaf_node.size(); ++leaf) {
    slot_first.push_back(n_slots);
    for (std::uint64_t f = constrained[leaf]; f != 0; f &= f - 1) {
      slot_of[leaf * static_cast<std::size_t>(n_features) + static_cast<std::size_t>(__builtin_ctzll(f))] = n_slots++;
    }
  }
  slot_first.push_back(n_slots);
  nodes.resize(static_cast<std::size_t>(a.n_nodes()));
  for (std::int32_t n = 0; n < a.n_nodes(); ++n) {
    Node& node = nodes[n];
    if (a.is_leaf(n)) {
      node = Node{-1, -1, -1, node_leaf[n], 0, 0, 0};
      continue;
    }
    node = Node{a.left[n], a.right[n], narrows(a, n) ? a.bound_index[n] : -1, -1,
                static_cast<std::uint8_t>(a.feature[n]), static_cast<std::uint8_t>(a.goes_left(n, NAN)),
                static_cast<std::uint8_t>(a.goes_left(n, 0.0))};
  }
}

void enumerate_pairs(const Arena& a, const LeafBoxes& boxes, std::int64_t t, std::int64_t s, std::int32_t u_begin,
                     std::int32_t u_end, PairScratch& scratch, PairList& out) {
  const std::int32_t d = boxes.n_features;
  const auto du = static_cast<std::size_t>(d);
  if (t == s) {
    for (std::int32_t u = u_begin; u < u_end; ++u) {
      const std::size_t base = static_cast<std::size_t>(u) * du;
      emit(boxes, u, u, 0, boxes.lo.data() + base, boxes.hi.data() + base, out);
    }
    return;
  }
  scratch.lo.resize(du);
  scratch.hi.resize(du);
  PairWalker walker{boxes, scratch, out, 0, 0, 0, 0};
  for (std::int32_t u = u_begin; u < u_end; ++u) {
    const std::size_t base = static_cast<std::size_t>(u) * du;
    std::copy(boxes.lo.begin() + base, boxes.lo.begin() + base + du, scratch.lo.begin());
    std::copy(boxes.hi.begin() + base, boxes.hi.begin() + base + du, scratch.hi.begin());
    walker.u = u;
    walker.u_constrained = boxes.constrained[u];
    walker.u_nan = boxes.nan_ok[u];
    walker.u_zero = boxes.zero_ok[u];
    walker.walk(a.tree_root[s], ~std::uint64_t{0}, ~std::uint64_t{0}, 0);
  }
}

}  // namespace pgexact
