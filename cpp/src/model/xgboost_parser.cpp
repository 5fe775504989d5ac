#include "pgexact/model/xgboost_parser.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "pgexact/model/json.hpp"

namespace pgexact {
namespace {

[[noreturn]] void fail(const std::string& what) { throw ModelError("XGBoost model: " + what); }

const JsonValue& member(const JsonValue& obj, std::string_view key, std::string_view path) {
  if (!obj.is_object()) fail(std::string(path) + " is not an object");
  return obj.at(key, path);
}

const std::vector<double>& numbers(const JsonValue& obj, std::string_view key, std::string_view path,
                                   std::size_t expected) {
  const JsonValue& v = member(obj, key, path);
  if (!v.is_array() || !v.items.empty()) fail(std::string(path) + "." + std::string(key) + " is not a numeric array");
  if (v.inexact_integer) {
    // XGBoost writes its floats with an exponent; its reader keeps an integer token as an int64
    // (wrapping past 2^63) and rounds it to float32 from there: refuse rather than guess.
    fail(std::string(path) + "." + std::string(key) + " holds an integer beyond 2^53, which XGBoost's reader "
         "does not read as its value (re-save the model with XGBoost)");
  }
  if (expected != SIZE_MAX && v.numbers.size() != expected) {
    fail(std::string(path) + "." + std::string(key) + " has " + std::to_string(v.numbers.size()) +
         " entries, expected " + std::to_string(expected));
  }
  return v.numbers;
}

// XGBoost writes its parameters as strings ("8", "5E-1", "[5E-1,2E-1]").
std::string param_string(const JsonValue& obj, std::string_view key, std::string_view path) {
  const JsonValue& v = member(obj, key, path);
  if (v.type == JsonValue::Type::String) return v.string;
  if (v.type == JsonValue::Type::Number) return std::to_string(v.number);
  fail(std::string(path) + "." + std::string(key) + " is not a string");
}

std::int64_t parse_int(const std::string& s, std::string_view what) {
  std::int64_t out = 0;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), out);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) fail(std::string(what) + " is not an integer: '" + s + "'");
  return out;
}

// "5E-1", "[5E-1]" or "[1E0,2E0]" -> the float32 values XGBoost stores.
std::vector<double> parse_float_list(std::string s) {
  std::vector<double> out;
  std::size_t pos = 0;
  if (!s.empty() && s.front() == '[') {
    if (s.back() != ']') fail("base_score '" + s + "' is malformed");
    s = s.substr(1, s.size() - 2);
  }
  while (pos <= s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    double d = 0.0;
    const char* first = s.data() + pos;
    const char* last = s.data() + end;
    while (first < last && *first == ' ') ++first;
    // XGBoost reads an integer ("16777217") as an int64, wrapping past 2^63 ("18446744073709551616"
    // reads as 0): beyond 2^53 it is refused rather than guessed.
    const bool integer = first < last && std::all_of(first + (*first == '-' ? 1 : 0), last,
                                                     [](char c) { return c >= '0' && c <= '9'; });
    if (integer && last - first > 15) {
      std::int64_t i = 0;
      const auto r = std::from_chars(first, last, i);
      if (r.ec != std::errc() || i > (std::int64_t{1} << 53) || i < -(std::int64_t{1} << 53)) {
        fail("base_score '" + s.substr(0, 60) + "' holds an integer beyond 2^53, which XGBoost's reader does not "
             "read as its value (re-save the model with XGBoost)");
      }
    }
    const auto res = std::from_chars(first, last, d);
    if (res.ec != std::errc() || res.ptr != last) fail("base_score '" + s + "' is malformed");
    out.push_back(static_cast<double>(to_float32(d)));
    pos = end + 1;
  }
  return out;
}

// XGBoost's ProbToMargin: base_score is stored in the objective's output space.
double link(const std::string& objective, double b) {
  if (objective == "binary:logistic" || objective == "reg:logistic") {
    if (!(b > 0.0 && b < 1.0)) fail("base_score must be in (0, 1) for " + objective);
    return std::log(b / (1.0 - b));
  }
  if (objective == "count:poisson" || objective == "reg:gamma" || objective == "reg:tweedie" ||
      objective == "survival:cox" || objective == "survival:aft") {
    if (!(b > 0.0)) fail("base_score must be positive for " + objective);
    return std::log(b);
  }
  if (objective == "reg:squarederror" || objective == "reg:squaredlogerror" ||
      objective == "reg:pseudohubererror" || objective == "reg:absoluteerror" ||
      objective == "reg:quantileerror" || objective == "reg:linear" || objective == "binary:logitraw" ||
      objective == "binary:hinge" || objective == "multi:softmax" || objective == "multi:softprob" ||
      objective.rfind("rank:", 0) == 0) {
    return b;
  }
  fail("objective '" + objective + "' is not supported (unknown base_score link)");
}

