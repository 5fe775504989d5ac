#include "pgexact/exact/kernels.hpp"

#include <cstdio>
#include "pgexact/exact/reference_kernel.hpp"

#include "pgexact/exact/pair_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

namespace pgexact {
namespace {

using Cdf = Workspace::Cdf;
using Frame = Workspace::Frame;
using Undo = Workspace::Undo;

// Probability of x' between two boundaries of one feature, taking the difference on the side
// where both CDF values are small, so that tail intervals keep their relative precision.
inline double mass(const Workspace& ws, std::int32_t lo, std::int32_t hi) {
  const Cdf& l = ws.cdf[lo];
  const Cdf& h = ws.cdf[hi];
  const double m = l.lower >= 0.5 ? l.upper - h.upper : h.lower - l.lower;
  return m > 0.0 ? m : 0.0;
}

inline std::uint64_t feature_bit(std::int32_t j) { return std::uint64_t{1} << (j % 64); }

// Sets or clears feature j's bit. With more than 64 features bits are shared, so a bit is
// only ever set: a superset of the true set keeps every pruning test conservative.
inline std::uint64_t with_bit(std::uint64_t mask, std::int32_t j, bool on, bool exact_bits) {
  const std::uint64_t bit = feature_bit(j);
  if (on) return mask | bit;
  return exact_bits ? (mask & ~bit) : mask;
}

inline std::int32_t fixed_child(const Arena& a, std::int32_t n, const double* x) {
  return a.goes_left(n, x[a.feature[n]]) ? a.left[n] : a.right[n];
}

// Boundary CDFs of feature j for the current row.
void fill_feature_cdf(const Arena& a, const Noise& noise, Workspace& ws, std::int32_t j) {
  if (ws.feature_stamp[j] == ws.row_epoch) return;
  const std::int32_t begin = a.feature_bounds_begin[j];
  const std::int32_t end = a.feature_bounds_begin[j + 1];
  const double xj = ws.row[j];
  ws.cdf[begin] = Cdf{0.0, 1.0};
  ws.cdf[end - 1] = Cdf{1.0, 0.0};
  for (std::int32_t k = begin + 1; k < end - 1; ++k) {
    const CdfPair c = noise_cdf(noise.family[j], noise.sigma[j], a.bounds[k] - xj);
    ws.cdf[k] = Cdf{c.lower, c.upper};
  }
  ws.feature_stamp[j] = ws.row_epoch;
}

// Restores the intervals changed at depth >= depth.
inline void unwind(Workspace& ws, std::vector<Undo>& log, std::int32_t depth) {
  while (!log.empty() && log.back().depth >= depth) {
    const Undo& u = log.back();
    ws.box_lo[u.feature] = u.box_lo;
    ws.box_hi[u.feature] = u.box_hi;
    if (u.side >= 0) {
      ws.region_lo[u.side][u.feature] = u.region_lo;
      ws.region_hi[u.side][u.feature] = u.region_hi;
    }
    log.pop_back();
  }
}

// Makes the interval state that of frame f: undo the siblings' subtrees, apply f's change.
inline void enter(Workspace& ws, std::vector<Undo>& log, const Frame& f) {
  unwind(ws, log, f.depth);
  if (f.feature < 0) return;
  const std::int32_t j = f.feature;
  Undo u{f.depth, j, f.side, ws.box_lo[j], ws.box_hi[j], 0, 0};
  ws.box_lo[j] = f.box_lo;
  ws.box_hi[j] = f.box_hi;
  if (f.side >= 0) {
    u.region_lo = ws.region_lo[f.side][j];
    u.region_hi = ws.region_hi[f.side][j];
    ws.region_lo[f.side][j] = f.region_lo;
    ws.region_hi[f.side][j] = f.region_hi;
  }
  log.push_back(u);
}

inline Frame plain_frame(double p, std::int32_t node, std::int32_t depth) {
  return Frame{p, 0, 0, node, -1, depth, -1, -1, 0, 0, 0, 0};
}

inline Frame box_frame(double p, std::int32_t node, std::int32_t depth, std::int32_t j, std::int32_t lo,
                       std::int32_t hi) {
  return Frame{p, 0, 0, node, -1, depth, j, -1, lo, hi, 0, 0};
}

// Pushes the children of perturbed split n that the current box reaches, with their
// probabilities, narrowing the box (no regions): pass 1 and the reference walk.
inline void push_box_children(const Arena& a, Workspace& ws, std::vector<Frame>& frames, std::int32_t n,
                              double p, std::int32_t depth) {
  const std::int32_t j = a.feature[n];
  const std::int32_t r = a.bound_index[n];
  const std::int32_t lo = ws.box_lo[j];
  const std::int32_t hi = ws.box_hi[j];
  if (r <= lo) {
    frames.push_back(plain_frame(p, a.right[n], depth + 1));
  } else if (r >= hi) {
    frames.push_back(plain_frame(p, a.left[n], depth + 1));
  } else {
    const double m = mass(ws, lo, hi);
    const double pl = m > 0.0 ? p * (mass(ws, lo, r) / m) : 0.0;
    const double pr = m > 0.0 ? p * (mass(ws, r, hi) / m) : 0.0;
    frames.push_back(box_frame(pr, a.right[n], depth + 1, j, r, hi));
    frames.push_back(box_frame(pl, a.left[n], depth + 1, j, lo, r));
  }
}

// Visits, in pre-order, every node of the tree rooted at `root` that the perturbation can reach,
// with the box narrowed to the node's region: visit(n, p) gets the node and P(box) (times p0).
// Unperturbed splits follow x; the box is restored on return.
template <typename Visit>
void walk_reachable(const Arena& a, Workspace& ws, std::vector<Frame>& frames, std::vector<Undo>& log,
                    std::int32_t root, double p0, Visit&& visit) {
  frames.clear();
  frames.push_back(plain_frame(p0, root, 0));
  while (!frames.empty()) {
    const Frame f = frames.back();
    frames.pop_back();
    enter(ws, log, f);
    const std::int32_t n = f.a;
    visit(n, f.p);
    const std::int32_t j = a.feature[n];
    if (j < 0) continue;
    if (!ws.perturbed[j]) {
      frames.push_back(plain_frame(f.p, fixed_child(a, n, ws.row), f.depth + 1));
    } else {
      push_box_children(a, ws, frames, n, f.p, f.depth);
    }
  }
  unwind(ws, log, 0);
}

// Pass 1 for one tree: P(region) of every reachable node, mu, the centred subtree masses, the
// tree's variance and its share of the bias E f_t - f_t(x). Returns false if no perturbed
// feature is reachable (the tree is then constant under the perturbation).
bool tree_moments(const Arena& a, Workspace& ws, std::int64_t t, double* var_out, double* bias_out) {
  const double* x = ws.row;
  ws.reached.clear();
  std::uint64_t mask = 0;
  double mu = 0.0;
  walk_reachable(a, ws, ws.frames, ws.undo, a.tree_root[t], 1.0, [&](std::int32_t n, double p) {
    ws.p[n] = p;
    ws.reach[n] = ws.set_epoch;
    ws.reached.push_back(n);
    const std::int32_t j = a.feature[n];
    if (j < 0) {
      mu += a.value[n] * p;
    } else if (ws.perturbed[j]) {
      mask |= feature_bit(j);
    }
  });
  ws.mu[t] = mu;
  ws.tree_mask[t] = mask;
  if (mask == 0) return false;

  // Children follow their parent in pre-order, so the reversed list is a valid post-order.
  const double c_x = a.value[a.leaf_of(t, x)];
  double var = 0.0;
  double bias = 0.0;
  for (auto it = ws.reached.rbegin(); it != ws.reached.rend(); ++it) {
    const std::int32_t n = *it;
    if (a.feature[n] < 0) {
      const double dev = a.value[n] - mu;
      ws.centred[n] = dev * ws.p[n];
      ws.cmean[n] = dev;
      var += dev * dev * ws.p[n];
      bias += (a.value[n] - c_x) * ws.p[n];
      continue;
    }
    double s = 0.0;
    if (ws.reach[a.left[n]] == ws.set_epoch) s += ws.centred[a.left[n]];
    if (ws.reach[a.right[n]] == ws.set_epoch) s += ws.centred[a.right[n]];
    ws.centred[n] = s;
    ws.cmean[n] = ws.p[n] > 0.0 ? s / ws.p[n] : 0.0;
  }
  *var_out = var;
  *bias_out = bias;
  return true;
}

// One step of the pair recursion, shared by both versions: follows unperturbed splits (decided
// by x) without branching, then either reports that the two subtrees are independent given the
// box (returns true) or picks the side to split (*side = 0 for tree t's node n, 1 for m).
inline bool pair_settle(const Arena& a, const Workspace& ws, std::int32_t& n, std::int32_t& m,
                        std::uint64_t cut_a, std::uint64_t cut_b, int* side) {
  const double* x = ws.row;
  while (a.feature[n] >= 0 && !ws.perturbed[a.feature[n]]) n = fixed_child(a, n, x);
  while (a.feature[m] >= 0 && !ws.perturbed[a.feature[m]]) m = fixed_child(a, m, x);
  const std::uint64_t pmask = ws.perturbed_mask;
  const std::uint64_t fn = a.feature[n] >= 0 ? a.subtree_features[n] & pmask : 0;
  const std::uint64_t fm = a.feature[m] >= 0 ? a.subtree_features[m] & pmask : 0;
  const bool cut_n = (cut_a & fn) != 0;
  const bool cut_m = (cut_b & fm) != 0;
  // Given the box, subtrees on disjoint independent features, each restricted by the box only
  // where its own region already restricts it, are independent.
  if (!cut_n && !cut_m && (fn & fm) == 0) return true;
  // Split the side whose own features the other region cuts; otherwise the larger subtree.
  if (cut_n) {
    *side = 0;
  } else if (cut_m) {
    *side = 1;
  } else {
    *side = a.subtree_size[n] >= a.subtree_size[m] ? 0 : 1;
  }
  return false;
}

// Cov(f_t, f_s) by the pair recursion described in kernels.hpp, with an explicit stack and an
// undo log: the version for trees too deep for the call stack. Side 0 is tree t, side 1 is s.
double pair_covariance_deep(const Arena& a, Workspace& ws, std::int64_t t, std::int64_t s, bool exact_bits) {
  auto& frames = ws.frames;
  frames.clear();
  frames.push_back(Frame{1.0, 0, 0, a.tree_root[t], a.tree_root[s], 0, -1, -1, 0, 0, 0, 0});
  double total = 0.0;
  while (!frames.empty()) {
    const Frame f = frames.back();
    frames.pop_back();
    enter(ws, ws.undo, f);
    std::int32_t n = f.a;
    std::int32_t m = f.b;
    int side = 0;
    if (pair_settle(a, ws, n, m, f.cut_a, f.cut_b, &side)) {
      total += f.p * ws.cmean[n] * ws.cmean[m];
      continue;
    }
    const std::int32_t node = side == 0 ? n : m;
    const std::int32_t j = a.feature[node];
    const std::int32_t r = a.bound_index[node];
    const std::int32_t lo = ws.box_lo[j];
    const std::int32_t hi = ws.box_hi[j];
    const std::int32_t rlo = ws.region_lo[side][j];
    const std::int32_t rhi = ws.region_hi[side][j];
    const std::int32_t olo = ws.region_lo[1 - side][j];
    const std::int32_t ohi = ws.region_hi[1 - side][j];
    const bool cut = r > lo && r < hi;
    const double m_box = cut ? mass(ws, lo, hi) : 0.0;
    auto push = [&](std::int32_t child, std::int32_t nlo, std::int32_t nhi, std::int32_t nrlo, std::int32_t nrhi) {
      const double p = cut ? (m_box > 0.0 ? f.p * (mass(ws, nlo, nhi) / m_box) : 0.0) : f.p;
      if (!(p > 0.0)) return;
      const bool narrower_own = nlo != nrlo || nhi != nrhi;
      const bool narrower_other = nlo != olo || nhi != ohi;
      Frame c{p, 0, 0, n, m, f.depth + 1, j, side, nlo, nhi, nrlo, nrhi};
      if (side == 0) {
        c.a = child;
        c.cut_a = with_bit(f.cut_a, j, narrower_own, exact_bits);
        c.cut_b = with_bit(f.cut_b, j, narrower_other, exact_bits);
      } else {
        c.b = child;
        c.cut_b = with_bit(f.cut_b, j, narrower_own, exact_bits);
        c.cut_a = with_bit(f.cut_a, j, narrower_other, exact_bits);
      }
      frames.push_back(c);
    };
    if (r < hi) push(a.right[node], std::max(lo, r), hi, std::max(rlo, r), rhi);
    if (r > lo) push(a.left[node], lo, std::min(hi, r), rlo, std::min(rhi, r));
  }
  unwind(ws, ws.undo, 0);
  return total;
}

// Recursion depth of the pair walks (VariantRecursion) is at most the two trees' depths added;
// beyond this the explicit-stack version runs instead, so no model can overflow a thread's stack.
constexpr std::int32_t kMaxRecursionDepth = 256;

// E[(f_s - mu_s) 1(x' in box)] for the current box, walking every leaf of s it reaches.
double box_expectation_reference(const Arena& a, Workspace& ws, std::int64_t s, double p_box) {
  const double mu = ws.mu[s];
  double total = 0.0;
  walk_reachable(a, ws, ws.inner_frames, ws.inner_undo, a.tree_root[s], p_box, [&](std::int32_t m, double p) {
    if (a.feature[m] < 0) total += (a.value[m] - mu) * p;
  });
  return total;
}

// The paper's pre-order pair walk: sum over leaves u of t of (y_u - mu_t) times
// E[(f_s - mu_s) 1(box_u)] for every later active tree s, with no pruning.
double tree_covariances_reference(const Arena& a, Workspace& ws, std::int64_t t, const std::int32_t* partners,
                                  std::size_t n_partners) {
  const double mu = ws.mu[t];
  double total = 0.0;
  walk_reachable(a, ws, ws.frames, ws.undo, a.tree_root[t], 1.0, [&](std::int32_t n, double p) {
    if (a.feature[n] >= 0) return;
    double inner = 0.0;
    for (std::size_t k = 0; k < n_partners; ++k) inner += box_expectation_reference(a, ws, partners[k], p);
    total += (a.value[n] - mu) * inner;
  });
  return total;
}

// PG2 when a single feature j is perturbed: f is then a step function of x'_j, so
// E[(f(x') - f(x))^2] is a sum over the pieces between consecutive boundaries of j. Each tree
// restricted to j is a search tree whose leaves, visited left first, come in increasing order;
// their value changes are accumulated per boundary, then one sweep adds mass * D^2 with
// D = f - f(x) on each piece. Every term is non-negative.
double pg2_single_feature(const Arena& a, Workspace& ws, std::int32_t j) {
  const double* x = ws.row;
  const std::int32_t begin = a.feature_bounds_begin[j];
  const std::int32_t end = a.feature_bounds_begin[j + 1];
  std::fill(ws.jump.begin() + begin, ws.jump.begin() + end, 0.0);
  double d0 = 0.0;  // f - f(x) on the leftmost piece
  auto& stack = ws.sweep;
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    const double c_x = a.value[a.leaf_of(t, x)];
    stack.clear();
    stack.push_back({a.tree_root[t], begin, end - 1});
    bool first = true;
    double prev = 0.0;
    while (!stack.empty()) {
      const Workspace::SweepItem it = stack.back();
      stack.pop_back();
      const std::int32_t n = it.node;
      const std::int32_t f = a.feature[n];
      if (f < 0) {
        const double y = a.value[n];
        if (first) {
          d0 += y - c_x;
          first = false;
        } else {
          ws.jump[it.lo] += y - prev;  // leaves come in order: this one starts where the last ended
        }
        prev = y;
        continue;
      }
      if (f != j) {
        stack.push_back({fixed_child(a, n, x), it.lo, it.hi});
        continue;
      }
      const std::int32_t r = a.bound_index[n];
      const bool left = r > it.lo;
      const bool right = r < it.hi;
      // Right is pushed first so that the left child is visited first.
      if (right) stack.push_back({a.right[n], left ? r : it.lo, it.hi});
      if (left) stack.push_back({a.left[n], it.lo, right ? r : it.hi});
    }
  }
  double total = 0.0;
  double d = d0;
  std::int32_t lo = begin;
  for (std::int32_t k = begin + 1; k < end - 1; ++k) {
    if (ws.jump[k] == 0.0) continue;
    if (d != 0.0) total += mass(ws, lo, k) * d * d;
    d += ws.jump[k];
    lo = k;
  }
  if (d != 0.0) total += mass(ws, lo, end - 1) * d * d;
  return total;
}

}  // namespace

