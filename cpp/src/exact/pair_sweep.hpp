// Internal to the leaf-pair kernel (not installed): one sweep over the pair lists of a model.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#ifdef PGEXACT_OPENMP
#include <omp.h>
#endif

#include "env_switch.hpp"
#include "live_leaves.hpp"
#include "pair_store.hpp"
#include "tree_projection.hpp"
#include "pgexact/exact/category_cells.hpp"
#include "pgexact/exact/kernels.hpp"  // resolve_threads
#include "pgexact/exact/run_control.hpp"

namespace pgexact {
namespace pairs {

struct ThreadScratch {
  explicit ThreadScratch(int threads) : first_groups(GroupSumCache::first_tree_chunks(threads)) {}
  PairScratch box;
  PairList pairs;
  PlanScratch plan;  // plans built here (kept by the Projections within their budget)
  // Group sums of projected tree pairs (curves and sets): the tile's first trees', and the
  // current second tree's (the tile's first trees meet it one after the other).
  GroupSumCache first_groups, second_groups;
};

// Runs body(scratch, t0, t1) for every tile [t0, t1) of `tile` consecutive first trees, in
// parallel, then nothing else: callers keep per-t partial sums and add them in order of t.
template <typename Body>
void for_each_first_tile(const Arena& a, int threads, std::int64_t tile, Body&& body) {
  const std::int64_t n_trees = a.n_trees();
  const std::int64_t n_tiles = (n_trees + tile - 1) / tile;
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    ThreadScratch scratch(threads);
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t i = 0; i < n_tiles; ++i) body(scratch, i * tile, std::min(n_trees, (i + 1) * tile));
  }
  (void)threads;
}

// First trees per tile: a tile's first trees meet each second tree one after the other, so the
// second tree's per-row data (8 lanes of weights, codes and slot masses: 20 KB for a CatBoost
// tree) is read from memory once per tile rather than once per first tree, and its group sums
// on a C (GroupSumCache) serve every first tree of the tile with that C. 32 rows of
// CatBoostRegressor() (1000 trees, whose slot masses are 20 MB a vector of rows) 20.6 -> 16.4 s
// at 16 (4: 18.2 s, 64: 16.2 s), before the group sums were kept; with them, 64 rather than 16
// took its 64-row curve from 10.0-10.7 to 8.9 s, its 8-row ranking from 6.0 to 5.2 s and its
// one-row curve from 1.15 to 0.93 s (128 made no difference). Leaf-pair sweeps, and 200 trees,
// whose data stays in cache, no change. At least eight tiles per thread, for the balance.
inline std::int64_t first_tree_tile(std::int64_t n_trees, int threads) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(64, n_trees / (8 * std::max(threads, 1))));
}

// Leaves of the first tree per enumerated chunk: a chunk's list holds at most 64 times the
// leaves of the second tree, so per-thread memory stays bounded however deep the trees.
constexpr std::int32_t kChunkLeaves = 64;

inline std::int32_t chunks_of(const LeafBoxes& boxes, std::int64_t t) {
  return (boxes.tree_first[t + 1] - boxes.tree_first[t] + kChunkLeaves - 1) / kChunkLeaves;
}

// Enumerated pairs kept for the rest of one call (later blocks of rows, later greedy steps)
// and, through the store (pair_store.hpp), for later calls on the same model, list by list,
// until a fixed budget is spent; the others are enumerated again each time. Which lists are
// kept depends on thread timing, but a list is the same whether kept or enumerated again, so
// results do not. The first list that does not fit ends the keeping (has_room): the budget
// then has less room left than a list takes, and a pass that enumerates lists nobody will
// keep enumerates only the pairs of its live leaves (PairSweep::run). Lists of first tree t
// are only ever touched by the one thread running t in a pass, so each t has its own map and
// no lock is needed; the store's lists are read-only.
class PairCache {
 public:
  // `keeps`: false in a calibration (RunControl::calibration), which keeps nothing: see
  // PairSweep's constructor.
  PairCache(std::int64_t n_trees, StoreView store, bool keeps = true)
      : kept_(static_cast<std::size_t>(n_trees)),
        store_(std::move(store)),
        budget_(keeps ? call_budget(store_.budget) : 0) {}
  PairCache(const PairCache&) = delete;
  PairCache& operator=(const PairCache&) = delete;
  // Hands what this call kept to the store (a list kept is a list the next call need not
  // enumerate).
  ~PairCache() { publish(store_, std::move(kept_), static_cast<std::size_t>(used_.load())); }

