#include "pgexact/exact/pair_kernel.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "leaf_pruning.hpp"
#include "env_switch.hpp"
#include "live_leaves.hpp"
#include "pair_lanes.hpp"
#include "pair_sweep.hpp"
#include "row_order.hpp"
#include "row_subsets.hpp"
#include "walk_common.hpp"
#include "pgexact/exact/kernels.hpp"
#include "pgexact/exact/leaf_pairs.hpp"

#ifdef PGEXACT_ISA_LEVELS
#include <cpuid.h>
#endif

// The drivers of the leaf-pair kernel (pair_kernel.hpp): the rows in an order that puts near
// ones in the same vectors (row_order), then per block of rows, fill the lanes
// (pair_lanes), set the leaves' codes, prune per row (leaf_pruning), find the live leaves
// (live_leaves), sweep the pair lists (pair_sweep) with the passes for this CPU (pair_passes),
// add the per-tree sums in order and certify.
namespace pgexact {

using namespace pairs;  // the kernel's own internal rooms

namespace {

void check_features(const Arena& a) {
  if (!pairs_apply(a)) throw std::invalid_argument("pair kernel: model not supported");
}

#ifdef PGEXACT_ISA_LEVELS
// Whether this CPU (and its OS, which must save the wider registers) runs the code of
// -march=x86-64-v3, and of -v4: their features one by one, since GCC 12 knows the levels by
// name in __builtin_cpu_supports and Clang 14 does not. MOVBE, F16C (CPUID leaf 1, ECX bits 22
// and 29) and LZCNT (leaf 0x80000001, ECX bit 5) are not names Clang 14 knows either.
bool cpu_runs_v3() {
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool movbe_f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx >> 22 & 1u) != 0 && (ecx >> 29 & 1u) != 0;
  const bool lzcnt = __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) != 0 && (ecx >> 5 & 1u) != 0;
  return movbe_f16c && lzcnt && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
}
bool cpu_runs_v4() {
  return cpu_runs_v3() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
}
#endif

}  // namespace

const PairPasses& pair_passes() {
  static const PairPasses chosen = [] {
    // PGEXACT_PASSES=base|v3 caps the level (tests check that every level gives the same bits).
    const std::string level = env_switch("PGEXACT_PASSES");
    if (level == "base") return isa_base::passes();
#ifdef PGEXACT_ISA_LEVELS
    if (level != "v3" && cpu_runs_v4()) return isa_v4::passes();
    if (cpu_runs_v3()) return isa_v3::passes();
#endif
    return isa_base::passes();
  }();
  return chosen;
}

bool pairs_apply(const Arena& a) {
  return a.n_outputs == 1 && a.n_features >= 1 && a.n_features <= 64 && a.max_depth <= 256;
}

namespace {

// Rows per block of pg2_pairs of n_rows rows (two sums per row).
std::int64_t pg2_block_rows(const Arena& a, const LeafBoxes& boxes, std::int64_t n_rows) {
  return block_rows(a, boxes, 2, n_rows);
}

}  // namespace

std::int64_t pg2_block_rows(const Arena& a, std::int64_t n_rows) {
  // The boxes without the rows' categories (CategoryCells): those change no leaf's slots or
  // boundaries, so not the block either.
  if (n_rows < 1 || !pairs_apply(a)) return 0;
  return pg2_block_rows(a, LeafBoxes(a), n_rows);
}

double pg2_planning_share(const Arena& a, const Noise& noise, std::int64_t n_rows) {
  // As pg2_pairs_impl plans its progress (PairSweep::plan_sweeps), without its pair cache.
  // Projections are off where a feature is perturbed by category (Projections).
  if (n_rows < 1 || !pairs_apply(a) || noise.has_categorical()) return 0.0;
  const LeafBoxes boxes(a);
  const std::int64_t block = pg2_block_rows(a, boxes, n_rows);
  const double share = planning_share(Projections(a, boxes).may_project(), block_vectors(block, n_rows));
  const SweepUnits units = sweep_units(boxes, share);
  const std::int64_t total = units.total((n_rows + block - 1) / block);
  return total > 0 ? static_cast<double>(units.planning) / static_cast<double>(total) : 0.0;
}

