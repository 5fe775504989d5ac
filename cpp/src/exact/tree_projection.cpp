#include "tree_projection.hpp"
#include "env_switch.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace pgexact {
namespace pairs {

void ProjectedPlan::clear() {
  first = second = nullptr;
  meets.clear();
  meet_feature.clear();
  meet_interval.clear();
  interval_cut.clear();
  features = first_features = second_features = shared = 0;
  clear_grid();
}

void ProjectedPlan::clear_grid() {
  grid.n_shared = 0;
  grid_factors.clear();
}

namespace {

// Per feature c of C, per pair of the two trees' intervals there, project_tree_pair's meet
// entry: kLine (the intersection is the whole line: no entry), kApart (empty: only a special
// value both admit can be in both), or the index of the intersection among the plan's
// intervals (each distinct interval once: a pass computes its mass once).
constexpr std::int32_t kLine = -1, kApart = -2;

// Per cell of a grouping's grid on C (row-major over C's features: interval of the first
// outermost), its group, into cell_group; false where the groups are not a full grid (fewer or
// more groups than combinations of the intervals: leaves that differ on C only by the special
// values their paths admit, or a tree that is not oblivious).
bool cell_groups(const TreeGrouping& grouping, std::size_t n_shared, std::vector<std::uint8_t>& cell_group) {
  if (n_shared == 0) return false;
  std::size_t cells = 1;
  for (std::size_t c = 0; c < n_shared; ++c) cells *= grouping.intervals[c].size();
  const auto n_groups = static_cast<std::size_t>(grouping.n_groups());
  if (cells != n_groups || n_groups > 64) return false;
  cell_group.assign(cells, 0xff);
  for (std::size_t g = 0; g < n_groups; ++g) {
    std::size_t cell = 0;
    for (std::size_t c = 0; c < n_shared; ++c) {
      cell = cell * grouping.intervals[c].size() + grouping.interval_of[g * n_shared + c];
    }
    if (cell_group[cell] != 0xff) return false;
    cell_group[cell] = static_cast<std::uint8_t>(g);
  }
  return true;
}

// Whether both groupings are full grids on C (TreeGrouping::cell_group) and the contraction's
// tensors fit the pass's room: at feature c, the second tree's intervals on the features before
// c and on c times the first's after it.
bool grids_fit(const TreeGrouping& first, const TreeGrouping& second, std::size_t n_shared) {
  if (n_shared == 0 || n_shared > static_cast<std::size_t>(kMaxGridFeatures)) return false;
  if (first.cell_group.empty() || second.cell_group.empty()) return false;
  for (std::size_t c = 0; c < n_shared; ++c) {
    std::size_t cells = 1;
    for (std::size_t x = 0; x <= c; ++x) cells *= second.intervals[x].size();
    for (std::size_t x = c + 1; x < n_shared; ++x) cells *= first.intervals[x].size();
    if (cells > static_cast<std::size_t>(kMaxGridTensor)) return false;
  }
  return true;
}

// The plan's ProjectedGrid, where both groupings are full grids whose tensors fit (grids_fit: the
// caller has checked), no meet comes from a special value alone (then the meets are exactly the
// pairs of cells apart on no feature) and the contraction costs less than the n_meets meets of
// n_entries entries; `entry`: per feature c and pair of intervals, project_tree_pair's meet
// entries. Returns whether the plan has one (else the caller clears what was built).
bool build_grid(const TreeGrouping& first, const TreeGrouping& second, std::size_t n_shared,
                const std::int32_t* feature_of, const std::vector<std::int32_t>& entry, const std::size_t* entry_begin,
                double n_meets, double n_entries, ProjectedPlan& plan) {
  if (plan.interval_cut.size() / 2 >= kGridEmpty) return false;  // (a factor names its interval below the two codes)
  std::size_t cells_meeting = 1;  // pairs of cells apart on no feature
  for (std::size_t c = 0; c < n_shared; ++c) {
    const std::size_t n_t = first.intervals[c].size(), n_s = second.intervals[c].size();
    plan.grid.feature[c] = static_cast<std::uint8_t>(feature_of[c]);
    plan.grid.n_first[c] = static_cast<std::int32_t>(n_t);
    plan.grid.n_second[c] = static_cast<std::int32_t>(n_s);
    plan.grid.factor_begin[c] = static_cast<std::uint32_t>(plan.grid_factors.size());
    // By the second tree's interval, then the first's: the pass sets a cell of its tensor with
    // the first factor of its interval and adds the others' terms; an interval that meets none
    // (empty) has one factor, kGridEmpty, that sets its cells to zero.
    std::size_t nonzero = 0;
    for (std::size_t k = 0; k < n_s; ++k) {
      const std::size_t before = plan.grid_factors.size();
      for (std::size_t i = 0; i < n_t; ++i) {
        const std::int32_t e = entry[entry_begin[c] + i * n_s + k];
        if (e == kApart) continue;
        plan.grid_factors.push_back(GridFactor{static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(k),
                                               e == kLine ? kGridLine : static_cast<std::uint16_t>(e)});
      }
      nonzero += plan.grid_factors.size() - before;
      if (plan.grid_factors.size() == before) {
        plan.grid_factors.push_back(GridFactor{0, static_cast<std::uint8_t>(k), kGridEmpty});
      }
    }
    cells_meeting *= nonzero;
  }
  plan.grid.factor_begin[n_shared] = static_cast<std::uint32_t>(plan.grid_factors.size());
  if (static_cast<double>(cells_meeting) != n_meets) return false;  // a special value makes more pairs meet
  // The contraction's cost: at feature c, each nonzero factor times the cells of the rest (the
  // second's intervals on the features before c, the first's after it), then the second's
  // cells; the meets': per meet its two sums, their product, its entries and the sum.
  double grid_cost = static_cast<double>(first.n_groups() + 2 * second.n_groups());
  for (std::size_t c = 0; c < n_shared; ++c) {
    std::int64_t rest = 1;
    for (std::size_t x = 0; x < c; ++x) rest *= plan.grid.n_second[x];
    for (std::size_t x = c + 1; x < n_shared; ++x) rest *= plan.grid.n_first[x];
    grid_cost += 2.0 * static_cast<double>(rest) *
                 static_cast<double>(plan.grid.factor_begin[c + 1] - plan.grid.factor_begin[c]);
  }
  const double meet_cost = 4.0 * n_meets + 2.0 * n_entries;
  if (grid_cost >= meet_cost) return false;
  plan.grid.n_shared = static_cast<std::int32_t>(n_shared);
  // The passes then sum the grids, never the meets (a greedy step of more than 63 candidates
  // would: at most 63 features split on), so the plan drops them: it is about half the size, and
  // more of a call's plans fit its budget (CatBoost(1000): 500,000 tree pairs, about 1 KB each
  // with their meets against 256 MiB).
  if (__builtin_popcountll(plan.features) <= 63) {
    plan.meets.clear();
    plan.meet_feature.clear();
    plan.meet_interval.clear();
  }
  return true;
}

// Whether some pair of groups apart on a feature of C is a partner through a special value both
// paths admit there (project_tree_pair's masks: a first tree's group whose path admits NaN, or
// zero, on an interval with a second tree's group apart from it that admits it too).
bool special_partners(const TreeGrouping& first, std::size_t n_shared, const std::vector<std::uint64_t>& partner_masks,
                      const std::size_t* mask_begin) {
  for (std::size_t c = 0; c < n_shared; ++c) {
    for (std::size_t i = 0; i < first.intervals[c].size(); ++i) {
      const std::size_t cell = first.interval_first[c] + i;
      const std::uint64_t* masks = partner_masks.data() + mask_begin[c] + 3 * i;
      if ((first.nan_groups_on[cell] != 0 && masks[1] != 0) || (first.zero_groups_on[cell] != 0 && masks[2] != 0)) {
        return true;
      }
    }
  }
  return false;
}

// What listing the meets counts (project_tree_pair): meets, their entries and the leaf pairs'
// cost, where both groupings are full grids (grids_fit) and no pair of groups apart on a feature
// is a partner through a special value (special_partners). The meets are then exactly the pairs
// of cells (a of the first grid, b of the second) that meet on every feature c of C, where the
// two intervals' entry is not kApart (M_c = 1); the meet has an entry on c where the entry is an
// interval, not the line (E_c = 1). So
//   meets   = prod_c |M_c|,   entries = sum_c |E_c| prod_{c' != c} |M_c'|,
// and the listing's cost, per meet (g, h) of `count` entries size_g size_h (1 + count) +
// size_h own_g + size_g own_h, is a sum over pairs of cells of the cells' weights times
// prod_c M_c, or its derivative d/dz prod_c (M_c + z E_c) at 0 for the count: one contraction
// of the first grid's weights, one feature at a time as the passes contract the grids, carrying
// each value with its derivative. Without listing the meets, which a plan on the grids never
// reads (listing them was over a third of planning CatBoost(1000)'s 500,000 tree pairs, and
// counting takes a one-row PGI2 call from 1.72 to 1.24 s). The terms are integers, so the counts,
// and the plan's decisions, are the listing's.
struct MeetCounts {
  double meets = 0.0, entries = 0.0, pair_cost = 0.0;
};
MeetCounts counted_meets(const TreeGrouping& first, const TreeGrouping& second, std::size_t n_shared,
                         const std::vector<std::int32_t>& entry, const std::size_t* entry_begin) {
  // Per cell of the tensor: the size-weighted sum, its derivative, the own-entries-weighted sum.
  struct Cell {
    std::int64_t size, count, own;
  };
  Cell room[2][kMaxGridTensor];
  const Cell* in = room[1];
  std::size_t n_in = first.cell_group.size();
  for (std::size_t cell = 0; cell < n_in; ++cell) {
    const std::size_t g = first.cell_group[cell];
    room[1][cell] = Cell{first.group_size[g], 0, first.own_entries[g]};
  }
  std::int64_t meets = 1, entries = 0;
  for (std::size_t c = 0; c < n_shared; ++c) {
    const std::size_t n_t = first.intervals[c].size(), n_s = second.intervals[c].size();
    const std::size_t rest = n_in / n_t;
    Cell* out = room[c & 1];
    std::fill(out, out + rest * n_s, Cell{0, 0, 0});
    std::int64_t meeting = 0, proper = 0;
    for (std::size_t i = 0; i < n_t; ++i) {
      for (std::size_t k = 0; k < n_s; ++k) {
        const std::int32_t e = entry[entry_begin[c] + i * n_s + k];
        if (e == kApart) continue;
        ++meeting;
        const bool is_entry = e != kLine;
        proper += is_entry ? 1 : 0;
        for (std::size_t r = 0; r < rest; ++r) {
          const Cell& from = in[i * rest + r];
          Cell& to = out[r * n_s + k];
          to.size += from.size;
          to.count += from.count + (is_entry ? from.size : 0);
          to.own += from.own;
        }
      }
    }
    entries = entries * meeting + meets * proper;
    meets *= meeting;
    in = out;
    n_in = rest * n_s;
  }
  std::int64_t cost = 0;
  for (std::size_t cell = 0; cell < n_in; ++cell) {
    const std::size_t h = second.cell_group[cell];
    const std::int64_t size_h = second.group_size[h], own_h = second.own_entries[h];
    cost += (in[cell].size + in[cell].count + in[cell].own) * size_h + in[cell].size * own_h;
  }
  MeetCounts counts;
  counts.meets = static_cast<double>(meets);
  counts.entries = static_cast<double>(entries);
  counts.pair_cost = static_cast<double>(cost);
  return counts;
}

}  // namespace

TreeFeatures::TreeFeatures(const Arena& a, const LeafBoxes& boxes) {
  const std::int64_t n_trees = a.n_trees();
  cut.assign(static_cast<std::size_t>(n_trees), 0);
  split.assign(static_cast<std::size_t>(n_trees), 0);
  for (std::int64_t t = 0; t < n_trees; ++t) {
    for (std::int32_t u = boxes.tree_first[t]; u < boxes.tree_first[t + 1]; ++u) {
      cut[static_cast<std::size_t>(t)] |= boxes.constrained[static_cast<std::size_t>(u)];
    }
  }
  // Split features from the nodes: a leaf's code is the position of the last feature x leaves
  // its path on, which may be a split that narrows no box (ProjectedView::features).
  std::vector<std::int32_t> stack;
  for (std::int64_t t = 0; t < n_trees; ++t) {
    stack.assign(1, a.tree_root[static_cast<std::size_t>(t)]);
    std::uint64_t features = 0;
    while (!stack.empty()) {
      const std::int32_t n = stack.back();
      stack.pop_back();
      if (a.is_leaf(n)) continue;
      features |= std::uint64_t{1} << a.feature[n];
      stack.push_back(a.left[n]);
      stack.push_back(a.right[n]);
    }
    split[static_cast<std::size_t>(t)] = features;
  }
}

void group_leaves(const LeafBoxes& boxes, std::int64_t t, std::uint64_t C, TreeGrouping& grouping) {
  grouping.leaves.clear();
  grouping.own_feature.clear();
  grouping.own_slot.clear();
  grouping.representative.clear();
  grouping.group_size.clear();
  grouping.own_entries.clear();
  grouping.group_key.clear();
  grouping.interval_of.clear();
  const auto n_shared = static_cast<std::size_t>(__builtin_popcountll(C));
  grouping.intervals.resize(n_shared);
  for (auto& intervals : grouping.intervals) intervals.clear();
  const auto d = static_cast<std::size_t>(boxes.n_features);
  std::int32_t n_groups = 0;
  for (std::int32_t u = boxes.tree_first[t]; u < boxes.tree_first[t + 1]; ++u) {
    const std::size_t base = static_cast<std::size_t>(u) * d;
    const std::uint64_t nan_u = boxes.nan_ok[static_cast<std::size_t>(u)] & C;
    const std::uint64_t zero_u = boxes.zero_ok[static_cast<std::size_t>(u)] & C;
    // A hash of the box on C, compared before the box (comparing every box with every group's
    // showed as a tenth of LightGBM's curves).
    std::uint64_t key = nan_u * 0x9e3779b97f4a7c15ULL ^ zero_u;
    for (std::uint64_t f = C; f != 0; f &= f - 1) {
      const auto j = static_cast<std::size_t>(__builtin_ctzll(f));
      key = (key ^ static_cast<std::uint32_t>(boxes.lo[base + j])) * 0x100000001b3ULL;
      key = (key ^ static_cast<std::uint32_t>(boxes.hi[base + j])) * 0x100000001b3ULL;
    }
    std::int32_t group = -1;
    for (std::int32_t g = 0; g < n_groups && group < 0; ++g) {
      if (grouping.group_key[static_cast<std::size_t>(g)] != key) continue;
      const std::int32_t r = grouping.representative[static_cast<std::size_t>(g)];
      const std::size_t rbase = static_cast<std::size_t>(r) * d;
      bool same = (boxes.nan_ok[static_cast<std::size_t>(r)] & C) == nan_u &&
                  (boxes.zero_ok[static_cast<std::size_t>(r)] & C) == zero_u;
      for (std::uint64_t f = C; f != 0 && same; f &= f - 1) {
        const auto j = static_cast<std::size_t>(__builtin_ctzll(f));
        same = boxes.lo[base + j] == boxes.lo[rbase + j] && boxes.hi[base + j] == boxes.hi[rbase + j];
      }
      if (same) group = g;
    }
    if (group < 0) {
      group = n_groups++;
      grouping.representative.push_back(u);
      grouping.group_size.push_back(0);
      grouping.own_entries.push_back(0);
      grouping.group_key.push_back(key);
      std::size_t c = 0;
      for (std::uint64_t f = C; f != 0; f &= f - 1, ++c) {
        const auto j = static_cast<std::size_t>(__builtin_ctzll(f));
        const std::pair<std::int32_t, std::int32_t> interval{boxes.lo[base + j], boxes.hi[base + j]};
        auto& intervals = grouping.intervals[c];
        const auto at = std::find(intervals.begin(), intervals.end(), interval);
        grouping.interval_of.push_back(static_cast<std::uint8_t>(at - intervals.begin()));
        if (at == intervals.end()) intervals.push_back(interval);
      }
    }
    ++grouping.group_size[static_cast<std::size_t>(group)];
    const std::uint64_t own = boxes.constrained[static_cast<std::size_t>(u)] & ~C;
    std::int32_t n_own = 0;
    for (std::uint64_t f = own; f != 0; f &= f - 1, ++n_own) {
      const auto j = static_cast<std::size_t>(__builtin_ctzll(f));
      grouping.own_feature.push_back(static_cast<std::uint8_t>(j));
      grouping.own_slot.push_back(boxes.slot_of[base + j]);
    }
    grouping.own_entries[static_cast<std::size_t>(group)] += n_own;
    grouping.leaves.push_back(
        ProjectedLeaf{u, static_cast<std::uint16_t>(group), static_cast<std::uint8_t>(n_own), 0});
  }
  // The groups on each interval (only trees of at most 64 groups are projected: Projections).
  grouping.interval_first.assign(1, 0);
  for (const auto& intervals : grouping.intervals) {
    grouping.interval_first.push_back(grouping.interval_first.back() + intervals.size());
  }
  const std::size_t n_cells = grouping.interval_first.back();
  grouping.groups_on.assign(n_cells, 0);
  grouping.nan_groups_on.assign(n_cells, 0);
  grouping.zero_groups_on.assign(n_cells, 0);
  for (std::int32_t g = 0; g < n_groups && g < 64; ++g) {
    const auto r = static_cast<std::size_t>(grouping.representative[static_cast<std::size_t>(g)]);
    const std::uint64_t bit_g = std::uint64_t{1} << g;
    std::size_t c = 0;
    for (std::uint64_t f = C; f != 0; f &= f - 1, ++c) {
      const std::int32_t j = __builtin_ctzll(f);
      const std::size_t cell =
          grouping.interval_first[c] + grouping.interval_of[static_cast<std::size_t>(g) * n_shared + c];
      grouping.groups_on[cell] |= bit_g;
      if (((boxes.nan_ok[r] >> j) & 1u) != 0) grouping.nan_groups_on[cell] |= bit_g;
      if (((boxes.zero_ok[r] >> j) & 1u) != 0) grouping.zero_groups_on[cell] |= bit_g;
    }
  }
  // Once per grouping, not per plan: a tree's grouping on C serves its pairs with that C.
  if (!cell_groups(grouping, n_shared, grouping.cell_group)) grouping.cell_group.clear();
  grouping.group_cell.assign(grouping.cell_group.size(), 0);
  for (std::size_t cell = 0; cell < grouping.cell_group.size(); ++cell) {
    grouping.group_cell[grouping.cell_group[cell]] = static_cast<std::uint8_t>(cell);
  }
}

bool project_tree_pair(const Arena& a, const LeafBoxes& boxes, const TreeGrouping& first, const TreeGrouping& second,
                       std::uint64_t C, std::uint64_t split_first, std::uint64_t split_second, bool always,
                       ProjectedPlan& plan, std::vector<std::int32_t>& entry,
                       std::vector<std::uint64_t>& partner_masks, bool grid, bool count_meets) {
  plan.clear();
  const auto leaves_t = static_cast<std::int32_t>(first.leaves.size());
  const auto leaves_s = static_cast<std::int32_t>(second.leaves.size());
  plan.first = &first;
  plan.second = &second;
  plan.first_features = split_first;
  plan.second_features = split_second;
  plan.features = split_first | split_second;
  plan.shared = C;
  const std::int32_t groups_first = first.n_groups(), groups_second = second.n_groups();
  // Little merging, few fewer items than pairs (LightGBM's 31-leaf trees on housing: most tree
  // pairs keep over 3/4 of their leaf pairs as meets): not worth building the meets.
  if (!always && 2 * static_cast<std::int64_t>(groups_first) * groups_second >
                     static_cast<std::int64_t>(leaves_t) * leaves_s) {
    return false;
  }
  // Per feature c of C, per pair of the trees' intervals there (their boxes'), the meet entry
  // (kLine, kApart or an interval).
  // (A group's partners are found as bits: groupings of at most 64 groups, which every tree of
  // at most kMaxProjectedLeaves leaves has.)
  if (groups_first > 64 || groups_second > 64) return false;
  const auto n_shared = static_cast<std::size_t>(__builtin_popcountll(C));
  std::int32_t feature_of[64];
  std::size_t entry_begin[65], mask_begin[65], n_second[64];
  entry.clear();
  // Per feature c of C and interval i of the first tree there, three masks over the second
  // tree's groups: those whose interval on c meets i, and those apart from it whose paths admit
  // NaN, zero there. A group's partners on c follow from its interval and its own flags alone.
  partner_masks.clear();
  {
    std::size_t c = 0;
    for (std::uint64_t f = C; f != 0; f &= f - 1, ++c) {
      const std::int32_t j = __builtin_ctzll(f);
      feature_of[c] = j;
      entry_begin[c] = entry.size();
      mask_begin[c] = partner_masks.size();
      n_second[c] = second.intervals[c].size();
      const std::size_t cell = second.interval_first[c];
      for (const auto& [lo_t, hi_t] : first.intervals[c]) {
        std::uint64_t meet = 0, nan_apart = 0, zero_apart = 0;
        std::size_t k = 0;
        for (const auto& [lo_s, hi_s] : second.intervals[c]) {
          const std::int32_t lo = std::max(lo_t, lo_s), hi = std::min(hi_t, hi_s);
          if (lo >= hi) {
            entry.push_back(kApart);
            nan_apart |= second.nan_groups_on[cell + k];
            zero_apart |= second.zero_groups_on[cell + k];
          } else if (lo == a.feature_bounds_begin[j] && hi == a.feature_bounds_begin[j + 1] - 1) {
            entry.push_back(kLine);
            meet |= second.groups_on[cell + k];
          } else {
            entry.push_back(static_cast<std::int32_t>(plan.interval_cut.size() / 2));
            plan.interval_cut.push_back(lo);
            plan.interval_cut.push_back(hi);
            meet |= second.groups_on[cell + k];
          }
          ++k;
        }
        partner_masks.push_back(meet);
        partner_masks.push_back(nan_apart);
        partner_masks.push_back(zero_apart);
      }
    }
  }
  const double projected_items = static_cast<double>(first.leaves.size() + second.leaves.size() +
                                                     first.own_feature.size() + second.own_feature.size());
  // Grids: the meets counted instead of listed (counted_meets), and listed below only where
  // the grid is not built after all (it costs more than the meets, or a pair splitting 64
  // features keeps its meets for a greedy step of 64 candidates).
  if (grid && count_meets && __builtin_popcountll(plan.features) <= 63 && plan.interval_cut.size() / 2 <= 65535 &&
      grids_fit(first, second, n_shared) && !special_partners(first, n_shared, partner_masks, mask_begin)) {
    const MeetCounts counts = counted_meets(first, second, n_shared, entry, entry_begin);
    if (!always && (projected_items + counts.meets + counts.entries) * kProjectedWeight >= counts.pair_cost) {
      return false;
    }
    if (build_grid(first, second, n_shared, feature_of, entry, entry_begin, counts.meets, counts.entries, plan)) {
      return true;
    }
    plan.clear_grid();
    grid = false;  // (the same grid again below would fail the same way)
  }
  double pair_cost = 0.0;  // pairs and their entries, as the enumeration would list them
  // Written through pointers into room for every pair of groups, then cut to size (push_back's
  // checks were a quarter of the build).
  const std::size_t max_meets = static_cast<std::size_t>(groups_first) * static_cast<std::size_t>(groups_second);
  plan.meets.resize(max_meets);
  plan.meet_feature.resize(max_meets * n_shared);
  plan.meet_interval.resize(max_meets * n_shared);
  ProjectedMeet* meet_out = plan.meets.data();
  std::uint8_t* feature_out = plan.meet_feature.data();
  std::uint16_t* interval_out = plan.meet_interval.data();
  std::size_t n_meets = 0, n_entries = 0;
  for (std::int32_t g = 0; g < groups_first; ++g) {
    const std::int32_t u = first.representative[static_cast<std::size_t>(g)];
    const std::uint8_t* interval_g = first.interval_of.data() + static_cast<std::size_t>(g) * n_shared;
    const std::uint64_t nan_u = boxes.nan_ok[static_cast<std::size_t>(u)];
    const std::uint64_t zero_u = boxes.zero_ok[static_cast<std::size_t>(u)];
    // The groups h that can meet g: on every feature c of C, h's interval meets g's, or the two
    // paths admit a special value there (the test below, per feature, as bits over h); in
    // increasing h, the order of trying every h.
    std::uint64_t partners = groups_second == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << groups_second) - 1;
    const std::int32_t* entry_g[64];  // per c, g's row of the meet entries
    for (std::size_t c = 0; c < n_shared; ++c) {
      const std::int32_t j = feature_of[c];
      entry_g[c] = entry.data() + entry_begin[c] + interval_g[c] * n_second[c];
      const std::uint64_t* masks = partner_masks.data() + mask_begin[c] + 3 * static_cast<std::size_t>(interval_g[c]);
      partners &= masks[0] | (((nan_u >> j) & 1u) != 0 ? masks[1] : 0) | (((zero_u >> j) & 1u) != 0 ? masks[2] : 0);
    }
    for (; partners != 0; partners &= partners - 1) {
      const std::int32_t h = __builtin_ctzll(partners);
      const std::uint8_t* interval_h = second.interval_of.data() + static_cast<std::size_t>(h) * n_shared;
      const std::size_t entries_before = n_entries;
      for (std::size_t c = 0; c < n_shared; ++c) {
        const std::int32_t j = feature_of[c];
        std::int32_t interval = entry_g[c][interval_h[c]];
        if (interval == kLine) continue;
        if (interval == kApart) {
          // Apart on c, yet a partner: both paths admit a special value there (the masks above).
          // Only that value: an empty interval (lo, lo), mass exactly zero.
          const auto& [lo_t, hi_t] = first.intervals[c][interval_g[c]];
          const auto& [lo_s, hi_s] = second.intervals[c][interval_h[c]];
          const std::int32_t lo = std::max(lo_t, lo_s);
          if (lo == a.feature_bounds_begin[j] && lo == a.feature_bounds_begin[j + 1] - 1) continue;  // the line
          interval = static_cast<std::int32_t>(plan.interval_cut.size() / 2);
          plan.interval_cut.push_back(lo);
          plan.interval_cut.push_back(lo);
        }
        feature_out[n_entries] = static_cast<std::uint8_t>(j);
        interval_out[n_entries++] = static_cast<std::uint16_t>(interval);
      }
      const auto count = static_cast<std::uint8_t>(n_entries - entries_before);
      meet_out[n_meets++] = ProjectedMeet{static_cast<std::uint16_t>(g), static_cast<std::uint16_t>(h), count};
      const double size_g = first.group_size[static_cast<std::size_t>(g)];
      const double size_h = second.group_size[static_cast<std::size_t>(h)];
      pair_cost += size_g * size_h * (1.0 + count) +
                   size_h * static_cast<double>(first.own_entries[static_cast<std::size_t>(g)]) +
                   size_g * static_cast<double>(second.own_entries[static_cast<std::size_t>(h)]);
    }
  }
  plan.meets.resize(n_meets);
  plan.meet_feature.resize(n_entries);
  plan.meet_interval.resize(n_entries);
  // (A meet entry names its interval in 16 bits.)
  if (plan.interval_cut.size() / 2 > 65535) return false;
  const auto meets = static_cast<double>(n_meets), entries = static_cast<double>(n_entries);
  const bool use = always || (projected_items + meets + entries) * kProjectedWeight < pair_cost;
  if (use && grid &&
      !(grids_fit(first, second, n_shared) &&
        build_grid(first, second, n_shared, feature_of, entry, entry_begin, meets, entries, plan))) {
    plan.clear_grid();
  }
  return use;
}

