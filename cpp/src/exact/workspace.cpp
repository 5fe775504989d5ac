// The Workspace of the walk kernels and the per-row boundary CDFs they read.
#include "walk_common.hpp"

#include <algorithm>

namespace pgexact {

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
  home.assign(t, 0.0);
  moment.assign(arena.bounds.size(), 0.0);
  mu.assign(t, 0.0);
  tree_mask.assign(t, 0);
  active.reserve(t);
  partners.reserve(t);
  walk::whole_line(arena, box_lo, box_hi);
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
    home_stamp = 0;
    row_epoch = 1;
  }
}

void Workspace::begin_set() {
  if (++set_epoch == 0) {
    std::fill(reach.begin(), reach.end(), 0);
    set_epoch = 1;
  }
}

namespace walk {

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

// Marks the effectively perturbed features (requested and not NaN) and fills their boundary
// CDFs. Returns how many there are; *last is the highest one.
std::int32_t set_perturbed(const Arena& a, const Noise& noise, const std::uint8_t* perturbed, Workspace& ws,
                           std::int32_t* last) {
  const double* x = ws.row;
  std::int32_t count = 0;
  ws.perturbed_mask = 0;
  for (std::int32_t j = 0; j < a.n_features; ++j) {
    ws.perturbed[j] = perturbs_in_row(noise, perturbed, x, j) ? 1 : 0;
    if (ws.perturbed[j]) {
      ++count;
      *last = j;
      ws.perturbed_mask |= feature_bit(j);
      fill_feature_cdf(a, noise, ws, j);
    }
  }
  return count;
}

}  // namespace walk
}  // namespace pgexact