Workspace::Workspace(const Arena& arena) {
  const auto n = static_cast<std::size_t>(arena.n_nodes());
  const auto t = static_cast<std::size_t>(arena.n_trees());
  const auto d = static_cast<std::size_t>(arena.n_features);
  p.assign(n, 0.0);
  centred.assign(n, 0.0);
  cmean.assign(n, 0.0);
  reach.assign(n, 0);
  cdf.assign(arena.bounds.size(), Cdf{0.0, 0.0});
  feature_stamp.assign(d, 0);
  jump.assign(arena.bounds.size(), 0.0);
  moment.assign(arena.bounds.size(), 0.0);
  mu.assign(t, 0.0);
  tree_mask.assign(t, 0);
  active.reserve(t);
  partners.reserve(t);
  box_lo.resize(d);
  box_hi.resize(d);
  for (std::size_t j = 0; j < d; ++j) {
    box_lo[j] = arena.feature_bounds_begin[j];        // -inf
    box_hi[j] = arena.feature_bounds_begin[j + 1] - 1;  // +inf
  }
  for (int side = 0; side < 2; ++side) {
    region_lo[side] = box_lo;
    region_hi[side] = box_hi;
  }
  perturbed.assign(d, 0);
  const auto depth = static_cast<std::size_t>(arena.max_depth) + 2;
  frames.reserve(4 * depth);
  inner_frames.reserve(2 * depth);
  undo.reserve(2 * depth);
  inner_undo.reserve(depth);
}