void GroupSumCache::start_tile(std::int64_t t0) {
  t0_ = t0;
  for (auto& seen : seen_) seen.clear();
  n_entries_ = 0;
  chunk_ = used_ = 0;
}

double* GroupSumCache::allocate(std::size_t n) {
  constexpr std::size_t align = kLanes;  // doubles: one lane vector
  n = (n + align - 1) / align * align;
  if (n > kChunkDoubles) return nullptr;
  if (chunk_ < chunks_.size() && used_ + n > kChunkDoubles) {
    ++chunk_;
    used_ = 0;
  }
  if (chunk_ == chunks_.size()) {
    if (chunks_.size() == max_chunks_) return nullptr;
    chunks_.emplace_back(new double[kChunkDoubles + align]);
  }
  // (Aligned by hand: the passes store whole lane vectors there.)
  const auto base = reinterpret_cast<std::uintptr_t>(chunks_[chunk_].get());
  const std::uintptr_t bytes = align * sizeof(double);
  double* at = reinterpret_cast<double*>((base + bytes - 1) / bytes * bytes) + used_;
  used_ += n;
  return at;
}

bool GroupSumCache::make_room(TreeGroupSums& entry, std::size_t cells, bool with_live) {
  // The sums, then the flags (a byte per cell, in doubles).
  const std::size_t flags = with_live ? (cells + sizeof(double) - 1) / sizeof(double) : 0;
  double* room = allocate(cells * kLanes + flags);
  if (room == nullptr) return false;
  entry.sums = room;
  entry.live = with_live ? reinterpret_cast<std::uint8_t*>(room + cells * kLanes) : nullptr;
  return true;
}

