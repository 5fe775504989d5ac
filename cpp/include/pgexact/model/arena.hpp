// The flat node arena: every tree of a model in one struct of arrays.
//
// Each parser (XGBoost JSON, LightGBM text, scikit-learn arrays) fills TreeInput records and
// hands them to ArenaBuilder, which validates them in one place and produces an immutable Arena.
// Kernels only ever see a `const Arena&`, so one Arena can be shared by any number of threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pgexact {

// Raised for anything wrong with a model: the bindings map it to Python's ValueError.
// `s` with every byte that is not part of well-formed UTF-8 written as \xNN: an error message
// quoting a corrupted file must still reach Python as text (else a bare UnicodeDecodeError).
std::string printable_utf8(const std::string& s);

class ModelError : public std::runtime_error {
 public:
  explicit ModelError(const std::string& what) : std::runtime_error(printable_utf8(what)) {}
  explicit ModelError(const char* what) : ModelError(std::string(what)) {}
};

// How a split compares the (possibly float32-cast) input with its threshold.
enum class SplitOp : std::uint8_t { Less = 0, LessEqual = 1 };

// What a missing value (NaN) does at a numeric split.
// LightGBM reads |x| <= 1e-35 as 0.0 for every split (its dense-row reader drops such values),
// so its three rules all carry that zero band.
enum class MissingRule : std::uint8_t {
  NanDefault = 0,          // NaN follows the default direction (XGBoost, scikit-learn)
  NanAsZero = 1,           // NaN and |x| <= 1e-35 are read as 0.0, then compared (LightGBM "None")
  ZeroOrNanDefault = 2,    // NaN and |x| <= 1e-35 follow the default direction (LightGBM "Zero")
  NanDefaultZeroBand = 3,  // NaN follows the default direction; |x| <= 1e-35 is read as 0.0
                           // (LightGBM "NaN")
};

// How a categorical split reads the input value and where members of its set go.
enum class CategoryRule : std::uint8_t {
  None = 0,
  XGBoost = 1,   // float32 value; negative or >= 2^24 goes left; member of the set goes right
  LightGBM = 2,  // int(x); negative goes right; member of the set goes left
  // HistGradientBoosting, in raw input values: a non-negative integer inside the bitset range
  // goes left iff it is a member; anything else (fractional, negative, beyond the range) is an
  // unknown category and follows the default direction. The adapter folds the encoder, the
  // known categories and the missing direction into the bitset.
  SklearnHist = 3,
};

// Limits that keep hostile model files from exhausting memory.
inline constexpr std::int64_t kMaxNodes = std::int64_t{1} << 30;
// Inputs are dense float64 rows, so a million columns is already 8 MB a row; the limit keeps a
// tiny hostile file that declares a huge feature count from costing gigabytes of per-feature
// layout and per-thread scratch.
inline constexpr std::int32_t kMaxFeatures = 1 << 20;
inline constexpr std::int64_t kMaxCategory = std::int64_t{1} << 24;
// Category sets are dense bitsets, so one small entry can stand for a large set (a category
// near 2^24 costs 2 MiB); a model's sets together may hold at most this many 32-bit words
// (256 MiB). Parsers charge every set against it before building it.
inline constexpr std::int64_t kMaxCategoryWords = std::int64_t{1} << 26;
// Deepest tree accepted. Kernels walk trees with explicit stacks, so any depth works; the limit
// only bounds their per-thread scratch (a few hundred bytes per level) for hostile files.
inline constexpr std::int32_t kMaxDepth = 1 << 20;

// Running total of category-set words for one model; throws ModelError past kMaxCategoryWords.
class CategoryBudget {
 public:
  void charge(std::int64_t words) {
    if (words < 0 || words > kMaxCategoryWords - used_) {
      throw ModelError("categorical split sets of the model hold more than 2^26 words (256 MiB) in total");
    }
    used_ += words;
  }

 private:
  std::int64_t used_ = 0;
};

// One tree as a parser reads it: node ids local to the tree, node 0 is the root.
struct TreeInput {
  std::vector<std::int32_t> left;       // -1 for a leaf
  std::vector<std::int32_t> right;      // -1 for a leaf
  std::vector<std::int32_t> feature;    // ignored for a leaf
  std::vector<double> threshold;        // numeric split value as the library compares it
  std::vector<double> value;            // leaf value (ignored for an inner node)
  std::vector<std::uint8_t> default_left;
  std::vector<std::uint8_t> missing;    // MissingRule per node; empty = all NanDefault
  // Categorical splits: node ids with their category bitsets (bit c of word c/32 = category c).
  std::vector<std::int32_t> cat_nodes;
  std::vector<std::vector<std::uint32_t>> cat_bitsets;
  std::int32_t output = 0;              // output column the tree adds to
  double weight = 1.0;                  // multiplies every leaf (DART weight, 1/T for forests)
};

struct ModelInput {
  std::vector<TreeInput> trees;
  std::vector<double> base_score;       // one per output, in margin space
  std::int32_t n_features = 0;
  SplitOp op = SplitOp::Less;
  CategoryRule category_rule = CategoryRule::None;
  bool input_float32 = false;           // the library casts inputs to float32 before comparing
};

// Node flag bits.
inline constexpr std::uint8_t kDefaultLeft = 1u << 0;
inline constexpr std::uint8_t kLessEqual = 1u << 1;
inline constexpr std::uint8_t kCategorical = 1u << 2;
inline constexpr int kMissingShift = 4;  // two bits of MissingRule

