// Internal to the walk kernels (not installed): what the pair recursions over several lanes
// share.
//
// A lane is one (row, set) variant of a walk: the shared walks (shared_walks.cpp) give each its
// own decisions, the union walk (union_walk.cpp) makes the union's. Both read the lanes'
// pass-1 tables (prepare_variants: conditional means per node, boundary CDFs, tree means),
// move one box and two regions through the trees, skip node pairs within each lane's budget,
// and, once a state holds a single lane, run the same single-lane recursion (rec_one). That
// shared part is here, inline, so that each walk's hot loop compiles as before.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "walk_common.hpp"

namespace pgexact {
namespace walk {

inline int lowest_bit(std::uint64_t v) { return __builtin_ctzll(v); }

// The split helpers are written once for the one- and many-lane recursions; inlined, they cost
// what the hand-written copies did (measured: about 15% slower when left to the compiler's
// choice).
#if defined(__GNUC__) || defined(__clang__)
#define PGEXACT_ALWAYS_INLINE __attribute__((always_inline))
#else
#define PGEXACT_ALWAYS_INLINE
#endif

// One thread's moving state of a lane walk: the box and the two regions (bound indices per
// feature, restored on the way back) and P(box) per recursion level and lane. The shared walks
// point it into their Workspace; the union walk's threads own a LaneScratch, a few kilobytes
// where a Workspace holds arrays over every node and boundary (140 MB on ExtraTrees' default).
struct LaneState {
  std::int32_t* box_lo;
  std::int32_t* box_hi;
  std::int32_t* region_lo[2];
  std::int32_t* region_hi[2];
  double* p;  // [level][lane], 2 max_depth + 4 levels
};

inline std::size_t lane_levels(const Arena& a) { return static_cast<std::size_t>(2 * a.max_depth + 4); }

inline LaneState lane_state(Workspace& ws, const Arena& a, std::int32_t lanes) {
  ws.variant_p.resize(lane_levels(a) * static_cast<std::size_t>(lanes));
  return LaneState{ws.box_lo.data(), ws.box_hi.data(), {ws.region_lo[0].data(), ws.region_lo[1].data()},
                   {ws.region_hi[0].data(), ws.region_hi[1].data()}, ws.variant_p.data()};
}

class LaneScratch {
 public:
  LaneScratch(const Arena& a, std::int32_t lanes) : p_(lane_levels(a) * static_cast<std::size_t>(lanes)) {
    whole_line(a, lo_, hi_);  // as Workspace starts
    for (int side = 0; side < 2; ++side) {
      region_lo_[side] = lo_;
      region_hi_[side] = hi_;
    }
  }
  LaneState state() {
    return LaneState{lo_.data(), hi_.data(), {region_lo_[0].data(), region_lo_[1].data()},
                     {region_hi_[0].data(), region_hi_[1].data()}, p_.data()};
  }

 private:
  std::vector<std::int32_t> lo_, hi_, region_lo_[2], region_hi_[2];
  std::vector<double> p_;
};

class LaneWalk {
 protected:
  // Where the lanes' boundary CDFs are: per lane (variant_cdf, lanes of several rows), or the
  // one row's (cdf: every lane of the union walk; a copy per lane doubled its tables).
  enum class Cdfs { per_lane, row };

