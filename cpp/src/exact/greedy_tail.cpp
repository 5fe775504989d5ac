// The last steps of a greedy ranking in one walk (greedy_tail.hpp says why).
#include "greedy_tail.hpp"

#include <algorithm>

#include "distinct_sets.hpp"
#include "union_walk.hpp"

namespace pgexact {

namespace {
// Measured best on every model tried (greedy_tail.hpp): 15 lanes.
constexpr std::int64_t kTailCandidates = 4;
}  // namespace

std::int64_t greedy_tail_candidates(const Arena& a) {
  std::int64_t r = kTailCandidates;
  const std::int64_t lanes = union_walk_lanes(a);
  while (r > 1 && (std::int64_t{1} << r) - 1 > lanes) --r;
  return r;
}

std::int64_t GreedyTail::planned_units(const Arena& a, std::int64_t left, std::int64_t step) {
  // With S empty (step 0) the single candidates are swept sets, a unit each.
  const std::int64_t swept = step == 0 ? left : 0;
  return union_walk_units(a, swept, (std::int64_t{1} << left) - 1 - swept);
}

GreedyTail::GreedyTail(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows,
                       const std::uint8_t* chosen, std::int64_t step, std::int64_t left, int n_threads, double tol,
                       RunControl* control, std::int64_t weight)
    : d_(a.n_features), n_rows_(n_rows), left_(left) {
  const std::int64_t n_subsets = std::int64_t{1} << left;
  remaining_.assign(static_cast<std::size_t>(n_rows * left), 0);
  value_.assign(static_cast<std::size_t>(n_rows * n_subsets), 0.0);
  const auto du = static_cast<std::size_t>(d_);
  std::vector<std::uint8_t> masks(static_cast<std::size_t>(n_subsets - 1) * du);
  std::vector<Variant> variants(static_cast<std::size_t>(n_subsets - 1));
  const std::int64_t expected = weight * planned_units(a, left, step);
  for (std::int64_t i = 0; i < n_rows && !stopped(control); ++i) {
    const std::uint8_t* ch = chosen + static_cast<std::size_t>(i) * du;
    std::int64_t* rem = remaining_.data() + i * left;
    for (std::int64_t j = 0, c = 0; j < d_; ++j) {
      if (!ch[j] && noise_moves(a, noise, j)) rem[c++] = j;
    }
    // Subset A (bit c: the c-th remaining candidate) is variant A - 1.
    for (std::int64_t subset = 1; subset < n_subsets; ++subset) {
      std::uint8_t* mask = masks.data() + static_cast<std::size_t>(subset - 1) * du;
      std::copy(ch, ch + d_, mask);
      for (std::int64_t c = 0; c < left; ++c) {
        if ((subset >> c) & 1) mask[rem[c]] = 1;
      }
      variants[static_cast<std::size_t>(subset - 1)] = Variant{X + i * d_, mask};
    }
    walk_union_within(a, noise, distinct_sets(a, noise, variants.data(), n_subsets - 1), n_threads, tol,
                      value_.data() + i * n_subsets + 1, control, expected, weight);
  }
}

void GreedyTail::step_values(const std::uint8_t* chosen, std::int64_t per_row, double* values) const {
  const std::int64_t n_subsets = std::int64_t{1} << left_;
  for (std::int64_t i = 0; i < n_rows_; ++i) {
    const std::uint8_t* ch = chosen + static_cast<std::size_t>(i * d_);
    const std::int64_t* rem = remaining_.data() + i * left_;
    std::int64_t taken = 0;  // the subset of the remaining candidates chosen since the walk
    for (std::int64_t c = 0; c < left_; ++c) {
      if (ch[rem[c]]) taken |= std::int64_t{1} << c;
    }
    // The candidates not taken, in feature order (rem is): S_i + {j} is taken + {c}.
    for (std::int64_t c = 0, k = 0; c < left_; ++c) {
      if ((taken >> c) & 1) continue;
      values[i * per_row + k++] = value_[static_cast<std::size_t>(i * n_subsets + (taken | (std::int64_t{1} << c)))];
    }
  }
}

}  // namespace pgexact