namespace {

// The passes for a list of leaf pairs and for a projected tree pair (tree_projection.hpp), by the
// view's type: one driver body serves both kinds of tree pair.
inline void set_pass(const PairPasses& p, const PairView& view, const LaneView& lanes, const std::uint64_t* sets,
                     double mult, double* sum, double* comp) {
  p.set(view, lanes, sets, mult, sum, comp);
}
// A projected pair's view with its trees' group sums for the lanes' vector, kept by the sweep
// (tree_projection.hpp, GroupSumCache) for the pairs with the same tree and C: room for each
// tree's sets (sets(its split features)) and, where `with_live`, their live flags.
template <typename SetsOf>
inline ProjectedView with_group_sums(const ProjectedView& view, const LaneView& lanes, SetsOf&& sets, bool with_live) {
  ProjectedView with = view;
  if (view.first_cache != nullptr) {
    with.first_sums = view.first_cache->get(view.first_tree, view.shared, lanes.vector, lanes.n_vectors,
                                            view.groups_first, sets(view.first_features), with_live);
  }
  if (view.second_cache != nullptr) {
    with.second_sums = view.second_cache->get(view.second_tree, view.shared, lanes.vector, lanes.n_vectors,
                                              view.groups_second, sets(view.second_features), with_live);
  }
  return with;
}
// Curves: up to one set per prefix.
inline ProjectedView with_curve_sums(const ProjectedView& view, const LaneView& lanes, std::int64_t n_steps) {
  return with_group_sums(view, lanes, [&](std::uint64_t) { return n_steps; }, false);
}
inline void set_pass(const PairPasses& p, const ProjectedView& view, const LaneView& lanes, const std::uint64_t* sets,
                     double mult, double* sum, double* comp) {
  // A set is a curve of one prefix.
  p.projected(with_curve_sums(view, lanes, 1), lanes, CurveSets{sets}, 1, mult, sum, comp);
}
// Vectors v and v + 1 of a set, as curve_pass_pair.
inline void set_pass_pair(const PairPasses& p, const PairView& view, const LaneView* lanes,
                          const std::uint64_t* const* sets, double mult, double* const* sum, double* const* comp) {
  p.set_pair(view, lanes, sets, mult, sum, comp);
}
inline void set_pass_pair(const PairPasses& p, const ProjectedView& view, const LaneView* lanes,
                          const std::uint64_t* const* sets, double mult, double* const* sum, double* const* comp) {
  for (int x = 0; x < 2; ++x) set_pass(p, view, lanes[x], sets[x], mult, sum[x], comp[x]);
}
inline void curve_pass(const PairPasses& p, const PairView& view, const LaneView& lanes, const CurveSets& c,
                       std::int64_t n_steps, double mult, double* sum, double* comp) {
  p.curve(view, lanes, c, n_steps, mult, sum, comp);
}
inline void curve_pass(const PairPasses& p, const ProjectedView& view, const LaneView& lanes, const CurveSets& c,
                       std::int64_t n_steps, double mult, double* sum, double* comp) {
  p.projected(with_curve_sums(view, lanes, n_steps), lanes, c, n_steps, mult, sum, comp);
}
// Vectors v and v + 1 of a curve: one walk of a tree pair's leaf pairs for both
// (PairPasses::curve_pair, the same bits as two); a projected pair takes them one after the
// other.
inline void curve_pass_pair(const PairPasses& p, const PairView& view, const LaneView* lanes, const CurveSets* c,
                            std::int64_t n_steps, double mult, double* const* sum, double* const* comp) {
  p.curve_pair(view, lanes, c, n_steps, mult, sum, comp);
}
inline void curve_pass_pair(const PairPasses& p, const ProjectedView& view, const LaneView* lanes, const CurveSets* c,
                            std::int64_t n_steps, double mult, double* const* sum, double* const* comp) {
  for (int x = 0; x < 2; ++x) curve_pass(p, view, lanes[x], c[x], n_steps, mult, sum[x], comp[x]);
}
inline void curve_row_pass(const PairPasses& p, const PairView& view, const LaneView& lanes, const CurveSets& c,
                           std::int64_t n_steps, double mult, double* sum, double* comp) {
  p.curve_row(view, lanes, c, n_steps, mult, sum, comp);
}
inline void curve_row_pass(const PairPasses& p, const ProjectedView& view, const LaneView& lanes, const CurveSets& c,
                           std::int64_t n_steps, double mult, double* sum, double* comp) {
  // Every prefix of the row in the lanes, eight at a time: a chunk of eight a set of the sums.
  const std::int64_t chunks = (n_steps + kLanes - 1) / kLanes;
  p.projected_row(with_group_sums(view, lanes, [&](std::uint64_t) { return chunks; }, true), lanes, c, n_steps, mult,
                  sum, comp);
}
inline void greedy_pass(const PairPasses& p, const PairView& view, const LaneView& lanes, const std::uint64_t* sets,
                        double mult, double* sum, double* comp, double* corr) {
  p.greedy(view, lanes, sets, mult, sum, comp, corr);
}
inline void greedy_pass(const PairPasses& p, const ProjectedView& view, const LaneView& lanes,
                        const std::uint64_t* sets, double mult, double* sum, double* comp, double* corr) {
  // S, and S + {j} for each feature j the tree splits on.
  auto tree_sets = [](std::uint64_t split) { return 1 + __builtin_popcountll(split); };
  p.projected_greedy(with_group_sums(view, lanes, tree_sets, true), lanes, sets, mult, sum, comp, corr);
}
inline void tail_pass(const PairPasses& p, const PairView& view, const LaneView& lanes, const TailSets& c,
                      std::int64_t n_sets, double mult, double* sum, double* comp) {
  p.tail(view, lanes, c, n_sets, mult, sum, comp);
}
inline void tail_pass(const PairPasses& p, const ProjectedView& view, const LaneView& lanes, const TailSets& c,
                      std::int64_t n_sets, double mult, double* sum, double* comp) {
  auto tree_sets = [&](std::uint64_t) { return n_sets; };  // the subsets of the candidates
  p.projected_tail(with_group_sums(view, lanes, tree_sets, true), lanes, c, n_sets, mult, sum, comp);
}

void pg2_pairs_impl(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                    const std::uint8_t* perturbed, bool mask_per_row, int n_threads, double* out,
                    RunControl* control, const PruneBudget& prune) {
  PairSweep sweep(a, noise, X, n_threads, n_rows, control);
  const LeafBoxes& boxes = sweep.boxes;
  const int threads = sweep.threads;
  const std::int64_t d = a.n_features;
  const std::int64_t n_trees = a.n_trees();
  Lanes lanes;
  lanes.calibration = calibrating(control);
  Liveness live;
  std::vector<double> sum, comp, total, skipped;
  std::vector<std::int64_t> failed;
  std::vector<std::uint64_t> sets;
  const std::int64_t block = pg2_block_rows(a, boxes, n_rows);
  sweep.plan_sweeps((n_rows + block - 1) / block, block_vectors(block, n_rows));
  // Two vectors of rows per walk of a tree pair's leaf pairs, as in curves (pg2_curve_pairs_impl).
  const bool paired_vectors = sweep.passes.set_pair != nullptr && env_switch("PGEXACT_CURVE_PAIRS") != "0";
  for (std::int64_t r0 = 0; r0 < n_rows && !sweep.stopped(); r0 += block) {
    const std::int64_t rows = std::min(block, n_rows - r0);
    fill_block(a, noise, boxes, X, r0, rows, threads, lanes);
    const std::size_t width = static_cast<std::size_t>(lanes.vectors) * kLanes;
    sets.assign(width, 0);
    for (std::size_t i = 0; i < static_cast<std::size_t>(rows); ++i) {
      const std::uint8_t* mask = perturbed + (mask_per_row ? (r0 + static_cast<std::int64_t>(i)) * d : 0);
      std::uint64_t s = 0;
      for (std::int64_t j = 0; j < d; ++j) s |= mask[j] ? bit(static_cast<std::int32_t>(j)) : 0;
      sets[i] = s & lanes.perturbable[i];
    }
    code_set(sets.data(), rows, lanes);
    if (prune.on) {
      prune_leaves(a, boxes, rows, 1, [&](std::int64_t i, std::int64_t) { return sets[static_cast<std::size_t>(i)]; },
                   lanes, skipped, prune.share, threads);
    }
    find_live(a, boxes, lanes, rows, 1, live);
    sum.assign(static_cast<std::size_t>(n_trees) * width, 0.0);
    comp.assign(sum.size(), 0.0);
    auto pass = [&](std::int64_t t, const auto& view, double mult) {
      double* st = sum.data() + static_cast<std::size_t>(t) * width;
      double* ct = comp.data() + static_cast<std::size_t>(t) * width;
      std::int32_t v = 0;
      for (; paired_vectors && v + 1 < lanes.vectors; v += 2) {
        const LaneView two[2] = {lanes.view(v), lanes.view(v + 1)};
        const std::uint64_t* const s2[2] = {sets.data() + v * kLanes, sets.data() + (v + 1) * kLanes};
        double* const sum2[2] = {st + v * kLanes, st + (v + 1) * kLanes};
        double* const comp2[2] = {ct + v * kLanes, ct + (v + 1) * kLanes};
        set_pass_pair(sweep.passes, view, two, s2, mult, sum2, comp2);
      }
      for (; v < lanes.vectors; ++v) {
        set_pass(sweep.passes, view, lanes.view(v), sets.data() + v * kLanes, mult, st + v * kLanes, ct + v * kLanes);
      }
    };
    sweep.run(pass, r0 + block < n_rows, &live, 1, pass);
    reduce_trees(sum, comp, n_trees, width, total);
    std::copy(total.begin(), total.begin() + rows, out + r0);
    for (std::int64_t i = 0; prune.on && i < rows; ++i) {
      if (!certified(total[static_cast<std::size_t>(i)], skipped[static_cast<std::size_t>(i)], prune)) failed.push_back(r0 + i);
    }
  }
  if (sweep.stopped() || failed.empty()) return;
  // Rows whose pruned results were not certified, again without pruning (a row's value does
  // not depend on the other rows of its call).
  const std::vector<double> rows_x = gather_rows(X, d, failed);
  const std::vector<std::uint8_t> masks = gather_rows(perturbed, d, failed, mask_per_row);
  std::vector<double> values(failed.size());
  pg2_pairs_impl(a, noise, rows_x.data(), static_cast<std::int64_t>(failed.size()), masks.data(), true, n_threads,
                 values.data(), control, PruneBudget{});
  scatter_rows(values, 1, failed, out);
}

}  // namespace