  // The pairs of (t, s), s >= t, for chunk c of t's leaves, enumerated (the caller found no
  // kept list): with `live`, only the pairs of its live leaves, never kept; else the full list,
  // kept where `keep` (another sweep follows; else keeping would only copy it, unless the store
  // takes it for the next call) and the budget allows.
  const PairList& enumerate(const Arena& a, const LeafBoxes& boxes, std::int64_t t, std::int64_t s, std::int32_t c,
                            bool keep, ThreadScratch& scratch, const LiveLeaves* live) {
    const std::int32_t begin = boxes.tree_first[t] + c * kChunkLeaves;
    const std::int32_t end = std::min(boxes.tree_first[t + 1], begin + kChunkLeaves);
    scratch.pairs.clear();
    enumerate_pairs(a, boxes, t, s, begin, end, scratch.box, scratch.pairs, live);
    const PairList& fresh = scratch.pairs;
    if (live != nullptr || (!keep && store_.key.empty())) return fresh;
    const auto bytes = static_cast<std::int64_t>(fresh.bytes() + 128);
    if (used_.fetch_add(bytes) + bytes <= budget_) {
      return kept_[static_cast<std::size_t>(t)].emplace(list_key(s, c), fresh.trimmed()).first->second;
    }
    used_.fetch_sub(bytes);
    full_.store(true, std::memory_order_relaxed);
    return fresh;
  }

  // The kept list of (t, s, c) (this call's or the store's), or null.
  const PairList* find(std::int64_t t, std::int64_t s, std::int32_t c) const {
    if (store_.stored) {
      if (const PairList* stored = store_.stored->find(t, s, c)) return stored;
    }
    const auto& mine = kept_[static_cast<std::size_t>(t)];
    const auto hit = mine.find(list_key(s, c));
    return hit == mine.end() ? nullptr : &hit->second;
  }
  // Whether the budget has room left (for the full lists a later pass would reuse): not once a
  // list did not fit. (Bytes below the budget are not room: XGBoost(500 trees of depth 8) has
  // about 20 GB of lists, and with the budget filled to within a list its greedy steps went on
  // enumerating full lists to keep, for nothing.)
  bool has_room() const { return !full_.load(std::memory_order_relaxed) && used_.load() < budget_; }
  // Whether enumerate(..., keep, ..., nullptr) would keep its list: this call's later passes or
  // the store want it, and the budget has room.
  bool would_keep(bool keep) const { return (keep || !store_.key.empty()) && has_room(); }
  // Whether a later call will want this model's full lists: the model has lists in the store, or
  // a call on it came before (pair_store.hpp). Then even a pass with few live leaves enumerates
  // and keeps full lists, which the next calls read instead of enumerating anything.
  bool later_calls_want_lists() const { return !store_.key.empty() && (store_.stored || store_.seen_before); }

 private:
  // What one call may keep for its own later passes, whatever the store's budget.
  static constexpr std::int64_t kCallBudget = kDefaultPairStoreBytes;
  // The call's budget: the larger of kCallBudget and the store's, unless PGEXACT_CALL_LIST_BYTES
  // caps it (tests: calls whose lists pass the budget, on models small enough to test).
  static std::int64_t call_budget(std::int64_t store_budget) {
    const std::int64_t budget = std::max(kCallBudget, store_budget);
    const std::string cap = env_switch("PGEXACT_CALL_LIST_BYTES");
    return cap.empty() ? budget : std::min<std::int64_t>(budget, std::max(0LL, std::atoll(cap.c_str())));
  }
  KeptLists kept_;
  StoreView store_;
  std::int64_t budget_;
  std::atomic<std::int64_t> used_{0};
  std::atomic<bool> full_{false};  // a list did not fit
};

