#include "pgexact/model/arena.hpp"

#include <algorithm>
#include <cfloat>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace pgexact {
namespace {

[[noreturn]] void fail(std::size_t tree, const std::string& what) {
  throw ModelError("tree " + std::to_string(tree) + ": " + what);
}

// Largest float32 that is <= t (strictly < t when `strict`).
float float32_below(double t, bool strict) {
  float f = to_float32(t);
  if (static_cast<double>(f) > t || (strict && static_cast<double>(f) == t)) {
    f = std::nextafter(f, -INFINITY);
  }
  return f;
}

// Where a real-valued input y switches side once the library casts it to float32 and compares.
// Left iff fl32(y) <= f for the largest admissible float f, iff y lies below the midpoint
// between f and the next float32 (the tie itself has probability zero).
double float32_boundary(double threshold, SplitOp op) {
  const float f = float32_below(threshold, op == SplitOp::Less);
  if (std::isinf(f)) {
    return f > 0 ? INFINITY : -0x1.ffffffp127;
  }
  const float up = std::nextafter(f, INFINITY);
  if (std::isinf(up)) return 0x1.ffffffp127;
  // Both are float32, so their midpoint is exact in double.
  return 0.5 * (static_cast<double>(f) + static_cast<double>(up));
}

}  // namespace

void finalize_arena(Arena& a);

std::int64_t Arena::n_leaves() const {
  return std::count(feature.begin(), feature.end(), -1);
}

std::vector<std::uint8_t> Arena::used_features() const {
  std::vector<std::uint8_t> used(static_cast<std::size_t>(n_features), 0);
  for (const std::int32_t j : feature) {
    if (j >= 0) used[static_cast<std::size_t>(j)] = 1;
  }
  return used;
}

bool Arena::categorical_goes_left(std::int32_t n, double x) const {
  const std::uint32_t* words = cat_words.data() + cat_begin[n];
  const auto n_words = static_cast<std::uint64_t>(cat_size[n]);
  auto member = [&](std::uint64_t c) {
    return c / 32 < n_words && ((words[c / 32] >> (c % 32)) & 1u) != 0;
  };
  switch (category_rule) {
    case CategoryRule::XGBoost: {
      // XGBoost: an invalid category (negative or >= 2^24 as float32) goes left; a member of
      // the split's set goes right.
      const float v = to_float32(x);
      if (!(v >= 0.0f) || v >= 16777216.0f) return true;
      return !member(static_cast<std::uint64_t>(v));
    }
    case CategoryRule::LightGBM: {
      // LightGBM: static_cast<int>(x); negative goes right; a member goes left. Values beyond
      // int range convert to INT_MIN on every supported platform, hence right.
      if (!(x > -1.0) || x >= 2147483648.0) return false;
      return member(static_cast<std::uint64_t>(x));
    }
    case CategoryRule::SklearnHist: {
      // HistGradientBoosting's encoder matches raw values exactly; the bitset over non-negative
      // integers already says where each one goes (known categories by the split, unknown ones
      // by the missing direction). Any other value is an unknown category: missing direction.
      if (!(x >= 0.0) || x >= static_cast<double>(n_words) * 32.0 || x != std::floor(x)) {
        return default_left(n);
      }
      return member(static_cast<std::uint64_t>(x));
    }
    case CategoryRule::None:
      break;
  }
  return false;
}

std::vector<std::int64_t> Arena::split_categories(std::int32_t j) const {
  std::vector<std::uint8_t> named;
  for (std::int32_t n = 0; n < n_nodes(); ++n) {
    if (feature[n] != j || !categorical(n)) continue;
    const auto words = static_cast<std::size_t>(cat_size[n]);
    if (named.size() < 32 * words) named.resize(32 * words, 0);
    for (std::size_t c = 0; c < 32 * words; ++c) named[c] |= (cat_words[static_cast<std::size_t>(cat_begin[n]) + c / 32] >> (c % 32)) & 1u;
  }
  std::vector<std::int64_t> out;
  for (std::size_t c = 0; c < named.size(); ++c) {
    if (named[c]) out.push_back(static_cast<std::int64_t>(c));
  }
  return out;
}

std::int32_t Arena::leaf_of(std::int64_t t, const double* x) const {
  std::int32_t n = tree_root[t];
  while (feature[n] >= 0) n = goes_left(n, x[feature[n]]) ? left[n] : right[n];
  return n;
}