void pg2_pairs(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
               const std::uint8_t* perturbed, bool mask_per_row, int n_threads, double* out,
               RunControl* control, double tol) {
  check_features(a);
  // Near rows fill the same vectors (row_order.hpp): the same bits, in fewer pairs.
  const std::vector<std::int64_t> order = lane_order(noise, X, n_rows, a.n_features, control);
  if (stopped(control)) return;  // (a stopped call's outputs are discarded: run_control.hpp)
  if (order.empty()) {
    pg2_pairs_impl(a, noise, X, n_rows, perturbed, mask_per_row, n_threads, out, control, prune_budget(tol));
    return;
  }
  const std::vector<double> rows_x = gather_rows(X, a.n_features, order);
  const std::vector<std::uint8_t> masks = mask_per_row ? gather_rows(perturbed, a.n_features, order)
                                                       : std::vector<std::uint8_t>();
  std::vector<double> values(order.size());
  pg2_pairs_impl(a, noise, rows_x.data(), n_rows, mask_per_row ? masks.data() : perturbed, mask_per_row, n_threads,
                 values.data(), control, prune_budget(tol));
  scatter_rows(values, 1, order, out);
}

namespace {

// Fills enters[j][lane] of `sets` (n_steps prefixes, CurveSets). (Here, not in the header the
// per-level builds include: they share no inline code with the rest.)
void fill_enters(const std::uint64_t* sets, std::int64_t n_steps, std::int64_t* enters) {
  for (int j = 0; j < 64; ++j) {
    for (int l = 0; l < kLanes; ++l) {
      std::int64_t first = kNeverAlive;
      for (std::int64_t k = n_steps - 1; k >= 0; --k) first = ((sets[k * kLanes + l] >> j) & 1u) != 0 ? k : first;
      enters[j * kLanes + l] = first;
    }
  }
}

void pg2_curve_pairs_impl(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                          const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps, int n_threads,
                          double* out, RunControl* control, const PruneBudget& prune) {
  PairSweep sweep(a, noise, X, n_threads, n_rows, control);
  const LeafBoxes& boxes = sweep.boxes;
  const int threads = sweep.threads;
  const std::int64_t d = a.n_features;
  const std::int64_t n_trees = a.n_trees();
  Lanes lanes;
  lanes.calibration = calibrating(control);
  Liveness live;
  std::vector<double> sum, comp, total, skipped;
  std::vector<std::int64_t> failed;
  std::vector<std::uint64_t> sets;  // see CurveSets
  std::vector<std::int64_t> enters;
  const std::int64_t block = block_rows(a, boxes, 2 * n_steps, n_rows);
  sweep.plan_sweeps((n_rows + block - 1) / block, block_vectors(block, n_rows));
  // Two vectors of rows per walk of a tree pair's leaf pairs where the level's passes have it
  // (PairPasses::curve_pair); PGEXACT_CURVE_PAIRS=0 takes them one at a time (the same bits).
  const bool paired_vectors = sweep.passes.curve_pair != nullptr && env_switch("PGEXACT_CURVE_PAIRS") != "0";
  for (std::int64_t r0 = 0; r0 < n_rows && !sweep.stopped(); r0 += block) {
    const std::int64_t rows = std::min(block, n_rows - r0);
    fill_block(a, noise, boxes, X, r0, rows, threads, lanes);
    const std::size_t lanes_total = static_cast<std::size_t>(lanes.vectors) * kLanes;
    const std::size_t width = lanes_total * static_cast<std::size_t>(n_steps);
    const auto steps = static_cast<std::size_t>(n_steps);
    sets.assign(width, 0);
    // Per row: each feature's ranking position, and the positions of features never perturbed
    // in it (NaN, fixed by the noise, or beyond the last prefix).
    std::vector<std::int32_t> position(static_cast<std::size_t>(rows * d));
    std::vector<std::uint64_t> never(static_cast<std::size_t>(rows), 0);
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t* rk = ranking + (ranking_per_row ? (r0 + i) * d : 0);
      const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
      const std::uint64_t perturbable = lanes.perturbable[static_cast<std::size_t>(i)];
      std::uint64_t s = 0;
      for (std::int64_t k = 0; k < d; ++k) {
        const auto j = static_cast<std::int32_t>(rk[k]);
        position[static_cast<std::size_t>(i * d + j)] = static_cast<std::int32_t>(k);
        if (k >= n_steps || ((perturbable >> j) & 1u) == 0) {
          never[static_cast<std::size_t>(i)] |= bit(static_cast<std::int32_t>(k));
        }
        if (k >= n_steps) continue;
        s |= bit(j);
        sets[(v * steps + static_cast<std::size_t>(k)) * kLanes + l] = s & perturbable;
      }
    }
    // A leaf stops excluding x' at the position of the last feature x leaves its path on.
    code_leaves(0, rows, lanes, [&](std::int64_t i, std::uint64_t leaves_out) {
      const std::int32_t* row_position = position.data() + i * d;
      std::uint64_t pos = 0;
      for (std::uint64_t f = leaves_out; f != 0; f &= f - 1) pos |= bit(row_position[__builtin_ctzll(f)]);
      return (pos & never[static_cast<std::size_t>(i)]) != 0 ? kNeverAlive
             : pos == 0                                      ? std::int8_t{0}
                                                             : static_cast<std::int8_t>(63 - __builtin_clzll(pos));
    });
    if (prune.on) {
      prune_leaves(a, boxes, rows, n_steps, [&](std::int64_t i, std::int64_t k) {
        const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
        return sets[(v * steps + static_cast<std::size_t>(k)) * kLanes + l];
      }, lanes, skipped, prune.share, threads);
    }
    find_live(a, boxes, lanes, rows, static_cast<std::int8_t>(n_steps), live);
    sum.assign(static_cast<std::size_t>(n_trees) * width, 0.0);
    comp.assign(sum.size(), 0.0);
    const std::size_t per_vector = static_cast<std::size_t>(n_steps) * kLanes;
    // Per vector, where each feature enters its lanes' rankings (CurveSets), once for every pair.
    enters.resize(static_cast<std::size_t>(lanes.vectors) * 64 * kLanes);
    for (std::int32_t v = 0; v < lanes.vectors; ++v) {
      fill_enters(sets.data() + v * per_vector, n_steps, enters.data() + v * 64 * kLanes);
    }
    auto pass = [&](std::int64_t t, const auto& view, double mult) {
      double* st = sum.data() + static_cast<std::size_t>(t) * width;
      double* ct = comp.data() + static_cast<std::size_t>(t) * width;
      if (rows == 1) {  // one row: its prefixes in the lanes (the same bits, PairPasses)
        curve_row_pass(sweep.passes, view, lanes.view(0), CurveSets{sets.data()}, n_steps, mult, st, ct);
        return;
      }
      auto sets_of = [&](std::int32_t v) {
        return CurveSets{sets.data() + v * per_vector, enters.data() + v * 64 * kLanes};
      };
      std::int32_t v = 0;
      for (; paired_vectors && v + 1 < lanes.vectors; v += 2) {
        const LaneView two[2] = {lanes.view(v), lanes.view(v + 1)};
        const CurveSets c[2] = {sets_of(v), sets_of(v + 1)};
        double* const s2[2] = {st + v * per_vector, st + (v + 1) * per_vector};
        double* const c2[2] = {ct + v * per_vector, ct + (v + 1) * per_vector};
        curve_pass_pair(sweep.passes, view, two, c, n_steps, mult, s2, c2);
      }
      for (; v < lanes.vectors; ++v) {
        curve_pass(sweep.passes, view, lanes.view(v), sets_of(v), n_steps, mult, st + v * per_vector,
                   ct + v * per_vector);
      }
    };
    sweep.run(pass, r0 + block < n_rows, &live, 1, pass);
    reduce_trees(sum, comp, n_trees, width, total);
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
      bool ok = true;
      for (std::int64_t k = 0; k < n_steps; ++k) {
        const double value = total[(v * static_cast<std::size_t>(n_steps) + static_cast<std::size_t>(k)) * kLanes + l];
        out[(r0 + i) * n_steps + k] = value;
        if (prune.on) ok = ok && certified(value, skipped[static_cast<std::size_t>(i * n_steps + k)], prune);
      }
      if (!ok) failed.push_back(r0 + i);
    }
  }
  if (sweep.stopped() || failed.empty()) return;
  // Rows whose pruned results were not certified, again without pruning.
  const std::vector<double> rows_x = gather_rows(X, d, failed);
  const std::vector<std::int64_t> rankings = gather_rows(ranking, d, failed, ranking_per_row);
  std::vector<double> values(failed.size() * static_cast<std::size_t>(n_steps));
  pg2_curve_pairs_impl(a, noise, rows_x.data(), static_cast<std::int64_t>(failed.size()), rankings.data(), true,
                       n_steps, n_threads, values.data(), control, PruneBudget{});
  scatter_rows(values, n_steps, failed, out);
}

}  // namespace