TreeGroupSums* GroupSumCache::get(std::int64_t t, std::uint64_t C, std::int32_t vector, std::int32_t n_vectors,
                                  std::int32_t groups, std::int64_t n_sets, bool with_live) {
  const auto i = static_cast<std::size_t>(t - t0_);
  const auto cells = static_cast<std::size_t>(n_sets * groups);
  if (seen_.size() <= i) seen_.resize(i + 1);
  std::size_t first = n_entries_;
  bool seen = false;
  for (const auto& [shared, at] : seen_[i]) {
    if (shared == C) {
      first = at;
      seen = true;
      break;
    }
  }
  if (!seen) {
    n_entries_ += static_cast<std::size_t>(n_vectors);
    while (entries_.size() < n_entries_) entries_.push_back(std::make_unique<TreeGroupSums>());
    for (std::size_t e = first; e < n_entries_; ++e) *entries_[e] = TreeGroupSums{};
    seen_[i].emplace_back(C, first);
  }
  TreeGroupSums* entry = entries_[first + static_cast<std::size_t>(vector)].get();
  if (entry->sums == nullptr && !make_room(*entry, cells, with_live)) return nullptr;  // not yet taken
  return entry;
}

bool keep_group_sums() { return env_switch("PGEXACT_KEEP_GROUP_SUMS") != "0"; }