double Arena::predict_row(const double* x, std::int32_t output) const {
  double sum = 0.0;
  for (std::int64_t t = 0; t < n_trees(); ++t) {
    if (tree_output[t] == output) sum += value[leaf_of(t, x)];
  }
  return base_score[output] + sum;
}

Arena Arena::select_output(std::int32_t output) const {
  if (output < 0 || output >= n_outputs) {
    throw ModelError("output " + std::to_string(output) + " is out of range for a model with " +
                     std::to_string(n_outputs) + " outputs");
  }
  std::vector<std::int64_t> trees;
  for (std::int64_t t = 0; t < n_trees(); ++t) {
    if (tree_output[t] == output) trees.push_back(t);
  }
  Arena out = select_trees(trees);
  out.n_outputs = 1;
  out.base_score = {base_score[output]};
  std::fill(out.tree_output.begin(), out.tree_output.end(), 0);
  return out;
}

Arena Arena::select_trees(const std::vector<std::int64_t>& trees) const {
  Arena out;
  out.n_features = n_features;
  out.n_outputs = n_outputs;
  out.category_rule = category_rule;
  out.input_float32 = input_float32;
  out.base_score = base_score;
  out.categorical_feature.assign(n_features, 0);
  for (const std::int64_t t : trees) {
    if (t < 0 || t >= n_trees()) throw std::invalid_argument("trees: index out of range");
    const std::int32_t begin = tree_root[t];
    const std::int32_t end = t + 1 < n_trees() ? tree_root[t + 1] : static_cast<std::int32_t>(n_nodes());
    const std::int32_t shift = static_cast<std::int32_t>(out.n_nodes()) - begin;
    out.tree_root.push_back(begin + shift);
    out.tree_output.push_back(tree_output[t]);
    out.tree_depth.push_back(tree_depth[t]);
    out.max_depth = std::max(out.max_depth, tree_depth[t]);
    for (std::int32_t n = begin; n < end; ++n) {
      out.feature.push_back(feature[n]);
      out.left.push_back(left[n] < 0 ? -1 : left[n] + shift);
      out.right.push_back(right[n] < 0 ? -1 : right[n] + shift);
      out.threshold.push_back(threshold[n]);
      out.boundary.push_back(boundary[n]);
      out.value.push_back(value[n]);
      out.flags.push_back(flags[n]);
      if (categorical(n)) {
        out.cat_begin.push_back(static_cast<std::int32_t>(out.cat_words.size()));
        out.cat_size.push_back(cat_size[n]);
        out.cat_words.insert(out.cat_words.end(), cat_words.begin() + cat_begin[n],
                             cat_words.begin() + cat_begin[n] + cat_size[n]);
        out.categorical_feature[feature[n]] = 1;
      } else {
        out.cat_begin.push_back(0);
        out.cat_size.push_back(0);
      }
    }
  }
  finalize_arena(out);
  return out;
}

// Derived per-node data: subtree feature sets and the distinct boundaries of each feature.
void finalize_arena(Arena& a) {
  // Subtree feature sets, children before parents: pre-order reversed visits them that way.
  a.subtree_features.assign(a.feature.size(), 0);
  a.subtree_size.assign(a.feature.size(), 1);
  a.subtree_min = a.value;
  a.subtree_max = a.value;
  for (std::int64_t v = a.n_nodes() - 1; v >= 0; --v) {
    if (a.feature[v] < 0) continue;
    a.subtree_min[v] = std::min(a.subtree_min[a.left[v]], a.subtree_min[a.right[v]]);
    a.subtree_max[v] = std::max(a.subtree_max[a.left[v]], a.subtree_max[a.right[v]]);
    a.subtree_features[v] = (std::uint64_t{1} << (a.feature[v] % 64)) |
                            a.subtree_features[a.left[v]] | a.subtree_features[a.right[v]];
    a.subtree_size[v] = 1 + a.subtree_size[a.left[v]] + a.subtree_size[a.right[v]];
  }
  const auto d = static_cast<std::size_t>(a.n_features);
  std::vector<std::vector<double>> per_feature(d);
  for (std::int64_t v = 0; v < a.n_nodes(); ++v) {
    if (a.feature[v] >= 0 && !a.categorical(static_cast<std::int32_t>(v))) per_feature[a.feature[v]].push_back(a.boundary[v]);
  }
  // Block j of `bounds` is [-inf, b_1 < ... < b_K, +inf]: the sentinels make every interval
  // a pair of valid indices.
  a.bounds.clear();
  a.feature_bounds_begin.assign(d + 1, 0);
  for (std::size_t j = 0; j < d; ++j) {
    auto& b = per_feature[j];
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    a.feature_bounds_begin[j] = static_cast<std::int32_t>(a.bounds.size());
    a.bounds.push_back(-INFINITY);
    a.bounds.insert(a.bounds.end(), b.begin(), b.end());
    a.bounds.push_back(INFINITY);
  }
  a.feature_bounds_begin[d] = static_cast<std::int32_t>(a.bounds.size());
  a.bound_index.assign(a.feature.size(), -1);
  for (std::int64_t v = 0; v < a.n_nodes(); ++v) {
    const std::int32_t j = a.feature[v];
    if (j < 0 || a.categorical(static_cast<std::int32_t>(v))) continue;
    const auto first = a.bounds.begin() + a.feature_bounds_begin[j] + 1;
    const auto last = a.bounds.begin() + a.feature_bounds_begin[j + 1] - 1;
    a.bound_index[v] = static_cast<std::int32_t>(std::lower_bound(first, last, a.boundary[v]) - a.bounds.begin());
  }
}