void Workspace::begin_row(const double* x) {
  row = x;
  if (++row_epoch == 0) {  // wrapped: forget every stamp
    std::fill(feature_stamp.begin(), feature_stamp.end(), 0);
    row_epoch = 1;
  }
}

void Workspace::begin_set() {
  if (++set_epoch == 0) {
    std::fill(reach.begin(), reach.end(), 0);
    set_epoch = 1;
  }
}

namespace {

// Marks the effectively perturbed features (requested and not NaN) and fills their boundary
// CDFs. Returns how many there are; *last is the highest one.
std::int32_t set_perturbed(const Arena& a, const Noise& noise, const std::uint8_t* perturbed, Workspace& ws,
                           std::int32_t* last) {
  const double* x = ws.row;
  std::int32_t count = 0;
  ws.perturbed_mask = 0;
  for (std::int32_t j = 0; j < a.n_features; ++j) {
    ws.perturbed[j] = (perturbed[j] != 0 && !std::isnan(x[j]) && noise.perturbs(j)) ? 1 : 0;
    if (ws.perturbed[j]) {
      ++count;
      *last = j;
      ws.perturbed_mask |= feature_bit(j);
      fill_feature_cdf(a, noise, ws, j);
    }
  }
  return count;
}

double expected_row(const Arena& a, const Noise& noise, const std::uint8_t* perturbed, Workspace& ws) {
  std::int32_t last = -1;
  set_perturbed(a, noise, perturbed, ws, &last);
  ws.begin_set();
  double sum = 0.0;
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    double v = 0.0;
    double b = 0.0;
    tree_moments(a, ws, t, &v, &b);  // sets mu[t], also for a tree the noise cannot move
    sum += ws.mu[t];
  }
  return a.base_score[0] + sum;
}

