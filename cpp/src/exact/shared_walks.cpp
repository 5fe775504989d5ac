// The shared node-pair walk: several (row, set) variants in one recursion (kernels.hpp).
#include "lane_walk.hpp"

#include <algorithm>
#include <stdexcept>

namespace pgexact {
namespace walk {
namespace {

// ---------------------------------------------------------------------------------------------
// One walk for several perturbed sets ("variants"), of one row or of several rows: the prefixes
// of a ranking (pg2_curve), the candidate sets S + {j} of a greedy step (greedy_rank), or one
// set for a block of rows (pg2).
//
// Each variant's walk is exactly the pair recursion it would run alone: each state holds the
// variants whose walks have reached it so far (bit v = variant v, at most 64), one P(box) per
// variant, and makes every decision per variant: follow its own row through splits it does
// not perturb, stop where its subtrees are independent, skip within its own budget, pick the
// side to split as pair_settle does. Variants that decide alike stay together; a variant that
// decides otherwise continues in its own branch and never rejoins. States that walks have in
// common are visited once instead of once per variant, and a variant's terms are added in the
// same order whatever other variants share the walk: the result of a row does not depend on
// which rows or sets it was batched with. A single variant is pg2_row's pair walk. Trees deeper
// than kMaxRecursionDepth use the explicit-stack walk instead.

class VariantRecursion : LaneWalk {
 public:
  VariantRecursion(const Arena& a, Workspace& ws, std::int32_t count, const double* budget, double* cov,
                   double* skipped)
      : LaneWalk(a, ws, lane_state(ws, a, count), count, budget, cov, skipped, LaneWalk::Cdfs::per_lane), ws_(ws) {}

  void covariance(std::int64_t t, std::int64_t s, std::uint64_t live) {
    begin_pair(t, s, live);
    rec(a_.tree_root[t], a_.tree_root[s], 0, live, 0, 0);
    end_pair(live);
  }

 private:
  void rec(std::int32_t n, std::int32_t m, std::int32_t level, std::uint64_t live, std::uint64_t cut_a,
           std::uint64_t cut_b) {
    const double* p = p_levels_ + static_cast<std::size_t>(level) * stride_;
    if (rec_if_one_lane(n, m, p, live, cut_a, cut_b)) return;
    // Variants for which n or m splits on a feature they do not perturb move on through their
    // own rows, grouped by where they arrive; the box does not change.
    std::uint64_t moving = 0;
    if (a_.feature[n] >= 0) moving |= live & ~branch_[a_.feature[n]];
    if (a_.feature[m] >= 0) moving |= live & ~branch_[a_.feature[m]];
    if (moving != 0) {
      std::int32_t* to = ws_.variant_nodes.data() + 2 * static_cast<std::size_t>(level) * stride_;
      for (std::uint64_t b = moving; b != 0; b &= b - 1) {
        const auto v = static_cast<std::size_t>(lowest_bit(b));
        to[2 * v] = settle(n, v);
        to[2 * v + 1] = settle(m, v);
      }
      for (std::uint64_t left = moving; left != 0;) {
        const auto v = static_cast<std::size_t>(lowest_bit(left));
        std::uint64_t group = 0;
        for (std::uint64_t b = left; b != 0; b &= b - 1) {
          const auto w = static_cast<std::size_t>(lowest_bit(b));
          if (to[2 * w] == to[2 * v] && to[2 * w + 1] == to[2 * v + 1]) group |= std::uint64_t{1} << w;
        }
        left &= ~group;
        // Settled for every variant of the group: this call moves none of them, so the slots
        // of this level are not overwritten before the next group reads them.
        rec(to[2 * v], to[2 * v + 1], level, group, cut_a, cut_b);
      }
      live &= ~moving;
      if (live == 0) return;
    }
    const std::uint64_t sf_n = a_.feature[n] >= 0 ? a_.subtree_features[n] : 0;
    const std::uint64_t sf_m = a_.feature[m] >= 0 ? a_.subtree_features[m] : 0;
    const std::uint64_t cuts_n = cut_a & sf_n;
    const std::uint64_t cuts_m = cut_b & sf_m;
    live = settle_state(n, m, p, live, sf_n, sf_m, cuts_n, cuts_m, [p](std::uint64_t lanes) { return min_p(p, lanes); });
    if (live == 0) return;
    // The side to split, per variant as in pair_settle: the side whose own features the other
    // region cuts, otherwise the larger subtree.
    const std::uint64_t cut_n = variants_of(cuts_n);
    const std::uint64_t cut_m = variants_of(cuts_m);
    const bool larger_n = a_.subtree_size[n] >= a_.subtree_size[m];
    const std::uint64_t first = live & (cut_n | (larger_n ? ~cut_m : 0));
    if (first != 0) split(0, n, m, level, first, cut_a, cut_b);
    if ((live & ~first) != 0) split(1, n, m, level, live & ~first, cut_a, cut_b);
  }

