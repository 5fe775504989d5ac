// Internal to the drivers (not installed): the variants of a call that perturb the same
// features of the model.
//
// A feature no tree splits on moves no prediction, so perturbing it changes no PG²: two
// variants of one row whose sets agree on the features the trees split on (among those the row
// and the noise let move: perturbs_in_row) have the same value. A curve over a wide table whose
// model uses a part of its columns has runs of equal prefixes; a greedy step has a candidate
// S + {j} for every column the model never uses, each equal to S. The few-row drivers walk each
// distinct set once (the first variant of its kind) and copy its value to the others: a
// variant's value does not depend on which variants share its walk (pg2_variants), and in the
// union walk equal lanes walk alike, so the values walked are the same, and equal sets get the
// same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "pgexact/exact/kernels.hpp"

namespace pgexact {

struct DistinctSets {
  std::vector<Variant> variants;         // the first variant of each distinct set, in call order
  std::vector<std::int64_t> of_variant;  // per variant of the call: the index of its set here

  std::int64_t size() const { return static_cast<std::int64_t>(variants.size()); }
  // out[v] = values[of_variant[v]] for every variant v of the call.
  void copy_values(const double* values, double* out) const;
};

// The distinct sets of `count` variants.
DistinctSets distinct_sets(const Arena& arena, const Noise& noise, const Variant* variants, std::int64_t count);

}  // namespace pgexact