// Adds, for every tree, sum over reachable leaves u of (y_u - f_t(x)) P(u) E[delta_j | box_u]
// to out[j]: the first moments E[delta_j f(x + delta)] (centring by f_t(x) changes nothing,
// as E[delta_j] = 0, but keeps the terms small).
void first_moments_row(const Arena& a, const Noise& noise, const std::uint8_t* all, Workspace& ws, double* out) {
  const double* x = ws.row;
  const std::int32_t d = a.n_features;
  std::int32_t last = -1;
  set_perturbed(a, noise, all, ws, &last);
  for (std::int32_t j = 0; j < d; ++j) {
    out[j] = 0.0;
    if (!ws.perturbed[j]) continue;
    const std::int32_t begin = a.feature_bounds_begin[j];
    const std::int32_t end = a.feature_bounds_begin[j + 1];
    for (std::int32_t k = begin; k < end; ++k) {
      ws.moment[k] = noise_partial_moment(noise.family[j], noise.sigma[j], a.bounds[k] - x[j]);
    }
  }
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    const double c_x = a.value[a.leaf_of(t, x)];
    walk_reachable(a, ws, ws.frames, ws.undo, a.tree_root[t], 1.0, [&](std::int32_t n, double p) {
      if (a.feature[n] >= 0) return;
      const double w = (a.value[n] - c_x) * p;
      if (w == 0.0) return;
      for (std::int32_t k = 0; k < d; ++k) {
        const std::int32_t lo = ws.box_lo[k];
        const std::int32_t hi = ws.box_hi[k];
        if (lo == a.feature_bounds_begin[k] && hi == a.feature_bounds_begin[k + 1] - 1) continue;  // E[delta_k] = 0
        const double m = mass(ws, lo, hi);
        if (m > 0.0) out[k] += w * ((ws.moment[hi] - ws.moment[lo]) / m);
      }
    });
  }
}

}  // namespace


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

inline int lowest_bit(std::uint64_t v) { return __builtin_ctzll(v); }

// The split helpers below are written once for the one- and many-variant recursions; inlined,
// they cost what the hand-written copies did (measured: about 15% slower when left to the
// compiler's choice).
#if defined(__GNUC__) || defined(__clang__)
#define PGEXACT_ALWAYS_INLINE __attribute__((always_inline))
#else
#define PGEXACT_ALWAYS_INLINE
#endif

class VariantRecursion {
 public:
  VariantRecursion(const Arena& a, Workspace& ws, std::int32_t count, const double* budget, double* cov,
                   double* skipped)
      : a_(a), ws_(ws), exact_bits_(a.n_features <= 64), count_(count), stride_(static_cast<std::size_t>(count)), rows_(ws.variant_row.data()),
        branch_(ws.variant_branch.data()), features_(ws.variant_features.data()), cmean_(ws.variant_cmean.data()),
        cdf_(ws.variant_cdf.data()), budget_(budget), cov_(cov), skipped_(skipped), box_lo_(ws.box_lo.data()),
        box_hi_(ws.box_hi.data()) {
    region_lo_[0] = ws.region_lo[0].data();
    region_hi_[0] = ws.region_hi[0].data();
    region_lo_[1] = ws.region_lo[1].data();
    region_hi_[1] = ws.region_hi[1].data();
    for (std::int32_t v = 0; v < count; ++v) max_budget_ = std::max(max_budget_, budget[v]);
    // Per feature bit (beyond 64 features a bit stands for every feature j with j % 64 equal
    // to it, so the sets stay supersets), the variants perturbing one of its features; then
    // by_byte_[k][b]: those of the bits 8k + i for the bits i set in b.
    std::uint64_t per_bit[64] = {};
    for (std::int32_t j = 0; j < a.n_features; ++j) per_bit[j % 64] |= branch_[j];
    n_bytes_ = (std::min<std::int32_t>(a.n_features, 64) + 7) / 8;
    for (std::int32_t k = 0; k < n_bytes_; ++k) {
      by_byte_[k][0] = 0;
      for (std::int32_t b = 1; b < 256; ++b) {
        const int i = lowest_bit(static_cast<std::uint64_t>(b));
        by_byte_[k][b] = by_byte_[k][b & (b - 1)] | per_bit[8 * k + i];
      }
    }
  }

  void covariance(std::int64_t t, std::int64_t s, std::uint64_t live) {
    const std::size_t n_trees = static_cast<std::size_t>(a_.n_trees());
    for (std::uint64_t b = live; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      mu_[0][v] = ws_.variant_mu[v * n_trees + static_cast<std::size_t>(t)];
      mu_[1][v] = ws_.variant_mu[v * n_trees + static_cast<std::size_t>(s)];
      ws_.variant_p[v] = 1.0;
      pair_skipped_[v] = 0.0;
    }
    rec(a_.tree_root[t], a_.tree_root[s], 0, live, 0, 0);
    for (std::uint64_t b = live; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      skipped_[v] += pair_skipped_[v];
    }
  }

 private:
  // Variants that perturb some feature of `mask`.
  // A byte of the feature set at a time (one table lookup each) rather than a bit at a time:
  // the union is the same.
  std::uint64_t variants_of(std::uint64_t mask) const {
    std::uint64_t v = 0;
    for (std::int32_t k = 0; k < n_bytes_; ++k) v |= by_byte_[k][(mask >> (8 * k)) & 0xffu];
    return v;
  }

  // mass() with variant v's boundary CDFs.
  double mass_of(std::size_t v, std::int32_t lo, std::int32_t hi) const {
    const Cdf& l = cdf_[static_cast<std::size_t>(lo) * stride_ + v];
    const Cdf& h = cdf_[static_cast<std::size_t>(hi) * stride_ + v];
    const double m = l.lower >= 0.5 ? l.upper - h.upper : h.lower - l.lower;
    return m > 0.0 ? m : 0.0;
  }

  // Follows variant v's row from n through the splits v does not perturb.
  std::int32_t settle(std::int32_t n, std::size_t v) const {
    const std::uint64_t bit = std::uint64_t{1} << v;
    while (a_.feature[n] >= 0 && (branch_[a_.feature[n]] & bit) == 0) n = fixed_child(a_, n, rows_[v]);
    return n;
  }

  double spread(std::int32_t n, double mu) const {
    return std::max(a_.subtree_max[n] - mu, mu - a_.subtree_min[n]);
  }

