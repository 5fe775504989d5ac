#include "pgexact/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#ifdef PGEXACT_OPENMP
#include <omp.h>
#endif

namespace pgexact {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using Bound = Workspace::Bound;
using Interval = Workspace::Interval;

constexpr Bound kMinusInf{-kInf, 0.0, 1.0};
constexpr Bound kPlusInf{kInf, 1.0, 0.0};

// Probability of x' in (lo, hi), taking the difference on the side where both CDF values are
// small, so that tail intervals keep their relative precision.
inline double mass(const Bound& lo, const Bound& hi) {
  const double m = lo.lower >= 0.5 ? lo.upper - hi.upper : hi.lower - lo.lower;
  return m > 0.0 ? m : 0.0;
}

inline std::uint64_t feature_bit(std::int32_t j) { return std::uint64_t{1} << (j % 64); }

// CDF of feature j's noise at its k-th distinct boundary (global index k), cached per row.
inline const Bound& bound_cdf(const Arena& a, const Noise& noise, Workspace& ws, std::int32_t j, std::int32_t k) {
  if (ws.cdf_stamp[k] != ws.row_epoch) {
    const double b = a.bounds[k];
    const CdfPair c = noise_cdf(noise.family[j], noise.sigma[j], b - ws.row[j]);
    ws.cdf[k] = Bound{b, c.lower, c.upper};
    ws.cdf_stamp[k] = ws.row_epoch;
  }
  return ws.cdf[k];
}

inline const Bound& boundary_cdf(const Arena& a, const Noise& noise, Workspace& ws, std::int32_t n) {
  return bound_cdf(a, noise, ws, a.feature[n], a.bound_index[n]);
}

inline std::int32_t fixed_child(const Arena& a, std::int32_t n, const double* x) {
  return a.goes_left(n, x[a.feature[n]]) ? a.left[n] : a.right[n];
}

// Restores box/region intervals changed at depth >= depth.
inline void unwind(Workspace& ws, std::vector<Workspace::Undo>& log, std::int32_t depth) {
  while (!log.empty() && log.back().depth >= depth) {
    const auto& u = log.back();
    ws.box[u.feature] = u.c;
    ws.region_lo[u.feature] = u.r_lo;
    ws.region_hi[u.feature] = u.r_hi;
    log.pop_back();
  }
}

inline void enter(Workspace& ws, std::vector<Workspace::Undo>& log, const Workspace::Frame& f) {
  unwind(ws, log, f.depth);
  if (f.feature >= 0) {
    const std::int32_t j = f.feature;
    log.push_back({ws.box[j], ws.region_lo[j], ws.region_hi[j], f.depth, j});
    ws.box[j] = f.c;
    ws.region_lo[j] = f.r_lo;
    ws.region_hi[j] = f.r_hi;
  }
}

// Pass 1 for one tree: P(region) of every reachable node, mu, the centred subtree masses, the
// tree's variance and its share of the bias E f_t - f_t(x). Returns false if nothing below the
// root is perturbed (the tree is then constant under the perturbation).
bool tree_moments(const Arena& a, const Noise& noise, Workspace& ws, std::int64_t t, double* var_out,
                  double* bias_out) {
  const double* x = ws.row;
  const std::int32_t root = a.tree_root[t];
  auto& frames = ws.frames;
  frames.clear();
  ws.reached.clear();
  frames.push_back({{kMinusInf, kPlusInf}, -kInf, kInf, 1.0, 0, root, 0, -1});
  std::uint64_t mask = 0;
  double mu = 0.0;
  while (!frames.empty()) {
    const Workspace::Frame f = frames.back();
    frames.pop_back();
    enter(ws, ws.undo, f);
    const std::int32_t n = f.node;
    ws.p[n] = f.p;
    ws.reach[n] = ws.set_epoch;
    ws.reached.push_back(n);
    const std::int32_t j = a.feature[n];
    if (j < 0) {
      mu += a.value[n] * f.p;
      continue;
    }
    if (!ws.perturbed[j]) {
      frames.push_back({{}, 0, 0, f.p, 0, fixed_child(a, n, x), f.depth + 1, -1});
      continue;
    }
    mask |= feature_bit(j);
    const Bound& bd = boundary_cdf(a, noise, ws, n);
    const Interval c = ws.box[j];
    if (bd.b <= c.lo.b) {
      frames.push_back({{}, 0, 0, f.p, 0, a.right[n], f.depth + 1, -1});
    } else if (bd.b >= c.hi.b) {
      frames.push_back({{}, 0, 0, f.p, 0, a.left[n], f.depth + 1, -1});
    } else {
      const double m = mass(c.lo, c.hi);
      const double pl = m > 0.0 ? f.p * (mass(c.lo, bd) / m) : 0.0;
      const double pr = m > 0.0 ? f.p * (mass(bd, c.hi) / m) : 0.0;
      frames.push_back({{bd, c.hi}, -kInf, kInf, pr, 0, a.right[n], f.depth + 1, j});
      frames.push_back({{c.lo, bd}, -kInf, kInf, pl, 0, a.left[n], f.depth + 1, j});
    }
  }
  unwind(ws, ws.undo, 0);
  ws.mu[t] = mu;
  ws.tree_mask[t] = mask;
  if (mask == 0) return false;

  // Children follow their parent in pre-order, so the reversed list is a valid post-order.
  const double c_x = a.value[a.leaf_of(t, x)];
  double var = 0.0;
  double bias = 0.0;
  for (auto it = ws.reached.rbegin(); it != ws.reached.rend(); ++it) {
    const std::int32_t n = *it;
    const std::int32_t j = a.feature[n];
    if (j < 0) {
      const double d = a.value[n] - mu;
      ws.centred[n] = d * ws.p[n];
      var += d * d * ws.p[n];
      bias += (a.value[n] - c_x) * ws.p[n];
      continue;
    }
    double s = 0.0;
    if (ws.reach[a.left[n]] == ws.set_epoch) s += ws.centred[a.left[n]];
    if (ws.reach[a.right[n]] == ws.set_epoch) s += ws.centred[a.right[n]];
    ws.centred[n] = s;
  }
  *var_out = var;
  *bias_out = bias;
  return true;
}

// E[(f_s - mu_s) 1(x' in box)] where the current ws.box is the box of a leaf of another tree,
// `p_box` its probability and `binding` the features on which it is narrower than everything.
double box_expectation(const Arena& a, const Noise& noise, Workspace& ws, std::int64_t s, double p_box,
                       std::uint64_t binding, bool exact_bits, Pruning pruning) {
  const double* x = ws.row;
  const double mu = ws.mu[s];
  const std::int32_t root = a.tree_root[s];
  auto& frames = ws.inner_frames;
  frames.clear();
  frames.push_back({{}, 0, 0, p_box, binding, root, 0, -1});
  double total = 0.0;
  while (!frames.empty()) {
    const Workspace::Frame f = frames.back();
    frames.pop_back();
    enter(ws, ws.inner_undo, f);
    const std::int32_t m = f.node;
    if (pruning == Pruning::Full && (f.binding & a.subtree_features[m]) == 0) {
      // The box does not cut this subtree on any feature it splits on: its contribution is the
      // subtree's centred mass rescaled from P(region) to P(region and box). At the root that
      // mass is zero by construction of mu.
      if (m != root && ws.reach[m] == ws.set_epoch && ws.p[m] > 0.0) {
        total += ws.centred[m] * (f.p / ws.p[m]);
      }
      continue;
    }
    const std::int32_t j = a.feature[m];
    if (j < 0) {
      total += (a.value[m] - mu) * f.p;
      continue;
    }
    if (!ws.perturbed[j]) {
      frames.push_back({{}, 0, 0, f.p, f.binding, fixed_child(a, m, x), f.depth + 1, -1});
      continue;
    }
    const Bound& bd = boundary_cdf(a, noise, ws, m);
    const Interval c = ws.box[j];
    const double r_lo = ws.region_lo[j];
    const double r_hi = ws.region_hi[j];
    const std::uint64_t bit = feature_bit(j);
    const double m_all = (bd.b > c.lo.b && bd.b < c.hi.b) ? mass(c.lo, c.hi) : 0.0;
    // Right child: region (max(r_lo, b), r_hi), box part (max(c.lo, b), c.hi).
    if (bd.b < c.hi.b) {
      const bool cut = bd.b > c.lo.b;
      const Interval nc = cut ? Interval{bd, c.hi} : c;
      const double nr_lo = std::max(r_lo, bd.b);
      const double p = cut ? (m_all > 0.0 ? f.p * (mass(bd, c.hi) / m_all) : 0.0) : f.p;
      const bool narrower = nc.lo.b != nr_lo || nc.hi.b != r_hi;
      const std::uint64_t bind = exact_bits ? ((f.binding & ~bit) | (narrower ? bit : 0)) : (f.binding | (narrower ? bit : 0));
      if (p > 0.0) frames.push_back({nc, nr_lo, r_hi, p, bind, a.right[m], f.depth + 1, j});
    }
    // Left child: region (r_lo, min(r_hi, b)), box part (c.lo, min(c.hi, b)).
    if (bd.b > c.lo.b) {
      const bool cut = bd.b < c.hi.b;
      const Interval nc = cut ? Interval{c.lo, bd} : c;
      const double nr_hi = std::min(r_hi, bd.b);
      const double p = cut ? (m_all > 0.0 ? f.p * (mass(c.lo, bd) / m_all) : 0.0) : f.p;
      const bool narrower = nc.lo.b != r_lo || nc.hi.b != nr_hi;
      const std::uint64_t bind = exact_bits ? ((f.binding & ~bit) | (narrower ? bit : 0)) : (f.binding | (narrower ? bit : 0));
      if (p > 0.0) frames.push_back({nc, r_lo, nr_hi, p, bind, a.left[m], f.depth + 1, j});
    }
  }
  unwind(ws, ws.inner_undo, 0);
  return total;
}

// sum over leaves u of tree t of (y_u - mu_t) * sum over partners s of E[(f_s - mu_s) 1(box_u)].
double tree_covariances(const Arena& a, const Noise& noise, Workspace& ws, std::int64_t t,
                        const std::int32_t* partners, std::size_t n_partners, bool exact_bits,
                        Pruning pruning) {
  const double* x = ws.row;
  const double mu = ws.mu[t];
  auto& frames = ws.frames;
  frames.clear();
  frames.push_back({{kMinusInf, kPlusInf}, -kInf, kInf, 1.0, 0, a.tree_root[t], 0, -1});
  double total = 0.0;
  while (!frames.empty()) {
    const Workspace::Frame f = frames.back();
    frames.pop_back();
    enter(ws, ws.undo, f);
    const std::int32_t n = f.node;
    const std::int32_t j = a.feature[n];
    if (j < 0) {
      const double dev = a.value[n] - mu;
      const double p = ws.p[n];
      if (dev == 0.0 || p == 0.0) continue;
      double inner = 0.0;
      for (std::size_t k = 0; k < n_partners; ++k) {
        inner += box_expectation(a, noise, ws, partners[k], p, f.binding, exact_bits, pruning);
      }
      total += dev * inner;
      continue;
    }
    if (!ws.perturbed[j]) {
      frames.push_back({{}, 0, 0, 0, f.binding, fixed_child(a, n, x), f.depth + 1, -1});
      continue;
    }
    const Bound& bd = boundary_cdf(a, noise, ws, n);
    const Interval c = ws.box[j];
    if (bd.b <= c.lo.b) {
      frames.push_back({{}, 0, 0, 0, f.binding, a.right[n], f.depth + 1, -1});
    } else if (bd.b >= c.hi.b) {
      frames.push_back({{}, 0, 0, 0, f.binding, a.left[n], f.depth + 1, -1});
    } else {
      const std::uint64_t bind = f.binding | feature_bit(j);
      if (ws.p[a.right[n]] > 0.0 && ws.reach[a.right[n]] == ws.set_epoch) {
        frames.push_back({{bd, c.hi}, -kInf, kInf, 0, bind, a.right[n], f.depth + 1, j});
      }
      if (ws.p[a.left[n]] > 0.0 && ws.reach[a.left[n]] == ws.set_epoch) {
        frames.push_back({{c.lo, bd}, -kInf, kInf, 0, bind, a.left[n], f.depth + 1, j});
      }
    }
  }
  unwind(ws, ws.undo, 0);
  return total;
}

// PG2 when a single feature j is perturbed: f is then a step function of x'_j, so
// E[(f(x') - f(x))^2] is a sum over the pieces between consecutive boundaries of j. Each tree
// restricted to j is a search tree whose leaves, visited left first, come in increasing order;
// their value changes are accumulated per boundary, then one sweep adds mass * D^2 with
// D = f - f(x) on each piece. Every term is non-negative.
double pg2_single_feature(const Arena& a, const Noise& noise, Workspace& ws, std::int32_t j) {
  const double* x = ws.row;
  const std::int32_t begin = a.feature_bounds_begin[j];
  const std::int32_t end = a.feature_bounds_begin[j + 1];
  std::fill(ws.jump.begin() + begin, ws.jump.begin() + end, 0.0);
  double d0 = 0.0;  // f - f(x) on the leftmost piece
  auto& stack = ws.sweep;
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    const double c_x = a.value[a.leaf_of(t, x)];
    // Interval of each pending node as global boundary indices: lo = -1 is -inf, hi = end is +inf.
    stack.clear();
    stack.push_back({a.tree_root[t], -1, end});
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
  Bound lo = kMinusInf;
  for (std::int32_t k = begin; k < end; ++k) {
    if (d != 0.0) {
      const Bound& hi = bound_cdf(a, noise, ws, j, k);
      total += mass(lo, hi) * d * d;
      lo = hi;
    } else if (ws.jump[k] != 0.0) {
      lo = bound_cdf(a, noise, ws, j, k);
    }
    d += ws.jump[k];
  }
  if (d != 0.0) total += mass(lo, kPlusInf) * d * d;
  return total;
}

}  // namespace