// Progress units of the leaf-pair sweeps (PairSweep::plan_sweeps): a sweep counts
// leaves(t) * leaves(s) per tree pair (t, s >= t). Where tree pairs may be projected, the
// first sweep also plans them (Projections: built on first use, kept for the call's later
// sweeps and blocks), which costs about kPlanVectorSweeps sweeps over one lane vector, so each
// pair of two trees that can be projected counts plan_units more in the first sweep, as many
// times fewer as the block has lane vectors to weigh (planning_share). Without them the first
// sweep of a call of a few rows ran at about half the rate of its others, and
// pgexact.estimate, which watches a call's start, projected a one-row greedy ranking of
// CatBoost(200) at up to 2.2x its time.
// (CatBoost(200) on housing, one row, 1 thread: the first greedy step's pass, the one that
// plans, took about 1.8 times the later passes' time per unit.)
inline constexpr double kPlanVectorSweeps = 0.8;
inline double planning_share(bool may_project, std::int64_t vectors) {
  return may_project && vectors > 0 ? kPlanVectorSweeps / static_cast<double>(vectors) : 0.0;
}
inline std::int64_t plan_units(std::int64_t leaves_t, std::int64_t leaves_s, double share) {
  if (share == 0.0 || leaves_t > kMaxProjectedLeaves || leaves_s > kMaxProjectedLeaves) return 0;
  return std::llround(share * static_cast<double>(leaves_t * leaves_s));
}
struct SweepUnits {
  std::int64_t sweep = 0;     // one sweep's
  std::int64_t planning = 0;  // the first sweep's planning, on top
  // The units of a call of `sweeps` sweeps (PairSweep::plan_sweeps).
  std::int64_t total(std::int64_t sweeps) const { return sweeps * sweep + planning; }
};
// Leaves of tree t.
inline std::int64_t tree_leaves(const LeafBoxes& boxes, std::int64_t t) {
  return boxes.tree_first[t + 1] - boxes.tree_first[t];
}
inline SweepUnits sweep_units(const LeafBoxes& boxes, double share) {
  SweepUnits units;
  std::int64_t sum = 0, squares = 0;
  const std::int64_t n_trees = static_cast<std::int64_t>(boxes.tree_first.size()) - 1;
  auto leaves = [&](std::int64_t t) { return tree_leaves(boxes, t); };
  for (std::int64_t t = 0; t < n_trees; ++t) {
    sum += leaves(t);
    squares += leaves(t) * leaves(t);
    for (std::int64_t s = t + 1; share > 0.0 && s < n_trees; ++s) units.planning += plan_units(leaves(t), leaves(s), share);
  }
  units.sweep = (sum * sum + squares) / 2;
  return units;
}

// What every driver sets up once per call: the leaf boxes, the pair cache, the passes for this
// CPU and the thread count. run(body, again) calls body(t, pairs, mult) for every pair list
// (s >= t, chunk by chunk), in parallel over the first tree t; mult is 2 for t != s (the pairs
// of (s, t) are the same terms). `again`: whether another run follows that can reuse the lists.
class PairSweep {
 public:
  // The cells of features perturbed by category come from the noise and the call's rows X.
  PairSweep(const Arena& a, const Noise& noise, const double* X, int n_threads, std::int64_t n_rows,
            RunControl* control)
      : arena(a),
        boxes(a, CategoryCells(a, noise, X, n_rows)),
        passes(pair_passes()),
        threads(resolve_threads(n_threads, std::max<std::int64_t>(a.n_trees(), n_rows))),
        // A calibration (pgexact.estimate: a few tenths of a second, results discarded) keeps
        // no lists: a call whose lists pass the budget keeps them only at its start, and a
        // calibration that timed that start (full lists enumerated and copied to be kept)
        // projected the 16-row ranking of a forest of 30 unbounded trees at 2.2x its time.
        cache_(a.n_trees(), open_store(a, boxes), !calibrating(control)),
        projections_(a, boxes),
        keep_group_sums_(keep_group_sums()),
        control_(control) {}

  // Progress: a tree pair (t, s >= t) of a sweep is leaves(t) * leaves(s) units (its pairs cost
  // about that much; the first trees of a boosted model are often the largest); `sweeps` sweeps
  // of blocks whose first has `vectors` lane vectors. Where tree pairs may be projected, the
  // first sweep also plans them (sweep_units).
  void plan_sweeps(std::int64_t sweeps, std::int64_t vectors) {
    plan_share_ = planning_share(projections_.may_project(), vectors);
    projections_.keep_plans(sweeps > 1);
    plan(control_, sweep_units(boxes, plan_share_).total(sweeps));
  }
  std::int64_t leaves(std::int64_t t) const { return tree_leaves(boxes, t); }
  // Leaves of chunk c of tree t (the last chunk may be short); the chunks' sum is leaves(t).
  std::int64_t chunk_leaves(std::int64_t t, std::int32_t c) const {
    return std::min<std::int64_t>(kChunkLeaves, leaves(t) - static_cast<std::int64_t>(c) * kChunkLeaves);
  }
  bool stopped() const { return pgexact::stopped(control_); }

