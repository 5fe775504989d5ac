#include "pgexact/model/catboost_parser.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "pgexact/model/json.hpp"

namespace pgexact {
namespace {

[[noreturn]] void fail(const std::string& what) { throw ModelError("CatBoost model: " + what); }

// Oblivious trees deeper than this would need more than 2^31 nodes.
constexpr std::size_t kMaxObliviousDepth = 29;

const JsonValue& member(const JsonValue& obj, std::string_view key, const std::string& path) {
  if (!obj.is_object()) fail(path + " is not an object");
  return obj.at(key, path);
}

const std::string& string_member(const JsonValue& obj, std::string_view key, const std::string& path) {
  const JsonValue& v = member(obj, key, path);
  if (v.type != JsonValue::Type::String) fail(path + "." + std::string(key) + " is not a string");
  return v.string;
}

// A non-negative integer member below `limit`.
std::int64_t index_member(const JsonValue& obj, std::string_view key, const std::string& path, double limit) {
  const JsonValue& v = member(obj, key, path);
  if (v.type != JsonValue::Type::Number || !(v.number >= 0.0 && v.number < limit) ||
      v.number != std::floor(v.number)) {
    fail(path + "." + std::string(key) + " is not an integer in range");
  }
  return static_cast<std::int64_t>(v.number);
}

// CatBoost's JSON reader keeps an integer token (no '.' or exponent) as a 64-bit integer and
// reads one beyond 2^53 (that fits 64 bits) as 0 where it wants a double: refuse rather than
// guess. (CatBoost writes such integers in model_info, which pgexact does not read.)
void exact_number(const JsonValue& v, const std::string& what) {
  if (v.inexact_integer) {
    fail(what + " holds an integer beyond 2^53, which CatBoost's JSON reader does not read as its "
         "value; write it as a decimal (e.g. with '.0')");
  }
}

const std::vector<double>& numbers(const JsonValue& obj, std::string_view key, const std::string& path) {
  const JsonValue& v = member(obj, key, path);
  if (!v.is_array() || !v.items.empty()) fail(path + "." + std::string(key) + " is not a numeric array");
  exact_number(v, path + "." + std::string(key));
  return v.numbers;
}

// An optional array member: empty when absent or null; anything but an array is malformed.
const std::vector<JsonValue>& objects(const JsonValue& obj, std::string_view key, const std::string& path) {
  static const std::vector<JsonValue> kNone;
  const JsonValue* v = obj.find(key);
  if (v == nullptr || v->type == JsonValue::Type::Null) return kNone;
  if (!v->is_array() || !v->numbers.empty()) fail(path + "." + std::string(key) + " is not an array of objects");
  return v->items;
}

struct FloatFeature {
  std::int32_t column = -1;     // flat feature index: the input column
  std::vector<float> borders;   // strictly increasing, finite
  std::int64_t first_split = 0; // CatBoost's split_index of borders[0]
  bool nan_goes_right = false;  // "AsTrue" on a feature that has NaNs: NaN is read as +inf
};

// "'name' (column 3)", or "column 3" for an unnamed feature.
std::string describe(const JsonValue& feature, const std::string& path) {
  const std::int64_t column = index_member(feature, "flat_feature_index", path, kMaxFeatures);
  std::string name;
  if (const JsonValue* id = feature.find("feature_id")) {
    if (id->type == JsonValue::Type::String && is_valid_utf8(id->string)) name = id->string.substr(0, 60);
  }
  const std::string where = "column " + std::to_string(column);
  return name.empty() ? where : "'" + name + "' (" + where + ")";
}

// Every split object of the trees, oblivious or not (for the categorical pre-scan).
void collect_splits(const JsonValue& doc, std::vector<const JsonValue*>* out) {
  for (const JsonValue& tree : objects(doc, "oblivious_trees", "model")) {
    if (!tree.is_object()) fail("oblivious_trees holds a non-object");
    for (const JsonValue& split : objects(tree, "splits", "oblivious tree")) out->push_back(&split);
  }
  std::vector<const JsonValue*> stack;
  for (const JsonValue& tree : objects(doc, "trees", "model")) stack.push_back(&tree);
  while (!stack.empty()) {
    const JsonValue* node = stack.back();
    stack.pop_back();
    if (!node->is_object()) fail("a tree node is not an object");
    if (const JsonValue* split = node->find("split")) out->push_back(split);
    for (const char* child : {"left", "right"}) {
      if (const JsonValue* c = node->find(child)) stack.push_back(c);
    }
  }
}

// Categorical, text and embedding features: refused, naming the feature and why.
void refuse_non_float_features(const JsonValue& doc, const JsonValue& features) {
  for (const char* kind : {"text_features", "embedding_features"}) {
    const auto& list = objects(features, kind, "features_info");
    if (!list.empty()) {
      const std::string what = std::string(kind) == "text_features" ? "text" : "embedding";
      fail("has " + what + " feature " + describe(list.front(), std::string("features_info.") + kind) +
           "; pgexact perturbs numeric columns only and does not support " + what + " features");
    }
  }
  const auto& cats = objects(features, "categorical_features", "features_info");
  if (cats.empty()) return;
  auto cat_named = [&](double index) {
    for (const JsonValue& c : cats) {
      const JsonValue* fi = c.is_object() ? c.find("feature_index") : nullptr;
      if (fi != nullptr && fi->type == JsonValue::Type::Number && fi->number == index) {
        return describe(c, "features_info.categorical_features");
      }
    }
    return std::string("categorical feature #") + std::to_string(static_cast<long long>(index));
  };
  std::vector<const JsonValue*> splits;
  collect_splits(doc, &splits);
  bool ctr = doc.find("ctr_data") != nullptr;
  std::string one_hot;
  for (const JsonValue* s : splits) {
    const JsonValue* type = s->is_object() ? s->find("split_type") : nullptr;
    if (type == nullptr || type->type != JsonValue::Type::String) continue;
    if (type->string == "OnlineCtr") ctr = true;
    if (type->string == "OneHotFeature" && one_hot.empty()) {
      const JsonValue* k = s->find("cat_feature_index");
      one_hot = k != nullptr && k->type == JsonValue::Type::Number ? cat_named(k->number) : "a categorical feature";
    }
  }
  if (ctr) {
    std::string sources;
    for (const JsonValue& c : objects(features, "ctrs", "features_info")) {
      for (const JsonValue& e : objects(c, "elements", "features_info.ctrs")) {
        const JsonValue* k = e.is_object() ? e.find("cat_feature_index") : nullptr;
        if (k == nullptr || k->type != JsonValue::Type::Number) continue;
        const std::string named = cat_named(k->number);
        if (sources.find(named) == std::string::npos) sources += (sources.empty() ? "" : ", ") + named;
      }
    }
    if (sources.empty()) sources = describe(cats.front(), "features_info.categorical_features");
    fail("splits on CTR features computed from categorical feature(s) " + sources +
         ": a CTR is a target statistic CatBoost learned per category value, not a function of an "
         "additively perturbed column, so pgexact cannot evaluate perturbations of it; encode the "
         "column numerically (or drop it) and retrain");
  }
  if (!one_hot.empty()) {
    fail("splits on categorical feature " + one_hot +
         " by one-hot value; pgexact does not perturb categorical features yet; encode the column "
         "numerically and retrain");
  }
  fail("declares categorical feature " + describe(cats.front(), "features_info.categorical_features") +
       ", which CatBoost's predict reads as category values; pgexact perturbs numeric columns only; "
       "train without cat_features");
}

// CatBoost's reader takes the float features in file order, numbered by position, with
// increasing input columns (it fails or crashes otherwise); each border is one binary feature,
// numbered across features in that order (a split's `split_index`).
std::vector<FloatFeature> read_float_features(const JsonValue& features, CatBoostModelInfo* meta) {
  const auto& list = objects(features, "float_features", "features_info");
  std::vector<FloatFeature> out(list.size());
  std::int64_t n_splits = 0;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const std::string path = "float_features[" + std::to_string(k) + "]";
    const JsonValue& f = list[k];
    if (index_member(f, "feature_index", path, kMaxFeatures) != static_cast<std::int64_t>(k)) {
      fail(path + ": feature_index is not its position " + std::to_string(k));
    }
    FloatFeature& ff = out[k];
    ff.column = static_cast<std::int32_t>(index_member(f, "flat_feature_index", path, kMaxFeatures));
    if (k > 0 && ff.column <= out[k - 1].column) fail(path + ": flat_feature_index is not increasing");
    for (double b : numbers(f, "borders", path)) {
      const float b32 = to_float32(b);
      if (!std::isfinite(b32)) fail(path + " has a border that is not a finite float32");
      if (!ff.borders.empty() && !(b32 > ff.borders.back())) fail(path + " has borders that are not increasing");
      ff.borders.push_back(b32);
    }
    ff.first_split = n_splits;
    n_splits += static_cast<std::int64_t>(ff.borders.size());
    const std::string& treatment = string_member(f, "nan_value_treatment", path);
    if (treatment != "AsIs" && treatment != "AsFalse" && treatment != "AsTrue") {
      fail(path + " has an unknown nan_value_treatment '" + treatment.substr(0, 40) + "'");
    }
    // CatBoost substitutes +inf for NaN only on a feature marked has_nans (absent: false).
    bool has_nans = false;
    if (const JsonValue* hn = f.find("has_nans")) {
      if (hn->type != JsonValue::Type::Bool) fail(path + ".has_nans is not true or false");
      has_nans = hn->number != 0.0;
    }
    ff.nan_goes_right = treatment == "AsTrue" && has_nans;
    const std::string name = f.find("feature_id") != nullptr ? string_member(f, "feature_id", path) : std::string();
    if (!is_valid_utf8(name)) fail(path + ": feature_id is not valid UTF-8");
    meta->feature_names.resize(static_cast<std::size_t>(ff.column) + 1);
    meta->nan_treatment.resize(static_cast<std::size_t>(ff.column) + 1);
    meta->feature_names[ff.column] = name;
    meta->nan_treatment[ff.column] = ff.nan_goes_right ? "AsTrue" : treatment == "AsTrue" ? "AsIs" : treatment;
  }
  // CatBoost refuses repeated names; columns could not be matched by name with them.
  std::vector<std::string_view> sorted;
  for (const std::string& s : meta->feature_names) {
    if (!s.empty()) sorted.push_back(s);
  }
  std::sort(sorted.begin(), sorted.end());
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) fail("feature_id '" + std::string(dup->substr(0, 60)) + "' names two features");
  return out;
}