std::string number_text(double v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// XGBoost sums an output's margin in float32: the base score, then every tree's leaf times its
// weight, in tree order. Round-to-nearest is monotone, so the same float32 sum of the largest
// |leaf| x weight of each tree bounds every row's |partial sum|; when that bound overflows, some
// row may reach +-inf in XGBoost while a double sum stays finite: refuse such a model by name.
void refuse_float32_overflow(const ModelInput& input) {
  std::vector<float> bound(input.base_score.size());
  for (std::size_t k = 0; k < bound.size(); ++k) bound[k] = std::fabs(to_float32(input.base_score[k]));
  for (std::size_t t = 0; t < input.trees.size(); ++t) {
    const TreeInput& tree = input.trees[t];
    float largest = 0.0f;
    for (std::size_t n = 0; n < tree.value.size(); ++n) {
      if (tree.left[n] == -1) largest = std::max(largest, std::fabs(static_cast<float>(tree.value[n])));
    }
    if (!std::isfinite(largest) || !std::isfinite(tree.weight)) return;  // refused by name when the arena is built
    const float term = static_cast<float>(largest * std::fabs(static_cast<float>(tree.weight)));
    float& b = bound[static_cast<std::size_t>(tree.output)];
    b = b + term;
    if (!std::isfinite(b)) {
      fail("trees[" + std::to_string(t) + "]: the leaf values (largest |leaf| " + number_text(largest) +
           ") can make XGBoost's float32 sum of output " + std::to_string(tree.output) +
           " overflow to infinity, where a double sum stays finite; pgexact refuses models whose "
           "margin can exceed the float32 range (about 3.4e38)");
    }
  }
}

std::vector<std::string> string_list(const JsonValue* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->is_array()) return out;
  for (const JsonValue& item : v->items) {
    if (item.type != JsonValue::Type::String) fail("feature names must be strings");
    out.push_back(item.string);
  }
  return out;
}

