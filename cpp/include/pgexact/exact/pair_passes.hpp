// The inner loops of the leaf-pair kernel (pair_kernel.hpp): one pass over the intersecting
// leaf pairs of a tree pair, for one vector of kLanes rows.
//
// They are built once per x86-64 level (baseline, v3 = AVX2, v4 = AVX-512) and picked at run
// time, so a package built from source runs anywhere and still uses the wide registers where
// they exist. Every build does the same IEEE operations in the same order (no contraction into
// fused multiply-adds, no reassociation), so results do not depend on the build picked. The
// interface is plain pointers: the per-level builds share no inline code with the rest.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pgexact {

// Rows per SIMD vector (8 doubles: one AVX-512 register, two AVX2 ones).
inline constexpr int kLanes = 8;

// One intersecting leaf pair (leaf_pairs.hpp): global leaf indices, and the number of features
// on which the intersection box is narrower than the real line (`count` entries of the
// pair's list). The first `n_slots` entries are intervals of one of the two leaves (the other
// does not cut them): their mass is precomputed per leaf, and the entry names the slot; the
// rest are proper intersections [lo, hi) computed from the boundary tables. Each group is in
// increasing feature order, slots first: the fixed order of the pair's product. The entries
// of consecutive pairs follow each other, so a pass finds them by counting, and a list stays
// small enough (under 30 bytes a pair on depth-6 trees) to be kept across passes.
struct LeafPair {
  std::int32_t u, v;
  std::uint8_t count, n_slots;
};

// A slot entry's byte: the slot's rank among its leaf's slots, plus kSlotOfV when the leaf is
// v (else u).
inline constexpr std::uint8_t kSlotOfV = 0x80;

// The pairs of one leaf u of the first tree are consecutive in a list: a run, with where its
// pairs and entries end (counted from the list's start), so a pass can step over a whole run
// when u excludes every lane's x'.
struct LeafRun {
  std::int32_t u;
  std::uint32_t pair_end, feature_end, slot_end, cut_end;
};

// A list of pairs and their entries, run by run: per entry its feature; per slot entry its
// byte; per intersection entry lo and hi, side by side. slot_first: per leaf, its first slot.
struct PairView {
  const LeafRun* runs;
  std::size_t n_runs;
  const LeafPair* pairs;
  std::size_t n_pairs;
  const std::uint8_t* feature;
  const std::uint8_t* slot;
  const std::int32_t* cut;
  const std::int32_t* slot_first;
  // Per intersection entry on a feature perturbed by category (cut pair (-1 - k, 0)), at 2 k:
  // its probability when the row's x_j is in both leaves' sets, and when it is not.
  const double* category;
};

// A ranking position no prefix reaches (positions are below 64), and the code of a leaf that
// excludes the row's x' whatever the greedy step adds.
inline constexpr std::int8_t kNeverAlive = 127;
// The code of a leaf that admits the row's x' in a greedy step's set S.
inline constexpr std::int8_t kNoneMissing = -1;

// One vector of rows: boundary tables [boundary][T | I][lane], leaf weights [leaf][lane], leaf
// interval masses [slot][lane], and per leaf and lane one byte, `code`, that says when the
// leaf admits the row's x' (x' keeps x on unperturbed features, so it does once every feature
// on which x leaves the leaf's path is perturbed):
// - curves: the first prefix from which it does, or kNeverAlive;
// - one set: 0 if it does, else kNeverAlive (a curve of one prefix);
// - a greedy step with set S: kNoneMissing if it does with S, j if it does with S + {j} only
//   (j a candidate), else kNeverAlive.
// A pair is alive where both its leaves are: the larger code for prefixes, for greedy steps
// the one missing feature of either leaf (or none), dead if they miss different ones.
struct LaneView {
  const double* table;
  const double* weight;
  const std::int8_t* code;
  const double* masses;  // [slot][lane]: mass of each leaf's interval on each feature it cuts
  const std::uint64_t* out;  // [leaf][lane]: features on which x leaves the leaf's path
  // Where `masses` is null (a model whose slots would not fit the memory budget), a slot's mass
  // is computed from the table, with the same operations, from the leaf's own interval:
  // leaf_lo/leaf_hi [leaf * n_features + feature] (LeafBoxes::lo, hi).
  const std::int32_t* leaf_lo;
  const std::int32_t* leaf_hi;
  std::int32_t n_features;
  std::int32_t vector = 0, n_vectors = 1;  // which vector of its block of rows, of how many
};