void pg2_curve_pairs(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                     const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps, int n_threads,
                     double* out, RunControl* control, double tol) {
  check_features(a);
  if (n_steps == 0) return;
  const std::vector<std::int64_t> order = lane_order(noise, X, n_rows, a.n_features, control);  // as pg2_pairs
  if (stopped(control)) return;
  if (order.empty()) {
    pg2_curve_pairs_impl(a, noise, X, n_rows, ranking, ranking_per_row, n_steps, n_threads, out, control,
                         prune_budget(tol));
    return;
  }
  const std::vector<double> rows_x = gather_rows(X, a.n_features, order);
  // (A ranking per row is a row of d features, of which the curve takes the first n_steps.)
  const std::vector<std::int64_t> rankings = ranking_per_row ? gather_rows(ranking, a.n_features, order)
                                                             : std::vector<std::int64_t>();
  std::vector<double> values(order.size() * static_cast<std::size_t>(n_steps));
  pg2_curve_pairs_impl(a, noise, rows_x.data(), n_rows, ranking_per_row ? rankings.data() : ranking,
                       ranking_per_row, n_steps, n_threads, values.data(), control, prune_budget(tol));
  scatter_rows(values, n_steps, order, out);
}

namespace {

// The candidate of `candidates` (not empty) with the largest value[j] (`value` per feature):
// strictly greater, so ties go to the lower index. Step 0's sweep and the later steps' passes
// choose alike.
std::int32_t best_candidate(const double* value, std::uint64_t candidates) {
  std::int32_t best = -1;
  for (std::uint64_t f = candidates; f != 0; f &= f - 1) {
    const std::int32_t j = __builtin_ctzll(f);
    if (best < 0 || value[j] > value[best]) best = j;
  }
  return best;
}

// Whether row i's greedy choice `best` stands whatever its pruned leaves would have added: every
// candidate's value is certain within skipped_none + skipped_by[j] (prune_greedy_leaves), so
// the choice stands where the best value, less its bound, beats every other candidate's value
// plus its bound. Where neither has a bound the values are the unpruned bits, compared as the
// unpruned step compares them.
// `value` and `skipped_by` are per feature; `candidates` the step's candidates.
bool choice_certified(std::int32_t best, const double* value, std::uint64_t candidates, double skipped_none,
                      const double* skipped_by) {
  const double best_slack = skipped_none + skipped_by[best];
  for (std::uint64_t f = candidates & ~bit(best); f != 0; f &= f - 1) {
    const int j = __builtin_ctzll(f);
    const double slack = skipped_none + skipped_by[j];
    if (best_slack + slack > 0.0 && !(value[best] - best_slack > value[j] + slack)) return false;
  }
  return true;
}

// A row's tail candidates (the greedy ranking's last tail_r steps): the first tail_r features of
// `left` (those not chosen; exactly tail_r for a row, more for a padding lane), in feature order.
inline void list_tail(std::uint64_t left, std::int64_t tail_r, std::int32_t* row_tail) {
  for (std::int64_t c = 0; c < tail_r; ++c, left &= left - 1) row_tail[c] = __builtin_ctzll(left);
}

// S + A: S with the tail candidates of subset A (bit c: row_tail[c]) that the row can move.
inline std::uint64_t tail_set(std::uint64_t S, const std::int32_t* row_tail, std::int64_t tail_r, std::size_t A,
                              std::uint64_t movable) {
  for (std::int64_t c = 0; c < tail_r; ++c) {
    if ((A >> c) & 1u) S |= bit(row_tail[c]) & movable;
  }
  return S;
}

// The tail's steps of one row, from value(A) = PG2(S + A) for every subset A of its candidates
// row_tail: each step takes the candidate whose addition has the largest value (strictly
// greater: ties to the lower index, row_tail being in feature order), into chosen and
// ranking_row[step + k]; the curve gets PG2(S) at step - 1 and the chosen sets' values after.
template <typename Value>
void choose_tail(Value&& value, const std::int32_t* row_tail, std::int64_t tail_r, std::int64_t step,
                 std::uint64_t& chosen, std::int64_t* ranking_row, double* curve_row) {
  if (step > 0) curve_row[step - 1] = value(std::size_t{0});
  std::size_t taken = 0;
  for (std::int64_t k = 0; k < tail_r; ++k) {
    std::int64_t best = -1;
    for (std::int64_t c = 0; c < tail_r; ++c) {
      if ((taken >> c) & 1u) continue;
      if (best < 0 || value(taken | (std::size_t{1} << c)) > value(taken | (std::size_t{1} << best))) best = c;
    }
    taken |= std::size_t{1} << best;
    chosen |= bit(row_tail[best]);
    ranking_row[step + k] = row_tail[best];
    curve_row[step + k] = value(taken);
  }
}

// A greedy ranking's first steps without a pass over the pairs, per row, into values[i * d + j]
// for rows r0 .. r0 + rows and candidates j (pg2_row; exact, unpruned):
// - step 0 (first null): PG2 of each candidate alone, a sweep over that feature's boundaries
//   (O(trees x depth) per row and feature), where the pass costs about as much as any later
//   step's (1.8 of 17 s on 64 rows of CatBoost(200), 0.4-0.9 of 5.5 s on XGBoost); 0 where the
//   row's x_j is NaN (perturbing it changes nothing), as the pass gives;
// - step 1 (first: the rows' step-0 choices, first[i * d]): PG2 of {first, j}, the sum over the
//   two features' grid of cells (two_feature_grid.cpp; the sweep of one where the other cannot
//   move in the row), where second_step_on_grids says it costs less than the pass.
// The curve's first entry is PG2 of the first choice: step 1's sweep value of it where step 1
// is on the grids, else step 1's pass's. Not with categorical noise (the sweep and the grids are
// for numeric features; the passes run then).
void small_set_step(const Arena& a, const Noise& noise, const double* X, std::int64_t r0, std::int64_t rows,
                    const std::int64_t* first, std::uint64_t candidates, int threads, std::vector<double>& values,
                    RunControl* control) {
  const std::int64_t d = a.n_features;
  values.assign(static_cast<std::size_t>(rows * d), 0.0);
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    Workspace ws(a);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(d), 0);
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t i = 0; i < rows; ++i) {
      if (stopped(control)) continue;
      ws.begin_row(X + (r0 + i) * d);
      const std::int64_t f = first != nullptr ? first[i * d] : -1;
      if (f >= 0) mask[static_cast<std::size_t>(f)] = 1;
      for (std::uint64_t rest = candidates & ~(f >= 0 ? bit(static_cast<std::int32_t>(f)) : 0); rest != 0;
           rest &= rest - 1) {
        const std::int32_t j = __builtin_ctzll(rest);
        mask[static_cast<std::size_t>(j)] = 1;
        values[static_cast<std::size_t>(i * d + j)] = pg2_row(a, noise, mask.data(), ws, Pruning::Full);
        mask[static_cast<std::size_t>(j)] = 0;
      }
      if (f >= 0) mask[static_cast<std::size_t>(f)] = 0;
    }
  }
  (void)threads;
}

