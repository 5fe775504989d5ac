#include "pgexact/exact/leaf_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pgexact {
namespace {

inline std::uint64_t bit(std::int32_t j) { return std::uint64_t{1} << j; }

// A numeric split the box can be narrowed by. A categorical split on a feature that is not
// perturbed by category never narrows it (such a feature is never perturbed, and the row
// weights route observed values exactly); splits on a feature perturbed by category narrow its
// set of cells instead (LeafBoxes::kNarrowsSet).
inline bool narrows(const Arena& a, std::int32_t n) { return !a.categorical(n) && a.bound_index[n] >= 0; }

// Walks every tree from the root with the box of the current node: intervals of boundary
// indices, and for a feature perturbed by category the id of the node's prefix set of cells
// (lo = hi = id), which is also each leaf's set.
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
    CategoryCells::Feature* cells = out.cells.empty() ? nullptr : out.cells.of(j);
    for (int side = 0; side < 2; ++side) {
      const bool left = side == 0;
      const std::int32_t old_lo = lo[j], old_hi = hi[j];
      std::uint64_t c = constrained;
      if (cells != nullptr) {
        const std::int32_t set = out.cells.narrow(*cells, lo[j], out.cells.split_of(n), left);
        out.set_after[2 * static_cast<std::size_t>(n) + static_cast<std::size_t>(side)] = set;
        lo[j] = hi[j] = set;
        if (set != 0) c |= bit(j);  // set 0: every cell (the split cuts no value x' can take)
      } else if (narrows(a, n)) {
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
// Which leaf's interval the box is follows from the masks alone but for features both paths
// cut, where v's interval is compared; so the classification costs few branches (emitting was
// most of the enumeration's time when every feature was classified by comparisons).
void emit(const LeafBoxes& boxes, std::int32_t u, std::int32_t v, std::uint64_t cut_u, const std::int32_t* lo,
          const std::int32_t* hi, PairList& out) {
  const std::size_t d = static_cast<std::size_t>(boxes.n_features);
  const std::uint64_t in_u = boxes.constrained[u], in_v = boxes.constrained[v];
  const std::uint64_t features = in_u | in_v;
  // Box = u's interval where v's path did not narrow it; = v's interval where u's path has no
  // cut; where both cut and v's narrowed u's, it is v's interval if that lies inside u's.
  std::uint64_t computed = 0;
  for (std::uint64_t f = in_u & cut_u; f != 0; f &= f - 1) {
    const auto j = static_cast<std::size_t>(__builtin_ctzll(f));
    const std::size_t at = static_cast<std::size_t>(v) * d + j;
    // (No branch: whether v's interval differs follows no pattern the CPU could predict.)
    const bool differs = ((boxes.lo[at] ^ lo[j]) | (boxes.hi[at] ^ hi[j])) != 0;
    computed |= static_cast<std::uint64_t>(differs) << j;
  }
  // A feature perturbed by category is always an intersection entry: whether its box equals a
  // leaf's own set depends on the cells, which depend on the call's rows, and the place of a
  // factor in the product (slots first) must not, or a row's bits would.
  computed |= features & boxes.set_features;
  const std::uint64_t from_v = (features & ~in_u) | (in_u & cut_u & ~computed);
  out.make_room();
  // The entries' counts are where the writes end (no bit counts: this file is built for the
  // baseline x86-64, where a bit count is a dozen instructions or a library call).
  std::uint8_t* const feature_begin = out.feature.data() + out.n_features;
  std::uint8_t* const slot_begin = out.slot.data() + out.n_slots;
  std::int32_t* const cut_begin = out.cut.data() + out.n_cuts;
  std::uint8_t* feature = feature_begin;
  std::uint8_t* slot = slot_begin;
  std::int32_t* cut = cut_begin;
  // A slot's byte: its rank among its leaf's slots (features in order, counted on the way),
  // v's flagged. Written every time, kept when it is a slot: no branch to mispredict. The pick
  // between u's rank and v's is a mask, not `of_v ? :`, which GCC 12 made a branch (taken or
  // not by feature: emit was 1.5x Clang's, the most of an 8-row call of XGBoost(500, depth 8)).
  int rank_u = 0, rank_v = 0;
  for (std::uint64_t f = features; f != 0; f &= f - 1) {
    const int j = __builtin_ctzll(f);
    const bool is_slot = ((computed >> j) & 1u) == 0;
    const int of_v = -static_cast<int>((from_v >> j) & 1u);  // all ones where v's slot
    *feature = static_cast<std::uint8_t>(j);
    *slot = static_cast<std::uint8_t>(((kSlotOfV | rank_v) & of_v) | (rank_u & ~of_v));
    feature += is_slot;
    slot += is_slot;
    rank_u += static_cast<int>((in_u >> j) & 1u);
    rank_v += static_cast<int>((in_v >> j) & 1u);
  }
  for (std::uint64_t f = computed; f != 0; f &= f - 1) {
    const int j = __builtin_ctzll(f);
    *feature++ = static_cast<std::uint8_t>(j);
    if (((boxes.set_features >> j) & 1u) != 0) {
      // u's set meets the prefix set the walk holds (category_cells.hpp): two row-free numbers.
      const CategoryCells::Feature& cells = *boxes.cells.of(j);
      out.make_room_category();
      double* both = out.category.data() + out.n_category;
      cells.probabilities(boxes.lo[static_cast<std::size_t>(u) * d + static_cast<std::size_t>(j)], lo[j], both, both + 1);
      *cut++ = -1 - static_cast<std::int32_t>(out.n_category / 2);
      *cut++ = 0;
      out.n_category += 2;
      continue;
    }
    *cut++ = lo[j];
    *cut++ = hi[j];
  }
  const auto count = static_cast<std::size_t>(feature - feature_begin);
  const auto n_slots = static_cast<std::size_t>(slot - slot_begin);
  out.n_features += count;
  out.n_slots += n_slots;
  out.n_cuts += static_cast<std::size_t>(cut - cut_begin);
  out.pairs[out.n_pairs++] = LeafPair{u, v, static_cast<std::uint8_t>(count), static_cast<std::uint8_t>(n_slots)};
}

// Depth-first walk of tree s inside the box of one leaf u of another tree.
struct PairWalker {
  const LeafBoxes& boxes;
  PairScratch& box;
  PairList& out;
  const LiveLeaves* live;
  std::int32_t u;
  std::uint64_t u_constrained, u_nan, u_zero;

  void walk(std::int32_t n, std::uint64_t nan_path, std::uint64_t zero_path, std::uint64_t cut_u) {
    if (live != nullptr && live->node[n] == 0) return;  // no live leaf below
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
      bool holds_value;  // the box holds some value x'_j can take
      if (b == LeafBoxes::kNarrowsSet) {
        // The box on j: the child's prefix set, met with u's set (category_cells.hpp).
        const std::int32_t prefix = boxes.set_after[2 * static_cast<std::size_t>(n) + static_cast<std::size_t>(side)];
        box.lo[j] = box.hi[j] = prefix;
        holds_value = boxes.cells.of(j)->meet(
            boxes.lo[static_cast<std::size_t>(u) * static_cast<std::size_t>(boxes.n_features) + static_cast<std::size_t>(j)],
            prefix);
      } else {
        holds_value = box.lo[j] < box.hi[j];
      }
      const std::uint64_t nan_next = ((node.nan_left != 0) == left) ? nan_path : (nan_path & ~bit(j));
      const std::uint64_t zero_next = ((node.zero_left != 0) == left) ? zero_path : (zero_path & ~bit(j));
      // Both leaves can hold a common value on j: an interval point, or a special value that
      // both paths route their way.
      const bool admissible = holds_value || ((u_nan & nan_next) >> j & 1u) != 0 ||
                              ((u_zero & zero_next) >> j & 1u) != 0;
      const bool cut = box.lo[j] != old_lo || box.hi[j] != old_hi;
      if (admissible) walk(left ? node.left : node.right, nan_next, zero_next, cut ? (cut_u | bit(j)) : cut_u);
      box.lo[j] = old_lo;
      box.hi[j] = old_hi;
    }
  }
};

}  // namespace

LeafBoxes::LeafBoxes(const Arena& a) : LeafBoxes(a, CategoryCells(a)) {}

LeafBoxes::LeafBoxes(const Arena& a, CategoryCells&& category_cells)
    : n_features(a.n_features), cells(std::move(category_cells)) {
  if (a.n_features > 64) throw std::invalid_argument("leaf boxes need at most 64 features");
  node_leaf.assign(static_cast<std::size_t>(a.n_nodes()), -1);
  if (!cells.empty()) set_after.assign(2 * static_cast<std::size_t>(a.n_nodes()), -1);
  BoxWalker walker{a, *this, {}, {}};
  walker.lo.resize(static_cast<std::size_t>(a.n_features));
  walker.hi.resize(static_cast<std::size_t>(a.n_features));
  for (std::int32_t j = 0; j < a.n_features; ++j) {
    walker.lo[j] = a.feature_bounds_begin[j];          // -inf
    walker.hi[j] = a.feature_bounds_begin[j + 1] - 1;  // +inf
    if (!cells.empty() && cells.of(j) != nullptr) {
      walker.lo[j] = walker.hi[j] = 0;  // every cell
      set_features |= bit(j);
    }
  }
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    tree_first.push_back(static_cast<std::int32_t>(leaf_node.size()));
    walker.walk(a.tree_root[t], 0, ~std::uint64_t{0}, ~std::uint64_t{0});
  }
  tree_first.push_back(static_cast<std::int32_t>(leaf_node.size()));
  const auto d = static_cast<std::size_t>(n_features);
  slot_of.assign(leaf_node.size() * d, -1);
  for (std::size_t leaf = 0; leaf < leaf_node.size(); ++leaf) {
    slot_first.push_back(n_slots);
    for (std::uint64_t f = constrained[leaf]; f != 0; f &= f - 1) {
      slot_of[leaf * d + static_cast<std::size_t>(__builtin_ctzll(f))] = n_slots++;
    }
  }
  slot_first.push_back(n_slots);
  nodes.resize(static_cast<std::size_t>(a.n_nodes()));
  for (std::int32_t n = 0; n < a.n_nodes(); ++n) {
    Node& node = nodes[n];
    if (a.is_leaf(n)) {
      node = Node{-1, -1, kNarrowsNothing, node_leaf[n], 0, 0, 0};
      continue;
    }
    const bool by_set = ((set_features >> a.feature[n]) & 1u) != 0;
    const std::int32_t bound = by_set ? kNarrowsSet : narrows(a, n) ? a.bound_index[n] : kNarrowsNothing;
    node = Node{a.left[n], a.right[n], bound, -1, static_cast<std::uint8_t>(a.feature[n]),
                static_cast<std::uint8_t>(a.goes_left(n, NAN)), static_cast<std::uint8_t>(a.goes_left(n, 0.0))};
  }
}