// The prefixes of one vector of rows: sets[k][lane], the perturbed features of prefix k
// (growing with k).
struct CurveSets {
  const std::uint64_t* sets;
  // Where set: per feature j and lane, the first prefix whose set holds j (kNeverAlive: none),
  // [j][lane] for j < 64; computed once per vector of rows by the driver (else per tree pair).
  const std::int64_t* enters = nullptr;
};

// The last steps of a greedy ranking in one pass (pair_kernel.cpp): with r <= 4 candidates left,
// the sets S + A of every subset A of them, sets[A][lane] (bit c of A: the lane's c-th
// candidate), 2^r of them; a leaf's code is the subset it needs (the candidates on which x
// leaves its path) or kNeverAlive, so a pair lives in set A where A holds both its leaves'
// codes (kNeverAlive has bits above the r low ones: it never fits).
inline constexpr int kMaxTailCandidates = 4;
struct TailSets {
  const std::uint64_t* sets;
};

// A tree pair projected onto the features both trees cut (tree_projection.hpp). With C those
// features, a pair (u, v) has P(x' in B_u and B_v) = P_C(u meets v) * P_own(u) * P_own(v),
// where P_own(u) is the product of u's masses on the features it cuts outside C (the other
// tree does not cut them), so the pair sum is
//   sum over groups g of the first tree and h of the second whose boxes meet on C of
//     A(g) A(h) P_C(g meets h),   A(g) = sum over leaves u with u's box on C equal to g's of w_u P_own(u):
// leaves whose boxes agree on C merge into one group, and a tree pair costs its leaves and the
// meets of its groups rather than its leaf pairs (CatBoost's oblivious trees of 64 leaves on
// housing: about 140 items against up to 640 pairs). Each meet's entries follow the previous
// meet's.
struct ProjectedLeaf {
  std::int32_t leaf;    // global leaf index
  std::uint16_t group;  // its group among its tree's groups
  std::uint8_t n_own;   // its own entries: features it cuts that the other tree does not
  std::uint8_t unused;
};
struct ProjectedMeet {
  std::uint16_t g, h;   // a group of the first tree, one of the second, whose boxes meet on C
  std::uint8_t count;   // entries: features of C on which the meet is narrower than the line
};
// At most this many leaves per tree, and groups, in a projected tree pair.
inline constexpr std::int32_t kMaxProjectedLeaves = 64;

// Where both trees' groups on C form full grids (CatBoost's oblivious trees: a group per
// combination of a tree's intervals on the features of C), a meet's factor is a product over
// the features c of C of f_c(a_c, b_c), a factor of the pair (a_c, b_c) of the two trees'
// intervals there alone: zero where they are apart, one where c is not in the lane's set or
// the intersection is the whole line, else its mass. So
//   V_X = sum over cells a of the first grid, b of the second, of A_X(a) A_X(b) prod_c f_c(a_c, b_c)
// is a product of small matrices with the two grids' sums: the first tree's axes are exchanged
// for the second's one feature at a time,
//   T_c(b_0..b_c, a_c+1..) = sum over a_c of f_c(a_c, b_c) T_c-1(b_0..b_c-1, a_c, a_c+1..),
// then V_X = sum over b of T(b) A_X(b). A feature's matrix has about as many nonzero entries
// as intervals, so this costs a few times a grid's cells rather than its meets times |C|
// (CatBoost(200) on housing: about a third of the meets' operations; the plan uses it where it
// costs less, build_grid in tree_projection.cpp).
struct GridFactor {
  std::uint8_t a, b;        // intervals of the first tree, of the second, on the feature
  std::uint16_t interval;   // the plan's interval of their intersection, kGridLine or kGridEmpty
};
inline constexpr std::uint16_t kGridLine = 0xffff;  // the whole line: a factor of one
// An interval of the second tree that meets none of the first's (an empty box: a tree that
// splits a feature twice can have one): a factor of zero, its cells set to zero.
inline constexpr std::uint16_t kGridEmpty = 0xfffe;
inline constexpr std::int32_t kMaxGridFeatures = 8;
// Cells of the largest tensor of the contraction (a pass keeps two on the stack).
inline constexpr std::int32_t kMaxGridTensor = 256;
struct ProjectedGrid {
  std::int32_t n_shared = 0;  // |C|; 0: not a grid, the meets are summed
  std::uint8_t feature[kMaxGridFeatures];                 // C's features, in order
  std::int32_t n_first[kMaxGridFeatures], n_second[kMaxGridFeatures];  // intervals of each tree there
  std::uint32_t factor_begin[kMaxGridFeatures + 1];     // feature c's factors (ProjectedView::grid_factors)
};