// Whether step 1 of a greedy ranking is cheaper on the two-feature grids than as a pass, per
// row: a pass costs at least about 2 ns per unit of a sweep (a pair of leaves) and vector of
// eight rows (the 64-row step-1 passes of XGBoost() and CatBoost(200) on housing took 0.5 and
// 0.9 s), a set on a grid about 4 ns per corner and 1 ns per leaf of the model (measured per
// set on housing: XGBoost() 225 us, CatBoost(200) 105, XGBoost(500, depth 8) 634,
// GradientBoostingRegressor() 35 us, whose pass of 800 leaves costs less). The choice depends
// on the model and the noise alone, not on the rows or their number: a row's bits do not
// depend on its batch (pgexact.dask's blocks among them).
// PGEXACT_GRIDDED_STEP=0 never takes the grids, =1 always where they fit (tests and
// before/after comparisons).
bool second_step_on_grids(const Arena& a, const LeafBoxes& boxes, std::uint64_t choosable) {
  const std::string forced = env_switch("PGEXACT_GRIDDED_STEP");
  if (forced == "0") return false;
  double corners = 0.0;  // the largest grid of two candidates
  for (std::uint64_t f = choosable; f != 0; f &= f - 1) {
    for (std::uint64_t g = f & (f - 1); g != 0; g &= g - 1) {
      const std::int32_t j = __builtin_ctzll(f), i = __builtin_ctzll(g);
      if (!walk::two_feature_grid_fits(a, j, i)) return false;
      corners = std::max(corners, static_cast<double>(walk::two_feature_grid_corners(a, j, i)));
    }
  }
  if (forced == "1") return true;
  const double candidates = __builtin_popcountll(choosable) - 1;
  const double grid_ns = candidates * (4.0 * corners + boxes.n_leaves());
  const double pass_ns = 2.0 * static_cast<double>(sweep_units(boxes, 0.0).sweep) / kLanes;
  return grid_ns < pass_ns;
}