TreeInput parse_tree(const JsonValue& tree, std::size_t index, std::int32_t n_features, CategoryBudget& budget) {
  const std::string path = "trees[" + std::to_string(index) + "]";
  const JsonValue& param = member(tree, "tree_param", path);
  const std::int64_t n = parse_int(param_string(param, "num_nodes", path + ".tree_param"), "num_nodes");
  if (n <= 0 || n > kMaxNodes) fail(path + " has an invalid num_nodes");
  if (const JsonValue* leaf = param.find("size_leaf_vector")) {
    const std::string s = leaf->type == JsonValue::Type::String ? leaf->string : std::to_string(leaf->number);
    if (leaf->type == JsonValue::Type::String ? parse_int(s, "size_leaf_vector") > 1 : leaf->number > 1) {
      fail("vector-leaf trees (multi_strategy='multi_output_tree') are not supported");
    }
  }
  const auto un = static_cast<std::size_t>(n);
  const auto& left = numbers(tree, "left_children", path, un);
  const auto& right = numbers(tree, "right_children", path, un);
  const auto& cond = numbers(tree, "split_conditions", path, un);
  const auto& index_of = numbers(tree, "split_indices", path, un);
  const auto& def = numbers(tree, "default_left", path, un);

  TreeInput t;
  t.left.resize(un);
  t.right.resize(un);
  t.feature.resize(un);
  t.threshold.resize(un);
  t.value.resize(un);
  t.default_left.resize(un);
  auto as_id = [&](double d, const char* what) {
    if (!(d >= -1.0 && d < static_cast<double>(n)) || d != std::floor(d)) {
      fail(path + " has an invalid " + std::string(what));
    }
    return static_cast<std::int32_t>(d);
  };
  for (std::size_t k = 0; k < un; ++k) {
    t.left[k] = as_id(left[k], "left child");
    t.right[k] = as_id(right[k], "right child");
    const double f = index_of[k];
    if (!(f >= 0.0 && f < static_cast<double>(n_features)) || f != std::floor(f)) {
      // Leaves carry a split index too (0); only inner nodes must be valid.
      if (t.left[k] != -1) fail(path + " splits on a feature outside [0, num_feature)");
      t.feature[k] = 0;
    } else {
      t.feature[k] = static_cast<std::int32_t>(f);
    }
    // XGBoost holds split values and leaf values as float32.
    const double c = static_cast<double>(to_float32(cond[k]));
    if (!std::isfinite(c) && std::isfinite(cond[k])) fail(path + " has a value outside float32 range");
    t.threshold[k] = c;
    t.value[k] = c;
    t.default_left[k] = def[k] != 0.0 ? 1 : 0;
  }

  // Categorical splits: split_type 1, categories listed per node in segments.
  if (const JsonValue* split_type = tree.find("split_type")) {
    const auto& types = numbers(tree, "split_type", path, un);
    (void)split_type;
    bool any = false;
    for (std::size_t k = 0; k < un; ++k) {
      // XGBoost writes 0 (numeric) or 1 (categorical); its reader casts anything else to its
      // uint8 enum, reading 2, 255 or -1 as numeric and 257 as categorical: refuse, not guess.
      if (types[k] != 0.0 && types[k] != 1.0) {
        fail(path + ".split_type holds " + number_text(types[k]) + " at node " + std::to_string(k) +
             "; XGBoost writes only 0 (numeric) or 1 (categorical) there (re-save the model with XGBoost)");
      }
      any = any || types[k] != 0.0;
    }
    if (any) {
      const auto& nodes = numbers(tree, "categories_nodes", path, SIZE_MAX);
      const auto& segments = numbers(tree, "categories_segments", path, nodes.size());
      const auto& sizes = numbers(tree, "categories_sizes", path, nodes.size());
      const auto& cats = numbers(tree, "categories", path, SIZE_MAX);
      std::vector<std::uint8_t> listed(un, 0);
      for (std::size_t k = 0; k < nodes.size(); ++k) {
        const std::int32_t node = as_id(nodes[k], "categorical node");
        if (node < 0 || types[node] == 0.0) fail(path + " lists categories for a numeric node");
        if (listed[node]) fail(path + " lists categories for node " + std::to_string(node) + " twice");
        listed[node] = 1;
        const double b = segments[k];
        const double s = sizes[k];
        if (!(b >= 0 && s >= 0 && b + s <= static_cast<double>(cats.size())) || b != std::floor(b) || s != std::floor(s)) {
          fail(path + " has an invalid category segment");
        }
        // Size the bitset by the largest category, and charge it to the model's budget, before
        // allocating: a single large category value costs a dense set.
        double largest = -1.0;
        for (auto c = static_cast<std::size_t>(b); c < static_cast<std::size_t>(b + s); ++c) {
          const double cat = cats[c];
          if (!(cat >= 0.0 && cat < static_cast<double>(kMaxCategory)) || cat != std::floor(cat)) {
            fail(path + " has an invalid category value");
          }
          largest = std::max(largest, cat);
        }
        const std::size_t n_words = largest < 0.0 ? 0 : static_cast<std::size_t>(largest) / 32 + 1;
        budget.charge(static_cast<std::int64_t>(n_words));
        std::vector<std::uint32_t> bits(n_words, 0u);
        for (auto c = static_cast<std::size_t>(b); c < static_cast<std::size_t>(b + s); ++c) {
          const auto cu = static_cast<std::size_t>(cats[c]);
          bits[cu / 32] |= 1u << (cu % 32);
        }
        t.cat_nodes.push_back(node);
        t.cat_bitsets.push_back(std::move(bits));
      }
      for (std::size_t k = 0; k < un; ++k) {
        if (types[k] != 0.0 && t.left[k] != -1 && !listed[k]) fail(path + " has a categorical node without categories");
      }
    }
  }
  return t;
}

bool looks_like_text_json(std::string_view bytes) {
  for (char c : bytes) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c != '{') return false;
    break;
  }
  // Text JSON: '{' then whitespace, '"' or '}'. UBJSON: '{' then a type marker.
  std::size_t k = bytes.find('{');
  if (k == std::string_view::npos) return false;
  for (++k; k < bytes.size(); ++k) {
    const char c = bytes[k];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '"' || c == '}';
  }
  return false;
}

}  // namespace

