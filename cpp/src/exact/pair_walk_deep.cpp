// The node-pair recursion with an explicit stack, for trees deeper than the call stack allows.
#include "walk_common.hpp"


namespace pgexact {
namespace walk {


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

}  // namespace walk
}  // namespace pgexact
