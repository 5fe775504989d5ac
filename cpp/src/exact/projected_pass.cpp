// One build of the projected passes (pair_passes.hpp: PairPasses::projected, projected_greedy,
// projected_tail); CMake compiles this file once per x86-64 level, like pair_passes.cpp, with
// PGEXACT_ISA naming the namespace.
//
// A projected tree pair (ProjectedView) is summed per set X of a lane (a prefix of its ranking,
// its set, a greedy step's S or S + {j}, a tail's S + A):
//   A_X(g) = sum over leaves u of group g live in X of w_u * prod_{own entries of u in X} D
// for both trees' groups, then
//   V_X = sum over meets (g, h) of A_X(g) A_X(h) prod_{entries of the meet in X} D,
// each lane on its own (a dead leaf adds an exact zero in its lane); where both trees' groups
// are grids (ProjectedGrid), the same sum as a contraction of the two grids, one feature of C at
// a time (grid_contract, grid_dot), in every pass. A leaf is live in X where
// x leaves its path only on features of X (its code says so: LaneView), and an entry is a
// factor where X holds its feature. So the sum changes only with X's features either tree
// splits on: in a curve, a prefix at which no lane's set gains one repeats the previous
// prefix's value, bit for bit; in a greedy step, S + {j} for any other j has S's value. A
// row's value never depends on its lane neighbours: every lane does the same operations in the
// same order, and what is skipped (a leaf, a group or a set no lane has live) adds exact zeros.
#include <algorithm>
#include <cstring>
#include <vector>

#ifndef PGEXACT_ISA
#define PGEXACT_ISA isa_base
#endif
#include "lane_vectors.hpp"