bool use_projected_grid() { return env_switch("PGEXACT_PROJECTED_GRID") != "0"; }

bool count_grid_meets() { return env_switch("PGEXACT_COUNT_GRID_MEETS") != "0"; }

ProjectionUse projection_use() {
  const std::string value = env_switch("PGEXACT_PROJECTION");
  if (value == "0") return ProjectionUse::Never;
  if (value == "always") return ProjectionUse::Always;
  return ProjectionUse::Cheaper;
}

Projections::Projections(const Arena& a, const LeafBoxes& boxes)
    : arena_(a), boxes_(boxes), use_(projection_use()), grid_(use_projected_grid()), count_meets_(count_grid_meets()) {
  // Nothing to project without two trees of at most kMaxProjectedLeaves leaves (deep forests):
  // then no per-tree features, no decisions.
  std::int64_t small_trees = 0;
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    small_trees += boxes.tree_first[t + 1] - boxes.tree_first[t] <= kMaxProjectedLeaves ? 1 : 0;
  }
  if (boxes.set_features != 0 || small_trees < 2) use_ = ProjectionUse::Never;
  if (use_ == ProjectionUse::Never) return;
  features_ = std::make_unique<TreeFeatures>(a, boxes);
  decided_.resize(static_cast<std::size_t>(a.n_trees()));
  kept_.resize(static_cast<std::size_t>(a.n_trees()));
  groupings_.resize(static_cast<std::size_t>(a.n_trees()));
  grouping_locks_ = std::make_unique<std::mutex[]>(static_cast<std::size_t>(a.n_trees()));
}