struct Split {
  std::int32_t column;
  double border;
  bool nan_goes_right;
};

std::string shortest(double v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// CatBoost's reader takes a split from its split_index alone; the split's float_feature_index
// and border must name the same border, or the file is refused rather than read one way.
Split read_split(const JsonValue& split, const std::vector<FloatFeature>& floats, const std::string& path) {
  const std::string& type = string_member(split, "split_type", path);
  if (type != "FloatFeature") fail(path + " has split type '" + type.substr(0, 40) + "', which pgexact does not support");
  const std::int64_t n_splits = floats.empty() ? 0 : floats.back().first_split + static_cast<std::int64_t>(floats.back().borders.size());
  const std::int64_t index = index_member(split, "split_index", path, static_cast<double>(n_splits));
  const auto owner = std::upper_bound(floats.begin(), floats.end(), index,
                                      [](std::int64_t i, const FloatFeature& f) { return i < f.first_split; }) - 1;
  const auto k = static_cast<std::size_t>(owner - floats.begin());
  const float border = owner->borders[static_cast<std::size_t>(index - owner->first_split)];
  const JsonValue& f = member(split, "float_feature_index", path);
  const JsonValue& b = member(split, "border", path);
  if (f.type != JsonValue::Type::Number || f.number != static_cast<double>(k) || b.type != JsonValue::Type::Number ||
      to_float32(b.number) != border) {
    fail(path + ": split_index " + std::to_string(index) + " is float feature " + std::to_string(k) + "'s border " +
         shortest(static_cast<double>(border)) + ", but the split names float feature " +
         (f.type == JsonValue::Type::Number ? shortest(f.number) : "?") + ", border " +
         (b.type == JsonValue::Type::Number ? shortest(b.number) : "?") +
         " (CatBoost reads split_index alone)");
  }
  return {owner->column, static_cast<double>(border), owner->nan_goes_right};
}

// One tree's structure with `dim` leaf values per node (leaf-major), before it is split into
// one TreeInput per output.
struct VectorTree {
  TreeInput shape;
  std::vector<double> values;  // node * dim + output
};

void add_node(VectorTree& t, std::size_t dim) {
  if (t.shape.left.size() >= static_cast<std::size_t>(kMaxNodes)) fail("a tree has more than 2^30 nodes");
  t.shape.left.push_back(-1);
  t.shape.right.push_back(-1);
  t.shape.feature.push_back(0);
  t.shape.threshold.push_back(0.0);
  t.shape.value.push_back(0.0);
  t.shape.default_left.push_back(1);
  t.values.resize(t.values.size() + dim, 0.0);
}

void set_split(VectorTree& t, std::size_t node, const Split& s) {
  t.shape.feature[node] = s.column;
  t.shape.threshold[node] = s.border;
  t.shape.default_left[node] = s.nan_goes_right ? 0 : 1;
}

// Oblivious tree: complete binary tree in heap order (children of i at 2i+1, 2i+2); level k
// tests split k, whose outcome is bit k of CatBoost's leaf index.
VectorTree oblivious_tree(const JsonValue& tree, const std::vector<FloatFeature>& floats, std::size_t dim,
                          const std::string& path) {
  const auto& splits = objects(tree, "splits", path);
  const std::size_t depth = splits.size();
  if (depth > kMaxObliviousDepth) fail(path + " is deeper than " + std::to_string(kMaxObliviousDepth) + " levels");
  const auto& leaves = numbers(tree, "leaf_values", path);
  const std::size_t n_leaves = std::size_t{1} << depth;
  if (leaves.size() != n_leaves * dim) {
    fail(path + ".leaf_values has " + std::to_string(leaves.size()) + " entries, expected " +
         std::to_string(n_leaves * dim) + " (2^depth leaves x " + std::to_string(dim) + " outputs)");
  }
  std::vector<Split> level;
  for (std::size_t k = 0; k < depth; ++k) {
    level.push_back(read_split(splits[k], floats, path + ".splits[" + std::to_string(k) + "]"));
  }
  VectorTree t;
  const std::size_t n_nodes = 2 * n_leaves - 1;
  for (std::size_t i = 0; i < n_nodes; ++i) add_node(t, dim);
  for (std::size_t i = 0; i + 1 < n_leaves; ++i) {
    std::size_t lv = 0;
    while (((std::size_t{2} << lv) - 1) <= i) ++lv;  // level of heap node i
    t.shape.left[i] = static_cast<std::int32_t>(2 * i + 1);
    t.shape.right[i] = static_cast<std::int32_t>(2 * i + 2);
    set_split(t, i, level[lv]);
  }
  for (std::size_t r = 0; r < n_leaves; ++r) {
    // r's bits from the most significant are the outcomes from the root down; CatBoost's
    // leaf index holds the root's outcome in bit 0.
    std::size_t index = 0;
    for (std::size_t k = 0; k < depth; ++k) index |= ((r >> (depth - 1 - k)) & 1u) << k;
    const std::size_t node = n_leaves - 1 + r;
    for (std::size_t o = 0; o < dim; ++o) t.values[node * dim + o] = leaves[index * dim + o];
  }
  return t;
}

// Non-symmetric tree (grow_policy Depthwise / Lossguide): nested {split, left, right} objects,
// leaves {value}; "right" is the side where float32(x) > border.
VectorTree nested_tree(const JsonValue& root, const std::vector<FloatFeature>& floats, std::size_t dim,
                       const std::string& path) {
  VectorTree t;
  add_node(t, dim);
  std::vector<std::pair<const JsonValue*, std::size_t>> stack{{&root, 0}};
  while (!stack.empty()) {
    const auto [node, id] = stack.back();
    stack.pop_back();
    if (!node->is_object()) fail(path + " has a node that is not an object");
    if (const JsonValue* split = node->find("split")) {
      set_split(t, id, read_split(*split, floats, path + " split"));
      const JsonValue& l = member(*node, "left", path);
      const JsonValue& r = member(*node, "right", path);
      add_node(t, dim);
      add_node(t, dim);
      const std::size_t lid = t.shape.left.size() - 2;
      t.shape.left[id] = static_cast<std::int32_t>(lid);
      t.shape.right[id] = static_cast<std::int32_t>(lid + 1);
      stack.push_back({&r, lid + 1});
      stack.push_back({&l, lid});
      continue;
    }
    const JsonValue& v = member(*node, "value", path + " leaf");
    exact_number(v, path + " leaf value");
    if (v.type == JsonValue::Type::Number && dim == 1) {
      t.values[id] = v.number;
    } else if (v.is_array() && v.items.empty() && v.numbers.size() == dim) {
      std::copy(v.numbers.begin(), v.numbers.end(), t.values.begin() + static_cast<std::ptrdiff_t>(id * dim));
    } else {
      fail(path + " has a leaf value that is not " + std::to_string(dim) + " number(s)");
    }
  }
  return t;
}

// Outputs per leaf when scale_and_bias does not say: from the first tree.
std::size_t infer_dim(const JsonValue& doc) {
  for (const JsonValue& tree : objects(doc, "oblivious_trees", "model")) {
    const std::size_t leaves = std::size_t{1} << std::min(objects(tree, "splits", "tree").size(), kMaxObliviousDepth);
    return std::max<std::size_t>(1, numbers(tree, "leaf_values", "oblivious_trees[0]").size() / leaves);
  }
  for (const JsonValue& tree : objects(doc, "trees", "model")) {
    const JsonValue* node = &tree;
    while (node->is_object() && node->find("split") != nullptr && node->find("left") != nullptr) node = node->find("left");
    const JsonValue* v = node->is_object() ? node->find("value") : nullptr;
    if (v != nullptr && v->is_array()) return std::max<std::size_t>(1, v->numbers.size());
    return 1;
  }
  return 1;
}

// CatBoost's predict maps a model's outputs through model_info.class_params: output k of the
// trees becomes column class_to_label[k] of max(classes_count, len(class_names)) columns, the
// others -inf (and a binary model with more than two class_names is refused at predict). The
// files CatBoost writes from a fit on the trees' classes hold the identity there; anything else
// (more class names than outputs, a permutation, a classes_count beyond the outputs) is refused
// rather than mapped.
void check_class_params(const JsonValue& doc, std::size_t dim) {
  const JsonValue* info = doc.find("model_info");
  const JsonValue* cp = info != nullptr && info->is_object() ? info->find("class_params") : nullptr;
  if (cp == nullptr) return;
  if (!cp->is_object()) fail("model_info.class_params is not an object");
  const std::string outputs = std::to_string(dim) + " output" + (dim == 1 ? "" : "s");
  const JsonValue* names = cp->find("class_names");
  const std::size_t n_names = names == nullptr || names->type == JsonValue::Type::Null ? 0 : names->size();
  if (names != nullptr && names->type != JsonValue::Type::Null && !names->is_array()) {
    fail("model_info.class_params.class_names is not a list");
  }
  if (dim == 1) {
    if (n_names > 2) {
      fail("model_info.class_params.class_names lists " + std::to_string(n_names) +
           " classes for trees with 1 output (CatBoost itself refuses to predict with it)");
    }
    return;
  }
  if (n_names != 0 && n_names != dim) {
    fail("model_info.class_params.class_names lists " + std::to_string(n_names) + " classes but the trees have " +
         outputs + "; CatBoost would predict " + (n_names > dim ? "-inf for the classes without one" : "only some of them") +
         ", so pgexact refuses the model (fit it on data with every class, or without class_names)");
  }
  if (const JsonValue* count = cp->find("classes_count")) {
    if (count->type != JsonValue::Type::Number || !(count->number == 0.0 || count->number == static_cast<double>(dim))) {
      fail("model_info.class_params.classes_count is not 0 or the trees' " + outputs +
           " (CatBoost would predict -inf for the classes without an output)");
    }
  }
  const JsonValue* map = cp->find("class_to_label");
  bool identity = map != nullptr && map->is_array() && map->items.empty() && map->numbers.size() == dim;
  for (std::size_t k = 0; identity && k < dim; ++k) identity = map->numbers[k] == static_cast<double>(k);
  if (!identity) {
    fail("model_info.class_params.class_to_label is not [0, 1, ..., " + std::to_string(dim - 1) +
         "]; CatBoost reorders or drops its outputs by it, and pgexact refuses rather than guess "
         "(re-save the model with CatBoost)");
  }
}

}  // namespace