namespace pgexact::PGEXACT_ISA {

namespace {

// The masses of leaf `leaf`'s own entries [e, e + n_own) (of tree `side` of the pair) that can
// be a factor (feature below `top`) into D, their features into feature; returns how many.
__attribute__((always_inline)) inline std::int32_t own_masses(const ProjectedView& pv, int side, const LaneView& lanes,
                                                              const ProjectedLeaf& leaf, std::size_t e, int top,
                                                              vd* D, std::int32_t* feature) {
  std::int32_t n = 0;
  for (std::int32_t o = 0; o < leaf.n_own; ++o, ++e) {
    const std::int32_t j = pv.own_feature[side][e];
    if (j >= top) continue;  // in no lane's set: a factor of 1.0
    if (lanes.masses != nullptr) {
      D[n] = load_d(lanes.masses + static_cast<std::size_t>(pv.own_slot[side][e]) * kLanes);
    } else {  // the leaf's own interval, from the tables (the same bits as a kept slot)
      const std::size_t box = static_cast<std::size_t>(leaf.leaf) * static_cast<std::size_t>(lanes.n_features) +
                              static_cast<std::size_t>(j);
      D[n] = mass(lanes, lanes.leaf_lo[box], lanes.leaf_hi[box]);
    }
    feature[n++] = j;
  }
  return n;
}

// The masses of a meet's entries [m, m + count) that can be a factor, as own_masses, from the
// masses of the view's intervals (interval_masses).
__attribute__((always_inline)) inline std::int32_t meet_masses(const ProjectedView& pv, const vd* interval_mass,
                                                               std::size_t m, std::int32_t count, int top, vd* D,
                                                               std::int32_t* feature) {
  std::int32_t n = 0;
  for (std::int32_t x = 0; x < count; ++x, ++m) {
    const std::int32_t j = pv.meet_feature[m];
    if (j >= top) continue;
    D[n] = interval_mass[pv.meet_interval[m]];
    feature[n++] = j;
  }
  return n;
}

// The masses of the view's intervals (the meet entries'), each computed once, into `mass_of`.
__attribute__((always_inline)) inline void interval_masses(const ProjectedView& pv, const LaneView& lanes,
                                                           vd* mass_of) {
  for (std::size_t i = 0; i < pv.n_intervals; ++i) {
    mass_of[i] = mass(lanes, pv.interval_cut[2 * i], pv.interval_cut[2 * i + 1]);
  }
}

// Calls body(leaf, at, code, e) for every leaf of tree `side` of the pair that some lane has
// not marked kNeverAlive, `at` the offset of its lanes and `e` its first own entry; steps over
// the others (exact zeros in every lane of every set).
template <typename Body>
__attribute__((always_inline)) inline void for_each_leaf_live_somewhere(const ProjectedView& pv, int side,
                                                                        const LaneView& lanes, Body&& body) {
  std::size_t e = 0;
  const std::int32_t n_leaves = side == 0 ? pv.n_first : pv.n_second;
  for (std::int32_t i = 0; i < n_leaves; ++i) {
    const ProjectedLeaf& leaf = pv.leaves[side][i];
    const std::size_t at = static_cast<std::size_t>(leaf.leaf) * kLanes;
    const vb code = load_b(lanes.code + at);
    if (!all_never_alive(code)) body(leaf, at, code, e);
    e += leaf.n_own;
  }
}

// Where one tree's group sums of a pass go: the sweep's kept ones (filled once), or room taken
// from the pass's own GroupSums. sum/live: where GroupSumsLayout puts each group's sets;
// live_sets: the tree's sets (bit si) in which some group is live (greedy steps and tails).
struct TreeSums {
  const vd* sum;
  const std::uint8_t* live;
  std::uint64_t live_sets;
};
// Asks for the first tree's kept sums (`cells` lane vectors) ahead of their reads, where filled
// already. They come back from memory: a tile's kept sums are tens of MB (CatBoost(1000): 16
// trees, about 27 C each, 8 vectors of rows), and a tree's entry on C recurs only after some 37
// second trees. Asked for before the second tree's sums and the intervals' masses are computed,
// the loads overlap that work: 1.08-1.1x on CatBoost(1000)'s 64-row curve and 32-row ranking.
// (The second tree's, read by the tile's first trees one after the other, are in cache: asking
// for them too gained nothing; nor did asking for the next vector's first sums from the driver.)
__attribute__((always_inline)) inline void prefetch_kept(const TreeGroupSums* kept, std::size_t cells) {
  if (kept == nullptr || !kept->filled) return;
  for (std::size_t c = 0; c < cells; ++c) __builtin_prefetch(kept->sums + c * kLanes);
}

// Calls fill(sum, live) to compute the sums of `cells` cells (zeroed first; and their live
// flags, where the pass keeps them: local_live not null), unless `kept` has them already;
// returns where they are, and the sets fill returned live (kept with the sums).
template <typename Fill>
__attribute__((always_inline)) inline TreeSums tree_sums_of(TreeGroupSums* kept, std::size_t cells, vd*& local,
                                                            std::uint8_t*& local_live, Fill&& fill) {
  if (kept != nullptr && kept->filled) {
    return TreeSums{reinterpret_cast<const vd*>(kept->sums), kept->live, kept->live_sets};
  }
  vd* sum = local;
  std::uint8_t* live = local_live;
  if (kept != nullptr) {
    sum = reinterpret_cast<vd*>(kept->sums);
    live = local_live != nullptr ? kept->live : nullptr;
    const vd zero = {};
    for (std::size_t c = 0; c < cells; ++c) sum[c] = zero;
    if (live != nullptr) std::memset(live, 0, cells);
  } else {  // (the GroupSums are zeroed)
    local += cells;
    if (local_live != nullptr) local_live += cells;
  }
  const std::uint64_t live_sets = fill(sum, live);
  if (kept != nullptr) {
    kept->filled = true;
    kept->live_sets = live_sets;
  }
  return TreeSums{sum, live, live_sets};
}

// The first half of V for a projected pair whose groups are grids (ProjectedGrid): the first
// tree's sums per cell of its grid, first_cells (row-major over C), contracted one feature c of
// C at a time with c's factors (mass: interval_mass in the lanes where in_set[c], one elsewhere
// and on the line), into room; returns where the result is, per cell of the second grid. It
// depends on the first tree's sums and on which lanes' sets hold C's features only, so sets that
// differ elsewhere (a feature only the second tree splits on) share it. Every lane does the same
// operations in the same order, so a lane's value never depends on the others
// (eval_projected_row puts a row's prefixes in the lanes and gets the bits of lane 0 of
// eval_projected for each).
__attribute__((always_inline)) inline const vd* grid_contract(const ProjectedView& pv, const vd* first_cells,
                                                              const vi* in_set, const vd* interval_mass,
                                                              vd (&room)[2][kMaxGridTensor]) {
  const ProjectedGrid& grid = *pv.grid;
  const vd zero = {};
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  // The tensor before feature c: axes (a_c, a_c+1 .. a_m-1, b_0 .. b_c-1), a_c outermost, the
  // rest row-major; after it, (a_c+1 .. a_m-1, b_0 .. b_c), b_c innermost.
  const vd* in = first_cells;
  std::int32_t size = pv.groups_first;
  for (std::int32_t c = 0; c < grid.n_shared; ++c) {
    const std::int32_t rest = size / grid.n_first[c];
    const std::int32_t n_b = grid.n_second[c];
    vd* out = room[c & 1];
    // The factors come by b (ProjectedGrid): the first of each b sets its cells.
    std::int32_t b_set = -1;
    for (std::uint32_t f = grid.factor_begin[c]; f < grid.factor_begin[c + 1]; ++f) {
      const GridFactor factor = pv.grid_factors[f];
      vd* to = out + factor.b;
      if (factor.interval == kGridEmpty) {
        for (std::int32_t r = 0; r < rest; ++r) to[static_cast<std::size_t>(r) * n_b] = zero;
        continue;
      }
      const vd F = factor.interval == kGridLine ? one : select(in_set[c], interval_mass[factor.interval], one);
      const vd* from = in + static_cast<std::size_t>(factor.a) * static_cast<std::size_t>(rest);
      if (factor.b != b_set) {
        for (std::int32_t r = 0; r < rest; ++r) to[static_cast<std::size_t>(r) * n_b] = F * from[r];
        b_set = factor.b;
      } else {
        for (std::int32_t r = 0; r < rest; ++r) to[static_cast<std::size_t>(r) * n_b] += F * from[r];
      }
    }
    in = out;
    size = rest * n_b;
  }
  return in;
}

// V: grid_contract's result summed against the second tree's sums per cell of its grid.
__attribute__((always_inline)) inline vd grid_dot(const ProjectedView& pv, const vd* contracted,
                                                  const vd* second_cells) {
  vd V = {};
  for (std::int32_t cell = 0; cell < pv.groups_second; ++cell) V += contracted[cell] * second_cells[cell];
  return V;
}

// Both: V of one set.
__attribute__((always_inline)) inline vd grid_sum(const ProjectedView& pv, const vd* first_cells,
                                                  const vd* second_cells, const vi* in_set, const vd* interval_mass) {
  vd room[2][kMaxGridTensor];
  return grid_dot(pv, grid_contract(pv, first_cells, in_set, interval_mass, room), second_cells);
}

// Where a pass keeps a tree's group sums, group g's at its set index si (a curve's step, a
// one-row curve's chunk of eight prefixes, a greedy step's S or S + {j}, a tail's S + A): a
// grid's set by set, in cell order ([set][cell]: a set's sums are the grid's cells in order,
// which the contraction reads in place; gathering them from [group][set] was about 30 % of the
// samples of CatBoost(1000)'s 64-row curve, which then took 1.1x less time, and a quarter of
// its 64-row ranking's tail pass, the ranking 1.09x faster since), the others by group
// ([group][set]: a meet reads its groups' sets in turn). Live flags, where a pass keeps them,
// at the same index. A pass takes a group's place once (at) and steps by set_stride.
struct GroupSumsLayout {
  const std::uint8_t* cell;  // per group its cell (TreeGrouping::group_cell), null: not a grid
  std::size_t n_groups, n_sets;
  std::size_t at(std::int32_t g, std::int32_t si) const {
    return cell != nullptr ? static_cast<std::size_t>(si) * n_groups + cell[g]
                           : static_cast<std::size_t>(g) * n_sets + static_cast<std::size_t>(si);
  }
  std::size_t set_stride() const { return cell != nullptr ? n_groups : 1; }
  // A grid's sums at set index si: its cells, in order.
  std::size_t cells_at(std::int32_t si) const { return static_cast<std::size_t>(si) * n_groups; }
};

// Per feature c of a grid's C, the lanes whose set S holds it (a factor there), into in_s.
__attribute__((always_inline)) inline void grid_lanes_holding(const ProjectedGrid& grid, vu S, vi* in_s) {
  const vu zero_u = {};
  for (std::int32_t c = 0; c < grid.n_shared; ++c) {
    in_s[c] = (vi)(((S >> static_cast<std::uint64_t>(grid.feature[c])) & 1u) != zero_u);
  }
}

// Per feature c of a grid's C, the lanes in which it is a factor at prefix k: its feature has
// entered their ranking by then (enters: per feature below top, a vector of lanes in a curve,
// a prefix of lane 0's ranking in a row's curve, whose k holds a prefix per lane).
template <typename Enters, typename Prefix>
__attribute__((always_inline)) inline void grid_lanes_entered(const ProjectedGrid& grid, const Enters* enters, int top,
                                                              Prefix k, vi* in_set) {
  const vi never = {};
  for (std::int32_t c = 0; c < grid.n_shared; ++c) {
    const std::int32_t j = grid.feature[c];
    in_set[c] = j < top ? (enters[j] <= k) : never;
  }
}

// Per group of a tree's sums (live flags at layout.at), the sets i < n_sets (bit i of
// out[group]) in which some leaf of the group is live: cell_of(i) is the tree's set index of
// set i, or -1 where the tree has no sum for it. A meet sums the sets where both its
// groups are (elsewhere it adds an exact zero in every lane), so the flags are read once per
// group and set, not per meet and set.
template <typename Word, typename CellOf>
__attribute__((always_inline)) inline void group_live_sets(const TreeSums& tree, const GroupSumsLayout& layout,
                                                           std::int32_t n_sets, CellOf&& cell_of, Word* out) {
  const auto n_groups = static_cast<std::int32_t>(layout.n_groups);
  const std::size_t stride = layout.set_stride();
  for (std::int32_t g = 0; g < n_groups; ++g) {
    const std::uint8_t* live = tree.live + layout.at(g, 0);
    Word bits = 0;
    for (std::int32_t i = 0; i < n_sets; ++i) {
      const std::int32_t si = cell_of(i);
      if (si >= 0) bits |= static_cast<Word>(live[static_cast<std::size_t>(si) * stride] != 0) << i;
    }
    out[g] = bits;
  }
}

// Per group and set, A_X(g), and whether some leaf of g is live in X (GroupSumsLayout) (or a pair's
// interval masses, flags unused): on the stack where they fit (a CatBoost tree pair has about
// 30 groups, a greedy step up to 9 sets on 8 features, a tail 16), else on the heap. Zeroed.
class GroupSums {
 public:
  explicit GroupSums(std::size_t cells) {
    if (cells > kStackCells) {
      // Doubles, aligned by hand to a vector: a std::vector of the lane vectors came back
      // misaligned from this file's per-level builds (an aligned store then faulted).
      heap_sum_.resize((cells + 1) * kLanes);
      heap_live_.resize(cells);
      const auto at = reinterpret_cast<std::uintptr_t>(heap_sum_.data());
      sum = reinterpret_cast<vd*>(at + (alignof(vd) - at % alignof(vd)) % alignof(vd));
      live = heap_live_.data();
    }
    const vd zero = {};
    for (std::size_t c = 0; c < cells; ++c) {
      sum[c] = zero;
      live[c] = 0;
    }
  }
  GroupSums(const GroupSums&) = delete;
  GroupSums& operator=(const GroupSums&) = delete;