  void rec(std::int32_t n, std::int32_t m, std::int32_t level, std::uint64_t live, std::uint64_t cut_a,
           std::uint64_t cut_b) {
    const double* p = ws_.variant_p.data() + static_cast<std::size_t>(level) * stride_;
    if ((live & (live - 1)) == 0) {
      const auto v = static_cast<std::size_t>(lowest_bit(live));
      rec_one(n, m, v, p[v], cut_a, cut_b);
      return;
    }
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
    // pair_settle's independence test, per variant: a variant depends on the subtrees if it
    // perturbs a feature both use or one the other region cuts.
    const std::uint64_t sf_n = a_.feature[n] >= 0 ? a_.subtree_features[n] : 0;
    const std::uint64_t sf_m = a_.feature[m] >= 0 ? a_.subtree_features[m] : 0;
    const std::uint64_t cuts_n = cut_a & sf_n;
    const std::uint64_t cuts_m = cut_b & sf_m;
    const std::uint64_t dependent = variants_of((sf_n & sf_m) | cuts_n | cuts_m);
    for (std::uint64_t b = live & ~dependent; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      cov_[v] += p[v] * cmean_[static_cast<std::size_t>(n) * stride_ + v] * cmean_[static_cast<std::size_t>(m) * stride_ + v];
    }
    live &= dependent;
    if (live == 0) return;
    // Certified skipping, with each variant's own budget. A spread is at least half the leaf
    // range whatever the mean, so one test with the smallest P(box) and the largest budget
    // rules out most states at once.
    double p_min = 1.0;
    for (std::uint64_t b = live; b != 0; b &= b - 1) p_min = std::min(p_min, p[lowest_bit(b)]);
    const double floor_bound =
        p_min * (0.25 * (a_.subtree_max[n] - a_.subtree_min[n])) * (a_.subtree_max[m] - a_.subtree_min[m]);
    for (std::uint64_t b = floor_bound <= kSlack * max_budget_ ? live : 0; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      if (!(budget_[v] > 0.0)) continue;
      const double bound = p[v] * spread(n, mu_[0][v]) * spread(m, mu_[1][v]);
      if (bound <= budget_[v] - pair_skipped_[v]) {
        pair_skipped_[v] += bound;
        live &= ~(std::uint64_t{1} << v);
      }
    }
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

  // rec() for a single variant v, with P(box) = p: the same operations in the same order (so
  // the same bits), without the per-variant sets and tables.
  void rec_one(std::int32_t n, std::int32_t m, std::size_t v, double p, std::uint64_t cut_a, std::uint64_t cut_b) {
    n = settle(n, v);
    m = settle(m, v);
    const std::uint64_t features = features_[v];
    const std::uint64_t sf_n = a_.feature[n] >= 0 ? a_.subtree_features[n] : 0;
    const std::uint64_t sf_m = a_.feature[m] >= 0 ? a_.subtree_features[m] : 0;
    const std::uint64_t cuts_n = cut_a & sf_n;
    const std::uint64_t cuts_m = cut_b & sf_m;
    if ((((sf_n & sf_m) | cuts_n | cuts_m) & features) == 0) {
      cov_[v] += p * cmean_[static_cast<std::size_t>(n) * stride_ + v] * cmean_[static_cast<std::size_t>(m) * stride_ + v];
      return;
    }
    const double p_min = std::min(1.0, p);
    const double floor_bound =
        p_min * (0.25 * (a_.subtree_max[n] - a_.subtree_min[n])) * (a_.subtree_max[m] - a_.subtree_min[m]);
    if (floor_bound <= kSlack * max_budget_ && budget_[v] > 0.0) {
      const double bound = p * spread(n, mu_[0][v]) * spread(m, mu_[1][v]);
      if (bound <= budget_[v] - pair_skipped_[v]) {
        pair_skipped_[v] += bound;
        return;
      }
    }
    const bool first = (cuts_n & features) != 0 ||
                       ((cuts_m & features) == 0 && a_.subtree_size[n] >= a_.subtree_size[m]);
    // branch() by hand: through the shared helper this, the hottest loop of single-set walks,
    // took 9% longer (interleaved A/B, 100 trees of depth 6, one row per call: 104 vs 95 ms);
    // the operations are the same.
    const int side = first ? 0 : 1;
    const std::int32_t node = side == 0 ? n : m;
    const std::int32_t j = a_.feature[node];
    const std::int32_t r = a_.bound_index[node];
    const std::int32_t lo = box_lo_[j];
    const std::int32_t hi = box_hi_[j];
    const std::int32_t rlo = region_lo_[side][j];
    const std::int32_t rhi = region_hi_[side][j];
    const std::int32_t olo = region_lo_[1 - side][j];
    const std::int32_t ohi = region_hi_[1 - side][j];
    const bool cut = r > lo && r < hi;
    auto visit = [&](std::int32_t child, std::int32_t nlo, std::int32_t nhi, std::int32_t nrlo, std::int32_t nrhi) {
      const double pv = child_p(v, p, ChildBox{cut, lo, hi, nlo, nhi});
      if (!(pv > 0.0)) return;
      box_lo_[j] = nlo;
      box_hi_[j] = nhi;
      region_lo_[side][j] = nrlo;
      region_hi_[side][j] = nrhi;
      std::uint64_t own = side == 0 ? cut_a : cut_b;
      std::uint64_t other = side == 0 ? cut_b : cut_a;
      own = with_bit(own, j, nlo != nrlo || nhi != nrhi, exact_bits_);
      other = with_bit(other, j, nlo != olo || nhi != ohi, exact_bits_);
      if (side == 0) {
        rec_one(child, m, v, pv, own, other);
      } else {
        rec_one(n, child, v, pv, other, own);
      }
      box_lo_[j] = lo;
      box_hi_[j] = hi;
      region_lo_[side][j] = rlo;
      region_hi_[side][j] = rhi;
    };
    if (r > lo) visit(a_.left[node], lo, std::min(hi, r), rlo, std::min(rhi, r));
    if (r < hi) visit(a_.right[node], std::max(lo, r), hi, std::max(rlo, r), rhi);
  }

  // Branches the variants of `live` (all perturbing the feature) at side's node.
  void split(int side, std::int32_t n, std::int32_t m, std::int32_t level, std::uint64_t live, std::uint64_t cut_a,
             std::uint64_t cut_b) {
    const double* p = ws_.variant_p.data() + static_cast<std::size_t>(level) * stride_;
    double* pc = ws_.variant_p.data() + static_cast<std::size_t>(level + 1) * stride_;
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

  // The box on the split feature before and after a child narrows it.
  struct ChildBox {
    bool cut;  // the split divides the box
    std::int32_t lo, hi, child_lo, child_hi;
  };

  // P(child's box) for variant v, from P(box) = p.
  PGEXACT_ALWAYS_INLINE double child_p(std::size_t v, double p, const ChildBox& box) const {
    if (!box.cut) return p;
    const double m_box = mass_of(v, box.lo, box.hi);
    return m_box > 0.0 ? p * (mass_of(v, box.child_lo, box.child_hi) / m_box) : 0.0;
  }

  // Splits side's node: for each child the box reaches, narrows the box and that side's region
  // on the feature, updates both cut sets, calls descend(n', m', cut_a', cut_b', box), and
  // restores the intervals.
  template <typename Descend>
  PGEXACT_ALWAYS_INLINE void branch(int side, std::int32_t n, std::int32_t m, std::uint64_t cut_a, std::uint64_t cut_b, Descend&& descend) {
    const std::int32_t node = side == 0 ? n : m;
    const std::int32_t j = a_.feature[node];
    const std::int32_t r = a_.bound_index[node];
    const std::int32_t lo = box_lo_[j];
    const std::int32_t hi = box_hi_[j];
    const std::int32_t rlo = region_lo_[side][j];
    const std::int32_t rhi = region_hi_[side][j];
    const std::int32_t olo = region_lo_[1 - side][j];
    const std::int32_t ohi = region_hi_[1 - side][j];
    const bool cut = r > lo && r < hi;
    auto visit = [&](std::int32_t child, std::int32_t nlo, std::int32_t nhi, std::int32_t nrlo,
                     std::int32_t nrhi) PGEXACT_ALWAYS_INLINE {
      const bool narrower_own = nlo != nrlo || nhi != nrhi;
      const bool narrower_other = nlo != olo || nhi != ohi;
      box_lo_[j] = nlo;
      box_hi_[j] = nhi;
      region_lo_[side][j] = nrlo;
      region_hi_[side][j] = nrhi;
      std::uint64_t own = side == 0 ? cut_a : cut_b;
      std::uint64_t other = side == 0 ? cut_b : cut_a;
      own = with_bit(own, j, narrower_own, exact_bits_);
      other = with_bit(other, j, narrower_other, exact_bits_);
      const ChildBox box{cut, lo, hi, nlo, nhi};
      if (side == 0) {
        descend(child, m, own, other, box);
      } else {
        descend(n, child, other, own, box);
      }
      box_lo_[j] = lo;
      box_hi_[j] = hi;
      region_lo_[side][j] = rlo;
      region_hi_[side][j] = rhi;
    };
    if (r > lo) visit(a_.left[node], lo, std::min(hi, r), rlo, std::min(rhi, r));
    if (r < hi) visit(a_.right[node], std::max(lo, r), hi, std::max(rlo, r), rhi);
  }

  const Arena& a_;
  Workspace& ws_;
  bool exact_bits_;  // one bit per feature (at most 64 features); see with_bit
  std::int32_t count_;
  std::size_t stride_;
  const double* const* rows_;      // per variant: its row
  const std::uint64_t* branch_;    // per feature: the variants perturbing it
  const std::uint64_t* features_;  // per variant: the features it perturbs
  const double* cmean_;            // [node][variant]: one cache line serves every variant
  const Cdf* cdf_;                 // [boundary][variant]
  const double* budget_;
  double* cov_;
  double* skipped_;
  std::int32_t* box_lo_;
  std::int32_t* box_hi_;
  std::int32_t* region_lo_[2];
  std::int32_t* region_hi_[2];
  // The floor test only rules states out: it may not decide differently for a variant alone
  // and in company, so it keeps a margin far above the rounding of the two bounds.
  static constexpr double kSlack = 1.0 + 1e-9;
  double max_budget_ = 0.0;
  double mu_[2][kMaxVariants] = {};
  double pair_skipped_[kMaxVariants] = {};  // each pair has its own budget, as in pg2_row
  std::int32_t n_bytes_ = 0;
  std::uint64_t by_byte_[8][256];
};

// Bytes of per-variant tables (conditional means per node, CDFs per boundary) one walk may hold
// per thread.
constexpr std::size_t kVariantBytes = std::size_t{8} << 20;

}  // namespace

bool shares_walks(const Arena& a, Pruning pruning) {
  return (pruning == Pruning::Full || pruning == Pruning::Walk) && a.max_depth <= kMaxRecursionDepth;
}

std::int32_t max_variants(const Arena& a) {
  const std::size_t per_variant = std::max<std::size_t>(
      {std::size_t{1}, 8 * static_cast<std::size_t>(a.n_nodes()), sizeof(Cdf) * a.bounds.size()});
  return static_cast<std::int32_t>(std::max<std::size_t>(1, std::min<std::size_t>(kMaxVariants, kVariantBytes / per_variant)));
}

namespace {

// The shared walk for the variants variants[walked[w]], w < n_walked, each perturbing at least
// two features (not NaN in its row): out[walked[w]]. With `skipping`, node pairs are skipped
// within certified budgets, and a variant whose skipped total could exceed 1e-12 of its result
// is walked again, alone, without skipping.
void walk_variants(const Arena& a, const Noise& noise, const Variant* variants, const std::int32_t* walked,
                   std::int32_t n_walked, bool skipping, Workspace& ws, double* out) {
  const std::int32_t d = a.n_features;
  const std::size_t n_nodes = static_cast<std::size_t>(a.n_nodes());
  const std::size_t n_trees = static_cast<std::size_t>(a.n_trees());
  const double* row = nullptr;
  auto use_row = [&](const double* x) {
    if (x != row) ws.begin_row(x);
    row = x;
  };
  double bias[kMaxVariants], var[kMaxVariants], cov[kMaxVariants], skipped[kMaxVariants], budget[kMaxVariants];
  std::int64_t n_pairs[kMaxVariants];
  const auto nw = static_cast<std::size_t>(n_walked);
  ws.variant_cmean.resize(nw * n_nodes);
  ws.variant_cdf.resize(nw * a.bounds.size());
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
      for (std::int32_t k = a.feature_bounds_begin[j]; k < a.feature_bounds_begin[j + 1]; ++k) {
        ws.variant_cdf[static_cast<std::size_t>(k) * nw + w] = ws.cdf[static_cast<std::size_t>(k)];
      }
    }
    ws.variant_features[w] = ws.perturbed_mask;
    ws.begin_set();
    bias[w] = 0.0;
    var[w] = 0.0;
    for (std::size_t t = 0; t < n_trees; ++t) {
      double vt = 0.0;
      double bt = 0.0;
      if (tree_moments(a, ws, static_cast<std::int64_t>(t), &vt, &bt)) {
        var[w] += vt;
        bias[w] += bt;
        for (const std::int32_t n : ws.reached) ws.variant_cmean[static_cast<std::size_t>(n) * nw + w] = ws.cmean[n];
      }
      ws.variant_mu[w * n_trees + t] = ws.mu[t];
      ws.variant_tree_mask[w * n_trees + t] = ws.tree_mask[t];
    }
    cov[w] = 0.0;
    skipped[w] = 0.0;
    n_pairs[w] = 0;
  }

