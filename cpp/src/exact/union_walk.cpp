// Several sets of one row in one walk over their union (union_walk.hpp says why and how).
#include "union_walk.hpp"

#include <algorithm>
#include <vector>

#ifdef PGEXACT_OPENMP
#include <omp.h>
#endif

#include "walk_common.hpp"

namespace pgexact {
namespace {

using walk::Cdf;
using walk::fixed_child;
using walk::with_bit;

inline int lowest_bit(std::uint64_t v) { return __builtin_ctzll(v); }

// Tree pairs per chunk: the unit of work shared among threads and of progress, and the fixed
// grouping of the compensated sums (so no bit depends on threads).
constexpr std::size_t kPairsPerChunk = 64;

// Bytes of lane tables one walk may hold (shared by its threads): every prefix of a curve of
// the default random forest on housing (2 million nodes, 16 MB a lane) fits.
constexpr std::size_t kTableBytes = std::size_t{256} << 20;

// The pair recursion over the union of the lanes' sets, for the tables prepare_variants put in
// ws (one lane per walked variant, all of one row).
class UnionRecursion {
 public:
  // `tables`: the lanes' pass-1 tables (prepare_variants), only read, so threads share them;
  // `scratch`: this thread's box, regions and per-level P(box).
  UnionRecursion(const Arena& a, const Workspace& tables, Workspace& scratch, std::int32_t count, const double* budget)
      : a_(a), tables_(tables), ws_(scratch), exact_bits_(a.n_features <= 64), stride_(static_cast<std::size_t>(count)),
        row_(tables.variant_row[0]), branch_(tables.variant_branch.data()), cmean_(tables.variant_cmean.data()),
        cdf_(tables.variant_cdf.data()), budget_(budget), box_lo_(scratch.box_lo.data()),
        box_hi_(scratch.box_hi.data()) {
    region_lo_[0] = scratch.region_lo[0].data();
    region_hi_[0] = scratch.region_hi[0].data();
    region_lo_[1] = scratch.region_lo[1].data();
    region_hi_[1] = scratch.region_hi[1].data();
    scratch.variant_p.resize(static_cast<std::size_t>(2 * a.max_depth + 4) * stride_);
    for (std::int32_t v = 0; v < count; ++v) max_budget_ = std::max(max_budget_, budget[v]);
    // Per feature bit (beyond 64 features a bit stands for every feature j with j % 64 equal to
    // it, so the lane sets stay supersets), the lanes perturbing one of its features, then per
    // byte of a feature mask the union over its bits (one lookup per byte).
    std::uint64_t per_bit[64] = {};
    for (std::int32_t j = 0; j < a.n_features; ++j) per_bit[j % 64] |= branch_[j];
    n_bytes_ = (std::min<std::int32_t>(a.n_features, 64) + 7) / 8;
    for (std::int32_t k = 0; k < n_bytes_; ++k) {
      by_byte_[k][0] = 0;
      for (std::int32_t b = 1; b < 256; ++b) {
        by_byte_[k][b] = by_byte_[k][b & (b - 1)] | per_bit[8 * k + lowest_bit(static_cast<std::uint64_t>(b))];
      }
    }
  }

  // Cov(f_t, f_s) of every lane of `live`, added plainly into cov[lane]; the bounds of the
  // states skipped into skipped[lane].
  void covariance(std::int64_t t, std::int64_t s, std::uint64_t live, double* cov, double* skipped) {
    const std::size_t n_trees = static_cast<std::size_t>(a_.n_trees());
    cov_ = cov;
    for (std::uint64_t b = live; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      mu_[0][v] = tables_.variant_mu[v * n_trees + static_cast<std::size_t>(t)];
      mu_[1][v] = tables_.variant_mu[v * n_trees + static_cast<std::size_t>(s)];
      ws_.variant_p[v] = 1.0;
      pair_skipped_[v] = 0.0;
    }
    rec(a_.tree_root[t], a_.tree_root[s], 0, live, 0, 0);
    for (std::uint64_t b = live; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      skipped[v] += pair_skipped_[v];
    }
  }