// One tree's group sums A(g) in a projected tree pair, for one vector of rows: they depend on
// the tree, the features C it shares with the other and the rows only, so a sweep keeps them
// for the tree's other pairs with the same C (tree_projection.hpp, GroupSumCache). Each pass
// takes them for the tree's own sets, which its pairs' sets map onto: curves at the tree's own
// steps (prefix 0 and those at which some lane's set gains a feature it splits on: between two
// of them no lane's product or liveness changes), a greedy step for S and S + {j} for the j the
// tree splits on, a tail for S + A with the candidates of A the tree splits on.
struct TreeGroupSums {
  bool filled = false;
  // Curves: per group, the first step at which a leaf of it is live in some lane (kNeverAlive:
  // none).
  std::int8_t first_live[kMaxProjectedLeaves];
  // Per group and set (projected_pass.cpp's GroupSumsLayout: a grid's set by set in cell order,
  // else group by group), a lane vector.
  double* sums = nullptr;
  // Greedy steps and tails: per group and set (the same places), whether a leaf of the group is
  // live in some lane; and the sets in which some group is (bit per set of the tree).
  std::uint8_t* live = nullptr;
  std::uint64_t live_sets = 0;
};
namespace pairs {
class GroupSumCache;
}
struct ProjectedView {
  // Per tree (0: the first, 1: the second): its leaves, and their own entries, each leaf's after
  // the previous leaf's.
  const ProjectedLeaf* leaves[2] = {nullptr, nullptr};
  const std::uint8_t* own_feature[2] = {nullptr, nullptr};  // per own entry
  const std::int32_t* own_slot[2] = {nullptr, nullptr};     // per own entry: the leaf's slot (LeafBoxes::slot_of)
  std::int32_t n_first = 0, n_second = 0;  // leaves of the first tree, of the second
  std::int32_t groups_first = 0, groups_second = 0;
  // Per group of each tree: its cell where the tree's groups are a full grid on C, else null
  // (TreeGrouping::group_cell).
  const std::uint8_t* group_cell[2] = {nullptr, nullptr};
  const ProjectedMeet* meets = nullptr;
  std::size_t n_meets = 0;
  const std::uint8_t* meet_feature = nullptr;    // per meet entry
  const std::uint16_t* meet_interval = nullptr;  // per meet entry: its interval
  std::size_t n_meet_entries = 0;
  // Per distinct interval of the meet entries: lo, hi (boundary indices); a pass computes each
  // one's mass once (a CatBoost tree pair has about 200 entries on about 10 intervals).
  const std::int32_t* interval_cut = nullptr;
  std::size_t n_intervals = 0;
  // Where set, the two trees' groups are grids and every pass sums them so (ProjectedGrid)
  // instead of the meets (which the plan then has dropped: n_meets 0).
  const ProjectedGrid* grid = nullptr;
  const GridFactor* grid_factors = nullptr;  // the nonzero factors, feature by feature
  std::uint64_t features = 0;  // every feature either tree splits on: only they change the pair's value
  std::uint64_t first_features = 0, second_features = 0;  // those the first tree splits on, the second
  // Where set (curves and sets in a sweep), each tree's group sums for this vector of rows,
  // filled by the first pair that needs them and read by the others; else summed per pair.
  TreeGroupSums* first_sums = nullptr;
  TreeGroupSums* second_sums = nullptr;
  // The sweep's keepers of those (per thread: the tile's first trees, the current second tree),
  // the trees and C.
  pairs::GroupSumCache* first_cache = nullptr;
  pairs::GroupSumCache* second_cache = nullptr;
  std::int64_t first_tree = 0, second_tree = 0;
  std::uint64_t shared = 0;
};