  // Pairs dependent for some variant, as consecutive (t, s) in ws.partners, with the variants
  // they are dependent for in ws.pair_live (trees sharing no reachable perturbed feature are
  // independent).
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
  // Certified skipping: a share of 1e-13 of each variant's diagonal part (bias^2 + sum Var) per
  // pair; budget 0 skips nothing.
  for (std::size_t w = 0; w < nw; ++w) {
    budget[w] = skipping && n_pairs[w] > 0
                    ? 1e-13 * (bias[w] * bias[w] + var[w]) / static_cast<double>(n_pairs[w])
                    : 0.0;
  }
  VariantRecursion walk(a, ws, n_walked, budget, cov, skipped);
  for (std::size_t q = 0; q < ws.pair_live.size(); ++q) {
    walk.covariance(ws.partners[2 * q], ws.partners[2 * q + 1], ws.pair_live[q]);
  }
  for (std::size_t w = 0; w < nw; ++w) {
    const double total_var = var[w] + 2.0 * cov[w];
    double result = bias[w] * bias[w] + (total_var > 0.0 ? total_var : 0.0);
    out[walked[w]] = result;
    if (2.0 * skipped[w] > 1e-12 * result) {
      // The diagonal part overstated the result (strong negative covariances): this variant
      // again, alone and exactly. Only the tables in ws are reused; this loop reads locals.
      walk_variants(a, noise, variants, walked + w, 1, false, ws, out);
    }
  }
}

}  // namespace