Workspace::Workspace(const Arena& arena) {
  const auto n = static_cast<std::size_t>(arena.n_nodes());
  const auto t = static_cast<std::size_t>(arena.n_trees());
  const auto d = static_cast<std::size_t>(arena.n_features);
  p.assign(n, 0.0);
  centred.assign(n, 0.0);
  reach.assign(n, 0);
  cdf.assign(arena.bounds.size(), Bound{0, 0, 0});
  cdf_stamp.assign(arena.bounds.size(), 0);
  jump.assign(arena.bounds.size(), 0.0);
  mu.assign(t, 0.0);
  tree_mask.assign(t, 0);
  active.reserve(t);
  box.assign(d, Interval{kMinusInf, kPlusInf});
  region_lo.assign(d, -kInf);
  region_hi.assign(d, kInf);
  perturbed.assign(d, 0);
  const auto depth = static_cast<std::size_t>(arena.max_depth) + 2;
  frames.reserve(2 * depth);
  inner_frames.reserve(2 * depth);
  undo.reserve(depth);
  inner_undo.reserve(depth);
}

void Workspace::begin_row(const double* x) {
  row = x;
  if (++row_epoch == 0) {  // wrapped: forget every stamp
    std::fill(cdf_stamp.begin(), cdf_stamp.end(), 0);
    row_epoch = 1;
  }
}

