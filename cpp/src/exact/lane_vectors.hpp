// Internal to the per-level builds of the leaf-pair passes (pair_passes.hpp): the lane
// vectors and their helpers, included by each file CMake compiles once per x86-64 level
// (pair_passes.cpp, projected_pass.cpp, leaf_bounds.cpp) after PGEXACT_ISA names the level's
// namespace. The helpers live in that namespace, so two levels' builds never share (and never
// swap) inline code.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

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

// Lane vectors: eight lanes of doubles (vd) or 64-bit integers (vu, vi; masks are vi, all ones
// or all zeros per lane), held as parts of the widest vector the build has registers for: one
// of 64 bytes on AVX-512, two of 32 on AVX2, four of 16 on the baseline (GCC/Clang vector
// extensions). 64-byte vector extensions on a build without 64-byte registers kept every
// value in memory, and GCC lowered their comparisons and conditionals a lane at a time with a
// branch per lane: the AVX2 and baseline builds of the passes ran 8-9x slower than the
// AVX-512 one. Every operation is lane by lane, the same IEEE operation in every build, so
// results do not depend on the build picked at run time. A conditional is select(mask, a, b).
#if defined(__AVX512F__)
constexpr int kParts = 1;
#elif defined(__AVX__)
constexpr int kParts = 2;
#else
constexpr int kParts = 4;
#endif
constexpr int kPartLanes = kLanes / kParts;

#define PGEXACT_AI __attribute__((always_inline)) inline

typedef std::int8_t vb __attribute__((vector_size(kLanes)));

#if defined(__AVX512F__)
// One register a vector: the vector extensions themselves (GCC folds a comparison into the
// select that reads it; through a wrapper it kept a mask register per comparison, 1.2x slower).
typedef double vd __attribute__((vector_size(kLanes * sizeof(double))));
typedef std::uint64_t vu __attribute__((vector_size(kLanes * sizeof(double))));
typedef std::int64_t vi __attribute__((vector_size(kLanes * sizeof(double))));

