#include "row_order.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "env_switch.hpp"
#include "pgexact/exact/pair_passes.hpp"  // kLanes

namespace pgexact {
namespace pairs {

namespace {

// Rows are split in halves along their widest feature down to chunks of at most this many, and
// grouped by nearest neighbours within a chunk (quadratic in its rows: about a microsecond a
// row on 8 features). Chunks of 512 ran 1,024 rows of XGBRegressor() no faster (24.7 against
// 24.8 s).
constexpr std::int64_t kChunkRows = 128;
// A chunk's widest feature is found on at most this many of its rows.
constexpr std::int64_t kSpreadRows = 1024;
// Where a coordinate is NaN (never perturbed: the row takes the missing-value branch) or beyond
// this many noise units: here, so that every distance is finite and such rows go together.
constexpr double kFar = 1e6;

// The rows in units of their features' noise: x_j / sigma_j where the noise adds to x_j, and in
// units of the smallest sigma where it does not (a fixed feature, or one perturbed by category:
// a row on another value takes other branches).
std::vector<double> noise_units(const Noise& noise, const double* X, std::int64_t n_rows, std::int64_t d) {
  double smallest = std::numeric_limits<double>::infinity();
  auto sigma = [&](std::int64_t j) {  // 0 where the noise does not add to x_j
    return noise.additive(j) && static_cast<std::size_t>(j) < noise.sigma.size() ? noise.sigma[j] : 0.0;
  };
  for (std::int64_t j = 0; j < d; ++j) {
    if (sigma(j) > 0.0) smallest = std::min(smallest, sigma(j));
  }
  if (!std::isfinite(smallest)) smallest = 1.0;
  std::vector<double> scale(static_cast<std::size_t>(d));
  for (std::int64_t j = 0; j < d; ++j) {
    scale[j] = 1.0 / (sigma(j) > 0.0 ? sigma(j) : smallest);
  }
  std::vector<double> z(static_cast<std::size_t>(n_rows * d));
  for (std::int64_t i = 0; i < n_rows; ++i) {
    for (std::int64_t j = 0; j < d; ++j) {
      const double v = X[i * d + j] * scale[j];
      z[i * d + j] = std::isnan(v) ? kFar : std::max(-kFar, std::min(kFar, v));
    }
  }
  return z;
}

double squared_distance(const double* a, const double* b, std::int64_t d) {
  double s = 0.0;
  for (std::int64_t j = 0; j < d; ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
  return s;
}

// Appends rows[0 .. n) to `order` in groups of kLanes near rows: each group starts from the row
// farthest from the centre of those left (the outliers first, while they still have near rows
// to take) and takes its kLanes - 1 nearest. Ties go to the lower row.
void near_groups(const std::vector<double>& z, std::int64_t d, const std::int64_t* rows, std::int64_t n,
                 std::vector<std::int64_t>& order) {
  std::vector<std::int64_t> left(rows, rows + n);
  std::vector<double> centre(static_cast<std::size_t>(d)), distance(static_cast<std::size_t>(n));
  const double* Z = z.data();
  while (!left.empty()) {
    const std::size_t m = left.size();
    if (m <= static_cast<std::size_t>(kLanes)) {
      order.insert(order.end(), left.begin(), left.end());
      return;
    }
    std::fill(centre.begin(), centre.end(), 0.0);
    for (const std::int64_t i : left) {
      for (std::int64_t j = 0; j < d; ++j) centre[j] += Z[i * d + j];
    }
    for (std::int64_t j = 0; j < d; ++j) centre[j] /= static_cast<double>(m);
    std::int64_t start = left[0];
    double farthest = -1.0;
    for (const std::int64_t i : left) {
      const double s = squared_distance(Z + i * d, centre.data(), d);
      if (s > farthest || (s == farthest && i < start)) {
        farthest = s;
        start = i;
      }
    }
    for (std::size_t k = 0; k < m; ++k) distance[k] = squared_distance(Z + left[k] * d, Z + start * d, d);
    std::vector<std::size_t> position(m);
    for (std::size_t k = 0; k < m; ++k) position[k] = k;
    auto nearer = [&](std::size_t p, std::size_t q) {
      return distance[p] != distance[q] ? distance[p] < distance[q] : left[p] < left[q];
    };
    std::partial_sort(position.begin(), position.begin() + kLanes, position.end(), nearer);
    std::vector<bool> taken(m, false);
    for (int k = 0; k < kLanes; ++k) {
      order.push_back(left[position[k]]);
      taken[position[k]] = true;
    }
    std::size_t kept = 0;
    for (std::size_t k = 0; k < m; ++k) {
      if (!taken[k]) left[kept++] = left[k];
    }
    left.resize(kept);
  }
}

// Appends rows[0 .. n) to `order`: halves along the feature of widest spread (the first half a
// whole number of vectors) until a chunk is small enough to group by neighbours.
void split(const std::vector<double>& z, std::int64_t d, std::int64_t* rows, std::int64_t n,
           std::vector<std::int64_t>& order, const RunControl* control) {
  if (stopped(control)) return;
  if (n <= kChunkRows) {
    near_groups(z, d, rows, n, order);
    return;
  }
  const double* Z = z.data();
  std::int64_t widest = 0;
  double spread = -1.0;
  // The spread of at most kSpreadRows of the rows, evenly taken (a feature's spread needs no
  // more, and every row's coordinates at every level were scattered reads over all of z).
  const std::int64_t stride = std::max<std::int64_t>(1, n / kSpreadRows);
  for (std::int64_t j = 0; j < d; ++j) {
    double lo = Z[rows[0] * d + j], hi = lo;
    for (std::int64_t k = stride; k < n; k += stride) {
      lo = std::min(lo, Z[rows[k] * d + j]);
      hi = std::max(hi, Z[rows[k] * d + j]);
    }
    if (hi - lo > spread) {
      spread = hi - lo;
      widest = j;
    }
  }
  // The rows below the split before it (a partition, not a sort: a sort at every level cost
  // about 1 us a row on a million rows, more than the kernel on a model of a few trees).
  const std::int64_t half = (n / 2 + kLanes - 1) / kLanes * kLanes;
  std::nth_element(rows, rows + half, rows + n, [&](std::int64_t p, std::int64_t q) {
    const double a = Z[p * d + widest], b = Z[q * d + widest];
    return a != b ? a < b : p < q;
  });
  split(z, d, rows, half, order, control);
  split(z, d, rows + half, n - half, order, control);
}

}  // namespace

std::vector<std::int64_t> lane_order(const Noise& noise, const double* X, std::int64_t n_rows, std::int64_t d,
                                     const RunControl* control) {
  if (n_rows <= kLanes || d <= 0 || env_switch("PGEXACT_ROW_ORDER") == "0") return {};
  const std::vector<double> z = noise_units(noise, X, n_rows, d);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n_rows));
  for (std::int64_t i = 0; i < n_rows; ++i) rows[i] = i;
  std::vector<std::int64_t> order;
  order.reserve(rows.size());
  split(z, d, rows.data(), n_rows, order, control);
  return order;
}

}  // namespace pairs
}  // namespace pgexact
