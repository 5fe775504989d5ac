// Internal to the per-level builds of the leaf-pair passes (pair_passes.hpp): the lane
// vectors and their helpers, included by each file CMake compiles once per x86-64 level
// (pair_passes.cpp, projected_pass.cpp) after PGEXACT_ISA names the level's namespace. The
// helpers live in that namespace, so two levels' builds never share (and never swap) inline
// code.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "pgexact/exact/pair_passes.hpp"

#ifndef PGEXACT_ISA
#error "define PGEXACT_ISA (the level's namespace) before including lane_vectors.hpp"
#endif

// The lane helpers take and return 64-byte vectors; they are always inlined, so the ABI note
// GCC and Clang give for builds without AVX-512 does not apply.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

// A lane permutation by constant indices: GCC and Clang name the builtin differently.
#if defined(__clang__)
#define PGEXACT_PERMUTE(v, ...) __builtin_shufflevector(v, v, __VA_ARGS__)
#else
#define PGEXACT_PERMUTE(v, ...) __builtin_shuffle(v, (decltype(v)){__VA_ARGS__})
#endif

namespace pgexact::PGEXACT_ISA {
namespace {

// Lane vectors as GCC/Clang vector extensions: the compiler maps them onto whatever SIMD the
// function is built for (one build per x86-64 level), and every clone does the same IEEE
// operations, so results do not depend on the instruction set picked at run time.
typedef double vd __attribute__((vector_size(kLanes * sizeof(double))));
typedef std::uint64_t vu __attribute__((vector_size(kLanes * sizeof(double))));
typedef std::int64_t vi __attribute__((vector_size(kLanes * sizeof(double))));
typedef std::int8_t vb __attribute__((vector_size(kLanes)));

__attribute__((always_inline)) inline vd load_d(const double* p) {
  vd v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((always_inline)) inline vu load_u(const std::uint64_t* p) {
  vu v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((always_inline)) inline vb load_b(const std::int8_t* p) {
  vb v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// The smallest lane of a byte vector.
__attribute__((always_inline)) inline std::int8_t min_lane(vb a) {
  vb b = PGEXACT_PERMUTE(a, 4, 5, 6, 7, 0, 1, 2, 3);
  a = a < b ? a : b;
  b = PGEXACT_PERMUTE(a, 2, 3, 0, 1, 6, 7, 4, 5);
  a = a < b ? a : b;
  b = PGEXACT_PERMUTE(a, 1, 0, 3, 2, 5, 4, 7, 6);
  a = a < b ? a : b;
  return a[0];
}
__attribute__((always_inline)) inline void store_d(double* p, vd v) { std::memcpy(p, &v, sizeof v); }
__attribute__((always_inline)) inline vd vabs(vd x) {
  const vu m = (vu)x & 0x7fffffffffffffffULL;
  return (vd)m;
}
// Whether any lane of a comparison result is set: an OR tree of shuffles (three steps rather
// than eight lane extractions).
__attribute__((always_inline)) inline bool any(vi mask) {
  vu t = (vu)mask;
  t |= PGEXACT_PERMUTE(t, 4, 5, 6, 7, 0, 1, 2, 3);
  t |= PGEXACT_PERMUTE(t, 2, 3, 0, 1, 6, 7, 4, 5);
  t |= PGEXACT_PERMUTE(t, 1, 0, 3, 2, 5, 4, 7, 6);
  return t[0] != 0;
}
__attribute__((always_inline)) inline void add_compensated(double* sum, double* comp, vd x) {
  const vd s = load_d(sum);
  const vd t = s + x;
  const vd c = load_d(comp) + ((vabs(s) >= vabs(x)) ? (s - t) + x : (x - t) + s);
  store_d(sum, t);
  store_d(comp, c);
}
__attribute__((always_inline)) inline vd mass(const LaneView& lanes, std::int32_t lo, std::int32_t hi) {
  const double* a = lanes.table + static_cast<std::size_t>(lo) * 2 * kLanes;
  const double* b = lanes.table + static_cast<std::size_t>(hi) * 2 * kLanes;
  const vd m = (load_d(b) - load_d(a)) + (load_d(b + kLanes) - load_d(a + kLanes));
  const vd zero = {};
  return m > zero ? m : zero;
}
// Whether every lane of a code vector is kNeverAlive: one compare of its eight bytes (the test
// that skips a dead pair; the shuffles of a reduction across lanes held about a tenth of a
// greedy pass's samples in perf).
__attribute__((always_inline)) inline bool all_never_alive(vb code) {
  static_assert(kLanes == 8 && kNeverAlive == 0x7f, "eight bytes of 0x7f");
  std::uint64_t bytes;
  std::memcpy(&bytes, &code, sizeof bytes);
  return bytes == 0x7f7f7f7f7f7f7f7fULL;
}

// Lane 0 of mass(), with scalar loads: the same operations on the same operands (the one-row
// passes, whose lanes are prefixes, read lane 0's masses).
__attribute__((always_inline)) inline double mass_lane0(const LaneView& lanes, std::int32_t lo, std::int32_t hi) {
  const double* a = lanes.table + static_cast<std::size_t>(lo) * 2 * kLanes;
  const double* b = lanes.table + static_cast<std::size_t>(hi) * 2 * kLanes;
  const double m = (b[0] - a[0]) + (b[kLanes] - a[kLanes]);
  return m > 0.0 ? m : 0.0;
}
// Lane 0 of add_compensated, with scalar operands (compensated_sum.hpp has the same sum, but
// these builds share no inline code with the rest).
__attribute__((always_inline)) inline void add_compensated_lane0(double* sum, double* comp, double x) {
  const double s = *sum;
  const double t = s + x;
  *comp += (std::fabs(s) >= std::fabs(x)) ? (s - t) + x : (x - t) + s;
  *sum = t;
}

// Lane mask of the lanes whose set holds feature j.
__attribute__((always_inline)) inline vi holds(vu S, std::int32_t j) {
  const vu zero = {};
  return ((S >> j) & 1u) != zero;
}

// One past the highest feature in any lane of `sets`.
__attribute__((always_inline)) inline int top_feature(const std::uint64_t* sets) {
  const vu S = load_u(sets);
  std::uint64_t any_set = 0;
  for (int l = 0; l < kLanes; ++l) any_set |= S[l];
  return any_set == 0 ? 0 : 64 - __builtin_clzll(any_set);
}

}  // namespace
}  // namespace pgexact::PGEXACT_ISA