 private:
  static constexpr std::size_t kStackCells = 1024;
  vd stack_sum_[kStackCells];
  std::uint8_t stack_live_[kStackCells];
  std::vector<double> heap_sum_;
  std::vector<std::uint8_t> heap_live_;

 public:
  vd* sum = stack_sum_;
  std::uint8_t* live = stack_live_;
};

}  // namespace

namespace {

// Adds, for the leaves of tree `side` of the pair, each leaf's product at the steps
// step[0 .. n_step) (prefixes) from its first live one, into out at layout.at(its group, si), in
// leaf order at each step; group_from[g]: the first step index at which a leaf of group g is
// added (n_step: none; set by the caller).
__attribute__((always_inline)) inline void add_leaf_sums(const ProjectedView& pv, int side, const LaneView& lanes,
                                                         int top, const vi* enters, const std::int64_t* step,
                                                         std::int32_t n_step, const GroupSumsLayout& layout, vd* out,
                                                         std::int32_t* group_from) {
  const vd zero = {};
  std::size_t e = 0;
  const std::int32_t n_leaves = side == 0 ? pv.n_first : pv.n_second;
  for (std::int32_t i = 0; i < n_leaves; ++i) {
    const ProjectedLeaf& leaf = pv.leaves[side][i];
    const std::size_t at = static_cast<std::size_t>(leaf.leaf) * kLanes;
    const vb code_b = load_b(lanes.code + at);
    const std::int8_t first_live = min_lane(code_b);
    std::int32_t from = 0;
    while (from < n_step && step[from] < first_live) ++from;
    if (from == n_step) {
      e += leaf.n_own;
      continue;
    }
    const vi code = widen<std::int64_t>(code_b);
    const vd w = load_d(lanes.weight + at);
    vd D[64];
    std::int32_t feature[64];
    const std::int32_t n = own_masses(pv, side, lanes, leaf, e, top, D, feature);
    e += leaf.n_own;
    vi in_from[64];
    for (std::int32_t x = 0; x < n; ++x) in_from[x] = enters[feature[x]];
    const std::int32_t g = leaf.group;
    if (from < group_from[g]) group_from[g] = from;
    vd* at_group = out + layout.at(g, 0);
    const std::size_t stride = layout.set_stride();
    for (std::int32_t si = from; si < n_step; ++si) {
      const std::int64_t k = step[si];
      vd a = w;
      for (std::int32_t x = 0; x < n; ++x) a = select(in_from[x] <= k, a * D[x], a);
      const vi alive = code <= k;
      at_group[static_cast<std::size_t>(si) * stride] += select(alive, a, zero);
    }
  }
}

// The steps (prefixes, as bits) listed in order into step; returns how many.
__attribute__((always_inline)) inline std::int32_t list_steps(std::uint64_t steps, std::int64_t* step) {
  std::int32_t n = 0;
  for (std::uint64_t f = steps; f != 0; f &= f - 1) step[n++] = __builtin_ctzll(f);
  return n;
}

// Index, among `steps`, of the last one at or before prefix k (prefix 0 is always a step).
__attribute__((always_inline)) inline std::int32_t step_at(std::uint64_t steps, std::int64_t k) {
  const std::uint64_t upto = k >= 63 ? ~std::uint64_t{0} : (std::uint64_t{2} << k) - 1;
  return __builtin_popcountll(steps & upto) - 1;
}

}  // namespace

void eval_projected(const ProjectedView& pv, const LaneView& lanes, const CurveSets& c, std::int64_t n_steps,
                    double mult, double* sum, double* comp) {
  const int top = top_feature(c.sets + (n_steps - 1) * kLanes);
  // Per feature below `top`, the first prefix whose set holds it, per lane (as eval_curve), and
  // the prefixes at which some lane's set gains it: the pair's steps, and each tree's.
  vi enters[64];
  std::uint64_t steps = 1;  // prefix 0, then where a split feature of either tree enters
  std::uint64_t first_steps = 1, second_steps = 1;
  for (int j = 0; j < top; ++j) {
    const vi never = {kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive,
                      kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive};
    vi first = never;
    if (c.enters != nullptr) {
      first = (vi)load_u(reinterpret_cast<const std::uint64_t*>(c.enters + j * kLanes));
    } else {
      for (std::int64_t k = n_steps - 1; k >= 0; --k) {
        first = select(holds(load_u(c.sets + k * kLanes), j), vi{} + k, first);
      }
    }
    enters[j] = first;
    if (((pv.features >> j) & 1u) == 0) continue;
    std::uint64_t gains = 0;
    for (int l = 0; l < kLanes; ++l) {
      if (first[l] < n_steps) gains |= std::uint64_t{1} << first[l];
    }
    steps |= gains;
    if (((pv.first_features >> j) & 1u) != 0) first_steps |= gains;
    if (((pv.second_features >> j) & 1u) != 0) second_steps |= gains;
  }
  // The prefixes summed (the others repeat the value before them): step[i] is the i-th.
  std::int64_t step[64];
  const std::int32_t n_summed = list_steps(steps, step);
  const vd zero = {};
  // Each tree's group sums A(g) at its own steps (GroupSumsLayout): a tree's products and
  // liveness change only at its steps, so at any prefix they are those of its last step at or
  // before it, the same operations in the same order. They may come from the sweep's caches
  // (TreeGroupSums), filled by the first pair that needed them. first_from / second_from: per
  // group, the first prefix at which one of its leaves is live in some lane.
  std::int64_t first_step[64], second_step[64];
  const std::int32_t n_first_steps = list_steps(first_steps, first_step);
  const std::int32_t n_second_steps = list_steps(second_steps, second_step);
  std::int64_t first_from[kMaxProjectedLeaves], second_from[kMaxProjectedLeaves];
  const std::size_t first_cells = static_cast<std::size_t>(n_first_steps) * static_cast<std::size_t>(pv.groups_first);
  const std::size_t second_cells =
      static_cast<std::size_t>(n_second_steps) * static_cast<std::size_t>(pv.groups_second);
  // The sums of the trees the caches have no room for.
  GroupSums groups((pv.first_sums == nullptr ? first_cells : 0) + (pv.second_sums == nullptr ? second_cells : 0));
  vd* local = groups.sum;
  // The sums of tree `side`'s groups at its steps (kept, or summed here), and each group's first
  // live prefix into from[].
  const GroupSumsLayout first_layout{pv.group_cell[0], static_cast<std::size_t>(pv.groups_first),
                                     static_cast<std::size_t>(n_first_steps)};
  const GroupSumsLayout second_layout{pv.group_cell[1], static_cast<std::size_t>(pv.groups_second),
                                      static_cast<std::size_t>(n_second_steps)};
  auto tree_sums = [&](TreeGroupSums* kept, int side, const std::int64_t* tree_step, std::int32_t n_tree_steps,
                       const GroupSumsLayout& layout, std::size_t cells, std::int64_t* from) -> const vd* {
    const auto n_groups = static_cast<std::int32_t>(layout.n_groups);
    std::uint8_t* no_flags = nullptr;
    const bool filled = kept != nullptr && kept->filled;
    const TreeSums sums = tree_sums_of(kept, cells, local, no_flags, [&](vd* out, std::uint8_t*) {
      std::int32_t from_index[kMaxProjectedLeaves];
      for (std::int32_t g = 0; g < n_groups; ++g) from_index[g] = n_tree_steps;
      add_leaf_sums(pv, side, lanes, top, enters, tree_step, n_tree_steps, layout, out, from_index);
      for (std::int32_t g = 0; g < n_groups; ++g) {
        from[g] = from_index[g] == n_tree_steps ? kNeverAlive : tree_step[from_index[g]];
        if (kept != nullptr) kept->first_live[g] = static_cast<std::int8_t>(from[g]);
      }
      return std::uint64_t{0};
    });
    if (filled) {
      for (std::int32_t g = 0; g < n_groups; ++g) from[g] = kept->first_live[g];
    }
    return sums.sum;
  };
  prefetch_kept(pv.first_sums, first_cells);
  const vd* const first_sum =
      tree_sums(pv.first_sums, 0, first_step, n_first_steps, first_layout, first_cells, first_from);
  const vd* const second_sum =
      tree_sums(pv.second_sums, 1, second_step, n_second_steps, second_layout, second_cells, second_from);
  // Per summed prefix, the index of each tree's step that holds its sums.
  std::int32_t first_at[64], second_at[64];
  for (std::int32_t si = 0; si < n_summed; ++si) {
    first_at[si] = step_at(first_steps, step[si]);
    second_at[si] = step_at(second_steps, step[si]);
  }
  // A group's first live prefix is one of its tree's steps, hence a summed one: its index.
  auto summed_index = [&](std::int64_t k) {
    return k == kNeverAlive ? n_summed : step_at(steps, k);
  };
  // Meets: each takes its masses once and adds its product at every summed prefix from the
  // later of its groups' first live ones, in meet order at each prefix.
  GroupSums intervals(pv.n_intervals);
  interval_masses(pv, lanes, intervals.sum);
  vd value[64];
  for (std::int32_t si = 0; si < n_summed; ++si) value[si] = zero;
  if (pv.grid != nullptr) {
    // From the first summed prefix at which both trees have a group live in some lane (before
    // it every cell is an exact zero), the contraction of the grids' sums at each.
    std::int64_t live_first = kNeverAlive, live_second = kNeverAlive;
    for (std::int32_t g = 0; g < pv.groups_first; ++g) live_first = std::min(live_first, first_from[g]);
    for (std::int32_t h = 0; h < pv.groups_second; ++h) live_second = std::min(live_second, second_from[h]);
    const std::int64_t live_from = std::max(live_first, live_second);
    // (Both trees' sums are in cell order, step by step: GroupSumsLayout.)
    const ProjectedGrid& grid = *pv.grid;
    vi in_set[kMaxGridFeatures];
    for (std::int32_t si = live_from == kNeverAlive ? n_summed : summed_index(live_from); si < n_summed; ++si) {
      grid_lanes_entered(grid, enters, top, step[si], in_set);
      value[si] = grid_sum(pv, first_sum + first_layout.cells_at(first_at[si]),
                           second_sum + second_layout.cells_at(second_at[si]), in_set, intervals.sum);
    }
  }
  std::size_t m = 0;  // entries of meet q start here
  for (std::size_t q = 0; q < pv.n_meets && pv.grid == nullptr; ++q) {
    const ProjectedMeet& meet = pv.meets[q];
    const std::int64_t live_from = std::max(first_from[meet.g], second_from[meet.h]);
    if (live_from == kNeverAlive) {  // an exact zero in every lane at every prefix
      m += meet.count;
      continue;
    }
    const std::int32_t from = summed_index(live_from);
    vd D[64];
    std::int32_t feature[64];
    const std::int32_t n = meet_masses(pv, intervals.sum, m, meet.count, top, D, feature);
    m += meet.count;
    vi in_from[64];
    for (std::int32_t x = 0; x < n; ++x) in_from[x] = enters[feature[x]];
    const vd* first_g = first_sum + first_layout.at(meet.g, 0);
    const vd* second_h = second_sum + second_layout.at(meet.h, 0);
    const std::size_t first_stride = first_layout.set_stride(), second_stride = second_layout.set_stride();
    for (std::int32_t si = from; si < n_summed; ++si) {
      vd P = first_g[static_cast<std::size_t>(first_at[si]) * first_stride] *
             second_h[static_cast<std::size_t>(second_at[si]) * second_stride];
      const std::int64_t k = step[si];
      for (std::int32_t x = 0; x < n; ++x) P = select(in_from[x] <= k, P * D[x], P);
      value[si] += P;
    }
  }
  // The prefixes in order: a summed one's value, or the last summed one's again.
  vd last = zero;
  std::int32_t si = 0;
  for (std::int64_t k = 0; k < n_steps; ++k) {
    if (si < n_summed && step[si] == k) last = value[si++] * mult;
    add_compensated(sum + k * kLanes, comp + k * kLanes, last);
  }
}


void eval_projected_row(const ProjectedView& pv, const LaneView& lanes, const CurveSets& c, std::int64_t n_steps,
                        double mult, double* sum, double* comp) {
  // Lane 0's row alone, prefixes in the lanes, eight at a time: the operations of lane 0 of
  // eval_projected for each prefix (a leaf's or a meet's masses are lane 0's, the same for every
  // prefix), so the same bits, for one pass over the pair per eight prefixes. Where the sweep
  // keeps the trees' group sums (GroupSumCache), the lanes hold every prefix of the row (chunk
  // ch: prefixes 8 ch .. 8 ch + 7), so that a tree's sums on C serve all its pairs with that C
  // (summing both trees' leaves for every pair was about two thirds of this pass on a row of
  // CatBoost(1000): its one-row curve 1.10-1.14x faster); else the pair's summed prefixes. A
  // lane's operations depend on its prefix alone, so which prefixes share its vector changes no
  // bits.
  const std::uint64_t last_set = c.sets[(n_steps - 1) * kLanes];
  const int top = last_set == 0 ? 0 : 64 - __builtin_clzll(last_set);
  std::int64_t enters[64];  // per feature below top: the first prefix whose set holds it
  std::uint64_t steps = 1;
  for (int j = 0; j < top; ++j) {
    std::int64_t first = kNeverAlive;
    for (std::int64_t k = n_steps - 1; k >= 0; --k) first = ((c.sets[k * kLanes] >> j) & 1u) != 0 ? k : first;
    enters[j] = first;
    if (((pv.features >> j) & 1u) != 0 && first < n_steps) steps |= std::uint64_t{1} << first;
  }
  std::int64_t step[64];
  std::int32_t n_summed = 0;
  for (std::uint64_t f = steps; f != 0; f &= f - 1) step[n_summed++] = __builtin_ctzll(f);
  const vd zero = {};
  const bool every_prefix = pv.first_sums != nullptr || pv.second_sums != nullptr;
  const std::int64_t n_in_lanes = every_prefix ? n_steps : n_summed;
  const std::int64_t n_chunks = (n_in_lanes + kLanes - 1) / kLanes;
  // Lane x's prefix (x counts across chunks); -1 past the last (nothing is live there, nothing a
  // factor).
  auto prefix_of = [&](std::int64_t x) -> std::int64_t {
    return x >= n_in_lanes ? -1 : every_prefix ? x : step[x];
  };
  auto lanes_of = [&](std::int64_t ch) {
    std::uint64_t k_lanes[kLanes];
    for (int l = 0; l < kLanes; ++l) k_lanes[l] = static_cast<std::uint64_t>(prefix_of(ch * kLanes + l));
    return (vi)load_u(k_lanes);
  };
  // Each tree's group sums and live flags per chunk, kept as a curve keeps them per step
  // (GroupSumsLayout: a grid's cells in order, chunk by chunk).
  const GroupSumsLayout layouts[2] = {
      {pv.group_cell[0], static_cast<std::size_t>(pv.groups_first), static_cast<std::size_t>(n_chunks)},
      {pv.group_cell[1], static_cast<std::size_t>(pv.groups_second), static_cast<std::size_t>(n_chunks)}};
  auto fill = [&](int side, vd* group_sum, std::uint8_t* group_live) {
    for (std::int64_t ch = 0; ch < n_chunks; ++ch) {
      const vi k = lanes_of(ch);
      std::int64_t k_last = -1;
      for (int l = 0; l < kLanes; ++l) k_last = std::max(k_last, prefix_of(ch * kLanes + l));
      std::size_t e = 0;
      const std::int32_t n_leaves = side == 0 ? pv.n_first : pv.n_second;
      for (std::int32_t i = 0; i < n_leaves; ++i) {
        const ProjectedLeaf& leaf = pv.leaves[side][i];
        const std::size_t at = static_cast<std::size_t>(leaf.leaf) * kLanes;
        const std::int64_t code = lanes.code[at];
        if (code > k_last) {
          e += leaf.n_own;
          continue;
        }
        vd a = zero + lanes.weight[at];
        for (std::int32_t o = 0; o < leaf.n_own; ++o, ++e) {
          const std::int32_t j = pv.own_feature[side][e];
          if (j >= top) continue;
          double D;
          if (lanes.masses != nullptr) {
            D = lanes.masses[static_cast<std::size_t>(pv.own_slot[side][e]) * kLanes];
          } else {
            const std::size_t box = static_cast<std::size_t>(leaf.leaf) * static_cast<std::size_t>(lanes.n_features) +
                                    static_cast<std::size_t>(j);
            D = mass_lane0(lanes, lanes.leaf_lo[box], lanes.leaf_hi[box]);
          }
          a = select(enters[j] <= k, a * D, a);
        }
        const std::size_t at_group = layouts[side].at(leaf.group, static_cast<std::int32_t>(ch));
        group_sum[at_group] += select(code <= k, a, zero);
        group_live[at_group] = 1;
      }
    }
  };
  const std::size_t first_cells = static_cast<std::size_t>(n_chunks) * static_cast<std::size_t>(pv.groups_first);
  const std::size_t second_cells = static_cast<std::size_t>(n_chunks) * static_cast<std::size_t>(pv.groups_second);
  GroupSums groups((pv.first_sums == nullptr ? first_cells : 0) + (pv.second_sums == nullptr ? second_cells : 0));
  vd* local = groups.sum;
  std::uint8_t* local_live = groups.live;
  prefetch_kept(pv.first_sums, first_cells);
  const TreeSums first = tree_sums_of(pv.first_sums, first_cells, local, local_live, [&](vd* sums, std::uint8_t* live) {
    fill(0, sums, live);
    return std::uint64_t{0};
  });
  const TreeSums second =
      tree_sums_of(pv.second_sums, second_cells, local, local_live, [&](vd* sums, std::uint8_t* live) {
        fill(1, sums, live);
        return std::uint64_t{0};
      });
  double value[64];
  // Grids: each interval's mass (lane 0's) in every lane, once.
  GroupSums interval_mass(pv.grid != nullptr ? pv.n_intervals : 0);
  for (std::size_t i = 0; i < pv.n_intervals && pv.grid != nullptr; ++i) {
    interval_mass.sum[i] = zero + mass_lane0(lanes, pv.interval_cut[2 * i], pv.interval_cut[2 * i + 1]);
  }
  std::int32_t si = 0;  // the first summed prefix not yet valued
  for (std::int64_t ch = 0; ch < n_chunks && si < n_summed; ++ch) {
    if (every_prefix && step[si] >= (ch + 1) * kLanes) continue;  // no summed prefix in this chunk
    const vi k = lanes_of(ch);
    const auto chunk = static_cast<std::int32_t>(ch);
    vd V = zero;
    if (pv.grid != nullptr) {  // grid_sum, as eval_projected, the prefixes in the lanes (cells in order)
      vi in_set[kMaxGridFeatures];
      grid_lanes_entered(*pv.grid, enters, top, k, in_set);
      V = grid_sum(pv, first.sum + layouts[0].cells_at(chunk), second.sum + layouts[1].cells_at(chunk), in_set,
                   interval_mass.sum);
    }
    std::size_t m = 0;
    for (std::size_t q = 0; q < pv.n_meets && pv.grid == nullptr; ++q) {
      const ProjectedMeet& meet = pv.meets[q];
      const std::size_t g = layouts[0].at(meet.g, chunk), h = layouts[1].at(meet.h, chunk);
      if (!first.live[g] || !second.live[h]) {  // an exact zero at every prefix
        m += meet.count;
        continue;
      }
      vd P = first.sum[g] * second.sum[h];
      for (std::int32_t x = 0; x < meet.count; ++x, ++m) {
        const std::int32_t j = pv.meet_feature[m];
        if (j >= top) continue;
        const std::size_t i = pv.meet_interval[m];
        P = select(enters[j] <= k, P * mass_lane0(lanes, pv.interval_cut[2 * i], pv.interval_cut[2 * i + 1]), P);
      }
      V += P;
    }
    // The summed prefixes in this chunk's lanes.
    for (int l = 0; l < kLanes && si < n_summed; ++l) {
      if (prefix_of(ch * kLanes + l) == step[si]) value[si++] = V[l];
    }
  }
  // The prefixes in order, into lane 0.
  double last = 0.0;
  si = 0;
  for (std::int64_t k = 0; k < n_steps; ++k) {
    if (si < n_summed && step[si] == k) last = value[si++] * mult;
    add_compensated_lane0(sum + k * kLanes, comp + k * kLanes, last);
  }
}

void eval_projected_greedy(const ProjectedView& pv, const LaneView& lanes, const std::uint64_t* S_, double mult,
                           double* sum, double* comp, double* corr) {
  // PG2(S), and PG2(S + {j}) for every feature j either tree splits on that some lane lacks:
  // for any other j, S + {j} has S's value here (no leaf misses only j, no factor is D_j), a
  // correction of zero. A leaf's product for S + {j} is its product for S, times D_j where j is
  // one of its own features (in the lanes without j); a meet's likewise. S's own products are
  // the set pass's (canonical order); S + {j}'s take D_j last (within rounding of a set pass's,
  // like the tail's). Each tree's group sums are taken for S and S + {j} for its own j only:
  // for another j its leaves add to S + {j} exactly what they add to S.
  const vu S = load_u(S_);
  const vu zero_u = {};
  const vd zero = {};
  std::uint64_t in_every = ~std::uint64_t{0};
  for (int l = 0; l < kLanes; ++l) in_every &= S[l];
  // The candidates among `split` (features some lane lacks) in order into cand, and per feature
  // its index among them into slot_of (-1: none); returns how many.
  auto list_candidates = [&](std::uint64_t split, std::int32_t* cand, std::int32_t* slot_of) {
    std::int32_t n = 0;
    for (int j = 0; j < 64; ++j) slot_of[j] = -1;
    for (std::uint64_t f = split & ~in_every; f != 0; f &= f - 1) {
      slot_of[__builtin_ctzll(f)] = n;
      cand[n++] = __builtin_ctzll(f);
    }
    return n;
  };
  std::int32_t cand[64], slot_of[64];  // the pair's
  const std::int32_t n_cand = list_candidates(pv.features, cand, slot_of);
  const int top = 64;  // any feature may be in some lane's S or be a candidate
  const std::int32_t n_sets = n_cand + 1;  // 0: S; 1 + c: S + {cand[c]}
  // Per tree: its candidates (features it splits on that some lane lacks), and per candidate
  // of the pair the tree's set (0: S, 1 + c: S + {its c-th}).
  auto tree_candidates = [&](std::uint64_t split, std::int32_t* tree_cand, std::int32_t* tree_slot_of,
                             std::int32_t* set_of) {
    const std::int32_t n = list_candidates(split, tree_cand, tree_slot_of);
    set_of[0] = 0;
    for (std::int32_t c = 0; c < n_cand; ++c) set_of[1 + c] = 1 + tree_slot_of[cand[c]];
    return n;
  };
  std::int32_t first_cand[64], second_cand[64], first_slot_of[64], second_slot_of[64], first_set[65], second_set[65];
  const std::int32_t n_first_cand = tree_candidates(pv.first_features, first_cand, first_slot_of, first_set);
  const std::int32_t n_second_cand = tree_candidates(pv.second_features, second_cand, second_slot_of, second_set);
  const std::size_t first_cells =
      static_cast<std::size_t>(n_first_cand + 1) * static_cast<std::size_t>(pv.groups_first);
  const std::size_t second_cells =
      static_cast<std::size_t>(n_second_cand + 1) * static_cast<std::size_t>(pv.groups_second);
  GroupSums groups((pv.first_sums == nullptr ? first_cells : 0) + (pv.second_sums == nullptr ? second_cells : 0));
  vd* local = groups.sum;
  std::uint8_t* local_live = groups.live;
  const vb never = {kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive,
                    kNeverAlive, kNeverAlive, kNeverAlive, kNeverAlive};
  // Each tree's sums and flags at its sets (0: S, 1 + c: S + {its c-th candidate}).
  const GroupSumsLayout layouts[2] = {
      {pv.group_cell[0], static_cast<std::size_t>(pv.groups_first), static_cast<std::size_t>(n_first_cand + 1)},
      {pv.group_cell[1], static_cast<std::size_t>(pv.groups_second), static_cast<std::size_t>(n_second_cand + 1)}};
  // Tree `side`'s leaves into its sums (GroupSumsLayout); returns the tree's sets in which some
  // group is live (bit si: 0 for S, 1 + c for S + {its c-th candidate}; up to 64 candidates).
  auto fill = [&](int side, const std::int32_t* tree_cand, const std::int32_t* tree_slot_of, std::int32_t n_tree_cand,
                  vd* group_sum, std::uint8_t* group_live) {
    const GroupSumsLayout& layout = layouts[side];
    std::uint64_t live_sets = 0;
    for_each_leaf_live_somewhere(pv, side, lanes, [&](const ProjectedLeaf& leaf, std::size_t at, vb code_b,
                                                      std::size_t e) {
      const vu live = (vu)widen<std::int64_t>(code_b != never);
      const vu missing = load_u(lanes.out + at) & ~S;  // x leaves the path there, outside S
      vd D[64];
      std::int32_t feature[64];
      const std::int32_t n = own_masses(pv, side, lanes, leaf, e, top, D, feature);
      vd a = load_d(lanes.weight + at);  // w times the masses of S's own features, in order
      for (std::int32_t x = 0; x < n; ++x) a = select(((S >> feature[x]) & 1u) != zero_u, a * D[x], a);
      const std::int32_t g = leaf.group;
      // Where some lane has it live (a scalar mask: reductions across lanes per set cost more
      // than the sums): in S and every S + {j} where x leaves it nowhere outside S, in S + {j}
      // alone where only on j (one of the tree's candidates).
      bool live_in_s = false;
      std::uint64_t live_with = 0;  // the tree's candidates c (bit c)
      for (int l = 0; l < kLanes; ++l) {
        if (code_b[l] == kNeverAlive) continue;
        if (missing[l] == 0) {
          live_in_s = true;
        } else if ((missing[l] & (missing[l] - 1)) == 0) {
          const std::int32_t c = tree_slot_of[__builtin_ctzll(missing[l])];
          if (c >= 0) live_with |= std::uint64_t{1} << c;
        }
      }
      if (live_in_s) live_with = n_tree_cand == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n_tree_cand) - 1;
      const std::size_t at_group = layout.at(g, 0), stride = layout.set_stride();  // the group's sets
      if (live_in_s) {
        const vi alive_s = (missing == zero_u) & (vi)live;
        group_sum[at_group] += select(alive_s, a, zero);
        group_live[at_group] = 1;
        live_sets |= 1u;
      }
      if (live_with == 0) return;
      // S + {j}: own features j multiply the product in the lanes without j.
      vd with[64];
      for (std::int32_t c = 0; c < n_tree_cand; ++c) with[c] = a;
      for (std::int32_t x = 0; x < n; ++x) {
        const std::int32_t c = tree_slot_of[feature[x]];
        if (c >= 0) with[c] = select(((S >> feature[x]) & 1u) == zero_u, a * D[x], a);
      }
      for (std::uint64_t f = live_with; f != 0; f &= f - 1) {
        const std::int32_t c = __builtin_ctzll(f);
        const vi alive = ((missing & ~(vu{} + (std::uint64_t{1} << tree_cand[c]))) == zero_u) & (vi)live;
        const std::size_t cell = at_group + static_cast<std::size_t>(c + 1) * stride;
        group_sum[cell] += select(alive, with[c], zero);
        group_live[cell] = 1;
        if (c < 63) live_sets |= std::uint64_t{2} << c;
      }
    });
    return live_sets;
  };
  prefetch_kept(pv.first_sums, first_cells);
  const TreeSums first = tree_sums_of(pv.first_sums, first_cells, local, local_live, [&](vd* sums, std::uint8_t* live) {
    return fill(0, first_cand, first_slot_of, n_first_cand, sums, live);
  });
  const TreeSums second =
      tree_sums_of(pv.second_sums, second_cells, local, local_live, [&](vd* sums, std::uint8_t* live) {
        return fill(1, second_cand, second_slot_of, n_second_cand, sums, live);
      });
  GroupSums intervals(pv.n_intervals);
  interval_masses(pv, lanes, intervals.sum);
  vd value[65];
  for (std::int32_t si = 0; si < n_sets; ++si) value[si] = zero;
  // Per group, the pair's sets (bit si) in which its tree's sum is live (group_live_sets: the
  // per-meet reads of the flags and their branches were about a tenth of this pass's samples on
  // CatBoost(200)). More sets than bits (64 candidates, only on trees that are not oblivious):
  // every set, flags per meet.
  const bool set_masks = n_sets <= 64;
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  const bool grid = pv.grid != nullptr && set_masks;
  std::uint64_t first_live_sets[kMaxProjectedLeaves], second_live_sets[kMaxProjectedLeaves];
  if (set_masks && !grid) {
    group_live_sets(first, layouts[0], n_sets, [&](std::int32_t si) { return first_set[si]; }, first_live_sets);
    group_live_sets(second, layouts[1], n_sets, [&](std::int32_t si) { return second_set[si]; }, second_live_sets);
  }
  if (grid) {
    // Grids: each set the tree pair has live contracted (grid_sum), S's contraction shared by
    // the S + {j} whose j the first tree does not split on (its sums and C's factors are S's:
    // the same bits as contracting again). S's value is the set pass's, bit for bit. The sets
    // live in both trees, from their sets live in some group (kept with the sums: reading every
    // group's flags per pair was a sixth of this pass on CatBoost(1000)'s 64-row ranking).
    std::uint64_t live = 0;
    for (std::int32_t si = 0; si < n_sets; ++si) {
      live |= ((first.live_sets >> first_set[si]) & (second.live_sets >> second_set[si]) & 1u) << si;
    }
    const ProjectedGrid& grid_of = *pv.grid;
    vi in_s[kMaxGridFeatures];  // the lanes whose S holds C's c-th feature
    grid_lanes_holding(grid_of, S, in_s);
    // (Both trees' sums are in cell order, set by set: GroupSumsLayout.)
    vd room_s[2][kMaxGridTensor], room[2][kMaxGridTensor];
    const vd* contracted_s = nullptr;
    for (std::uint64_t f = live; f != 0; f &= f - 1) {
      const std::int32_t si = __builtin_ctzll(f);
      const vd* second_cells = second.sum + layouts[1].cells_at(second_set[si]);
      if (first_set[si] == 0) {
        if (contracted_s == nullptr) {
          contracted_s = grid_contract(pv, first.sum + layouts[0].cells_at(0), in_s, intervals.sum, room_s);
        }
        value[si] = grid_dot(pv, contracted_s, second_cells);
        continue;
      }
      const std::int32_t j = cand[si - 1];
      vi in_x[kMaxGridFeatures];
      const vi every = ~vi{};  // all lanes
      for (std::int32_t c = 0; c < grid_of.n_shared; ++c) in_x[c] = grid_of.feature[c] == j ? every : in_s[c];
      const vd* first_cells = first.sum + layouts[0].cells_at(first_set[si]);
      value[si] = grid_dot(pv, grid_contract(pv, first_cells, in_x, intervals.sum, room), second_cells);
    }
  }
  std::size_t m = 0;
  const std::size_t first_stride = layouts[0].set_stride(), second_stride = layouts[1].set_stride();
  for (std::size_t q = 0; q < pv.n_meets && !grid; ++q) {
    const ProjectedMeet& meet = pv.meets[q];
    const std::uint64_t live = set_masks ? first_live_sets[meet.g] & second_live_sets[meet.h] : ~std::uint64_t{0};
    if (live == 0) {  // an exact zero in every lane of every set
      m += meet.count;
      continue;
    }
    vd D[64];
    std::int32_t feature[64];
    const std::int32_t n = meet_masses(pv, intervals.sum, m, meet.count, top, D, feature);
    m += meet.count;
    vd in_s = one;  // the product of S's meet masses (for S + {j})
    for (std::int32_t x = 0; x < n; ++x) in_s = select(((S >> feature[x]) & 1u) != zero_u, in_s * D[x], in_s);
    vd extra[64];  // per candidate: D_j where j is an entry of the meet (lanes without j), else 1
    for (std::int32_t c = 0; c < n_cand; ++c) extra[c] = one;
    for (std::int32_t x = 0; x < n; ++x) {
      const std::int32_t c = slot_of[feature[x]];
      if (c >= 0) extra[c] = select(((S >> feature[x]) & 1u) == zero_u, D[x], one);
    }
    // The two groups' sums and flags at the pair's set si (GroupSumsLayout).
    const std::size_t first_g = layouts[0].at(meet.g, 0), second_h = layouts[1].at(meet.h, 0);
    auto at_g = [&](std::int32_t si) { return first_g + static_cast<std::size_t>(first_set[si]) * first_stride; };
    auto at_h = [&](std::int32_t si) { return second_h + static_cast<std::size_t>(second_set[si]) * second_stride; };
    auto add_set = [&](std::int32_t si) {
      vd P = first.sum[at_g(si)] * second.sum[at_h(si)];
      if (si == 0) {  // S: the set pass's product, in order
        for (std::int32_t x = 0; x < n; ++x) P = select(((S >> feature[x]) & 1u) != zero_u, P * D[x], P);
      } else {
        P = (P * in_s) * extra[si - 1];
      }
      value[si] += P;
    };
    if (set_masks) {
      for (std::uint64_t f = live; f != 0; f &= f - 1) add_set(__builtin_ctzll(f));
    } else {
      for (std::int32_t si = 0; si < n_sets; ++si) {
        if (first.live[at_g(si)] && second.live[at_h(si)]) add_set(si);
      }
    }
  }
  add_compensated(sum, comp, value[0] * mult);
  for (std::int32_t c = 0; c < n_cand; ++c) {
    double* out = corr + static_cast<std::size_t>(cand[c]) * kLanes;
    store_d(out, load_d(out) + (value[c + 1] - value[0]) * mult);
  }
}