 private:
  // Lanes that perturb some feature of `mask`.
  std::uint64_t lanes_of(std::uint64_t mask) const {
    std::uint64_t v = 0;
    for (std::int32_t k = 0; k < n_bytes_; ++k) v |= by_byte_[k][(mask >> (8 * k)) & 0xffu];
    return v;
  }

  // The interval mass between two boundaries (walk::mass), from the CDFs of lane v, which
  // perturbs their feature (every such lane has the same CDFs there: they depend on the row).
  double mass_of(std::size_t v, std::int32_t lo, std::int32_t hi) const {
    const Cdf& l = cdf_[static_cast<std::size_t>(lo) * stride_ + v];
    const Cdf& h = cdf_[static_cast<std::size_t>(hi) * stride_ + v];
    const double m = l.lower >= 0.5 ? l.upper - h.upper : h.lower - l.lower;
    return m > 0.0 ? m : 0.0;
  }

  double spread(std::int32_t n, double mu) const {
    return std::max(a_.subtree_max[n] - mu, mu - a_.subtree_min[n]);
  }

  void rec(std::int32_t n, std::int32_t m, std::int32_t level, std::uint64_t live, std::uint64_t cut_a,
           std::uint64_t cut_b) {
    const double* p = ws_.variant_p.data() + static_cast<std::size_t>(level) * stride_;
    // Splits on features no lane perturbs follow x; the box does not change.
    while (a_.feature[n] >= 0 && branch_[a_.feature[n]] == 0) n = fixed_child(a_, n, row_);
    while (a_.feature[m] >= 0 && branch_[a_.feature[m]] == 0) m = fixed_child(a_, m, row_);
    // Per lane, pair_settle's independence test (with the lane's own features): a lane for
    // which the subtrees are independent given the box adds P(box) E[g_t | n] E[g_s | m] and
    // leaves the walk. Both leaves: independent for every lane.
    const std::uint64_t sf_n = a_.feature[n] >= 0 ? a_.subtree_features[n] : 0;
    const std::uint64_t sf_m = a_.feature[m] >= 0 ? a_.subtree_features[m] : 0;
    const std::uint64_t cuts_n = cut_a & sf_n;
    const std::uint64_t cuts_m = cut_b & sf_m;
    const std::uint64_t dependent = lanes_of((sf_n & sf_m) | cuts_n | cuts_m);
    for (std::uint64_t b = live & ~dependent; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      cov_[v] += p[v] * cmean_[static_cast<std::size_t>(n) * stride_ + v] * cmean_[static_cast<std::size_t>(m) * stride_ + v];
    }
    live &= dependent;
    if (live == 0) return;
    // Certified skipping per lane, as in the shared walks: a spread is at least half the leaf
    // range whatever the mean, so one test with the smallest P(box) rules out most states.
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
    // The side to split, for all lanes at once: the side whose own features the other region
    // cuts for some lane, otherwise the larger subtree. Any side is sound for every lane.
    int side;
    if ((lanes_of(cuts_n) & live) != 0) {
      side = 0;
    } else if ((lanes_of(cuts_m) & live) != 0) {
      side = 1;
    } else {
      side = a_.subtree_size[n] >= a_.subtree_size[m] ? 0 : 1;
    }
    split(side, n, m, level, live, cut_a, cut_b);
  }