  // With `live`, tree pairs of which one tree has no live leaf are skipped (their pairs add
  // exactly zero), and where live.restricted only the live pairs are enumerated (not kept).
  // `weight`: the sweeps of the plan this one counts for (a pass costing several).
  // `projected`: where given, projected(t, view, mult) sums the tree pairs the call's
  // Projections project (tree_projection.hpp) instead of body summing their pairs.
  template <typename Body, typename Projected = std::nullptr_t>
  void run(Body&& body, bool again, const Liveness* live = nullptr, std::int64_t weight = 1,
           Projected&& projected = nullptr) {
    constexpr bool can_project = !std::is_same_v<std::decay_t<Projected>, std::nullptr_t>;
    const LiveLeaves filter = live != nullptr ? live->view() : LiveLeaves{nullptr, nullptr};
    // Few live leaves: their pairs alone, unless a kept full list is at hand, or the full list
    // will be read again (a later pass of this call, or a later call) and the budget can keep
    // it; very few (sparse): their pairs alone whatever is kept. And however many are live,
    // their pairs alone where no list is kept and none would be: a full list read once is the
    // dead leaves' pairs enumerated for nothing (the greedy steps of 8 rows of XGBoost(500
    // trees of depth 8), with a quarter of the leaves dead: 39 and 42 s -> 27 and 36 s).
    const bool restricted = live != nullptr && live->restricted;
    const bool sparse = live != nullptr && live->sparse;
    const bool reused = again || cache_.later_calls_want_lists();
    const bool planning = first_run_;
    first_run_ = false;
    // Pair (t, s) of the sweep; false once the call is stopped (the caller discards a stopped
    // call's sums).
    auto visit = [&](ThreadScratch& scratch, std::int64_t t, std::int64_t s) {
      if (stopped()) return false;
      if (planning && s != t) advance(control_, plan_units(leaves(t), leaves(s), plan_share_));
      const bool skip = live != nullptr && (live->tree_live[t] == 0 || live->tree_live[s] == 0);
      if (skip) {
        advance(control_, weight * leaves(t) * leaves(s));
        return true;
      }
      if constexpr (can_project) {
        if (const ProjectedPlan* plan = projections_.get(t, s, scratch.plan)) {
          ProjectedView view = plan->view();
          if (keep_group_sums_) {
            view.first_cache = &scratch.first_groups;
            view.second_cache = &scratch.second_groups;
          }
          view.first_tree = t;
          view.second_tree = s;
          projected(t, view, 2.0);
          advance(control_, weight * leaves(t) * leaves(s));
          return true;
        }
      }
      for (std::int32_t chunk = 0; chunk < chunks_of(boxes, t); ++chunk) {
        const PairList* list = sparse ? nullptr : cache_.find(t, s, chunk);
        if (list == nullptr) {
          const bool live_only = live != nullptr && (sparse || (restricted && !(reused && cache_.has_room())) ||
                                                     !cache_.would_keep(reused));
          list = &cache_.enumerate(arena, boxes, t, s, chunk, reused, scratch, live_only ? &filter : nullptr);
        }
        body(t, list->view(boxes), s == t ? 1.0 : 2.0);
        // Per chunk, not per tree pair: a pair of deep trees is up to 10^8 units, and a
        // calibration (pgexact.estimate) watching a few tenths of a second needs to see it move.
        advance(control_, weight * chunk_leaves(t, chunk) * leaves(s));
      }
      return true;
    };
    // Each first tree meets its second trees in increasing order (the order of its sums), in
    // whatever tile; a calibration's (RunControl::calibration, results discarded) from halfway
    // through them, wrapping around.
    const bool from_halfway = calibrating(control_);
    for_each_first_tile(arena, threads, first_tree_tile(arena.n_trees(), threads),
                        [&](ThreadScratch& scratch, std::int64_t t0, std::int64_t t1) {
                          scratch.first_groups.start_tile(t0);
                          const std::int64_t n_second = arena.n_trees() - t0;
                          const std::int64_t start = from_halfway ? n_second / 2 : 0;
                          for (std::int64_t k = 0; k < n_second; ++k) {
                            const std::int64_t s = t0 + (start + k) % n_second;
                            scratch.second_groups.start_tile(s);
                            for (std::int64_t t = t0; t < std::min(t1, s + 1); ++t) {
                              if (!visit(scratch, t, s)) return;
                            }
                          }
                        });
  }

  const Arena& arena;
  const LeafBoxes boxes;
  const PairPasses& passes;
  const int threads;

 private:
  PairCache cache_;
  Projections projections_;
  double plan_share_ = 0.0;  // plan_units per unit of a sweep (plan_sweeps)
  bool first_run_ = true;
  bool keep_group_sums_;
  RunControl* control_;
};


// Adds the per-t partial sums (sum + comp, `width` values per t) in order of t into out, clamped.
void reduce_trees(const std::vector<double>& sum, const std::vector<double>& comp, std::int64_t n_trees,
                  std::size_t width, std::vector<double>& out);

}  // namespace pairs
}  // namespace pgexact