void greedy_rank_pairs_impl(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows, int n_threads,
                            std::int64_t* ranking_out, double* curve_out, RunControl* control,
                            const PruneBudget& prune, bool one_row_in_lanes) {
  PairSweep sweep(a, noise, X, n_threads, n_rows, control);
  const LeafBoxes& boxes = sweep.boxes;
  const int threads = sweep.threads;
  const std::int64_t d = a.n_features;
  const std::int64_t n_trees = a.n_trees();
  std::uint64_t choosable = 0;  // features that can be chosen: the noise can move them
  std::int64_t n_candidates = 0;
  for (std::int64_t j = 0; j < d; ++j) {
    if (noise_moves(a, noise, j)) {
      choosable |= bit(static_cast<std::int32_t>(j));
      ++n_candidates;
    }
  }
  Lanes lanes;
  lanes.calibration = calibrating(control);
  Liveness live;
  std::vector<double> sum, comp, total, corr, corr_total, skipped_none, skipped_by, single, pair_values;
  std::vector<std::uint64_t> chosen, cand;
  std::vector<std::int64_t> failed;
  std::vector<std::uint8_t> row_failed;
  // The last tail_r steps (all of them up to four candidates) take one pass over every set
  // S + A they can ask for, A a subset of the candidates left (TailSets): the last steps' passes
  // cost the most, each about a pass with every feature perturbed (64 rows of XGBoost() on
  // housing: passes 4-7 took 5.1 of 7.5 s), and their 2^r sets share the pairs' masses. Below
  // two candidates the old passes run (a greedy pass, then a set pass).
  const std::int64_t tail_r = n_candidates >= 2 ? std::min<std::int64_t>(n_candidates, kMaxTailCandidates) : 0;
  const std::int64_t n_tail_sets = std::int64_t{1} << tail_r;
  // The tail pass costs about a pass per eight sets (64 rows of XGBoost() on housing: 1.8 s in
  // `perf` since it is built per number of candidates, 2.5 s before, against 0.7 s for each
  // earlier step's pass and 1.2-1.4 s for each of the passes it replaces), and counts so in the
  // progress (a pass that counted one where it cost four made estimate's projection 0.48 of
  // the time).
  const std::int64_t tail_weight = std::max<std::int64_t>(1, n_tail_sets / 8);
  // Step 0 sweeps each candidate's boundaries (small_set_step) unless it is the tail's or
  // the noise has categorical features: a pass fewer.
  const bool swept_first = !noise.has_categorical() && n_candidates > tail_r;
  const std::int64_t block = block_rows(a, boxes, std::max<std::int64_t>(2 + d, 2 * n_tail_sets), n_rows);
  // Step 1 on the two-feature grids (small_set_step with the first choices) where it is not
  // the tail's and they cost less than its pass: another pass fewer.
  const bool gridded_second = swept_first && n_candidates - tail_r > 1 && second_step_on_grids(a, boxes, choosable);
  sweep.plan_sweeps((n_rows + block - 1) / block *
                    ((n_candidates >= 2 ? n_candidates - tail_r + tail_weight : n_candidates + 1) -
                     (swept_first ? 1 : 0) - (gridded_second ? 1 : 0)),
                    block_vectors(block, n_rows));
  // One row: its passes put the sets they compare in the lanes (a step's S + {j}, one candidate
  // a lane, and S; the tail's S + A, one subset a lane), copies of the row, and sum each as a
  // set (set_pass): a greedy pass's or tail pass's sets of one row left seven lanes of eight idle,
  // and its per-lane work for every set cost more than a set's. Unpruned (exact, so no choice
  // needs a certificate); every value is a set pass's, so the curve has pg2's bits.
  const bool sets_in_lanes = one_row_in_lanes && n_rows == 1 && n_candidates >= 2;
  std::vector<double> copies;  // the row, once per lane the sets need
  std::int64_t n_copies = 0;
  if (sets_in_lanes) {
    n_copies = std::max<std::int64_t>(n_candidates + 1, n_tail_sets);
    copies.resize(static_cast<std::size_t>(n_copies * d));
    for (std::int64_t i = 0; i < n_copies; ++i) std::copy(X, X + d, copies.begin() + i * d);
  }
  // PG2 of sets[l] for lanes l < n_sets (copies of the row) into total[l]; `weight`: the sweeps
  // its pass counts for in the progress (plan_sweeps).
  auto lane_sets = [&](const std::vector<std::uint64_t>& sets, std::int64_t n_sets, std::int64_t weight) {
    code_set(sets.data(), n_sets, lanes);
    find_live(a, boxes, lanes, n_sets, 1, live);
    const std::size_t width = static_cast<std::size_t>(lanes.vectors) * kLanes;
    sum.assign(static_cast<std::size_t>(n_trees) * width, 0.0);
    comp.assign(sum.size(), 0.0);
    auto pass = [&](std::int64_t t, const auto& view, double mult) {
      double* st = sum.data() + static_cast<std::size_t>(t) * width;
      double* ct = comp.data() + static_cast<std::size_t>(t) * width;
      for (std::int32_t v = 0; v * kLanes < n_sets; ++v) {
        set_pass(sweep.passes, view, lanes.view(v), sets.data() + v * kLanes, mult, st + v * kLanes, ct + v * kLanes);
      }
    };
    sweep.run(pass, true, &live, weight, pass);
    if (!sweep.stopped()) reduce_trees(sum, comp, n_trees, width, total);
  };
  // A calibration (pgexact.estimate; its results are discarded) takes steps 0 and 1 without a
  // pass on one vector of rows per block, and gives the others copies of those rows' step-0
  // values, then their own second best single feature: the passes it times cost about the same
  // whichever features come first, and on 64 rows of XGBoost(500, depth 8) the grids took a
  // quarter of a second, the sweeps a tenth of the calibration.
  const bool calibration = calibrating(control);
  for (std::int64_t r0 = 0; r0 < n_rows && !sweep.stopped(); r0 += block) {
    const std::int64_t rows = std::min(block, n_rows - r0);
    const std::int64_t small_set_rows = calibration ? std::min<std::int64_t>(rows, kLanes) : rows;
    if (sets_in_lanes) {
      fill_block(a, noise, boxes, copies.data(), 0, n_copies, threads, lanes);
    } else {
      fill_block(a, noise, boxes, X, r0, rows, threads, lanes);
    }
    const std::size_t width = static_cast<std::size_t>(lanes.vectors) * kLanes;
    const std::size_t corr_width = width * static_cast<std::size_t>(d);  // [vector][feature][lane]
    chosen.assign(width, 0);
    cand.assign(width, 0);
    row_failed.assign(static_cast<std::size_t>(rows), 0);
    bool pruned = false;  // whether this step pruned leaves
    // Step `step` ranks the candidates of S (step features chosen) and, in the same pass, gives
    // PG2(S), the curve entry of step - 1; the last pass only does the latter.
    for (std::int64_t step = 0; step <= n_candidates && !sweep.stopped(); ++step) {
      if (tail_r > 0 && step == n_candidates - tail_r) {
        // The tail: PG2 of S + A for every subset A of each row's tail_r candidates left, in
        // one pass (S's value has a set pass's bits, the others are within rounding of theirs:
        // pair_passes.hpp); the steps then choose from those values (ties to the lower index,
        // as below), and their curve entries are the chosen sets' values.
        const auto n_sets = static_cast<std::size_t>(n_tail_sets);
        if (sets_in_lanes) {
          const std::uint64_t movable = lanes.perturbable[0];
          std::int32_t row_tail[kMaxTailCandidates];
          list_tail(choosable & ~chosen[0], tail_r, row_tail);
          std::vector<std::uint64_t> sets(width, chosen[0] & movable);
          for (std::size_t A = 0; A < n_sets; ++A) sets[A] = tail_set(chosen[0] & movable, row_tail, tail_r, A, movable);
          lane_sets(sets, n_tail_sets, tail_weight);
          if (sweep.stopped()) return;
          choose_tail([&](std::size_t A) { return total[A]; }, row_tail, tail_r, step, chosen[0], ranking_out, curve_out);
          break;
        }
        std::vector<std::uint64_t> tail_sets(n_sets * width);  // [vector][set][lane]
        std::vector<std::int32_t> tail(static_cast<std::size_t>(width) * static_cast<std::size_t>(tail_r));
        std::vector<std::uint64_t> sets(width);
        for (std::size_t i = 0; i < width; ++i) {
          const std::size_t v = i / kLanes, l = i % kLanes;
          sets[i] = chosen[i] & lanes.perturbable[i];
          std::int32_t* row_tail = tail.data() + i * static_cast<std::size_t>(tail_r);
          list_tail(choosable & ~chosen[i], tail_r, row_tail);
          for (std::size_t A = 0; A < n_sets; ++A) {
            tail_sets[(v * n_sets + A) * kLanes + l] = tail_set(sets[i], row_tail, tail_r, A, lanes.perturbable[i]);
          }
        }
        code_tail(sets.data(), tail.data(), tail_r, rows, lanes);
        find_live(a, boxes, lanes, rows, static_cast<std::int8_t>(n_tail_sets), live);
        sum.assign(static_cast<std::size_t>(n_trees) * n_sets * width, 0.0);
        comp.assign(sum.size(), 0.0);
        auto pass = [&](std::int64_t t, const auto& view, double mult) {
          double* st = sum.data() + static_cast<std::size_t>(t) * n_sets * width;
          double* ct = comp.data() + static_cast<std::size_t>(t) * n_sets * width;
          for (std::int32_t v = 0; v < lanes.vectors; ++v) {
            const std::size_t at = static_cast<std::size_t>(v) * n_sets * kLanes;
            tail_pass(sweep.passes, view, lanes.view(v), TailSets{tail_sets.data() + at}, n_tail_sets, mult, st + at,
                      ct + at);
          }
        };
        sweep.run(pass, r0 + block < n_rows, &live, tail_weight, pass);
        if (sweep.stopped()) return;
        reduce_trees(sum, comp, n_trees, n_sets * width, total);
        for (std::int64_t i = 0; i < rows; ++i) {
          const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
          const std::int32_t* row_tail = tail.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(tail_r);
          choose_tail([&](std::size_t A) { return total[(v * n_sets + A) * kLanes + l]; }, row_tail, tail_r, step,
                      chosen[static_cast<std::size_t>(i)], ranking_out + (r0 + i) * d, curve_out + (r0 + i) * d);
        }
        break;
      }
      if (step == 0 && swept_first) {
        small_set_step(a, noise, X, r0, small_set_rows, nullptr, choosable, threads, single, control);
        single.resize(static_cast<std::size_t>(rows * d));
        for (std::int64_t i = small_set_rows; i < rows; ++i) {  // a calibration's other rows
          std::copy_n(single.begin() + (i % small_set_rows) * d, d, single.begin() + i * d);
        }
        for (std::int64_t i = 0; i < rows; ++i) {
          const std::int32_t best = best_candidate(single.data() + static_cast<std::size_t>(i * d), choosable);
          chosen[static_cast<std::size_t>(i)] |= bit(best);
          ranking_out[(r0 + i) * d] = best;
        }
        continue;
      }
      if (step == 1 && gridded_second) {
        small_set_step(a, noise, X, r0, small_set_rows, ranking_out + r0 * d, choosable, threads, pair_values, control);
        if (sweep.stopped()) return;
        for (std::int64_t i = 0; i < rows; ++i) {
          const std::int64_t f = ranking_out[(r0 + i) * d];
          // The curve's first entry: PG2 of the first choice, from its sweep (as pg2 gives it).
          curve_out[(r0 + i) * d] = single[static_cast<std::size_t>(i * d + f)];
          const std::uint64_t candidates = choosable & ~chosen[static_cast<std::size_t>(i)];
          const double* values = i < small_set_rows ? pair_values.data() + static_cast<std::size_t>(i * d)
                                             : single.data() + static_cast<std::size_t>(i * d);
          const std::int32_t best = best_candidate(values, candidates);
          chosen[static_cast<std::size_t>(i)] |= bit(best);
          ranking_out[(r0 + i) * d + 1] = best;
        }
        continue;
      }
      const bool ranking = step < n_candidates;
      if (sets_in_lanes && ranking) {
        // Lane l < |candidates|: S + {its candidate}; lane |candidates|: S (the curve's entry).
        const std::uint64_t movable = lanes.perturbable[0];
        const std::uint64_t S = chosen[0] & movable;
        const std::uint64_t candidates = choosable & ~chosen[0];
        std::vector<std::uint64_t> sets(width, S);
        std::int32_t lane_of[64];
        std::int64_t n_sets = 0;
        for (std::uint64_t f = candidates; f != 0; f &= f - 1) {
          const std::int32_t j = __builtin_ctzll(f);
          lane_of[j] = static_cast<std::int32_t>(n_sets);
          sets[static_cast<std::size_t>(n_sets++)] = S | (bit(j) & movable);
        }
        const std::int64_t s_lane = n_sets++;
        lane_sets(sets, n_sets, 1);
        if (sweep.stopped()) return;
        if (step > 0) curve_out[step - 1] = total[static_cast<std::size_t>(s_lane)];
        double value[64];  // PG2(S + {j}) per candidate j
        for (std::uint64_t f = candidates; f != 0; f &= f - 1) {
          const std::int32_t j = __builtin_ctzll(f);
          value[j] = total[static_cast<std::size_t>(lane_of[j])];
        }
        const std::int32_t best = best_candidate(value, candidates);
        chosen[0] |= bit(best);
        ranking_out[step] = best;
        continue;
      }
      std::vector<std::uint64_t> sets(width);
      for (std::size_t i = 0; i < width; ++i) {
        sets[i] = chosen[i] & lanes.perturbable[i];
        cand[i] = ranking ? (choosable & ~chosen[i] & lanes.perturbable[i]) : 0;
      }
      if (ranking) {
        code_greedy(sets.data(), cand.data(), rows, lanes);
      } else {
        code_set(sets.data(), rows, lanes);
      }
      // Per-row pruning of the greedy steps (not of the last set pass): the first step has
      // nothing to prune against (PG2 of the empty set is 0).
      pruned = prune.on && ranking && step > 0;
      if (pruned) prune_greedy_leaves(a, boxes, rows, sets.data(), lanes, skipped_none, skipped_by, prune.share, threads);
      find_live(a, boxes, lanes, rows, ranking ? kNeverAlive : std::int8_t{1}, live);
      sum.assign(static_cast<std::size_t>(n_trees) * width, 0.0);
      comp.assign(sum.size(), 0.0);
      corr.assign(ranking ? static_cast<std::size_t>(n_trees) * corr_width : 0, 0.0);
      auto pass = [&](std::int64_t t, const auto& view, double mult) {
        double* st = sum.data() + static_cast<std::size_t>(t) * width;
        double* ct = comp.data() + static_cast<std::size_t>(t) * width;
        for (std::int32_t v = 0; v < lanes.vectors; ++v) {
          if (ranking) {
            double* rt = corr.data() + static_cast<std::size_t>(t) * corr_width + static_cast<std::size_t>(v) * static_cast<std::size_t>(d) * kLanes;
            greedy_pass(sweep.passes, view, lanes.view(v), sets.data() + v * kLanes, mult, st + v * kLanes,
                        ct + v * kLanes, rt);
          } else {
            set_pass(sweep.passes, view, lanes.view(v), sets.data() + v * kLanes, mult, st + v * kLanes,
                     ct + v * kLanes);
          }
        }
      };
      sweep.run(pass, ranking || r0 + block < n_rows, &live, 1, pass);
      if (sweep.stopped()) return;  // unfinished sums: nothing to choose from
      reduce_trees(sum, comp, n_trees, width, total);
      if (step > 0) {
        for (std::int64_t i = 0; i < rows; ++i) {
          curve_out[(r0 + i) * d + step - 1] = total[static_cast<std::size_t>(i)];
          if (pruned && !certified(total[static_cast<std::size_t>(i)], skipped_none[static_cast<std::size_t>(i)], prune)) {
            row_failed[static_cast<std::size_t>(i)] = 1;
          }
        }
      }
      if (!ranking) break;
      corr_total.assign(corr_width, 0.0);
      for (std::int64_t t = 0; t < n_trees; ++t) {
        const double* rt = corr.data() + static_cast<std::size_t>(t) * corr_width;
        for (std::size_t i = 0; i < corr_width; ++i) corr_total[i] += rt[i];
      }
      for (std::int64_t i = 0; i < rows; ++i) {
        const std::size_t v = static_cast<std::size_t>(i / kLanes), l = static_cast<std::size_t>(i % kLanes);
        const double base = total[static_cast<std::size_t>(i)];
        const std::uint64_t candidates = choosable & ~chosen[static_cast<std::size_t>(i)];
        double value[64];  // PG2(S + {j}) per candidate j
        for (std::uint64_t f = candidates; f != 0; f &= f - 1) {
          const std::int32_t j = __builtin_ctzll(f);
          // A feature NaN in the row stays missing: perturbing it changes nothing.
          const bool moves = ((lanes.perturbable[static_cast<std::size_t>(i)] >> j) & 1u) != 0;
          value[j] = moves ? base + corr_total[(v * static_cast<std::size_t>(d) + static_cast<std::size_t>(j)) * kLanes + l] : base;
        }
        const std::int32_t best = best_candidate(value, candidates);
        chosen[static_cast<std::size_t>(i)] |= bit(best);
        ranking_out[(r0 + i) * d + step] = best;
        if (pruned && !choice_certified(best, value, candidates, skipped_none[static_cast<std::size_t>(i)],
                                        skipped_by.data() + static_cast<std::size_t>(i) * static_cast<std::size_t>(d))) {
          row_failed[static_cast<std::size_t>(i)] = 1;
        }
      }
    }
    for (std::int64_t i = 0; i < rows; ++i) {
      if (row_failed[static_cast<std::size_t>(i)]) failed.push_back(r0 + i);
    }
    // Features the noise never moves last, in index order, repeating the last curve value.
    for (std::int64_t i = 0; i < rows; ++i) {
      std::int64_t step = n_candidates;
      const double last = n_candidates > 0 ? curve_out[(r0 + i) * d + n_candidates - 1] : 0.0;
      for (std::int64_t j = 0; j < d; ++j) {
        if ((choosable >> j) & 1u) continue;
        ranking_out[(r0 + i) * d + step] = j;
        curve_out[(r0 + i) * d + step] = last;
        ++step;
      }
    }
  }
  if (sweep.stopped() || failed.empty()) return;
  // Rows whose pruned steps were not certified (a value, or a choice closer than the bounds),
  // again without pruning: a row's ranking and curve do not depend on the other rows.
  const std::vector<double> rows_x = gather_rows(X, d, failed);
  std::vector<std::int64_t> rankings(failed.size() * static_cast<std::size_t>(d));
  std::vector<double> curves(rankings.size());
  greedy_rank_pairs_impl(a, noise, rows_x.data(), static_cast<std::int64_t>(failed.size()), n_threads,
                         rankings.data(), curves.data(), control, PruneBudget{}, false);
  scatter_rows(rankings, d, failed, ranking_out);
  scatter_rows(curves, d, failed, curve_out);
}

}  // namespace

void greedy_rank_pairs(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows, int n_threads,
                       std::int64_t* ranking_out, double* curve_out, RunControl* control, double tol,
                       bool one_row_in_lanes) {
  check_features(a);
  const std::vector<std::int64_t> order = lane_order(noise, X, n_rows, a.n_features, control);  // as pg2_pairs
  if (stopped(control)) return;
  if (order.empty()) {
    greedy_rank_pairs_impl(a, noise, X, n_rows, n_threads, ranking_out, curve_out, control, prune_budget(tol),
                           one_row_in_lanes);
    return;
  }
  const std::int64_t d = a.n_features;
  const std::vector<double> rows_x = gather_rows(X, d, order);
  std::vector<std::int64_t> rankings(order.size() * static_cast<std::size_t>(d));
  std::vector<double> curves(rankings.size());
  greedy_rank_pairs_impl(a, noise, rows_x.data(), n_rows, n_threads, rankings.data(), curves.data(), control,
                         prune_budget(tol), one_row_in_lanes);
  scatter_rows(rankings, d, order, ranking_out);
  scatter_rows(curves, d, order, curve_out);
}

}  // namespace pgexact