  // Splits side's node for the lanes of `live`: a lane perturbing the node's feature scales
  // its P(box) by the child's share of the box's mass; a lane fixing it keeps its P(box) in
  // the child x goes to and drops out of the other.
  void split(int side, std::int32_t n, std::int32_t m, std::int32_t level, std::uint64_t live, std::uint64_t cut_a,
             std::uint64_t cut_b) {
    const double* p = ws_.variant_p.data() + static_cast<std::size_t>(level) * stride_;
    double* pc = ws_.variant_p.data() + static_cast<std::size_t>(level + 1) * stride_;
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
    const std::uint64_t scaling = live & branch_[j];
    const std::uint64_t fixing = live & ~branch_[j];
    const std::int32_t x_child = fixing != 0 ? fixed_child(a_, node, row_) : -1;
    // The box's mass on j, from any lane that perturbs j.
    const std::size_t first = scaling != 0 ? static_cast<std::size_t>(lowest_bit(scaling)) : 0;
    const double m_box = scaling != 0 && cut ? mass_of(first, lo, hi) : 0.0;
    auto visit = [&](std::int32_t child, std::int32_t nlo, std::int32_t nhi, std::int32_t nrlo, std::int32_t nrhi) {
      std::uint64_t child_live = 0;
      if (scaling != 0) {
        // P(child's box) = p * (mass(child) / mass(box)), as child_p in the shared walks.
        const double share = !cut ? 1.0 : m_box > 0.0 ? mass_of(first, nlo, nhi) / m_box : 0.0;
        for (std::uint64_t b = scaling; b != 0; b &= b - 1) {
          const auto v = static_cast<std::size_t>(lowest_bit(b));
          const double pv = cut ? p[v] * share : p[v];
          if (!(pv > 0.0)) continue;
          pc[v] = pv;
          child_live |= std::uint64_t{1} << v;
        }
      }
      if (child == x_child) {
        for (std::uint64_t b = fixing; b != 0; b &= b - 1) {
          const auto v = static_cast<std::size_t>(lowest_bit(b));
          pc[v] = p[v];
          child_live |= std::uint64_t{1} << v;
        }
      }
      if (child_live == 0) return;
      box_lo_[j] = nlo;
      box_hi_[j] = nhi;
      region_lo_[side][j] = nrlo;
      region_hi_[side][j] = nrhi;
      std::uint64_t own = side == 0 ? cut_a : cut_b;
      std::uint64_t other = side == 0 ? cut_b : cut_a;
      own = with_bit(own, j, nlo != nrlo || nhi != nrhi, exact_bits_);
      other = with_bit(other, j, nlo != olo || nhi != ohi, exact_bits_);
      if (side == 0) {
        rec(child, m, level + 1, child_live, own, other);
      } else {
        rec(n, child, level + 1, child_live, other, own);
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
  const Workspace& tables_;
  Workspace& ws_;
  bool exact_bits_;  // one bit per feature (at most 64 features); see with_bit
  std::size_t stride_;
  const double* row_;
  const std::uint64_t* branch_;  // per feature: the lanes perturbing it
  const double* cmean_;          // [node][lane]
  const Cdf* cdf_;               // [boundary][lane]
  const double* budget_;
  double* cov_ = nullptr;
  std::int32_t* box_lo_;
  std::int32_t* box_hi_;
  std::int32_t* region_lo_[2];
  std::int32_t* region_hi_[2];
  // As in the shared walks: the floor test only rules states out, with a margin far above the
  // rounding of the two bounds.
  static constexpr double kSlack = 1.0 + 1e-9;
  double max_budget_ = 0.0;
  double mu_[2][kMaxVariants] = {};
  double pair_skipped_[kMaxVariants] = {};
  std::int32_t n_bytes_ = 0;
  std::uint64_t by_byte_[8][256];
};

// One group of lanes (their tables within kTableBytes): pass 1 per lane, the tree pairs in chunks over the
// threads, the chunks' sums added in order, each lane certified.
void walk_group(const Arena& a, const Noise& noise, const Variant* variants, const std::int32_t* lanes,
                std::int32_t n_lanes, int n_threads, double tol, double* out, RunControl* control) {
  const auto nl = static_cast<std::size_t>(n_lanes);
  double bias[kMaxVariants], var[kMaxVariants], budget[kMaxVariants];
  std::int64_t n_pairs[kMaxVariants];
  Workspace plan_ws(a);
  walk::prepare_variants(a, noise, variants, lanes, n_lanes, plan_ws, bias, var, n_pairs);
  for (std::size_t v = 0; v < nl; ++v) budget[v] = walk::skip_budget(tol, bias[v], var[v], n_pairs[v]);
  const std::vector<std::int32_t>& partners = plan_ws.partners;
  const std::vector<std::uint64_t>& pair_live = plan_ws.pair_live;
  const std::size_t n_chunks = (pair_live.size() + kPairsPerChunk - 1) / kPairsPerChunk;
  plan(control, static_cast<std::int64_t>(n_chunks));
  // Per chunk and lane: the compensated sum of its tree pairs' covariances, and what it skipped.
  std::vector<double> sum(n_chunks * nl, 0.0), comp(n_chunks * nl, 0.0), skipped(n_chunks * nl, 0.0);
  const int threads = resolve_threads(n_threads, static_cast<std::int64_t>(n_chunks));
#ifdef PGEXACT_OPENMP
#pragma omp parallel num_threads(threads)
#endif
  {
    // Each thread its own box (scratch); the tables are plan_ws's, only read in here.
    Workspace scratch(a);
    double pair_cov[kMaxVariants] = {};
    UnionRecursion walk(a, plan_ws, scratch, n_lanes, budget);
#ifdef PGEXACT_OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::size_t c = 0; c < n_chunks; ++c) {
      if (stopped(control)) continue;
      double* sc = sum.data() + c * nl;
      double* cc = comp.data() + c * nl;
      double* kc = skipped.data() + c * nl;
      const std::size_t end = std::min(pair_live.size(), (c + 1) * kPairsPerChunk);
      for (std::size_t q = c * kPairsPerChunk; q < end; ++q) {
        // A checkpoint per tree pair: on deep forests 64 of them take seconds (a stopped
        // call's sums are discarded).
        if (stopped(control)) break;
        walk.covariance(partners[2 * q], partners[2 * q + 1], pair_live[q], pair_cov, kc);
        for (std::uint64_t b = pair_live[q]; b != 0; b &= b - 1) {
          const auto v = static_cast<std::size_t>(lowest_bit(b));
          add_compensated(sc[v], cc[v], pair_cov[v]);
          pair_cov[v] = 0.0;
        }
      }
      advance(control, 1);
    }
  }
  (void)threads;
  if (stopped(control)) return;
  for (std::size_t v = 0; v < nl; ++v) {
    double cov = 0.0, cov_comp = 0.0, skip = 0.0;
    for (std::size_t c = 0; c < n_chunks; ++c) {
      add_compensated(cov, cov_comp, sum[c * nl + v]);
      add_compensated(cov, cov_comp, comp[c * nl + v]);
      skip += skipped[c * nl + v];
    }
    cov += cov_comp;
    const double total_var = var[v] + 2.0 * cov;
    const double result = bias[v] * bias[v] + (total_var > 0.0 ? total_var : 0.0);
    out[lanes[v]] = result;
    if (2.0 * skip > tol * result) {
      // The diagonal part overstated the result (strong negative covariances): this lane again,
      // alone and without skipping.
      walk::walk_variants(a, noise, variants, lanes + v, 1, 0.0, plan_ws, out, control);
    }
  }
}

}  // namespace

void walk_union(const Arena& a, const Noise& noise, const Variant* variants, std::int64_t count, int n_threads,
                double tol, double* out, RunControl* control) {
  const std::int32_t d = a.n_features;
  // Lanes per walk: their tables (a conditional mean per node, two CDFs per boundary) within
  // kTableBytes, once per call whatever the thread count.
  const std::size_t per_lane = 8 * static_cast<std::size_t>(a.n_nodes()) + sizeof(Workspace::Cdf) * a.bounds.size();
  const auto group = static_cast<std::int32_t>(
      std::max<std::size_t>(1, std::min<std::size_t>(kMaxVariants, kTableBytes / std::max<std::size_t>(per_lane, 1))));
  std::vector<std::int32_t> lanes;
  Workspace ws(a);
  for (std::int64_t v = 0; v < count; ++v) {
    const Variant& var = variants[v];
    if (walk::count_perturbed(noise, var.mask, var.row, d, 2) <= 1) {
      // 0 or the single-feature sweep, as pg2_variants does.
      ws.begin_row(var.row);
      out[v] = pg2_row(a, noise, var.mask, ws, Pruning::Full, tol);
    } else {
      lanes.push_back(static_cast<std::int32_t>(v));
    }
  }
  for (std::size_t g = 0; g < lanes.size() && !stopped(control); g += static_cast<std::size_t>(group)) {
    const auto n = static_cast<std::int32_t>(std::min(lanes.size() - g, static_cast<std::size_t>(group)));
    walk_group(a, noise, variants, lanes.data() + g, n, n_threads, tol, out, control);
  }
}

}  // namespace pgexact
