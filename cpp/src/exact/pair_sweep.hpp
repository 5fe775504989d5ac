// Internal to the leaf-pair kernel (not installed): one sweep over the pair lists of a model.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <unordered_map>
#include <vector>

#ifdef PGEXACT_OPENMP
#include <omp.h>
#endif

#include "live_leaves.hpp"
#include "pgexact/exact/category_cells.hpp"
#include "pgexact/exact/kernels.hpp"  // resolve_threads
#include "pgexact/exact/run_control.hpp"

namespace pgexact {
namespace pairs {

struct ThreadScratch {
  PairScratch box;
  PairList pairs;
};

// Runs body(scratch, t) for every first tree t, in parallel, then nothing else: callers keep
// per-t partial sums and add them in order of t.
template <typename Body>
void for_each_first_tree(const Arena& a, int threads, Body&& body) {
  const std::int64_t n_trees = a.n_trees();
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    ThreadScratch scratch;
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t t = 0; t < n_trees; ++t) body(scratch, t);
  }
  (void)threads;
}

// Leaves of the first tree per enumerated chunk: a chunk's list holds at most 64 times the
// leaves of the second tree, so per-thread memory stays bounded however deep the trees.
constexpr std::int32_t kChunkLeaves = 64;

inline std::int32_t chunks_of(const LeafBoxes& boxes, std::int64_t t) {
  return (boxes.tree_first[t + 1] - boxes.tree_first[t] + kChunkLeaves - 1) / kChunkLeaves;
}

// Enumerated pairs kept for the rest of one call (later blocks of rows, later greedy steps),
// list by list, until a fixed budget is spent; the others are enumerated again each time.
// Which lists are kept depends on thread timing, but a list is the same whether kept or
// enumerated again, so results do not. Lists of first tree t are only ever touched by the one
// thread running t in a pass, so each t has its own map and no lock is needed.
class PairCache {
 public:
  explicit PairCache(std::int64_t n_trees) : kept_(static_cast<std::size_t>(n_trees)) {}

  // The pairs of (t, s), s >= t, for chunk c of t's leaves; `keep`: whether a fresh list
  // should be kept (another sweep follows; else keeping would only copy it).
  const PairList& get(const Arena& a, const LeafBoxes& boxes, std::int64_t t, std::int64_t s, std::int32_t c,
                      bool keep, ThreadScratch& scratch) {
    auto& mine = kept_[static_cast<std::size_t>(t)];
    const std::int64_t key = s * 1048576 + c;
    const auto hit = mine.find(key);
    if (hit != mine.end()) return hit->second;
    const std::int32_t begin = boxes.tree_first[t] + c * kChunkLeaves;
    const std::int32_t end = std::min(boxes.tree_first[t + 1], begin + kChunkLeaves);
    scratch.pairs.clear();
    enumerate_pairs(a, boxes, t, s, begin, end, scratch.box, scratch.pairs);
    const PairList& fresh = scratch.pairs;
    if (!keep) return fresh;
    const auto bytes = static_cast<std::int64_t>(fresh.bytes() + 128);
    if (used_.fetch_add(bytes) + bytes <= kBudget) return mine.emplace(key, fresh.trimmed()).first->second;
    used_.fetch_sub(bytes);
    return fresh;
  }

 private:
  static constexpr std::int64_t kBudget = std::int64_t{192} << 20;
  std::vector<std::unordered_map<std::int64_t, PairList>> kept_;
  std::atomic<std::int64_t> used_{0};
};

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
        cache_(a.n_trees()),
        control_(control) {}

  // Progress: a tree pair (t, s >= t) of a sweep is leaves(t) * leaves(s) units (its pairs cost
  // about that much; the first trees of a boosted model are often the largest); `sweeps` sweeps.
  void plan_sweeps(std::int64_t sweeps) {
    std::int64_t sum = 0, squares = 0;
    for (std::int64_t t = 0; t < arena.n_trees(); ++t) {
      sum += leaves(t);
      squares += leaves(t) * leaves(t);
    }
    plan(control_, sweeps * ((sum * sum + squares) / 2));
  }
  std::int64_t leaves(std::int64_t t) const { return boxes.tree_first[t + 1] - boxes.tree_first[t]; }
  bool stopped() const { return pgexact::stopped(control_); }

  // With `live`, tree pairs of which one tree has no live leaf are skipped (their pairs add
  // exactly zero), and where live.restricted only the live pairs are enumerated (not kept).
  template <typename Body>
  void run(Body&& body, bool again, const Liveness* live = nullptr) {
    const LiveLeaves filter = live != nullptr ? live->view() : LiveLeaves{nullptr, nullptr};
    for_each_first_tree(arena, threads, [&](ThreadScratch& scratch, std::int64_t t) {
      for (std::int64_t s = t; s < arena.n_trees(); ++s) {
        if (stopped()) return;  // the caller discards a stopped call's sums
        const bool skip = live != nullptr && (live->tree_live[t] == 0 || live->tree_live[s] == 0);
        for (std::int32_t chunk = 0; chunk < chunks_of(boxes, t) && !skip; ++chunk) {
          if (live != nullptr && live->restricted) {
            const std::int32_t begin = boxes.tree_first[t] + chunk * kChunkLeaves;
            const std::int32_t end = std::min(boxes.tree_first[t + 1], begin + kChunkLeaves);
            scratch.pairs.clear();
            enumerate_pairs(arena, boxes, t, s, begin, end, scratch.box, scratch.pairs, &filter);
            body(t, scratch.pairs.view(boxes), s == t ? 1.0 : 2.0);
          } else {
            body(t, cache_.get(arena, boxes, t, s, chunk, again, scratch).view(boxes), s == t ? 1.0 : 2.0);
          }
        }
        advance(control_, leaves(t) * leaves(s));
      }
    });
  }

  const Arena& arena;
  const LeafBoxes boxes;
  const PairPasses& passes;
  const int threads;

 private:
  PairCache cache_;
  RunControl* control_;
};


// Adds the per-t partial sums (sum + comp, `width` values per t) in order of t into out, clamped.
void reduce_trees(const std::vector<double>& sum, const std::vector<double>& comp, std::int64_t n_trees,
                  std::size_t width, std::vector<double>& out);

}  // namespace pairs
}  // namespace pgexact