template <typename V>
PGEXACT_AI V select(vi mask, V a, V b) {
  return mask ? a : b;
}
template <typename T>
PGEXACT_AI auto widen(vb b) {
  typedef T Lanes __attribute__((vector_size(kLanes * sizeof(T))));
  return __builtin_convertvector(b, Lanes);
}
PGEXACT_AI vd load_d(const double* p) {
  vd v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
PGEXACT_AI vu load_u(const std::uint64_t* p) {
  vu v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
PGEXACT_AI void store_d(double* p, vd v) { std::memcpy(p, &v, sizeof v); }
// Whether any lane of a comparison result is set: an OR tree of shuffles (three steps rather
// than eight lane extractions).
PGEXACT_AI bool any(vi mask) {
  vu t = (vu)mask;
  t |= PGEXACT_PERMUTE(t, 4, 5, 6, 7, 0, 1, 2, 3);
  t |= PGEXACT_PERMUTE(t, 2, 3, 0, 1, 6, 7, 4, 5);
  t |= PGEXACT_PERMUTE(t, 1, 0, 3, 2, 5, 4, 7, 6);
  return t[0] != 0;
}
#else
template <typename T>
struct LaneVector {
  typedef T Part __attribute__((vector_size(kPartLanes * sizeof(T))));
  // A part in memory at any address of a T (load_lanes and store_d on AVX2).
  typedef T UnalignedPart __attribute__((vector_size(kPartLanes * sizeof(T)), aligned(alignof(T)), may_alias));
  Part part[kParts];

  LaneVector() = default;
  // Copies part by part: GCC 12 copied a vector's 64 bytes as a struct, through 16-byte
  // registers and the stack, into every element of an array (the curve pass's masses D[]).
  // Part by part, the AVX2 build's 64-row curves of XGBRegressor() took 3.34 s instead of 4.00
  // (Clang 14: 2.68 s either way; the AVX-512 build does not use this class).
  PGEXACT_AI LaneVector(const LaneVector& other) {
    for (int i = 0; i < kParts; ++i) part[i] = other.part[i];
  }
  PGEXACT_AI LaneVector& operator=(const LaneVector& other) {
    for (int i = 0; i < kParts; ++i) part[i] = other.part[i];
    return *this;
  }
  // Lane by lane (the {a, b, ...} of the vector extensions).
  PGEXACT_AI LaneVector(T l0, T l1, T l2, T l3, T l4, T l5, T l6, T l7) {
    const T lanes[kLanes] = {l0, l1, l2, l3, l4, l5, l6, l7};
    for (int i = 0; i < kParts; ++i) std::memcpy(&part[i], lanes + i * kPartLanes, sizeof part[i]);
  }
  // A bit cast between lane types (the (vu)x of the vector extensions).
  template <typename U>
  PGEXACT_AI explicit LaneVector(const LaneVector<U>& other) {
    static_assert(sizeof(U) == sizeof(T), "lanes of 64 bits");
    for (int i = 0; i < kParts; ++i) part[i] = (Part)other.part[i];
  }
  PGEXACT_AI T operator[](int l) const { return part[l / kPartLanes][l % kPartLanes]; }
};
typedef LaneVector<double> vd;
typedef LaneVector<std::uint64_t> vu;
typedef LaneVector<std::int64_t> vi;

template <typename S>
using if_scalar = std::enable_if_t<std::is_arithmetic_v<S>, int>;

#define PGEXACT_LANE_BINARY(op)                                                                  \
  template <typename T>                                                                         \
  PGEXACT_AI LaneVector<T> operator op(LaneVector<T> a, const LaneVector<T>& b) {               \
    for (int i = 0; i < kParts; ++i) a.part[i] = a.part[i] op b.part[i];                        \
    return a;                                                                                   \
  }                                                                                             \
  template <typename T, typename S, if_scalar<S> = 0>                                           \
  PGEXACT_AI LaneVector<T> operator op(LaneVector<T> a, S b) {                                  \
    const T s = static_cast<T>(b);                                                              \
    for (int i = 0; i < kParts; ++i) a.part[i] = a.part[i] op s;                                \
    return a;                                                                                   \
  }                                                                                             \
  template <typename T, typename S, if_scalar<S> = 0>                                           \
  PGEXACT_AI LaneVector<T> operator op(S a, LaneVector<T> b) {                                  \
    const T s = static_cast<T>(a);                                                              \
    for (int i = 0; i < kParts; ++i) b.part[i] = s op b.part[i];                                \
    return b;                                                                                   \
  }                                                                                             \
  template <typename T>                                                                         \
  PGEXACT_AI LaneVector<T>& operator op##=(LaneVector<T>& a, const LaneVector<T>& b) {          \
    return a = a op b;                                                                          \
  }                                                                                             \
  template <typename T, typename S, if_scalar<S> = 0>                                           \
  PGEXACT_AI LaneVector<T>& operator op##=(LaneVector<T>& a, S b) {                             \
    return a = a op b;                                                                          \
  }
PGEXACT_LANE_BINARY(+)
PGEXACT_LANE_BINARY(-)
PGEXACT_LANE_BINARY(*)
PGEXACT_LANE_BINARY(&)
PGEXACT_LANE_BINARY(|)
#undef PGEXACT_LANE_BINARY

template <typename T>
PGEXACT_AI LaneVector<T> operator>>(LaneVector<T> a, int n) {
  for (int i = 0; i < kParts; ++i) a.part[i] = a.part[i] >> n;
  return a;
}

template <typename T>
PGEXACT_AI LaneVector<T> operator~(LaneVector<T> a) {
  for (int i = 0; i < kParts; ++i) a.part[i] = ~a.part[i];
  return a;
}

// Comparisons: a vi mask.
#define PGEXACT_LANE_COMPARE(op)                                                    \
  template <typename T>                                                            \
  PGEXACT_AI vi operator op(const LaneVector<T>& a, const LaneVector<T>& b) {      \
    vi r;                                                                          \
    for (int i = 0; i < kParts; ++i) r.part[i] = (vi::Part)(a.part[i] op b.part[i]); \
    return r;                                                                      \
  }                                                                                \
  template <typename T, typename S, if_scalar<S> = 0>                              \
  PGEXACT_AI vi operator op(const LaneVector<T>& a, S b) {                         \
    const T s = static_cast<T>(b);                                                 \
    vi r;                                                                          \
    for (int i = 0; i < kParts; ++i) r.part[i] = (vi::Part)(a.part[i] op s);       \
    return r;                                                                      \
  }                                                                                \
  template <typename T, typename S, if_scalar<S> = 0>                              \
  PGEXACT_AI vi operator op(S a, const LaneVector<T>& b) {                         \
    const T s = static_cast<T>(a);                                                 \
    vi r;                                                                          \
    for (int i = 0; i < kParts; ++i) r.part[i] = (vi::Part)(s op b.part[i]);       \
    return r;                                                                      \
  }