const TreeGrouping& Projections::grouping(std::int64_t t, std::uint64_t C, TreeGrouping& scratch) {
  const std::lock_guard<std::mutex> lock(grouping_locks_[static_cast<std::size_t>(t)]);
  auto& kept = groupings_[static_cast<std::size_t>(t)];
  for (const auto& [shared, grouping] : kept) {
    if (shared == C) return *grouping;
  }
  group_leaves(boxes_, t, C, scratch);
  const auto bytes = static_cast<std::int64_t>(scratch.bytes());
  if (grouping_bytes_.fetch_add(bytes) + bytes > kGroupingBudget) {
    grouping_bytes_.fetch_sub(bytes);
    return scratch;
  }
  kept.emplace_back(C, std::make_unique<TreeGrouping>(scratch));
  return *kept.back().second;
}

bool Projections::project(std::int64_t t, std::int64_t s, PlanScratch& scratch) {
  const std::int32_t leaves_t = boxes_.tree_first[t + 1] - boxes_.tree_first[t];
  const std::int32_t leaves_s = boxes_.tree_first[s + 1] - boxes_.tree_first[s];
  if (t == s || leaves_t > kMaxProjectedLeaves || leaves_s > kMaxProjectedLeaves) return false;
  const bool always = use_ == ProjectionUse::Always;
  const std::uint64_t cut_t = features_->cut[static_cast<std::size_t>(t)];
  const std::uint64_t cut_s = features_->cut[static_cast<std::size_t>(s)];
  const std::uint64_t C = cut_t & cut_s;
  // Trees that cut the same features merge no leaves: the plan would be the pairs over again.
  if (!always && cut_t == C && cut_s == C) return false;
  const TreeGrouping& first = grouping(t, C, scratch.first);
  const TreeGrouping& second = grouping(s, C, scratch.second);
  return project_tree_pair(arena_, boxes_, first, second, C, features_->split[static_cast<std::size_t>(t)],
                           features_->split[static_cast<std::size_t>(s)], always, scratch.plan, scratch.entries,
                           scratch.partner_masks, grid_, count_meets_);
}