ModelInput parse_catboost_json(std::string_view text, std::int64_t n_trees, CatBoostModelInfo* info) {
  if (text.empty()) fail("empty input");
  std::size_t out_of_range = std::string_view::npos;
  const JsonValue doc = parse_json(text, &out_of_range);

  if (!doc.is_object()) fail("the document is not a JSON object");
  const JsonValue& features = member(doc, "features_info", "model");
  refuse_non_float_features(doc, features);
  CatBoostModelInfo meta;
  const std::vector<FloatFeature> floats = read_float_features(features, &meta);

  if (const JsonValue* mi = doc.find("model_info")) {
    const JsonValue* params = mi->find("params");
    const JsonValue* loss = params != nullptr ? params->find("loss_function") : nullptr;
    const JsonValue* type = loss != nullptr ? loss->find("type") : nullptr;
    if (type != nullptr && type->type == JsonValue::Type::String && is_valid_utf8(type->string)) {
      meta.loss_function = type->string;
    }
  }

  const bool oblivious = doc.find("oblivious_trees") != nullptr;
  const bool nested = doc.find("trees") != nullptr;
  if (oblivious == nested) fail("expected exactly one of oblivious_trees and trees");
  meta.tree_kind = oblivious ? "oblivious" : "non_symmetric";
  const auto& trees = objects(doc, oblivious ? "oblivious_trees" : "trees", "model");

  std::size_t dim = 0;
  if (const JsonValue* sb = doc.find("scale_and_bias")) {
    if (!sb->is_array() || sb->size() != 2) fail("scale_and_bias is not [scale, [bias, ...]]");
    const JsonValue* bias = nullptr;
    if (sb->items.empty()) {
      // [scale, bias] both numbers: CatBoost writes [scale, [bias, ...]] and its reader ignores
      // a bare number there (it predicts without the bias): refuse rather than guess.
      fail("scale_and_bias: the bias is the number " + shortest(sb->numbers[1]) +
           ", not a list; CatBoost writes [scale, [bias, ...]] and its reader ignores a bare number "
           "(re-save the model with CatBoost)");
    } else {
      if (sb->items[0].type != JsonValue::Type::Number) fail("scale_and_bias: scale is not a number");
      exact_number(sb->items[0], "scale_and_bias");
      meta.scale = sb->items[0].number;
      bias = &sb->items[1];
      if (!bias->is_array() || !bias->items.empty()) fail("scale_and_bias: bias is not a list of numbers");
      exact_number(*bias, "scale_and_bias");
      meta.bias = bias->numbers;
    }
    if (!std::isfinite(meta.scale)) fail("scale is not finite");
    dim = meta.bias.size();
    if (dim == 0) fail("scale_and_bias: bias is empty");
  } else {
    dim = infer_dim(doc);
    meta.bias.assign(dim, 0.0);
  }
  if (dim > 1000000) fail("too many outputs");
  check_class_params(doc, dim);
  meta.n_outputs = static_cast<std::int32_t>(dim);
  meta.n_trees = static_cast<std::int64_t>(trees.size());

  std::size_t use = trees.size();
  if (n_trees >= 0) {
    if (n_trees > meta.n_trees) {
      fail("asked for " + std::to_string(n_trees) + " trees, the model has " + std::to_string(meta.n_trees));
    }
    use = static_cast<std::size_t>(n_trees);
  }
  meta.n_trees_used = static_cast<std::int64_t>(use);

  ModelInput input;
  input.n_features = static_cast<std::int32_t>(meta.feature_names.size());
  input.op = SplitOp::LessEqual;   // left (bit 0) iff float32(x) <= border
  input.input_float32 = true;
  input.base_score = meta.bias;
  input.trees.reserve(use * dim);
  for (std::size_t k = 0; k < use; ++k) {
    const std::string path = (oblivious ? "oblivious_trees[" : "trees[") + std::to_string(k) + "]";
    VectorTree vt = oblivious ? oblivious_tree(trees[k], floats, dim, path) : nested_tree(trees[k], floats, dim, path);
    for (std::size_t o = 0; o < dim; ++o) {
      TreeInput t;
      if (o + 1 == dim) {
        t = std::move(vt.shape);
      } else {
        t = vt.shape;  // every output but the last gets a copy of the structure
      }
      for (std::size_t n = 0; n < t.value.size(); ++n) t.value[n] = vt.values[n * dim + o];
      t.output = static_cast<std::int32_t>(o);
      t.weight = meta.scale;
      input.trees.push_back(std::move(t));
    }
  }
  if (out_of_range != std::string_view::npos) {
    // CatBoost never writes a number beyond the double range, and its reader goes astray on one
    // in any field (it then reads other trees, outputs, scale and bias): refuse rather than
    // guess. (An infinite leaf, scale or bias is refused by name when the arena is built.)
    bool named_later = !std::isfinite(meta.scale);
    for (double b : meta.bias) named_later = named_later || !std::isfinite(b);
    for (const TreeInput& t : input.trees) {
      for (double v : t.value) named_later = named_later || !std::isfinite(v);
    }
    if (!named_later) {
      fail("the number at byte " + std::to_string(out_of_range) +
           " is beyond the double range, which CatBoost's JSON reader does not read as a number");
    }
  }
  if (info != nullptr) *info = std::move(meta);
  return input;
}

}  // namespace pgexact