double pg2_row(const Arena& a, const Noise& noise, const std::uint8_t* perturbed, Workspace& ws,
               Pruning pruning) {
  if (noise.has_categorical()) {
    // Categorical noise: the leaf-pair kernel (pg2_pairs) or this unpruned reference.
    if (pruning != Pruning::None) throw std::invalid_argument(categorical_unsupported());
    return pg2_reference_row(a, LeafPaths(a), noise, ws.row, perturbed);  // slow by design
  }
  const std::int32_t d = a.n_features;
  std::int32_t last = -1;
  const std::int32_t count = set_perturbed(a, noise, perturbed, ws, &last);
  if (count == 0) return 0.0;
  if (count == 1 && pruning != Pruning::None) return pg2_single_feature(a, ws, last);
  if (pruning != Pruning::None && a.max_depth <= kMaxRecursionDepth) {
    // The pair walk for this one set (the shared walk with a single variant).
    const Variant one{ws.row, perturbed};
    const std::int32_t self = 0;
    double out = 0.0;
    walk_variants(a, noise, &one, &self, 1, true, ws, &out);
    return out;
  }
  ws.begin_set();

  double bias = 0.0;
  double var = 0.0;
  ws.active.clear();
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    double v = 0.0;
    double b = 0.0;
    if (tree_moments(a, ws, t, &v, &b)) {
      ws.active.push_back(static_cast<std::int32_t>(t));
      var += v;
      bias += b;
    }
  }

  double cov = 0.0;
  if (pruning == Pruning::None) {
    for (std::size_t i = 0; i < ws.active.size(); ++i) {
      ws.partners.assign(ws.active.begin() + static_cast<std::ptrdiff_t>(i) + 1, ws.active.end());
      if (!ws.partners.empty()) {
        cov += tree_covariances_reference(a, ws, ws.active[i], ws.partners.data(), ws.partners.size());
      }
    }
  } else {
    // Trees deeper than the call stack allows: the explicit-stack pair recursion, no skipping.
    const bool exact_bits = d <= 64;
    for (std::size_t i = 0; i < ws.active.size(); ++i) {
      for (std::size_t k = i + 1; k < ws.active.size(); ++k) {
        const std::int32_t t = ws.active[i];
        const std::int32_t s = ws.active[k];
        // Trees with no reachable perturbed feature in common are independent.
        if ((ws.tree_mask[t] & ws.tree_mask[s]) != 0) cov += pair_covariance_deep(a, ws, t, s, exact_bits);
      }
    }
  }
  const double total_var = var + 2.0 * cov;
  return bias * bias + (total_var > 0.0 ? total_var : 0.0);
}

void pg2_variants(const Arena& a, const Noise& noise, const Variant* variants, std::int32_t count, Workspace& ws,
                  double* out) {
  if (count < 0 || count > kMaxVariants) throw std::invalid_argument("variants: at most 64 sets per walk");
  const std::int32_t d = a.n_features;
  // Variants with at most one effectively perturbed feature go to pg2_row (0 or the sweep);
  // the others are walked together.
  std::int32_t walked[kMaxVariants];
  std::int32_t n_walked = 0;
  for (std::int32_t v = 0; v < count; ++v) {
    const double* x = variants[v].row;
    const std::uint8_t* mv = variants[v].mask;
    std::int32_t effective = 0;
    for (std::int32_t j = 0; j < d && effective < 2; ++j) {
      effective += (mv[j] != 0 && !std::isnan(x[j]) && noise.perturbs(j)) ? 1 : 0;
    }
    if (effective <= 1) {
      ws.begin_row(x);
      out[v] = pg2_row(a, noise, mv, ws, Pruning::Full);
    } else {
      walked[n_walked++] = v;
    }
  }
  if (n_walked > 0) walk_variants(a, noise, variants, walked, n_walked, true, ws, out);
}

std::string additive_on_categories(std::int64_t j) {
  return "noise: feature " + std::to_string(j) +
         " has categorical splits and cannot be perturbed by additive noise; give it categorical noise "
         "(or fix it)";
}

std::string categorical_unsupported() {
  return "noise: categorical perturbation is computed by the leaf-pair kernel (one output, at most 64 "
         "features, depth at most 256) or the unpruned reference; fix the categorical features (None) "
         "or use Monte Carlo";
}

void check_values(const Arena& a) {
  double largest = 0.0;
  for (std::int64_t n = 0; n < a.n_nodes(); ++n) {
    if (a.is_leaf(static_cast<std::int32_t>(n))) largest = std::max(largest, std::fabs(a.value[n]));
  }
  if (!(largest <= kMaxLeafValue)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", largest);
    throw std::invalid_argument(std::string("model: a leaf value of ") + text +
                                " is beyond 1e100; PG2 sums products of leaf-value differences, which overflow "
                                "double precision there (rescale the model's output)");
  }
}

void check_perturbable(const Arena& a, const Noise& noise, const std::uint8_t* perturbed, std::int64_t n_masks) {
  if (a.n_outputs != 1) throw std::invalid_argument("output: kernels need a single-output model");
  check_values(a);
  const std::int32_t d = a.n_features;
  for (std::int32_t j = 0; j < d; ++j) {
    if (!a.categorical_feature[j] || !noise.additive(j)) continue;
    for (std::int64_t r = 0; r < n_masks; ++r) {
      if (perturbed[r * d + j]) throw std::invalid_argument(additive_on_categories(j));
    }
  }
}

int resolve_threads(int n_threads, std::int64_t n_rows) {
#ifdef PGEXACT_OPENMP
  if (n_threads <= 0) n_threads = omp_get_max_threads();
  const std::int64_t cores = std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  const std::int64_t cap = std::max<std::int64_t>(1, std::min<std::int64_t>(n_rows, 4 * cores));
  return static_cast<int>(std::min<std::int64_t>(n_threads, cap));
#else
  (void)n_threads;
  (void)n_rows;
  return 1;
#endif
}

std::int64_t rows_per_block(std::int64_t n_rows, int n_threads, std::int64_t cap) {
  const int threads = resolve_threads(n_threads, n_rows);
  const std::int64_t parts = threads > 1 ? 4 * static_cast<std::int64_t>(threads) : 1;
  return std::max<std::int64_t>(1, std::min<std::int64_t>(cap, (n_rows + parts - 1) / parts));
}