// The first half of the per-row leaf pruning of a curve or a set (a curve of one prefix), for
// one vector of rows (cpp/src/exact/leaf_pruning.hpp has the bounds and the budget). Per leaf
// and lane of a row, with w = the lane's weight and the products over the features of the
// lane's last set in increasing feature order:
// - bound[leaf][lane] = |w| P_out, P_out the product of the leaf's masses on the features x
//   leaves its path on; -1 where the leaf is no candidate (w = 0 or its code >= n_prefix);
// - W[lane] = sum over trees of the largest |w| of a candidate;
// - estimate[prefix][lane] += sum over trees of max(0, E[w^2] - E[w]^2) at that prefix, the
//   masses of the leaf's features of the prefix multiplied in prefix order from the leaf's code
//   on (those in by then in feature order first).
// The lanes of a vector go together, each lane's operations in the order above, so the bounds
// and the pruning do not depend on the build.
struct CurveLeafBounds {
  std::int64_t n_trees = 0;
  const std::int32_t* tree_first = nullptr;    // [tree + 1]: its first leaf (LeafBoxes::tree_first)
  const std::uint64_t* constrained = nullptr;  // [leaf]: features its box cuts (LeafBoxes)
  const std::int32_t* slot_of = nullptr;       // [leaf * n_features + j] (LeafBoxes::slot_of)
  std::int64_t n_prefix = 1;                   // 1 to 64
  const std::uint64_t* sets = nullptr;         // [lane]: its last prefix's set, no feature by category
  const double* position = nullptr;            // [feature][lane]: the prefix it enters at (64 features)
  double* bound = nullptr;                     // out: [leaf][lane]
  double* W = nullptr;                         // out: [lane]
  double* estimate = nullptr;                  // out: [prefix][lane], added to
};

// The first half of the per-row leaf pruning of a greedy step (leaf_pruning.cpp,
// prune_greedy_leaves), for one vector of rows whose leaves carry code_greedy's codes (alive
// with the lane's set S: kNoneMissing; alive with S + {j} only: j; dead: kNeverAlive). Per leaf
// and lane, a leaf being a candidate where its weight w is not 0 and its code is not
// kNeverAlive, with the products over the leaf's features in increasing order:
// - bound[leaf][lane] = |w| P_out, P_out the product of the leaf's masses on the features of
//   S + {its code} that x leaves its path on; -1 where the leaf is no candidate;
// - W[lane] = sum over trees of the largest |w| of a candidate;
// - estimate[lane] = sum over trees of max(0, E[w^2] - E[w]^2) with S perturbed, over the
//   leaves alive with S (their masses on the features of S).
// As CurveLeafBounds: the lanes together, each lane's operations in the order above.
struct GreedyLeafBounds {
  std::int64_t n_trees = 0;
  const std::int32_t* tree_first = nullptr;    // [tree + 1]: its first leaf (LeafBoxes::tree_first)
  const std::uint64_t* constrained = nullptr;  // [leaf]: features its box cuts (LeafBoxes)
  const std::int32_t* slot_of = nullptr;       // [leaf * n_features + j] (LeafBoxes::slot_of)
  std::uint64_t by_category = 0;               // features perturbed by category (no slots)
  const std::uint64_t* sets = nullptr;         // [lane]: S, no feature by category
  double* bound = nullptr;                     // out: [leaf][lane]
  double* W = nullptr;                         // out: [lane]
  double* estimate = nullptr;                  // out: [lane]
};