void Workspace::begin_set() {
  if (++set_epoch == 0) {
    std::fill(reach.begin(), reach.end(), 0);
    set_epoch = 1;
  }
}

double pg2_row(const Arena& a, const Noise& noise, const std::uint8_t* perturbed, Workspace& ws,
               Pruning pruning) {
  const double* x = ws.row;
  const std::int32_t d = a.n_features;
  std::int32_t count = 0;
  std::int32_t last = -1;
  for (std::int32_t j = 0; j < d; ++j) {
    ws.perturbed[j] = (perturbed[j] != 0 && !std::isnan(x[j])) ? 1 : 0;
    if (ws.perturbed[j]) {
      ++count;
      last = j;
    }
  }
  if (count == 0) return 0.0;
  if (count == 1 && pruning == Pruning::Full) return pg2_single_feature(a, noise, ws, last);
  ws.begin_set();

  double bias = 0.0;
  double var = 0.0;
  ws.active.clear();
  for (std::int64_t t = 0; t < a.n_trees(); ++t) {
    double v = 0.0;
    double b = 0.0;
    if (tree_moments(a, noise, ws, t, &v, &b)) {
      ws.active.push_back(static_cast<std::int32_t>(t));
      var += v;
      bias += b;
    }
  }

  const bool exact_bits = d <= 64;
  std::vector<std::int32_t>& partners = ws.reached;  // free again after pass 1
  double cov = 0.0;
  for (std::size_t i = 0; i < ws.active.size(); ++i) {
    const std::int32_t t = ws.active[i];
    partners.clear();
    for (std::size_t k = i + 1; k < ws.active.size(); ++k) {
      const std::int32_t s = ws.active[k];
      // Trees with no reachable perturbed feature in common are independent.
      if (pruning == Pruning::None || (ws.tree_mask[t] & ws.tree_mask[s]) != 0) partners.push_back(s);
    }
    if (!partners.empty()) {
      cov += tree_covariances(a, noise, ws, t, partners.data(), partners.size(), exact_bits, pruning);
    }
  }
  const double total_var = var + 2.0 * cov;
  return bias * bias + (total_var > 0.0 ? total_var : 0.0);
}