void eval_projected_tail(const ProjectedView& pv, const LaneView& lanes, const TailSets& t, std::int64_t n_sets_,
                         double mult, double* sum, double* comp) {
  // The sets S + A (TailSets): a leaf's product for S + A is its product for S (the set pass's,
  // in order) times, for each candidate of A among its own features, that feature's mass: built
  // up over the subsets as the leaf-pair tail builds them (pair_passes.cpp); a meet's likewise.
  // A candidate no lane's tree pair splits on changes nothing here: S + A has the value of S +
  // (A without it), bit for bit, and is not summed again. Likewise each tree's group sums are
  // taken for the subsets of its own candidates (those some lane's tree splits on) only: its
  // leaves add to S + A what they add to S + (A without the others), times 1.0.
  const auto n_sets = static_cast<std::int32_t>(n_sets_);
  const std::int32_t r = __builtin_ctz(static_cast<unsigned>(n_sets));
  const vu S = load_u(t.sets);
  const vu zero_u = {};
  const vd zero = {};
  const vd one = {1, 1, 1, 1, 1, 1, 1, 1};
  vu candidate[kMaxTailCandidates];  // per lane, candidate k's feature bit (none where not perturbable)
  std::int32_t relevant = 0, first_relevant = 0, second_relevant = 0;  // candidates some lane's tree(s) split on
  for (std::int32_t k = 0; k < r; ++k) {
    candidate[k] = load_u(t.sets + (std::size_t{1} << k) * kLanes) & ~S;
    for (int l = 0; l < kLanes; ++l) {
      if ((candidate[k][l] & pv.first_features) != 0) first_relevant |= 1 << k;
      if ((candidate[k][l] & pv.second_features) != 0) second_relevant |= 1 << k;
    }
  }
  relevant = first_relevant | second_relevant;
  // Per subset `need` of the candidates, the sets A (bit A) that hold it.
  std::uint32_t supersets[1 << kMaxTailCandidates];
  for (std::int32_t need = 0; need < n_sets; ++need) {
    supersets[need] = 0;
    for (std::int32_t A = 0; A < n_sets; ++A) {
      if ((need & ~A) == 0) supersets[need] |= 1u << A;
    }
  }
  const int top = 64;
  const std::size_t first_cells = static_cast<std::size_t>(n_sets) * static_cast<std::size_t>(pv.groups_first);
  const std::size_t second_cells = static_cast<std::size_t>(n_sets) * static_cast<std::size_t>(pv.groups_second);
  GroupSums groups((pv.first_sums == nullptr ? first_cells : 0) + (pv.second_sums == nullptr ? second_cells : 0));
  vd* local = groups.sum;
  std::uint8_t* local_live = groups.live;
  // The candidates' masses among entries: q[k] = D where the entry's feature is candidate k in
  // the lane, else 1.
  auto candidate_factors = [&](const vd* D, const std::int32_t* feature, std::int32_t n, vd* q) {
    for (std::int32_t k = 0; k < r; ++k) q[k] = one;
    for (std::int32_t x = 0; x < n; ++x) {
      for (std::int32_t k = 0; k < r; ++k) {
        q[k] = select(((candidate[k] >> feature[x]) & 1u) != zero_u, D[x], q[k]);
      }
    }
  };
  // Each tree's sums and flags at the subsets A (GroupSumsLayout, set index A).
  const GroupSumsLayout layouts[2] = {
      {pv.group_cell[0], static_cast<std::size_t>(pv.groups_first), static_cast<std::size_t>(n_sets)},
      {pv.group_cell[1], static_cast<std::size_t>(pv.groups_second), static_cast<std::size_t>(n_sets)}};
  // Tree `side`'s leaves into its sums, for the subsets A of its candidates; returns the sets A
  // in which some group is live (bit A).
  auto fill = [&](int side, std::int32_t tree_relevant, vd* group_sum, std::uint8_t* group_live) {
    const GroupSumsLayout& layout = layouts[side];
    std::uint64_t live_sets = 0;
    for_each_leaf_live_somewhere(pv, side, lanes, [&](const ProjectedLeaf& leaf, std::size_t at, vb need_b,
                                                      std::size_t e) {
      const vi need = widen<std::int64_t>(need_b);  // the subset of candidates it needs
      // The sets some lane has it live in (a scalar mask: a reduction across lanes per set was a
      // third of this pass's samples): the supersets of each lane's need.
      std::uint32_t live_in = 0;
      for (int l = 0; l < kLanes; ++l) {
        if (need_b[l] != kNeverAlive) live_in |= supersets[need_b[l]];
      }
      vd D[64];
      std::int32_t feature[64];
      const std::int32_t n = own_masses(pv, side, lanes, leaf, e, top, D, feature);
      vd a = load_d(lanes.weight + at);
      for (std::int32_t x = 0; x < n; ++x) a = select(((S >> feature[x]) & 1u) != zero_u, a * D[x], a);
      vd q[kMaxTailCandidates];
      candidate_factors(D, feature, n, q);
      const std::size_t at_group = layout.at(leaf.group, 0), stride = layout.set_stride();  // the group's sets
      vd Q[1 << kMaxTailCandidates];
      Q[0] = one;
      for (std::int32_t A = 0; A < n_sets; ++A) {
        if (A > 0) Q[A] = Q[A & (A - 1)] * q[__builtin_ctz(static_cast<unsigned>(A))];
        if ((A & ~tree_relevant) != 0 || ((live_in >> A) & 1u) == 0) continue;
        const vi alive = (need & ~static_cast<std::int64_t>(A)) == 0;
        const std::size_t cell = at_group + static_cast<std::size_t>(A) * stride;
        group_sum[cell] += select(alive, A == 0 ? a : a * Q[A], zero);
        group_live[cell] = 1;
        live_sets |= std::uint64_t{1} << A;
      }
    });
    return live_sets;
  };
  prefetch_kept(pv.first_sums, first_cells);
  const TreeSums first = tree_sums_of(pv.first_sums, first_cells, local, local_live, [&](vd* sums, std::uint8_t* live) {
    return fill(0, first_relevant, sums, live);
  });
  const TreeSums second =
      tree_sums_of(pv.second_sums, second_cells, local, local_live, [&](vd* sums, std::uint8_t* live) {
        return fill(1, second_relevant, sums, live);
      });
  GroupSums intervals(pv.n_intervals);
  interval_masses(pv, lanes, intervals.sum);
  vd value[1 << kMaxTailCandidates];
  for (std::int32_t A = 0; A < n_sets; ++A) value[A] = zero;
  // Per group, the sets A (bit A, within the relevant candidates) in which its tree's sum is
  // live (group_live_sets); a tree's sums are kept for the subsets of its own candidates.
  std::uint32_t first_live_sets[kMaxProjectedLeaves], second_live_sets[kMaxProjectedLeaves];
  auto cell_in = [&](std::int32_t tree_relevant) {
    return [=](std::int32_t A) { return (A & ~relevant) == 0 ? (A & tree_relevant) : -1; };
  };
  if (pv.grid == nullptr) {
    group_live_sets(first, layouts[0], n_sets, cell_in(first_relevant), first_live_sets);
    group_live_sets(second, layouts[1], n_sets, cell_in(second_relevant), second_live_sets);
  } else {
    // Grids: each set S + A the tree pair has live contracted (grid_sum). The contraction depends
    // on the first tree's sums and C's factors only, so on A's candidates the first tree splits
    // on (C is among them): one per K = A & first_relevant, shared by the sets that add only
    // candidates the second tree alone splits on (the same bits as contracting again). The
    // sets live in both trees, from their sets live in some group (kept with the sums).
    std::uint32_t live = 0;
    for (std::int32_t A = 0; A < n_sets; ++A) {
      if ((A & ~relevant) != 0) continue;
      live |= static_cast<std::uint32_t>((first.live_sets >> (A & first_relevant)) &
                                         (second.live_sets >> (A & second_relevant)) & 1u)
              << A;
    }
    // (Both trees' sums are in cell order, set by set: GroupSumsLayout.)
    const ProjectedGrid& grid = *pv.grid;
    vd room[2][kMaxGridTensor];
    const std::int32_t second_only = relevant & ~first_relevant;
    for (std::int32_t K = 0; K < n_sets; ++K) {
      if ((K & ~first_relevant) != 0) continue;
      std::uint32_t sets_of_K = 0;  // the live sets A with A & first_relevant == K
      for (std::int32_t B = second_only;; B = (B - 1) & second_only) {
        sets_of_K |= ((live >> (K | B)) & 1u) << (K | B);
        if (B == 0) break;
      }
      if (sets_of_K == 0) continue;
      // The lanes whose S + K holds C's c-th feature (K's candidates gathered once, not per c).
      vu with = S;
      for (std::int32_t k = 0; k < r; ++k) {
        if (((K >> k) & 1) != 0) with |= candidate[k];
      }
      vi in_x[kMaxGridFeatures];
      grid_lanes_holding(grid, with, in_x);
      const vd* contracted = grid_contract(pv, first.sum + layouts[0].cells_at(K), in_x, intervals.sum, room);
      for (std::uint32_t f = sets_of_K; f != 0; f &= f - 1) {
        const std::int32_t A = __builtin_ctz(f);
        value[A] = grid_dot(pv, contracted, second.sum + layouts[1].cells_at(A & second_relevant));
      }
    }
  }
  std::size_t m = 0;
  const std::size_t first_stride = layouts[0].set_stride(), second_stride = layouts[1].set_stride();
  for (std::size_t qi = 0; qi < pv.n_meets && pv.grid == nullptr; ++qi) {
    const ProjectedMeet& meet = pv.meets[qi];
    const std::uint32_t live = first_live_sets[meet.g] & second_live_sets[meet.h];
    if (live == 0) {  // an exact zero in every lane of every set
      m += meet.count;
      continue;
    }
    vd D[64];
    std::int32_t feature[64];
    const std::int32_t n = meet_masses(pv, intervals.sum, m, meet.count, top, D, feature);
    m += meet.count;
    vd in_s = one, Q[1 << kMaxTailCandidates];
    for (std::int32_t x = 0; x < n; ++x) in_s = select(((S >> feature[x]) & 1u) != zero_u, in_s * D[x], in_s);
    vd q[kMaxTailCandidates];
    candidate_factors(D, feature, n, q);
    Q[0] = one;
    for (std::int32_t B = 1; B < n_sets; ++B) Q[B] = Q[B & (B - 1)] * q[__builtin_ctz(static_cast<unsigned>(B))];
    const std::size_t first_g = layouts[0].at(meet.g, 0), second_h = layouts[1].at(meet.h, 0);
    for (std::uint32_t f = live; f != 0; f &= f - 1) {
      const std::int32_t A = __builtin_ctz(f);
      vd P = first.sum[first_g + static_cast<std::size_t>(A & first_relevant) * first_stride] *
             second.sum[second_h + static_cast<std::size_t>(A & second_relevant) * second_stride];
      if (A == 0) {  // S: the set pass's product, in order
        for (std::int32_t x = 0; x < n; ++x) P = select(((S >> feature[x]) & 1u) != zero_u, P * D[x], P);
      } else {
        P = (P * in_s) * Q[A];
      }
      value[A] += P;
    }
  }
  for (std::int32_t A = 0; A < n_sets; ++A) {
    add_compensated(sum + A * kLanes, comp + A * kLanes, value[A & relevant] * mult);
  }
}

}  // namespace pgexact::PGEXACT_ISA