  // `tables`: the lanes' pass-1 tables (prepare_variants), only read, so threads may share
  // them; `state`: this walk's box, regions and per-level P(box) (LaneState).
  // cov[lane] and skipped[lane] receive each lane's terms and skipped bounds.
  LaneWalk(const Arena& a, const Workspace& tables, const LaneState& state, std::int32_t count, const double* budget,
           double* cov, double* skipped, Cdfs cdfs)
      : a_(a), tables_(tables), p_levels_(state.p), exact_bits_(a.n_features <= 64),
        stride_(static_cast<std::size_t>(count)), rows_(tables.variant_row.data()),
        branch_(tables.variant_branch.data()), features_(tables.variant_features.data()),
        cmean_(tables.variant_cmean.data()), n_nodes_(static_cast<std::size_t>(a.n_nodes())),
        cdf_(cdfs == Cdfs::row ? tables.cdf.data() : tables.variant_cdf.data()),
        cdf_stride_(cdfs == Cdfs::row ? 1 : stride_), cdf_lane_(cdfs == Cdfs::row ? 0 : ~std::size_t{0}), budget_(budget), cov_(cov),
        skipped_(skipped), box_lo_(state.box_lo), box_hi_(state.box_hi) {
    region_lo_[0] = state.region_lo[0];
    region_hi_[0] = state.region_hi[0];
    region_lo_[1] = state.region_lo[1];
    region_hi_[1] = state.region_hi[1];
    for (std::int32_t v = 0; v < count; ++v) max_budget_ = std::max(max_budget_, budget[v]);
    // Per feature bit (beyond 64 features a bit stands for every feature j with j % 64 equal
    // to it, so the sets stay supersets), the lanes perturbing one of its features; then
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

  // Before and after the recursion of tree pair (t, s) for the lanes of `live`: their tree
  // means, P(box) = 1 at level 0, and their skipped bounds.
  void begin_pair(std::int64_t t, std::int64_t s, std::uint64_t live) {
    const std::size_t n_trees = static_cast<std::size_t>(a_.n_trees());
    for (std::uint64_t b = live; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      mu_[0][v] = tables_.variant_mu[v * n_trees + static_cast<std::size_t>(t)];
      mu_[1][v] = tables_.variant_mu[v * n_trees + static_cast<std::size_t>(s)];
      p_levels_[v] = 1.0;
      pair_skipped_[v] = 0.0;
    }
  }
  void end_pair(std::uint64_t live) {
    for (std::uint64_t b = live; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      skipped_[v] += pair_skipped_[v];
    }
  }

  // Lanes that perturb some feature of `mask`. A byte of the feature set at a time (one table
  // lookup each) rather than a bit at a time: the union is the same.
  std::uint64_t variants_of(std::uint64_t mask) const {
    std::uint64_t v = 0;
    for (std::int32_t k = 0; k < n_bytes_; ++k) v |= by_byte_[k][(mask >> (8 * k)) & 0xffu];
    return v;
  }

  // mass() with lane v's boundary CDFs.
  double mass_of(std::size_t v, std::int32_t lo, std::int32_t hi) const {
    const Cdf& l = cdf_[static_cast<std::size_t>(lo) * cdf_stride_ + (v & cdf_lane_)];
    const Cdf& h = cdf_[static_cast<std::size_t>(hi) * cdf_stride_ + (v & cdf_lane_)];
    const double m = l.lower >= 0.5 ? l.upper - h.upper : h.lower - l.lower;
    return m > 0.0 ? m : 0.0;
  }

  // Lane v's E[g | node n of the pair's tree `side`] - mu (its pass-1 table): at a leaf its
  // value less the tree mean, the same subtraction pass 1 made (tree_moments), so the same
  // bits without a load from the table (a load the union walk at d = 100 waited on for 13% of
  // its time, the table a row of every lane per node then).
  double cmean(int side, std::int32_t n, std::size_t v) const {
    return a_.feature[n] < 0 ? a_.value[n] - mu_[side][v] : cmean_[v * n_nodes_ + static_cast<std::size_t>(n)];
  }

  // Follows lane v's row from n through the splits v does not perturb.
  std::int32_t settle(std::int32_t n, std::size_t v) const {
    const std::uint64_t bit = std::uint64_t{1} << v;
    while (a_.feature[n] >= 0 && (branch_[a_.feature[n]] & bit) == 0) n = fixed_child(a_, n, rows_[v]);
    return n;
  }

  double spread(std::int32_t n, double mu) const {
    return std::max(a_.subtree_max[n] - mu, mu - a_.subtree_min[n]);
  }

  // The lanes of `live` whose subtrees n and m are independent given the box add
  // P(box) E[g_t | n] E[g_s | m]; those that may skip the state within their budget add its
  // bound to what they skipped. Returns the lanes left to split. (pair_settle's independence
  // test per lane: a lane depends on the subtrees if it perturbs a feature both use or one the
  // other region cuts.)
  //
  // p_floor(lanes) gives a lower bound of P(box) over `lanes` (the lanes left to split): the
  // floor test below only gates the per-lane tests, so any lower bound decides the same, and a
  // tighter one runs fewer of them.
  template <typename PFloor>
  std::uint64_t settle_state(std::int32_t n, std::int32_t m, const double* p, std::uint64_t live,
                             std::uint64_t sf_n, std::uint64_t sf_m, std::uint64_t cuts_n, std::uint64_t cuts_m,
                             PFloor&& p_floor) {
    const std::uint64_t dependent = variants_of((sf_n & sf_m) | cuts_n | cuts_m);
    for (std::uint64_t b = live & ~dependent; b != 0; b &= b - 1) {
      const auto v = static_cast<std::size_t>(lowest_bit(b));
      cov_[v] += p[v] * cmean(0, n, v) * cmean(1, m, v);
    }
    live &= dependent;
    if (live == 0) return 0;
    // Certified skipping, with each lane's own budget. A spread is at least half the leaf
    // range whatever the mean, so one test with the smallest P(box) and the largest budget
    // rules out most states at once.
    const double p_min = p_floor(live);
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
    return live;
  }

  // The smallest P(box) of `lanes`.
  static double min_p(const double* p, std::uint64_t lanes) {
    double p_min = 1.0;
    for (std::uint64_t b = lanes; b != 0; b &= b - 1) p_min = std::min(p_min, p[lowest_bit(b)]);
    return p_min;
  }

  // A state of a single lane walks on as that lane's own (rec_one: any state of a shared walk
  // is one of its own); returns whether `live` held one lane.
  PGEXACT_ALWAYS_INLINE bool rec_if_one_lane(std::int32_t n, std::int32_t m, const double* p, std::uint64_t live,
                                             std::uint64_t cut_a, std::uint64_t cut_b) {
    if ((live & (live - 1)) != 0) return false;
    const auto v = static_cast<std::size_t>(lowest_bit(live));
    rec_one(n, m, v, p[v], cut_a, cut_b);
    return true;
  }

  // The recursion of a state holding the single lane v, with P(box) = p: the shared walks'
  // rec() for one variant, the same operations in the same order (so the same bits), without
  // the per-lane sets and tables.
  void rec_one(std::int32_t n, std::int32_t m, std::size_t v, double p, std::uint64_t cut_a, std::uint64_t cut_b) {
    n = settle(n, v);
    m = settle(m, v);
    const std::uint64_t features = features_[v];
    const std::uint64_t sf_n = a_.feature[n] >= 0 ? a_.subtree_features[n] : 0;
    const std::uint64_t sf_m = a_.feature[m] >= 0 ? a_.subtree_features[m] : 0;
    const std::uint64_t cuts_n = cut_a & sf_n;
    const std::uint64_t cuts_m = cut_b & sf_m;
    if ((((sf_n & sf_m) | cuts_n | cuts_m) & features) == 0) {
      cov_[v] += p * cmean(0, n, v) * cmean(1, m, v);
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

  // The box on the split feature before and after a child narrows it.
  struct ChildBox {
    bool cut;  // the split divides the box
    std::int32_t lo, hi, child_lo, child_hi;
  };

  // P(child's box) for lane v, from P(box) = p.
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
  const Workspace& tables_;
  double* p_levels_;  // LaneState::p
  bool exact_bits_;  // one bit per feature (at most 64 features); see with_bit
  std::size_t stride_;
  const double* const* rows_;      // per lane: its row
  const std::uint64_t* branch_;    // per feature: the lanes perturbing it
  const std::uint64_t* features_;  // per lane: the features it perturbs
  const double* cmean_;            // [lane][node]: a lane's rows of a tree pair stay in cache
  std::size_t n_nodes_;            // a lane's row of cmean_
  const Cdf* cdf_;                 // [boundary][lane], or [boundary] for Cdfs::row
  std::size_t cdf_stride_;         // lanes per boundary in cdf_
  std::size_t cdf_lane_;           // lane v's column: v & cdf_lane_
  const double* budget_;
  double* cov_;
  double* skipped_;
  std::int32_t* box_lo_;
  std::int32_t* box_hi_;
  std::int32_t* region_lo_[2];
  std::int32_t* region_hi_[2];
  // The floor test only rules states out: it may not decide differently for a lane alone and
  // in company, so it keeps a margin far above the rounding of the two bounds.
  static constexpr double kSlack = 1.0 + 1e-9;
  double max_budget_ = 0.0;
  double mu_[2][kMaxVariants] = {};
  double pair_skipped_[kMaxVariants] = {};  // each pair has its own budget, as in pg2_row
  std::int32_t n_bytes_ = 0;
  std::uint64_t by_byte_[8][256];
};

}  // namespace walk
}  // namespace pgexact
