// Internal to the exact kernels (not installed): some rows of a call, gathered and scattered.
//
// A row's value never depends on the other rows of its call, so the drivers can hand a subset
// of the rows to another kernel (one perturbed feature: the sweep) or to a second run (rows
// whose pruned results were not certified) and put the values back where the rows were.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace pgexact {

// Rows `which` of a row-major table of `width` columns, packed in that order; with
// per_row = false the table is one row that every row shares (a single mask or ranking).
template <typename T>
std::vector<T> gather_rows(const T* table, std::int64_t width, const std::vector<std::int64_t>& which,
                           bool per_row = true) {
  std::vector<T> packed(which.size() * static_cast<std::size_t>(width));
  for (std::size_t k = 0; k < which.size(); ++k) {
    const T* row = table + (per_row ? which[k] * width : 0);
    std::copy(row, row + width, packed.begin() + static_cast<std::ptrdiff_t>(k) * width);
  }
  return packed;
}

// Puts packed rows (`width` values each) back at rows `which` of `out`.
template <typename T>
void scatter_rows(const std::vector<T>& packed, std::int64_t width, const std::vector<std::int64_t>& which, T* out) {
  for (std::size_t k = 0; k < which.size(); ++k) {
    std::copy(packed.begin() + static_cast<std::ptrdiff_t>(k) * width,
              packed.begin() + static_cast<std::ptrdiff_t>(k + 1) * width, out + which[k] * width);
  }
}

}  // namespace pgexact