// sum/comp: per-lane compensated sums (kLanes values; n_steps * kLanes for the curve);
// sets: per-lane sets (n_steps * kLanes for the curve); corr: [feature][lane], per feature of
// the model.
struct PairPasses {
  void (*set)(const PairView&, const LaneView&, const std::uint64_t* sets, double mult, double* sum, double* comp);
  // `set` for two vectors of rows at once, as curve_pair (null where curve_pair is).
  void (*set_pair)(const PairView&, const LaneView* lanes, const std::uint64_t* const* sets, double mult,
                   double* const* sum, double* const* comp);
  void (*curve)(const PairView&, const LaneView&, const CurveSets&, std::int64_t n_steps, double mult, double* sum,
                double* comp);
  // `curve` for two vectors of rows at once (lanes[2], c[2], sum[2], comp[2]), the same bits
  // as two calls: a tree pair's list is walked once for both. Null at the levels where two
  // vectors' work does not fit the registers (pair_passes.cpp).
  void (*curve_pair)(const PairView&, const LaneView* lanes, const CurveSets* c, std::int64_t n_steps, double mult,
                     double* const* sum, double* const* comp);
  void (*greedy)(const PairView&, const LaneView&, const std::uint64_t* sets, double mult, double* sum, double* comp,
                 double* corr);
  // `curve` for a block of one row (lane 0; the other lanes are padding): the prefixes go in
  // the lanes instead, eight to a vector, so a pair costs one product chain per eight prefixes
  // rather than one per prefix. Every prefix's product and sum are the same operations in the
  // same order as in `curve`, so lane 0 gets the same bits.
  void (*curve_row)(const PairView&, const LaneView&, const CurveSets&, std::int64_t n_steps, double mult,
                    double* sum, double* comp);
  // PG2 of each of the n_sets (2^r) sets of a greedy ranking's tail (TailSets), into sum/comp
  // [set][lane]: S's (set 0) product and sum are `set`'s operations in `set`'s order, so its
  // value has a set pass's bits; set A's product is P(S) times its candidates' masses, the same
  // factors in another order (within rounding of a set pass's: a greedy curve entry from the
  // tail agrees with pg2 of that set within 1e-13 relative, not bit for bit).
  void (*tail)(const PairView&, const LaneView&, const TailSets&, std::int64_t n_sets, double mult, double* sum,
               double* comp);
  // `curve` on a projected tree pair (ProjectedView): PG2 of every prefix in the lanes, into
  // sum/comp [prefix][lane]; a set is a curve of one prefix (codes 0 or kNeverAlive). The
  // groups merge the leaf pairs' products in another order (within rounding of the pairs';
  // the same operations for a set as for the prefix of a curve that is that set). A prefix at
  // which no lane's set gains a feature either tree splits on adds the previous prefix's value
  // again: a pair's value changes only at those (codes change only there too).
  void (*projected)(const ProjectedView&, const LaneView&, const CurveSets&, std::int64_t n_steps, double mult,
                    double* sum, double* comp);
  // `greedy` and `tail` on a projected tree pair: PG2(S) into sum/comp and PG2(S + {j}) -
  // PG2(S) into corr[j] (plain) for every feature j; PG2 of each of the tail's sets. S's sum is
  // `projected`'s for that set, bit for bit (meets, or the grids' contraction, as `projected`
  // sums the pair); S + {j}'s and S + A's multiply their candidates' masses last (within
  // rounding of a set pass's, as the leaf-pair tail's are).
  // `projected` for a block of one row (lane 0), its prefixes in the lanes instead, as
  // `curve_row`: the same operations per prefix, so the same bits as lane 0 of `projected`.
  void (*projected_row)(const ProjectedView&, const LaneView&, const CurveSets&, std::int64_t n_steps, double mult,
                        double* sum, double* comp);
  void (*projected_greedy)(const ProjectedView&, const LaneView&, const std::uint64_t* sets, double mult,
                           double* sum, double* comp, double* corr);
  void (*projected_tail)(const ProjectedView&, const LaneView&, const TailSets&, std::int64_t n_sets, double mult,
                         double* sum, double* comp);
  // The bounds of a vector's leaves for its curve's or set's pruning (CurveLeafBounds).
  void (*curve_leaf_bounds)(const LaneView&, const CurveLeafBounds&);
  // The bounds of a vector's leaves for a greedy step's pruning (GreedyLeafBounds).
  void (*greedy_leaf_bounds)(const LaneView&, const GreedyLeafBounds&);
};

// The passes for the CPU this runs on; the environment variable PGEXACT_PASSES=base or v3
// caps the level (read once; for tests and comparisons).
const PairPasses& pair_passes();

namespace isa_base { PairPasses passes(); }
namespace isa_v3 { PairPasses passes(); }
namespace isa_v4 { PairPasses passes(); }
// Each level's build of the projected passes (projected_pass.cpp).
#define PGEXACT_PROJECTED_PASSES                                                                                \
  void eval_projected(const ProjectedView&, const LaneView&, const CurveSets&, std::int64_t, double, double*,   \
                      double*);                                                                                 \
  void eval_projected_row(const ProjectedView&, const LaneView&, const CurveSets&, std::int64_t, double, double*, \
                          double*);                                                                             \
  void eval_projected_greedy(const ProjectedView&, const LaneView&, const std::uint64_t*, double, double*,       \
                             double*, double*);                                                                 \
  void eval_projected_tail(const ProjectedView&, const LaneView&, const TailSets&, std::int64_t, double, double*, \
                           double*);
namespace isa_base { PGEXACT_PROJECTED_PASSES }
namespace isa_v3 { PGEXACT_PROJECTED_PASSES }
namespace isa_v4 { PGEXACT_PROJECTED_PASSES }
#undef PGEXACT_PROJECTED_PASSES
// Each level's build of the pruning's bounds (leaf_bounds.cpp).
#define PGEXACT_LEAF_BOUNDS                                         \
  void curve_leaf_bounds(const LaneView&, const CurveLeafBounds&); \
  void greedy_leaf_bounds(const LaneView&, const GreedyLeafBounds&);
namespace isa_base { PGEXACT_LEAF_BOUNDS }
namespace isa_v3 { PGEXACT_LEAF_BOUNDS }
namespace isa_v4 { PGEXACT_LEAF_BOUNDS }
#undef PGEXACT_LEAF_BOUNDS

}  // namespace pgexact