const ProjectedPlan* Projections::get(std::int64_t t, std::int64_t s, PlanScratch& scratch) {
  if (use_ == ProjectionUse::Never || s <= t) return nullptr;
  std::vector<std::int32_t>& decided_t = decided_[static_cast<std::size_t>(t)];
  if (decided_t.empty()) decided_t.assign(static_cast<std::size_t>(arena_.n_trees() - t - 1), kUndecided);  // first use
  std::int32_t& decided = decided_t[static_cast<std::size_t>(s - t - 1)];
  if (decided == kLeafPairs) return nullptr;
  auto& kept_t = kept_[static_cast<std::size_t>(t)];
  if (decided >= 0) return &kept_t[static_cast<std::size_t>(decided)];
  const bool use = project(t, s, scratch);
  decided = use ? kProjectedNotKept : kLeafPairs;
  if (!use) return nullptr;
  // A plan on a grouping past its budget (the thread's scratch) is used once, not kept.
  const bool keepable = keep_ && scratch.plan.first != &scratch.first && scratch.plan.second != &scratch.second;
  const auto bytes = static_cast<std::int64_t>(scratch.plan.bytes());
  if (keepable && used_.fetch_add(bytes) + bytes <= kBudget) {
    decided = static_cast<std::int32_t>(kept_t.size());
    kept_t.push_back(scratch.plan);
    return &kept_t.back();
  }
  if (keepable) used_.fetch_sub(bytes);
  return &scratch.plan;
}

}  // namespace pairs
}  // namespace pgexact
