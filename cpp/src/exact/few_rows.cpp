// Calls of one or two rows on the walks (few_rows.hpp says when and why).
#include "few_rows.hpp"

#include "greedy_tail.hpp"
#include "union_walk.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "pgexact/exact/pair_kernel.hpp"
#include "pgexact/exact/pair_passes.hpp"

namespace pgexact {

namespace {

// Leaves per tree where every tree is complete (CatBoost's oblivious trees, laid out as
// complete trees), else 0.
std::int64_t complete_tree_leaves(const Arena& a) {
  const bool complete = a.max_depth < 31 && a.n_leaves() == (a.n_trees() << a.max_depth);
  return complete ? std::int64_t{1} << a.max_depth : 0;
}

// Complete trees of 32 or 64 leaves (CatBoost's depth 5 and its default 6), whose one-row
// curves and greedy rankings the projected pairs sum faster than the walks (few_rows_on_walks).
bool projected_one_row(std::int64_t complete_leaves) {
  return complete_leaves >= kMaxProjectedLeaves / 2 && complete_leaves <= kMaxProjectedLeaves;
}

}  // namespace

bool one_row_set_on_pairs(const Arena& a, const Noise& noise, const std::uint8_t* perturbed) {
  // A set that holds every feature the trees split on walks every state of every tree pair,
  // and the projected pairs are faster there as for a curve (one row of CatBoost(200): 0.28 s
  // on the walk against 0.16 s; depth 5 0.10 s either way); a smaller set stays on the walk,
  // which skips the trees and states it does not reach (6 of 8 features: 91 against 144 ms).
  if (!projected_one_row(complete_tree_leaves(a)) || noise.has_categorical() || !pairs_apply(a)) return false;
  std::uint64_t split = 0;
  for (const std::int32_t root : a.tree_root) split |= a.feature[root] >= 0 ? a.subtree_features[root] : 0;
  for (std::int32_t j = 0; j < a.n_features; ++j) {
    if (((split >> j) & 1u) != 0 && perturbed[j] == 0) return false;
  }
  return true;
}

bool few_rows_on_walks(const Arena& a, const Noise& noise, std::int64_t n_rows, FewRowsCall call) {
  if (n_rows < 1 || noise.has_categorical() || !shares_walks(a, Pruning::Full)) return false;
  // Complete trees' tree pairs are projected onto shared features on the leaf pairs' side
  // (tree_projection.hpp), and each tree's group sums are reused by its other pairs. Of 32 or
  // 64 leaves (CatBoost's depth 5 and its default 6), one row's curve and greedy ranking sum
  // faster there than on the walks (1 thread, housing, walks against projected pairs; session
  // 18, then session 21 after plans found partners as bits):
  // - curves: depth 6 with 50 / 100 / 200 / 1000 trees 0.014 / 0.059 / 0.227 / 6.1 s against
  //   0.013 / 0.054 / 0.197 / 3.5 s; depth 5 (200 trees) 150-155 against 85-89 ms, but depth 4
  //   52 against 62 ms; depth 8 (not projected) 1.47 s against 2.30 s;
  // - greedy rankings of one row: CatBoost(200) 0.60-0.71 against 0.41-0.45 s, CatBoost(1000)
  //   18.7 against 11.3 s, depth 5 even (0.27-0.29 against 0.26-0.28 s), depth 4 0.125 against
  //   0.155 s; of two rows the projected pairs win at every depth they take (depth 4 / 5: 0.22 /
  //   0.57 s on the walks against 0.14 / 0.31 s).
  // Their one-row sets stay on the walks (a union walk skips the trees that split on no feature
  // of the set: a set of 3 of CatBoost(1000)'s 8 features 0.35 s against 2.4 s), except a set
  // of every feature they split on (one_row_set_on_pairs, which pg2_batch asks). Deeper
  // complete trees are not projected and take the walks like any others (depth 8, a greedy
  // ranking of 2 rows: 7.8 s on the walks against 14.6 s).
  const std::int64_t leaves = complete_tree_leaves(a);
  const bool projected_faster = projected_one_row(leaves);
  if (call == FewRowsCall::Curve && projected_faster) return false;
  if (call != FewRowsCall::Greedy) {
    // One row's sets and curves, whatever the trees, on one walk over the union of its sets.
    return n_rows == 1;
  }
  // Greedy rankings: other models' walks lose past two rows (XGBoost 0.98 at 4 rows, LightGBM
  // 0.85, RandomForest(20, max_depth=10) 0.57 at 3 rows; unbounded forests of 3-5 trees gain up
  // to six).
  if (projected_faster) return false;
  if (leaves > 0 && leaves < kMaxProjectedLeaves / 2) return n_rows == 1;
  return n_rows <= 2;
}

std::int64_t few_rows_chunk(const Arena& a, std::int64_t count, int n_threads) {
  const std::int64_t threads = resolve_threads(n_threads, count);
  return std::max<std::int64_t>(1, std::min<std::int64_t>(max_variants(a), (count + threads - 1) / threads));
}

void walk_chunks(const Arena& a, const Noise& noise, const Variant* variants, std::int64_t count, std::int64_t chunk,
                 int n_threads, double tol, double* out, RunControl* control, std::int64_t units) {
  const std::int64_t n_chunks = (count + chunk - 1) / chunk;
  if (resolve_threads(n_threads, n_chunks) == 1) {
    // One thread: consecutive variants (prefixes, candidates of a row) share the most.
    Workspace ws(a);
    for (std::int64_t v0 = 0; v0 < count; v0 += chunk) {
      pg2_variants(a, noise, variants + v0, static_cast<std::int32_t>(std::min(chunk, count - v0)), ws, out + v0,
                   tol, control);
      advance(control, units);
    }
    return;
  }
  // Threads: chunk c walks the variants c, c + n_chunks, c + 2 n_chunks, ...: a curve's later
  // prefixes perturb more features and cost more, so consecutive runs of prefixes left one
  // thread with most of the work (measured on 100 prefixes: no gain from a second thread; dealt,
  // 1.3x, though each chunk shares less).
  std::vector<Variant> dealt(static_cast<std::size_t>(count));
  std::vector<double> values(static_cast<std::size_t>(count));
  std::vector<std::int64_t> first(static_cast<std::size_t>(n_chunks + 1), 0);
  for (std::int64_t c = 0, k = 0; c < n_chunks; ++c) {
    first[static_cast<std::size_t>(c)] = k;
    for (std::int64_t v = c; v < count; v += n_chunks) dealt[static_cast<std::size_t>(k++)] = variants[v];
  }
  first[static_cast<std::size_t>(n_chunks)] = count;
  // One Workspace per thread; every chunk writes only its own outputs. No control for
  // for_each_row: the caller planned the units, and the walks check the stop flag themselves.
  for_each_row(a, n_chunks, n_threads, [&](Workspace& ws, std::int64_t c) {
    const std::int64_t v0 = first[static_cast<std::size_t>(c)];
    const std::int64_t n = first[static_cast<std::size_t>(c) + 1] - v0;
    pg2_variants(a, noise, dealt.data() + v0, static_cast<std::int32_t>(n), ws, values.data() + v0, tol, control);
    advance(control, units);
  }, nullptr);
  for (std::int64_t c = 0, k = 0; c < n_chunks; ++c) {
    for (std::int64_t v = c; v < count; v += n_chunks) out[v] = values[static_cast<std::size_t>(k++)];
  }
}

void pg2_one_row(const Arena& a, const Noise& noise, const double* x, const std::uint8_t* perturbed, int n_threads,
                 double* out, RunControl* control, double tol) {
  const Variant variant{x, perturbed};
  walk_union(a, noise, distinct_sets(a, noise, &variant, 1), n_threads, tol, out, control);
}

void curve_rows_on_union(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                         const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps, int n_threads,
                         double* out, RunControl* control, double tol) {
  if (n_steps == 0) return;
  const std::int64_t d = a.n_features;
  std::vector<std::uint8_t> masks;
  std::vector<Variant> variants;
  auto prefixes = [&](std::int64_t i) {
    curve_prefix_variants(a, X + i * d, 1, ranking + (ranking_per_row ? i * d : 0), false, n_steps, masks, variants);
  };
  // Every row's units up front (the bar's total holds), then the rows one after the other.
  std::int64_t units = 0;
  for (std::int64_t i = 0; i < n_rows; ++i) {
    prefixes(i);
    units += union_walk_units(a, noise, distinct_sets(a, noise, variants.data(), n_steps));
  }
  plan(control, units);
  for (std::int64_t i = 0; i < n_rows && !stopped(control); ++i) {
    prefixes(i);
    walk_union(a, noise, distinct_sets(a, noise, variants.data(), n_steps), n_threads, tol, out + i * n_steps,
               control, true);
  }
}

void curve_few_rows(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                    const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps, int n_threads,
                    double* out, RunControl* control, double tol) {
  const std::int64_t total = n_rows * n_steps;
  if (total == 0) return;
  std::vector<std::uint8_t> masks;
  std::vector<Variant> variants;
  curve_prefix_variants(a, X, n_rows, ranking, ranking_per_row, n_steps, masks, variants);
  const std::int64_t chunk = few_rows_chunk(a, total, n_threads);
  plan(control, (total + chunk - 1) / chunk);
  walk_chunks(a, noise, variants.data(), total, chunk, n_threads, tol, out, control);
}

void greedy_few_rows(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows, int n_threads,
                     std::int64_t* ranking_out, double* curve_out, RunControl* control, double tol,
                     bool on_union_walk) {
  // The steps' values within the default tolerance whatever `tol` is: the ranking is the
  // argmax of values at rounding level, as on the leaf-pair kernel (ranking.hpp).
  const double step_tol = std::min(tol, kDefaultTolerance);
  const std::int64_t d = a.n_features;
  const auto du = static_cast<std::size_t>(d);
  std::int64_t n_candidates = 0;
  for (std::int64_t j = 0; j < d; ++j) n_candidates += noise_moves(a, noise, j) ? 1 : 0;
  // A step walks each row's distinct candidate sets once (distinct_sets.hpp): the candidates
  // some tree splits on and the row lets move, and S_i itself for all the others (columns no
  // tree uses, NaN in the row). At step k that is at most min(candidates left, used_i + 1).
  std::vector<std::int64_t> used(static_cast<std::size_t>(n_rows), 0);
  const std::vector<std::uint8_t> split_on = a.used_features();
  for (std::int64_t i = 0; i < n_rows; ++i) {
    for (std::int64_t j = 0; j < d; ++j) {
      used[static_cast<std::size_t>(i)] +=
          noise_moves(a, noise, j) && split_on[static_cast<std::size_t>(j)] && !std::isnan(X[i * d + j]) ? 1 : 0;
    }
  }
  // The whole call's units up front, so the bar's total holds. On the union walk, step 0's sets
  // are single features (a unit each), a later step's are lanes of the row's union walk (a unit
  // per tree pair and group of lanes); a step that walks fewer (or, where an unused feature
  // was chosen, more) adds the difference when it ends (begins). Step k's units weigh k + 1, the
  // size of its sets (its walks cost more the more features they perturb: unweighted, the first
  // second of a call projected it 2-2.7x too short).
  auto expected_units = [&](std::int64_t step, std::int64_t i) {
    const std::int64_t sets = std::min(n_candidates - step, used[static_cast<std::size_t>(i)] + 1);
    return (step + 1) * (step == 0 ? union_walk_units(a, sets, 0) : union_walk_units(a, 0, sets));
  };
  // On the union walks the last `tail` steps read one walk of every set they can ask for
  // (greedy_tail.hpp). Its units weigh twice the whole set's size: it costs about two walks
  // of the whole set (1.9-2.5 measured).
  const std::int64_t tail = on_union_walk ? std::min(n_candidates, greedy_tail_candidates(a)) : 0;
  const std::int64_t tail_weight = 2 * n_candidates;
  const std::int64_t first_tail_step = n_candidates - tail;
  for (std::int64_t step = 0; step < n_candidates; ++step) {
    if (step >= first_tail_step) {
      if (step == first_tail_step) plan(control, n_rows * tail_weight * GreedyTail::planned_units(a, tail, step));
    } else if (on_union_walk) {
      for (std::int64_t i = 0; i < n_rows; ++i) plan(control, expected_units(step, i));
    } else {
      // The shared walks: a chunk of step k counts k + 1, the size of its sets (a walk costs
      // more the more features it perturbs, so a count per chunk alone made the first seconds
      // of a call project it too short).
      const std::int64_t total = n_rows * (n_candidates - step);
      const std::int64_t chunk = few_rows_chunk(a, total, n_threads);
      plan(control, (step + 1) * ((total + chunk - 1) / chunk));
    }
  }
  std::vector<std::uint8_t> chosen(static_cast<std::size_t>(n_rows) * du, 0);
  std::vector<double> last(static_cast<std::size_t>(n_rows), 0.0);
  std::vector<std::uint8_t> masks;
  std::vector<Variant> variants;
  std::vector<double> values;
  std::unique_ptr<GreedyTail> tail_walk;
  std::int64_t step = 0;
  for (; step < n_candidates; ++step) {
    if (stopped(control)) return;
    // Each row's candidate sets S_i + {j}, in feature order: on one union walk per row (a
    // walk's lanes are of one row), its threads sharing the tree pairs, or dealt out in chunks
    // on the shared walks; the tail's steps read the tail walk.
    const std::int64_t per_row = n_candidates - step;
    const std::int64_t total = n_rows * per_row;
    values.assign(static_cast<std::size_t>(total), 0.0);
    if (step >= first_tail_step) {
      if (step == first_tail_step) {
        tail_walk = std::make_unique<GreedyTail>(a, noise, X, n_rows, chosen.data(), step, per_row, n_threads, step_tol,
                                                 control, tail_weight);
        if (stopped(control)) return;
      }
      tail_walk->step_values(chosen.data(), per_row, values.data());
    } else if (on_union_walk) {
      greedy_step_variants(a, noise, X, n_rows, chosen.data(), total, masks, variants);
      for (std::int64_t i = 0; i < n_rows && !stopped(control); ++i) {
        walk_union_within(a, noise, distinct_sets(a, noise, variants.data() + i * per_row, per_row), n_threads,
                          step_tol, values.data() + i * per_row, control, expected_units(step, i), step + 1);
      }
    } else {
      greedy_step_variants(a, noise, X, n_rows, chosen.data(), total, masks, variants);
      walk_chunks(a, noise, variants.data(), total, few_rows_chunk(a, total, n_threads), n_threads, step_tol,
                  values.data(), control, step + 1);
    }
    if (stopped(control)) return;
    greedy_step_choose(a, noise, n_rows, step, per_row, values.data(), chosen.data(), last.data(), ranking_out,
                       curve_out);
  }
  for (std::int64_t i = 0; i < n_rows; ++i) {
    rank_the_rest(chosen.data() + static_cast<std::size_t>(i) * du, d, step, last[static_cast<std::size_t>(i)],
                  ranking_out + i * d, curve_out + i * d);
  }
}

}  // namespace pgexact