PGEXACT_LANE_COMPARE(<)
PGEXACT_LANE_COMPARE(<=)
PGEXACT_LANE_COMPARE(>)
PGEXACT_LANE_COMPARE(>=)
PGEXACT_LANE_COMPARE(==)
PGEXACT_LANE_COMPARE(!=)
#undef PGEXACT_LANE_COMPARE

// mask ? a : b, lane by lane.
template <typename T>
PGEXACT_AI LaneVector<T> select(const vi& mask, LaneVector<T> a, const LaneVector<T>& b) {
  for (int i = 0; i < kParts; ++i) a.part[i] = mask.part[i] ? a.part[i] : b.part[i];
  return a;
}

// The lanes of a byte vector, widened (the codes, as integers or doubles).
template <typename T>
PGEXACT_AI LaneVector<T> widen(vb b) {
  typedef std::int8_t Bytes __attribute__((vector_size(kPartLanes)));
  LaneVector<T> r;
  for (int i = 0; i < kParts; ++i) {
    Bytes x;
    std::memcpy(&x, reinterpret_cast<const char*>(&b) + i * kPartLanes, sizeof x);
    r.part[i] = __builtin_convertvector(x, typename LaneVector<T>::Part);
  }
  return r;
}
// Loads of a part: on AVX2, through an unaligned, aliasing vector type (as the intrinsics'
// headers do), for a memcpy into the part made GCC 12 store each loaded part on the stack and
// load it again before its use (the curve pass's slot masses; 64-row curves 1.05x faster). The
// baseline build keeps the memcpy: its SSE2 arithmetic cannot take an unaligned operand from
// memory, and the typed loads made its 64-row rankings 1.05-1.07x slower.
template <typename T>
PGEXACT_AI LaneVector<T> load_lanes(const T* p) {
  LaneVector<T> v;
#if defined(__AVX__)
  typedef typename LaneVector<T>::UnalignedPart Unaligned;
  for (int i = 0; i < kParts; ++i) v.part[i] = *reinterpret_cast<const Unaligned*>(p + i * kPartLanes);
#else
  for (int i = 0; i < kParts; ++i) std::memcpy(&v.part[i], p + i * kPartLanes, sizeof v.part[i]);
#endif
  return v;
}
PGEXACT_AI vd load_d(const double* p) { return load_lanes(p); }
PGEXACT_AI vu load_u(const std::uint64_t* p) { return load_lanes(p); }
PGEXACT_AI void store_d(double* p, const vd& v) {
#if defined(__AVX__)
  for (int i = 0; i < kParts; ++i) *reinterpret_cast<vd::UnalignedPart*>(p + i * kPartLanes) = v.part[i];
#else
  for (int i = 0; i < kParts; ++i) std::memcpy(p + i * kPartLanes, &v.part[i], sizeof v.part[i]);
#endif
}
// Whether any lane of a comparison result is set: the parts ORed, then their lanes.
PGEXACT_AI bool any(const vi& mask) {
  vu::Part t = (vu::Part)mask.part[0];
  for (int i = 1; i < kParts; ++i) t |= (vu::Part)mask.part[i];
  std::uint64_t r = 0;
  for (int l = 0; l < kPartLanes; ++l) r |= t[l];
  return r != 0;
}
#endif


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

__attribute__((always_inline)) inline vd vabs(vd x) {
  const vu m = (vu)x & 0x7fffffffffffffffULL;
  return (vd)m;
}

__attribute__((always_inline)) inline void add_compensated(double* sum, double* comp, vd x) {
  const vd s = load_d(sum);
  const vd t = s + x;
  const vd c = load_d(comp) + select(vabs(s) >= vabs(x), (s - t) + x, (x - t) + s);
  store_d(sum, t);
  store_d(comp, c);
}
__attribute__((always_inline)) inline vd mass(const LaneView& lanes, std::int32_t lo, std::int32_t hi) {
  const double* a = lanes.table + static_cast<std::size_t>(lo) * 2 * kLanes;
  const double* b = lanes.table + static_cast<std::size_t>(hi) * 2 * kLanes;
  const vd m = (load_d(b) - load_d(a)) + (load_d(b + kLanes) - load_d(a + kLanes));
  const vd zero = {};
  return select(m > zero, m, zero);
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