void pg2_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
               const std::uint8_t* perturbed, bool mask_per_row, int n_threads, Pruning pruning,
               double* out, RunControl* control) {
  noise.validate(a.n_features);
  check_perturbable(a, noise, perturbed, mask_per_row ? n_rows : 1);
  const std::int64_t d = a.n_features;
  if (pruning == Pruning::Full && pairs_apply(a)) {
    pg2_pairs(a, noise, X, n_rows, perturbed, mask_per_row, n_threads, out, control);
    return;
  }
  if (noise.has_categorical() && pruning != Pruning::None) throw std::invalid_argument(categorical_unsupported());
  if (shares_walks(a, pruning)) {
    // Blocks of rows, one shared walk each.
    const std::int64_t block = rows_per_block(n_rows, n_threads, max_variants(a));
    for_each_row(a, (n_rows + block - 1) / block, n_threads, [&](Workspace& ws, std::int64_t b) {
      const std::int64_t r0 = b * block;
      const std::int64_t count = std::min(block, n_rows - r0);
      Variant variants[kMaxVariants];
      for (std::int64_t i = 0; i < count; ++i) {
        variants[i] = Variant{X + (r0 + i) * d, perturbed + (mask_per_row ? (r0 + i) * d : 0)};
      }
      pg2_variants(a, noise, variants, static_cast<std::int32_t>(count), ws, out + r0);
    }, control);
    return;
  }
  for_each_row(a, n_rows, n_threads, [&](Workspace& ws, std::int64_t i) {
    ws.begin_row(X + i * d);
    out[i] = pg2_row(a, noise, perturbed + (mask_per_row ? i * d : 0), ws, pruning);
  }, control);
}

void pg2_curve_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                     const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps,
                     int n_threads, Pruning pruning, double* out, RunControl* control) {
  noise.validate(a.n_features);
  if (a.n_outputs != 1) throw std::invalid_argument("output: kernels need a single-output model");
  check_values(a);
  const std::int64_t d = a.n_features;
  if (n_steps < 0 || n_steps > d) throw std::invalid_argument("ranking: number of steps out of range");
  // Validate every ranking before any thread starts: a permutation of 0..d-1, and no feature
  // with categorical splits among the first n_steps.
  const std::int64_t n_rankings = ranking_per_row ? n_rows : 1;
  {
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(d));
    for (std::int64_t r = 0; r < n_rankings; ++r) {
      std::fill(seen.begin(), seen.end(), 0);
      for (std::int64_t k = 0; k < d; ++k) {
        const std::int64_t j = ranking[r * d + k];
        if (j < 0 || j >= d || seen[j]) {
          throw std::invalid_argument("ranking: row " + std::to_string(r) + " is not a permutation of 0.." +
                                      std::to_string(d - 1));
        }
        seen[j] = 1;
        if (k < n_steps && a.categorical_feature[j] && noise.additive(j)) {
          throw std::invalid_argument(additive_on_categories(j));
        }
      }
    }
  }
  if (pruning == Pruning::Full && pairs_apply(a)) {
    pg2_curve_pairs(a, noise, X, n_rows, ranking, ranking_per_row, n_steps, n_threads, out, control);
    return;
  }
  if (noise.has_categorical() && pruning != Pruning::None) throw std::invalid_argument(categorical_unsupported());
  if (shares_walks(a, pruning) && n_steps > 0) {
    // Blocks of rows; every prefix of every row of a block is a variant, walked in chunks of
    // at most max_variants(a).
    const std::int64_t max_v = max_variants(a);
    const std::int64_t block = rows_per_block(n_rows, n_threads, std::max<std::int64_t>(1, max_v / n_steps));
    const auto du = static_cast<std::size_t>(d);
    for_each_row(a, (n_rows + block - 1) / block, n_threads, [&](Workspace& ws, std::int64_t b) {
      const std::int64_t r0 = b * block;
      const std::int64_t total = std::min(block, n_rows - r0) * n_steps;
      auto& masks = ws.variant_masks;
      masks.assign(static_cast<std::size_t>(total) * du, 0);
      for (std::int64_t v = 0; v < total; ++v) {
        const std::int64_t i = r0 + v / n_steps;
        const std::int64_t* rk = ranking + (ranking_per_row ? i * d : 0);
        for (std::int64_t q = 0; q <= v % n_steps; ++q) masks[static_cast<std::size_t>(v) * du + static_cast<std::size_t>(rk[q])] = 1;
      }
      Variant variants[kMaxVariants];
      for (std::int64_t v0 = 0; v0 < total; v0 += max_v) {
        const std::int64_t count = std::min(max_v, total - v0);
        for (std::int64_t v = 0; v < count; ++v) {
          variants[v] = Variant{X + (r0 + (v0 + v) / n_steps) * d, masks.data() + static_cast<std::size_t>(v0 + v) * du};
        }
        pg2_variants(a, noise, variants, static_cast<std::int32_t>(count), ws, out + r0 * n_steps + v0);
      }
    }, control);
    return;
  }
  for_each_row(a, n_rows, n_threads, [&](Workspace& ws, std::int64_t i) {
    ws.begin_row(X + i * d);
    const std::int64_t* rk = ranking + (ranking_per_row ? i * d : 0);
    auto& mask = ws.row_mask;
    mask.assign(static_cast<std::size_t>(d), 0);
    for (std::int64_t k = 0; k < n_steps; ++k) {
      mask[rk[k]] = 1;
      out[i * n_steps + k] = pg2_row(a, noise, mask.data(), ws, pruning);
    }
  }, control);
}

void expected_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                    const std::uint8_t* perturbed, bool mask_per_row, int n_threads, double* out,
                    RunControl* control) {
  noise.validate(a.n_features);
  check_perturbable(a, noise, perturbed, mask_per_row ? n_rows : 1);
  const std::int64_t d = a.n_features;
  // The walks' boxes are intervals only: categorical noise sums over the leaves' paths.
  const bool by_leaves = noise.has_categorical();
  const LeafPaths leaves = by_leaves ? LeafPaths(a) : LeafPaths(Arena());
  for_each_row(a, n_rows, n_threads, [&](Workspace& ws, std::int64_t i) {
    const std::uint8_t* mask = perturbed + (mask_per_row ? i * d : 0);
    if (by_leaves) {
      out[i] = expected_reference_row(a, leaves, noise, X + i * d, mask);
      return;
    }
    ws.begin_row(X + i * d);
    out[i] = expected_row(a, noise, mask, ws);
  }, control);
}

void first_moments_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                         int n_threads, double* out, RunControl* control) {
  noise.validate(a.n_features);
  const std::int64_t d = a.n_features;
  for (std::int64_t j = 0; j < d; ++j) {
    if (!noise.additive(j)) {
      throw std::invalid_argument("noise: first moments E[delta_j f] need additive noise on every feature");
    }
  }
  const std::vector<std::uint8_t> all(static_cast<std::size_t>(d), 1);
  check_perturbable(a, noise, all.data(), 1);
  for_each_row(a, n_rows, n_threads, [&](Workspace& ws, std::int64_t i) {
    ws.begin_row(X + i * d);
    first_moments_row(a, noise, all.data(), ws, out + i * d);
  }, control);
}

}  // namespace pgexact