void enumerate_pairs(const Arena& a, const LeafBoxes& boxes, std::int64_t t, std::int64_t s, std::int32_t u_begin,
                     std::int32_t u_end, PairScratch& scratch, PairList& out, const LiveLeaves* live) {
  const std::int32_t d = boxes.n_features;
  const auto du = static_cast<std::size_t>(d);
  if (t == s) {
    for (std::int32_t u = u_begin; u < u_end; ++u) {
      if (live != nullptr && live->leaf[u] == 0) continue;
      const std::size_t base = static_cast<std::size_t>(u) * du;
      emit(boxes, u, u, 0, boxes.lo.data() + base, boxes.hi.data() + base, out);
      out.end_run(u);
    }
    return;
  }
  scratch.lo.resize(du);
  scratch.hi.resize(du);
  PairWalker walker{boxes, scratch, out, live, 0, 0, 0, 0};
  for (std::int32_t u = u_begin; u < u_end; ++u) {
    if (live != nullptr && live->leaf[u] == 0) continue;
    const std::size_t base = static_cast<std::size_t>(u) * du;
    std::copy(boxes.lo.begin() + base, boxes.lo.begin() + base + du, scratch.lo.begin());
    std::copy(boxes.hi.begin() + base, boxes.hi.begin() + base + du, scratch.hi.begin());
    walker.u = u;
    walker.u_constrained = boxes.constrained[u];
    walker.u_nan = boxes.nan_ok[u];
    walker.u_zero = boxes.zero_ok[u];
    walker.walk(a.tree_root[s], ~std::uint64_t{0}, ~std::uint64_t{0}, 0);
    out.end_run(u);
  }
}

}  // namespace pgexact