class Arena {
 public:
  // ---- nodes (global ids) ----
  std::vector<std::int32_t> feature;    // -1 marks a leaf
  std::vector<std::int32_t> left;
  std::vector<std::int32_t> right;
  std::vector<double> threshold;        // compared with the library's own operator
  // Where a continuously perturbed input changes side: x' < boundary goes left (almost surely).
  // Equal to the threshold for double-precision `<=` / `<`; for float32 inputs it is the
  // rounding boundary of the float32 cast, so perturbation probabilities stay exact.
  std::vector<double> boundary;
  std::vector<double> value;            // leaf value, already multiplied by the tree weight
  std::vector<std::uint8_t> flags;
  std::vector<std::int32_t> cat_begin;  // into cat_words; only meaningful for categorical nodes
  std::vector<std::int32_t> cat_size;
  std::vector<std::uint32_t> cat_words;
  // Index of the node's boundary in `bounds` (inside its feature's block); -1 for leaves and
  // categorical nodes. Comparing two indices of one feature compares the boundaries.
  std::vector<std::int32_t> bound_index;
  // Features split on anywhere in the node's subtree: bit j for j < 64, bit (j % 64) beyond,
  // so an empty intersection is always a proof of disjointness.
  std::vector<std::uint64_t> subtree_features;
  std::vector<std::int32_t> subtree_size;  // nodes in the subtree, itself included
  std::vector<double> subtree_min, subtree_max;  // range of the leaf values in the subtree

  // ---- trees ----
  std::vector<std::int32_t> tree_root;
  std::vector<std::int32_t> tree_output;
  std::vector<std::int32_t> tree_depth;

  // ---- distinct numeric boundaries, sorted, per feature ----
  // Block j = [feature_bounds_begin[j], feature_bounds_begin[j+1]) holds -inf, the distinct
  // boundaries of feature j in increasing order, then +inf.
  std::vector<double> bounds;
  std::vector<std::int32_t> feature_bounds_begin;  // n_features + 1 offsets into `bounds`

  // ---- model ----
  std::vector<double> base_score;       // per output
  std::vector<std::uint8_t> categorical_feature;  // 1 if any split on the feature is categorical
  std::int32_t n_features = 0;
  std::int32_t n_outputs = 1;
  std::int32_t max_depth = 0;
  CategoryRule category_rule = CategoryRule::None;
  bool input_float32 = false;

  std::int64_t n_nodes() const { return static_cast<std::int64_t>(feature.size()); }
  std::int64_t n_trees() const { return static_cast<std::int64_t>(tree_root.size()); }
  std::int64_t n_leaves() const;
  // Per feature, 1 if some tree splits on it.
  std::vector<std::uint8_t> used_features() const;
  bool is_leaf(std::int32_t n) const { return feature[n] < 0; }
  bool default_left(std::int32_t n) const { return (flags[n] & kDefaultLeft) != 0; }
  bool categorical(std::int32_t n) const { return (flags[n] & kCategorical) != 0; }
  MissingRule missing_rule(std::int32_t n) const {
    return static_cast<MissingRule>((flags[n] >> kMissingShift) & 3u);
  }

  // The library's own decision for an observed (unperturbed) value, NaN included (inline, below:
  // routing a block's rows calls it for every node and lane).
  inline bool goes_left(std::int32_t n, double x) const;

  // The categories named by the categorical splits on feature j: every member of their sets,
  // sorted (the default categories of categorical noise).
  std::vector<std::int64_t> split_categories(std::int32_t j) const;

  // The leaf the library routes row `x` to in tree `t`.
  std::int32_t leaf_of(std::int64_t t, const double* x) const;

  // Raw output `output` for one row: base score plus the leaves of that output's trees.
  double predict_row(const double* x, std::int32_t output) const;

  // A single-output arena holding only the trees of `output` (leaf values keep their weights).
  Arena select_output(std::int32_t output) const;
  // The given trees (indices, in the given order) with their outputs: a sub-ensemble, e.g.
  // for timing a kernel on a sample of the trees.
  Arena select_trees(const std::vector<std::int64_t>& trees) const;

 private:
  bool categorical_goes_left(std::int32_t n, double x) const;
};

// LightGBM treats |x| <= kZeroThreshold (a float constant) as zero.
inline constexpr double kLightGBMZero = static_cast<double>(1e-35f);

// The float32 the library gets from a double input, without undefined behaviour out of range.
inline float to_float32(double x) {
  // Largest double that still rounds to FLT_MAX (half an ulp above it); beyond: infinity.
  constexpr double kTop = 0x1.ffffffp127;
  if (x >= kTop) return INFINITY;
  if (x <= -kTop) return -INFINITY;
  return static_cast<float>(x);
}

inline bool Arena::goes_left(std::int32_t n, double x) const {
  const std::uint8_t fl = flags[n];
  const MissingRule rule = missing_rule(n);
  if (std::isnan(x)) {
    if (rule != MissingRule::NanAsZero) return (fl & kDefaultLeft) != 0;
    x = 0.0;
  }
  if (rule != MissingRule::NanDefault && std::fabs(x) <= kLightGBMZero) {
    if (rule == MissingRule::ZeroOrNanDefault) return (fl & kDefaultLeft) != 0;
    x = 0.0;  // LightGBM's zero band
  }
  if (fl & kCategorical) return categorical_goes_left(n, x);
  const double v = input_float32 ? static_cast<double>(to_float32(x)) : x;
  return (fl & kLessEqual) ? v <= threshold[n] : v < threshold[n];
}

// Validates a ModelInput and lays it out as an Arena. Throws ModelError naming the problem.
Arena build_arena(ModelInput&& input);

}  // namespace pgexact