void check_perturbable(const Arena& a, const std::uint8_t* perturbed, std::int64_t n_masks) {
  if (a.n_outputs != 1) throw std::invalid_argument("output: kernels need a single-output model");
  const std::int32_t d = a.n_features;
  for (std::int32_t j = 0; j < d; ++j) {
    if (!a.categorical_feature[j]) continue;
    for (std::int64_t r = 0; r < n_masks; ++r) {
      if (perturbed[r * d + j]) {
        throw std::invalid_argument("features: feature " + std::to_string(j) +
                                    " has categorical splits and cannot be perturbed by additive noise");
      }
    }
  }
}

int resolve_threads(int n_threads) {
#ifdef PGEXACT_OPENMP
  return n_threads > 0 ? n_threads : omp_get_max_threads();
#else
  (void)n_threads;
  return 1;
#endif
}

void pg2_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
               const std::uint8_t* perturbed, bool mask_per_row, int n_threads, Pruning pruning,
               double* out) {
  noise.validate(a.n_features);
  check_perturbable(a, perturbed, mask_per_row ? n_rows : 1);
  const std::int64_t d = a.n_features;
  const int threads = resolve_threads(n_threads);
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    Workspace ws(a);
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t i = 0; i < n_rows; ++i) {
      ws.begin_row(X + i * d);
      out[i] = pg2_row(a, noise, perturbed + (mask_per_row ? i * d : 0), ws, pruning);
    }
  }
  (void)threads;
}

void pg2_curve_batch(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                     const std::int64_t* ranking, bool ranking_per_row, std::int64_t n_steps,
                     int n_threads, Pruning pruning, double* out) {
  noise.validate(a.n_features);
  if (a.n_outputs != 1) throw std::invalid_argument("output: kernels need a single-output model");
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
        if (k < n_steps && a.categorical_feature[j]) {
          throw std::invalid_argument("ranking: feature " + std::to_string(j) +
                                      " has categorical splits and cannot be perturbed by additive noise");
        }
      }
    }
  }
  const int threads = resolve_threads(n_threads);
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    Workspace ws(a);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(d));
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::int64_t i = 0; i < n_rows; ++i) {
      ws.begin_row(X + i * d);
      const std::int64_t* rk = ranking + (ranking_per_row ? i * d : 0);
      std::fill(mask.begin(), mask.end(), 0);
      for (std::int64_t k = 0; k < n_steps; ++k) {
        mask[rk[k]] = 1;
        out[i * n_steps + k] = pg2_row(a, noise, mask.data(), ws, pruning);
      }
    }
  }
  (void)threads;
}

}  // namespace pgexact