ModelInput parse_xgboost_json(std::string_view bytes, std::int64_t n_iterations, XGBoostModelInfo* info) {
  if (bytes.empty()) fail("empty input");
  const JsonValue doc = looks_like_text_json(bytes) ? parse_json(bytes) : parse_ubjson(bytes);
  XGBoostModelInfo meta;
  if (const JsonValue* version = doc.find("version")) {
    // Converting a double outside int64 (1e999 reads as inf) is undefined: check each entry.
    for (double v : version->numbers) {
      if (!(v >= 0.0 && v < 1e9) || v != std::floor(v)) fail("version is not a list of small non-negative integers");
      meta.version.push_back(static_cast<std::int64_t>(v));
    }
  }
  const JsonValue& learner = member(doc, "learner", "model");
  meta.feature_names = string_list(learner.find("feature_names"));
  meta.feature_types = string_list(learner.find("feature_types"));

  const JsonValue& lparam = member(learner, "learner_model_param", "learner");
  const std::int64_t num_feature = parse_int(param_string(lparam, "num_feature", "learner_model_param"), "num_feature");
  if (num_feature <= 0 || num_feature > kMaxFeatures) fail("num_feature is out of range");
  const std::int64_t num_class = parse_int(param_string(lparam, "num_class", "learner_model_param"), "num_class");
  std::int64_t num_target = 1;
  if (lparam.find("num_target") != nullptr) {
    num_target = parse_int(param_string(lparam, "num_target", "learner_model_param"), "num_target");
  }
  if (num_class < 0 || num_class > 1000000 || num_target < 1 || num_target > 1000000) fail("num_class / num_target out of range");
  meta.num_class = static_cast<std::int32_t>(num_class);
  meta.n_outputs = static_cast<std::int32_t>(std::max<std::int64_t>({num_class, num_target, 1}));
  if (!meta.feature_names.empty() && meta.feature_names.size() != static_cast<std::size_t>(num_feature)) {
    fail("feature_names has " + std::to_string(meta.feature_names.size()) + " entries, num_feature is " +
         std::to_string(num_feature));
  }
  if (!meta.feature_types.empty() && meta.feature_types.size() != static_cast<std::size_t>(num_feature)) {
    // XGBoost refuses to predict with such a model (one type per column)
    fail("feature_types has " + std::to_string(meta.feature_types.size()) + " entries, num_feature is " +
         std::to_string(num_feature));
  }
  {
    // XGBoost itself refuses repeated names; columns could not be matched by name with them.
    std::vector<std::string_view> sorted(meta.feature_names.begin(), meta.feature_names.end());
    std::sort(sorted.begin(), sorted.end());
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) fail("feature_names lists '" + std::string(dup->substr(0, 60)) + "' twice");
  }

  const JsonValue& objective = member(learner, "objective", "learner");
  const JsonValue& obj_name = member(objective, "name", "learner.objective");
  if (obj_name.type != JsonValue::Type::String) fail("objective name is not a string");
  meta.objective = obj_name.string;

  const JsonValue& booster = member(learner, "gradient_booster", "learner");
  const JsonValue& bname = member(booster, "name", "gradient_booster");
  if (bname.type != JsonValue::Type::String) fail("booster name is not a string");
  meta.booster = bname.string;
  const JsonValue* gbtree = &booster;
  const std::vector<double>* weight_drop = nullptr;
  if (meta.booster == "dart") {
    gbtree = &member(booster, "gbtree", "gradient_booster");
    weight_drop = &numbers(booster, "weight_drop", "gradient_booster", SIZE_MAX);
  } else if (meta.booster == "gblinear") {
    fail("gblinear models have no trees; pgexact needs a tree booster");
  } else if (meta.booster != "gbtree") {
    fail("unknown booster '" + meta.booster + "'");
  }
  const JsonValue& model = member(*gbtree, "model", "gbtree");
  const JsonValue& trees = member(model, "trees", "gbtree.model");
  if (!trees.is_array() || !trees.numbers.empty()) fail("gbtree.model.trees is not an array of trees");
  const std::size_t n_trees = trees.items.size();
  const auto& tree_info = numbers(model, "tree_info", "gbtree.model", n_trees);
  if (weight_drop != nullptr && weight_drop->size() != n_trees) fail("weight_drop length differs from the number of trees");

  // iteration_indptr[i] .. [i+1] are the trees of boosting round i (absent in old files:
  // then every round has the same number of trees, num_parallel_tree * outputs).
  std::vector<std::size_t> indptr;
  if (const JsonValue* ip = model.find("iteration_indptr")) {
    if (!ip->items.empty()) fail("iteration_indptr is not numeric");
    for (double d : ip->numbers) {
      if (!(d >= 0 && d <= static_cast<double>(n_trees)) || d != std::floor(d)) fail("iteration_indptr is out of range");
      if (!indptr.empty() && d < static_cast<double>(indptr.back())) fail("iteration_indptr is not increasing");
      indptr.push_back(static_cast<std::size_t>(d));
    }
    if (indptr.empty() || indptr.front() != 0 || indptr.back() != n_trees) fail("iteration_indptr does not cover the trees");
  } else {
    std::int64_t per_round = meta.n_outputs;
    if (const JsonValue* gp = model.find("gbtree_model_param")) {
      if (gp->find("num_parallel_tree") != nullptr) {
        const std::int64_t parallel =
            parse_int(param_string(*gp, "num_parallel_tree", "gbtree_model_param"), "num_parallel_tree");
        if (parallel > 1000000) fail("num_parallel_tree is out of range");
        per_round *= std::max<std::int64_t>(1, parallel);  // <= 10^12: no overflow
      }
    }
    for (std::size_t k = 0; k <= n_trees; k += static_cast<std::size_t>(per_round)) indptr.push_back(k);
    if (indptr.back() != n_trees) indptr.push_back(n_trees);
  }
  meta.n_iterations = static_cast<std::int64_t>(indptr.size()) - 1;
  if (const JsonValue* attrs = learner.find("attributes")) {
    if (const JsonValue* best = attrs->find("best_iteration")) {
      if (best->type == JsonValue::Type::String) meta.best_iteration = parse_int(best->string, "best_iteration");
    }
  }
  std::size_t use_trees = n_trees;
  if (n_iterations >= 0) {
    if (n_iterations > meta.n_iterations) {
      fail("asked for " + std::to_string(n_iterations) + " iterations, the model has " + std::to_string(meta.n_iterations));
    }
    use_trees = indptr[static_cast<std::size_t>(n_iterations)];
  }

  ModelInput input;
  input.n_features = static_cast<std::int32_t>(num_feature);
  input.op = SplitOp::Less;
  input.input_float32 = true;
  input.category_rule = CategoryRule::XGBoost;

  std::vector<double> base = parse_float_list(param_string(lparam, "base_score", "learner_model_param"));
  if (base.size() == 1 && meta.n_outputs > 1) base.assign(static_cast<std::size_t>(meta.n_outputs), base[0]);
  if (base.size() != static_cast<std::size_t>(meta.n_outputs)) fail("base_score has the wrong number of values");
  for (double& b : base) b = link(meta.objective, b);
  input.base_score = std::move(base);

  input.trees.reserve(use_trees);
  CategoryBudget budget;
  for (std::size_t k = 0; k < use_trees; ++k) {
    TreeInput t = parse_tree(trees.items[k], k, input.n_features, budget);
    const double out = tree_info[k];
    if (!(out >= 0 && out < meta.n_outputs) || out != std::floor(out)) fail("tree_info has an output out of range");
    t.output = static_cast<std::int32_t>(out);
    // DART scales each tree's leaves by its weight at prediction time.
    if (weight_drop != nullptr) t.weight = static_cast<double>(to_float32((*weight_drop)[k]));
    input.trees.push_back(std::move(t));
  }
  refuse_float32_overflow(input);
  // Strings handed to Python must decode: a corrupted byte would surface as a bare
  // UnicodeDecodeError instead of a message about the model.
  for (const auto* list : {&meta.feature_names, &meta.feature_types}) {
    for (const std::string& s : *list) {
      if (!is_valid_utf8(s)) fail("feature names / types are not valid UTF-8");
    }
  }
  if (!is_valid_utf8(meta.objective) || !is_valid_utf8(meta.booster)) fail("objective or booster name is not valid UTF-8");
  if (info != nullptr) *info = std::move(meta);
  return input;
}

}  // namespace pgexact