  // Branches the variants of `live` (all perturbing the feature) at side's node.
  void split(int side, std::int32_t n, std::int32_t m, std::int32_t level, std::uint64_t live, std::uint64_t cut_a,
             std::uint64_t cut_b) {
    const double* p = p_levels_ + static_cast<std::size_t>(level) * stride_;
    double* pc = p_levels_ + static_cast<std::size_t>(level + 1) * stride_;
    branch(side, n, m, cut_a, cut_b, [&](std::int32_t cn, std::int32_t cm, std::uint64_t ca, std::uint64_t cb,
                                         const ChildBox& box) PGEXACT_ALWAYS_INLINE {
      std::uint64_t child_live = 0;
      for (std::uint64_t b = live; b != 0; b &= b - 1) {
        const auto v = static_cast<std::size_t>(lowest_bit(b));
        const double pv = child_p(v, p[v], box);
        if (!(pv > 0.0)) continue;
        pc[v] = pv;
        child_live |= std::uint64_t{1} << v;
      }
      if (child_live != 0) rec(cn, cm, level + 1, child_live, ca, cb);
    });
  }

  Workspace& ws_;  // variant_nodes: where each moving variant arrives
};

// Bytes of per-variant tables (conditional means per node, CDFs per boundary) one walk may hold
// per thread.
constexpr std::size_t kVariantBytes = std::size_t{8} << 20;

}  // namespace

void prepare_variants(const Arena& a, const Noise& noise, const Variant* variants, const std::int32_t* walked,
                      std::int32_t n_walked, Workspace& ws, double* bias, double* var, std::int64_t* n_pairs,
                      bool lane_cdfs) {
  const std::int32_t d = a.n_features;
  const std::size_t n_nodes = static_cast<std::size_t>(a.n_nodes());
  const std::size_t n_trees = static_cast<std::size_t>(a.n_trees());
  const double* row = nullptr;
  auto use_row = [&](const double* x) {
    if (x != row) ws.begin_row(x);
    row = x;
  };
  // Compensated (Neumaier) sums over trees (and, in the walks, over tree pairs): a thousand
  // trees make half a million pair terms of either sign, whose plain sum lost up to 1.4e-12 of
  // the result (CatBoost's default on housing).
  double bias_comp[kMaxVariants], var_comp[kMaxVariants];
  const auto nw = static_cast<std::size_t>(n_walked);
  ws.variant_cmean.resize(nw * n_nodes);
  ws.variant_cdf.resize(lane_cdfs ? nw * a.bounds.size() : 0);
  ws.variant_mu.resize(nw * n_trees);
  ws.variant_tree_mask.resize(nw * n_trees);
  ws.variant_p.resize(static_cast<std::size_t>(2 * a.max_depth + 4) * nw);
  ws.variant_nodes.resize(static_cast<std::size_t>(2 * a.max_depth + 4) * 2 * nw);
  ws.variant_branch.assign(static_cast<std::size_t>(d), 0);
  ws.variant_features.assign(nw, 0);
  ws.variant_row.resize(nw);
  // Pass 1 for each variant, and its boundary CDFs interleaved with the other variants'.
  for (std::size_t w = 0; w < nw; ++w) {
    const Variant& var_w = variants[walked[w]];
    use_row(var_w.row);
    ws.variant_row[w] = var_w.row;
    std::int32_t last = -1;
    set_perturbed(a, noise, var_w.mask, ws, &last);
    for (std::int32_t j = 0; j < d; ++j) {
      if (!ws.perturbed[j]) continue;
      ws.variant_branch[static_cast<std::size_t>(j)] |= std::uint64_t{1} << w;
      if (!lane_cdfs) continue;
      for (std::int32_t k = a.feature_bounds_begin[j]; k < a.feature_bounds_begin[j + 1]; ++k) {
        ws.variant_cdf[static_cast<std::size_t>(k) * nw + w] = ws.cdf[static_cast<std::size_t>(k)];
      }
    }
    ws.variant_features[w] = ws.perturbed_mask;
    ws.begin_set();
    bias[w] = bias_comp[w] = 0.0;
    var[w] = var_comp[w] = 0.0;
    for (std::size_t t = 0; t < n_trees; ++t) {
      double vt = 0.0;
      double bt = 0.0;
      if (tree_moments(a, ws, static_cast<std::int64_t>(t), &vt, &bt)) {
        add_compensated(var[w], var_comp[w], vt);
        add_compensated(bias[w], bias_comp[w], bt);
        for (const std::int32_t n : ws.reached) ws.variant_cmean[w * n_nodes + static_cast<std::size_t>(n)] = ws.cmean[n];
      }
      ws.variant_mu[w * n_trees + t] = ws.mu[t];
      ws.variant_tree_mask[w * n_trees + t] = ws.tree_mask[t];
    }
    bias[w] += bias_comp[w];
    var[w] += var_comp[w];
  }
  if (n_pairs == nullptr) return;
  // Pairs dependent for some variant, as consecutive (t, s) in ws.partners, with the variants
  // they are dependent for in ws.pair_live (trees sharing no reachable perturbed feature are
  // independent).
  for (std::size_t w = 0; w < nw; ++w) n_pairs[w] = 0;
  const std::uint64_t* tm = ws.variant_tree_mask.data();
  ws.partners.clear();
  ws.pair_live.clear();
  for (std::size_t t = 0; t < n_trees; ++t) {
    for (std::size_t s = t + 1; s < n_trees; ++s) {
      std::uint64_t live = 0;
      for (std::size_t w = 0; w < nw; ++w) {
        if ((tm[w * n_trees + t] & tm[w * n_trees + s]) != 0) live |= std::uint64_t{1} << w;
      }
      if (live == 0) continue;
      ws.partners.push_back(static_cast<std::int32_t>(t));
      ws.partners.push_back(static_cast<std::int32_t>(s));
      ws.pair_live.push_back(live);
      for (std::uint64_t b = live; b != 0; b &= b - 1) ++n_pairs[lowest_bit(b)];
    }
  }
}

void walk_variants(const Arena& a, const Noise& noise, const Variant* variants, const std::int32_t* walked,
                   std::int32_t n_walked, double tol, Workspace& ws, double* out, const RunControl* control) {
  double bias[kMaxVariants], var[kMaxVariants], cov[kMaxVariants], skipped[kMaxVariants], budget[kMaxVariants];
  // Within one tree pair the terms are summed plainly (pair_cov), across pairs compensated.
  double cov_comp[kMaxVariants], pair_cov[kMaxVariants];
  std::int64_t n_pairs[kMaxVariants];
  const auto nw = static_cast<std::size_t>(n_walked);
  prepare_variants(a, noise, variants, walked, n_walked, ws, bias, var, n_pairs);
  for (std::size_t w = 0; w < nw; ++w) {
    cov[w] = cov_comp[w] = pair_cov[w] = 0.0;
    skipped[w] = 0.0;
    budget[w] = skip_budget(tol, bias[w], var[w], n_pairs[w]);
  }
  VariantRecursion walk(a, ws, n_walked, budget, pair_cov, skipped);
  for (std::size_t q = 0; q < ws.pair_live.size(); ++q) {
    // A checkpoint every 64 tree pairs: one walk of a large model can take seconds.
    if ((q & 63) == 0 && stopped(control)) return;
    walk.covariance(ws.partners[2 * q], ws.partners[2 * q + 1], ws.pair_live[q]);
    for (std::uint64_t b = ws.pair_live[q]; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      add_compensated(cov[v], cov_comp[v], pair_cov[v]);
      pair_cov[v] = 0.0;
    }
  }
  for (std::size_t w = 0; w < nw; ++w) cov[w] += cov_comp[w];
  for (std::size_t w = 0; w < nw; ++w) {
    const double total_var = var[w] + 2.0 * cov[w];
    double result = bias[w] * bias[w] + (total_var > 0.0 ? total_var : 0.0);
    out[walked[w]] = result;
    if (2.0 * skipped[w] > tol * result) {
      // The diagonal part overstated the result (strong negative covariances): this variant
      // again, alone and exactly. Only the tables in ws are reused; this loop reads locals.
      walk_variants(a, noise, variants, walked + w, 1, 0.0, ws, out, control);
    }
  }
}

}  // namespace walk

bool shares_walks(const Arena& a, Pruning pruning) {
  return (fastest(pruning) || pruning == Pruning::Walk) && a.max_depth <= walk::kMaxRecursionDepth;
}

std::int32_t max_variants(const Arena& a) {
  const std::size_t per_variant = std::max<std::size_t>(
      {std::size_t{1}, 8 * static_cast<std::size_t>(a.n_nodes()), sizeof(Workspace::Cdf) * a.bounds.size()});
  return static_cast<std::int32_t>(std::max<std::size_t>(1, std::min<std::size_t>(kMaxVariants, walk::kVariantBytes / per_variant)));
}

void pg2_variants(const Arena& a, const Noise& noise, const Variant* variants, std::int32_t count, Workspace& ws,
                  double* out, double tol, const RunControl* control) {
  if (count < 0 || count > kMaxVariants) throw std::invalid_argument("variants: at most 64 sets per walk");
  const std::int32_t d = a.n_features;
  // Variants with at most one effectively perturbed feature go to pg2_row (0 or the sweep);
  // the others are walked together.
  std::int32_t walked[kMaxVariants];
  std::int32_t n_walked = 0;
  for (std::int32_t v = 0; v < count; ++v) {
    const double* x = variants[v].row;
    const std::uint8_t* mv = variants[v].mask;
    if (walk::count_perturbed(noise, mv, x, d, 2) <= 1) {
      ws.begin_row(x);
      out[v] = pg2_row(a, noise, mv, ws, Pruning::Full, tol);
    } else {
      walked[n_walked++] = v;
    }
  }
  if (n_walked > 0) walk::walk_variants(a, noise, variants, walked, n_walked, tol, ws, out, control);
}

}  // namespace pgexact