Arena build_arena(ModelInput&& input) {
  if (input.n_features <= 0 || input.n_features > kMaxFeatures) {
    throw ModelError("number of features must be in [1, " + std::to_string(kMaxFeatures) +
                     "], got " + std::to_string(input.n_features));
  }
  if (input.base_score.empty()) throw ModelError("model has no output (empty base score)");
  for (double b : input.base_score) {
    if (!std::isfinite(b)) throw ModelError("base score is not finite");
  }
  const auto n_outputs = static_cast<std::int32_t>(input.base_score.size());

  std::int64_t total = 0;
  CategoryBudget budget;
  for (const TreeInput& tree : input.trees) {
    total += static_cast<std::int64_t>(tree.left.size());
    if (total > kMaxNodes) throw ModelError("model has more than 2^30 nodes");
    for (const auto& bits : tree.cat_bitsets) budget.charge(static_cast<std::int64_t>(bits.size()));
  }

  Arena a;
  a.n_features = input.n_features;
  a.n_outputs = n_outputs;
  a.category_rule = input.category_rule;
  a.input_float32 = input.input_float32;
  a.base_score = input.base_score;
  a.categorical_feature.assign(input.n_features, 0);
  a.feature.reserve(total);

  std::vector<std::int32_t> stack;
  std::vector<std::int32_t> depth_stack;
  std::vector<std::uint8_t> seen;
  std::vector<std::int32_t> cat_index;  // local node -> index in cat_nodes, or -1

  for (std::size_t ti = 0; ti < input.trees.size(); ++ti) {
    TreeInput& tree = input.trees[ti];
    const std::size_t n = tree.left.size();
    if (n == 0) fail(ti, "has no nodes");
    if (tree.right.size() != n || tree.feature.size() != n || tree.threshold.size() != n ||
        tree.value.size() != n || tree.default_left.size() != n ||
        (!tree.missing.empty() && tree.missing.size() != n) ||
        tree.cat_nodes.size() != tree.cat_bitsets.size()) {
      fail(ti, "node arrays have inconsistent lengths");
    }
    if (tree.output < 0 || tree.output >= n_outputs) {
      fail(ti, "output " + std::to_string(tree.output) + " is out of range [0, " +
                   std::to_string(n_outputs) + ")");
    }
    if (!std::isfinite(tree.weight)) fail(ti, "tree weight is not finite");

    cat_index.assign(n, -1);
    for (std::size_t k = 0; k < tree.cat_nodes.size(); ++k) {
      const std::int32_t c = tree.cat_nodes[k];
      if (c < 0 || static_cast<std::size_t>(c) >= n) fail(ti, "categorical node id out of range");
      if (cat_index[c] >= 0) fail(ti, "categorical node listed twice");
      if (input.category_rule == CategoryRule::None) fail(ti, "categorical split in a numeric-only model");
      if (static_cast<std::int64_t>(tree.cat_bitsets[k].size()) * 32 > kMaxCategory) {
        fail(ti, "categorical split with more than 2^24 categories");
      }
      cat_index[c] = static_cast<std::int32_t>(k);
    }

    // Lay the reachable nodes out in pre-order (left child right after its parent), checking
    // that the child links form a tree: every node reached at most once, ids in range.
    const auto base = static_cast<std::int32_t>(a.feature.size());
    seen.assign(n, 0);
    stack.assign(1, 0);
    depth_stack.assign(1, 0);
    std::vector<std::int32_t> new_id(n, -1);
    std::int32_t tree_depth = 0;
    std::vector<std::int32_t> order;
    order.reserve(n);
    while (!stack.empty()) {
      const std::int32_t v = stack.back();
      const std::int32_t d = depth_stack.back();
      stack.pop_back();
      depth_stack.pop_back();
      if (seen[v]) fail(ti, "node " + std::to_string(v) + " is reached twice (cycle or shared child)");
      seen[v] = 1;
      if (d > kMaxDepth) {
        fail(ti, "is deeper than " + std::to_string(kMaxDepth) + " levels; pgexact refuses deeper trees");
      }
      new_id[v] = base + static_cast<std::int32_t>(order.size());
      order.push_back(v);
      tree_depth = std::max(tree_depth, d);
      const std::int32_t l = tree.left[v];
      const std::int32_t r = tree.right[v];
      if (l == -1 && r == -1) {
        if (!std::isfinite(tree.value[v] * tree.weight)) fail(ti, "leaf value is not finite");
        continue;
      }
      if (l < 0 || r < 0 || static_cast<std::size_t>(l) >= n || static_cast<std::size_t>(r) >= n ||
          l == v || r == v || l == r) {
        fail(ti, "node " + std::to_string(v) + " has invalid children");
      }
      const std::int32_t f = tree.feature[v];
      if (f < 0 || f >= input.n_features) {
        fail(ti, "node " + std::to_string(v) + " splits on feature " + std::to_string(f) +
                     ", outside [0, " + std::to_string(input.n_features) + ")");
      }
      if (cat_index[v] < 0 && std::isnan(tree.threshold[v])) {
        fail(ti, "node " + std::to_string(v) + " has a NaN threshold");
      }
      if (!tree.missing.empty() && tree.missing[v] > 3) fail(ti, "invalid missing-value rule");
      stack.push_back(r);
      depth_stack.push_back(d + 1);
      stack.push_back(l);
      depth_stack.push_back(d + 1);
    }

    a.tree_root.push_back(base);
    a.tree_output.push_back(tree.output);
    a.tree_depth.push_back(tree_depth);
    a.max_depth = std::max(a.max_depth, tree_depth);
    for (std::int32_t v : order) {
      const bool leaf = tree.left[v] == -1;
      a.feature.push_back(leaf ? -1 : tree.feature[v]);
      a.left.push_back(leaf ? -1 : new_id[tree.left[v]]);
      a.right.push_back(leaf ? -1 : new_id[tree.right[v]]);
      const double thr = leaf ? 0.0 : tree.threshold[v];
      a.threshold.push_back(thr);
      a.value.push_back(leaf ? tree.value[v] * tree.weight : 0.0);
      std::uint8_t fl = 0;
      if (!leaf && tree.default_left[v]) fl |= kDefaultLeft;
      if (input.op == SplitOp::LessEqual) fl |= kLessEqual;
      if (!leaf && !tree.missing.empty()) fl |= static_cast<std::uint8_t>(tree.missing[v] << kMissingShift);
      double boundary = thr;
      if (!leaf && cat_index[v] >= 0) {
        fl |= kCategorical;
        const auto& bits = tree.cat_bitsets[cat_index[v]];
        a.cat_begin.push_back(static_cast<std::int32_t>(a.cat_words.size()));
        a.cat_size.push_back(static_cast<std::int32_t>(bits.size()));
        a.cat_words.insert(a.cat_words.end(), bits.begin(), bits.end());
        a.categorical_feature[tree.feature[v]] = 1;
        boundary = NAN;  // a categorical split has no boundary on the real line
      } else {
        a.cat_begin.push_back(0);
        a.cat_size.push_back(0);
        if (!leaf && input.input_float32) boundary = float32_boundary(thr, input.op);
      }
      a.boundary.push_back(boundary);
      a.flags.push_back(fl);
    }
  }

  finalize_arena(a);
  if (a.cat_words.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    throw ModelError("categorical split sets are too large");
  }
  return a;
}

}  // namespace pgexact
