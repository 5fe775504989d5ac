#include "pgexact/model/lightgbm_parser.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "pgexact/model/json.hpp"  // is_valid_utf8

namespace pgexact {
namespace {

[[noreturn]] void fail(const std::string& what) { throw ModelError("LightGBM model: " + what); }

using KeyValues = std::map<std::string, std::string_view, std::less<>>;

// Hands out the lines of the text one by one (LF, CRLF or CR endings).
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  bool next(std::string_view* line) {
    if (pos_ >= text_.size()) return false;
    start_ = pos_;
    lf_start_ = lf_pos_;
    std::size_t end = pos_;
    while (end < text_.size() && text_[end] != '\n' && text_[end] != '\r') ++end;
    *line = text_.substr(pos_, end - pos_);
    lf_pos_ += (end - pos_) + (end < text_.size() ? 1 : 0);
    if (end < text_.size() && text_[end] == '\r') ++end;  // "\r" or "\r\n"
    if (end < text_.size() && text_[end] == '\n') ++end;
    pos_ = end;
    ++number_;
    return true;
  }
  std::size_t number() const { return number_; }
  // Byte offset of the line `next` returned last; and that offset were every line ending
  // one '\n' (the file LightGBM wrote, before a CRLF conversion).
  std::size_t start() const { return start_; }
  std::size_t lf_start() const { return lf_start_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t start_ = 0;
  std::size_t lf_pos_ = 0;
  std::size_t lf_start_ = 0;
  std::size_t number_ = 0;
};

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string shorten(std::string_view s) {
  constexpr std::size_t kMax = 60;
  return s.size() <= kMax ? std::string(s) : std::string(s.substr(0, kMax)) + "...";
}

std::vector<std::string_view> split_spaces(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t k = 0;
  while (k < s.size()) {
    while (k < s.size() && s[k] == ' ') ++k;
    std::size_t end = k;
    while (end < s.size() && s[end] != ' ') ++end;
    if (end > k) out.push_back(s.substr(k, end - k));
    k = end;
  }
  return out;
}

std::int64_t parse_int(std::string_view s, const std::string& what) {
  std::int64_t out = 0;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  const auto res = std::from_chars(first, last, out);
  if (res.ec != std::errc() || res.ptr != last) fail(what + " is not an integer: '" + shorten(s) + "'");
  return out;
}

double parse_double(std::string_view s, const std::string& what) {
  double out = 0.0;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (first < last && *first == '+') ++first;  // from_chars does not take a leading '+'
  const auto res = std::from_chars(first, last, out);
  if (res.ec != std::errc() || res.ptr != last) fail(what + " is not a number: '" + shorten(s) + "'");
  return out;
}

std::vector<std::int64_t> int_array(const KeyValues& kv, const char* key, std::size_t expected,
                                    const std::string& where) {
  const auto it = kv.find(key);
  if (it == kv.end()) fail(where + " has no " + key);
  const auto items = split_spaces(it->second);
  if (items.size() != expected) {
    fail(where + "." + key + " has " + std::to_string(items.size()) + " entries, expected " + std::to_string(expected));
  }
  std::vector<std::int64_t> out;
  out.reserve(expected);
  for (std::string_view s : items) out.push_back(parse_int(s, where + "." + key));
  return out;
}

std::vector<double> double_array(const KeyValues& kv, const char* key, std::size_t expected,
                                 const std::string& where) {
  const auto it = kv.find(key);
  if (it == kv.end()) fail(where + " has no " + key);
  const auto items = split_spaces(it->second);
  if (items.size() != expected) {
    fail(where + "." + key + " has " + std::to_string(items.size()) + " entries, expected " + std::to_string(expected));
  }
  std::vector<double> out;
  out.reserve(expected);
  for (std::string_view s : items) out.push_back(parse_double(s, where + "." + key));
  return out;
}

std::int64_t int_field(const KeyValues& kv, const char* key, const std::string& where) {
  const auto it = kv.find(key);
  if (it == kv.end()) fail(where + " has no " + key);
  return parse_int(trim(it->second), where + "." + key);
}

// "key=value" into kv (the key is everything before the first '='); a line without '=' is a
// flag such as "average_output".
void add_key_value(KeyValues& kv, std::string_view line, const std::string& where) {
  const std::size_t eq = line.find('=');
  const std::string key(trim(eq == std::string_view::npos ? line : line.substr(0, eq)));
  const std::string_view value = eq == std::string_view::npos ? std::string_view() : line.substr(eq + 1);
  if (key.empty()) fail(where + ": malformed line '" + shorten(line) + "'");
  if (!kv.emplace(key, value).second) fail(where + ": '" + key + "' appears twice");
}

// LightGBM's decision_type bits.
constexpr std::int64_t kCategoricalMask = 1;
constexpr std::int64_t kDefaultLeftMask = 2;

struct RawTree {
  KeyValues kv;
};

TreeInput build_tree(const RawTree& raw, std::size_t index, std::int32_t n_features, bool* has_categorical,
                     CategoryBudget& budget) {
  const std::string where = "Tree=" + std::to_string(index);
  const KeyValues& kv = raw.kv;
  if (const auto it = kv.find("is_linear"); it != kv.end() && parse_int(trim(it->second), where + ".is_linear") != 0) {
    fail("linear trees (linear_tree=True) are not supported: their leaves are linear functions of the "
         "input, not constants; retrain without linear_tree");
  }
  const std::int64_t n_leaves = int_field(kv, "num_leaves", where);
  if (n_leaves < 1 || n_leaves > kMaxNodes / 2) fail(where + " has an invalid num_leaves (" + std::to_string(n_leaves) + ")");
  const std::int64_t num_cat = int_field(kv, "num_cat", where);
  if (num_cat < 0 || num_cat >= n_leaves) fail(where + " has an invalid num_cat (" + std::to_string(num_cat) + ")");
  const auto L = static_cast<std::size_t>(n_leaves);
  const std::vector<double> leaf_value = double_array(kv, "leaf_value", L, where);

  TreeInput t;
  const std::size_t n_inner = L - 1;
  const std::size_t n = n_inner + L;  // inner nodes 0..L-2, then leaf j at L-1+j
  t.left.assign(n, -1);
  t.right.assign(n, -1);
  t.feature.assign(n, 0);
  t.threshold.assign(n, 0.0);
  t.value.assign(n, 0.0);
  t.default_left.assign(n, 0);
  t.missing.assign(n, static_cast<std::uint8_t>(MissingRule::NanDefault));
  for (std::size_t j = 0; j < L; ++j) {
    if (!std::isfinite(leaf_value[j])) fail(where + " leaf value is not finite");
    t.value[n_inner + j] = leaf_value[j];
  }
  if (L == 1) return t;  // a single leaf: LightGBM returns leaf_value[0] for every row

  const auto left = int_array(kv, "left_child", n_inner, where);
  const auto right = int_array(kv, "right_child", n_inner, where);
  const auto feature = int_array(kv, "split_feature", n_inner, where);
  const auto threshold = double_array(kv, "threshold", n_inner, where);
  std::vector<std::int64_t> decision(n_inner, 0);
  if (kv.count("decision_type") != 0) decision = int_array(kv, "decision_type", n_inner, where);

  std::vector<std::int64_t> cat_boundaries;
  std::vector<std::int64_t> cat_threshold;
  if (num_cat > 0) {
    cat_boundaries = int_array(kv, "cat_boundaries", static_cast<std::size_t>(num_cat) + 1, where);
    if (cat_boundaries.front() != 0) fail(where + ".cat_boundaries does not start at 0");
    for (std::size_t k = 1; k < cat_boundaries.size(); ++k) {
      if (cat_boundaries[k] < cat_boundaries[k - 1]) fail(where + ".cat_boundaries is not increasing");
    }
    if (cat_boundaries.back() > kMaxCategory / 32) fail(where + " has categorical sets that are too large");
    cat_threshold = int_array(kv, "cat_threshold", static_cast<std::size_t>(cat_boundaries.back()), where);
    for (std::int64_t w : cat_threshold) {
      if (w < 0 || w > std::numeric_limits<std::uint32_t>::max()) fail(where + ".cat_threshold has a value outside uint32");
    }
  }

  auto node_id = [&](std::int64_t child) -> std::int32_t {
    if (child >= 0) {
      if (child >= static_cast<std::int64_t>(n_inner)) fail(where + " has a child id out of range");
      return static_cast<std::int32_t>(child);
    }
    const std::int64_t leaf = ~child;  // LightGBM writes leaf j as ~j = -(j + 1)
    if (leaf >= n_leaves) fail(where + " has a leaf id out of range");
    return static_cast<std::int32_t>(n_inner + static_cast<std::size_t>(leaf));
  };

  for (std::size_t i = 0; i < n_inner; ++i) {
    const std::string node = where + " node " + std::to_string(i);
    t.left[i] = node_id(left[i]);
    t.right[i] = node_id(right[i]);
    if (feature[i] < 0 || feature[i] >= n_features) {
      fail(node + " splits on feature " + std::to_string(feature[i]) + ", outside [0, " + std::to_string(n_features) + ")");
    }
    t.feature[i] = static_cast<std::int32_t>(feature[i]);
    const std::int64_t dt = decision[i];
    if (dt < 0 || dt > 15) fail(node + " has an invalid decision_type " + std::to_string(dt));
    if (dt & kCategoricalMask) {
      if (num_cat == 0) fail(node + " is categorical but the tree has num_cat=0");
      // LightGBM's categorical decision: NaN or a negative int(x) goes right, whatever the
      // missing type and default direction; int(x) in the node's bitset goes left.
      const double c = threshold[i];
      if (!(c >= 0.0 && c < static_cast<double>(num_cat)) || c != std::floor(c)) {
        fail(node + " has an invalid categorical set index");
      }
      const auto idx = static_cast<std::size_t>(c);
      const auto begin = static_cast<std::size_t>(cat_boundaries[idx]);
      const auto end = static_cast<std::size_t>(cat_boundaries[idx + 1]);
      // Nodes may share a set in a hostile file: charge every copy before making it.
      budget.charge(static_cast<std::int64_t>(end - begin));
      std::vector<std::uint32_t> bits;
      bits.reserve(end - begin);
      for (std::size_t w = begin; w < end; ++w) bits.push_back(static_cast<std::uint32_t>(cat_threshold[w]));
      t.cat_nodes.push_back(static_cast<std::int32_t>(i));
      t.cat_bitsets.push_back(std::move(bits));
      t.threshold[i] = c;
      t.default_left[i] = 0;
      t.missing[i] = static_cast<std::uint8_t>(MissingRule::NanDefault);
      *has_categorical = true;
      continue;
    }
    if (std::isnan(threshold[i])) fail(node + " has a NaN threshold");
    t.threshold[i] = threshold[i];
    t.default_left[i] = (dt & kDefaultLeftMask) != 0 ? 1 : 0;
    switch ((dt >> 2) & 3) {
      case 0:  // None: NaN is read as 0
        t.missing[i] = static_cast<std::uint8_t>(MissingRule::NanAsZero);
        break;
      case 1:  // Zero: zero (|x| <= 1e-35) and NaN follow the default direction
        t.missing[i] = static_cast<std::uint8_t>(MissingRule::ZeroOrNanDefault);
        break;
      case 2:  // NaN: NaN follows the default direction
        t.missing[i] = static_cast<std::uint8_t>(MissingRule::NanDefaultZeroBand);
        break;
      default:
        fail(node + " has an unknown missing type in decision_type " + std::to_string(dt));
    }
  }
  return t;
}

// LightGBM reads tree i at the first tree's offset plus the sizes before it, and aborts (or
// reads another tree) when that is not where tree i starts: each size must be its tree's byte
// length, as LightGBM writes it. A file whose line endings were converted to CRLF afterwards is
// read as LightGBM reads the file it wrote (LightGBM itself aborts on the converted one).
void check_tree_sizes(const KeyValues& header, const std::vector<std::size_t>& starts,
                      const std::vector<std::size_t>& lf_starts) {
  const auto it = header.find("tree_sizes");
  if (it == header.end()) return;
  const auto sizes = split_spaces(it->second);
  bool raw = true;
  bool lf = true;
  for (std::size_t i = 0; i < sizes.size() && i + 1 < starts.size(); ++i) {
    const std::int64_t size = parse_int(sizes[i], "header.tree_sizes");
    raw = raw && size >= 0 && static_cast<std::size_t>(size) == starts[i + 1] - starts[i];
    lf = lf && size >= 0 && static_cast<std::size_t>(size) == lf_starts[i + 1] - lf_starts[i];
    if (!raw && !lf) {
      fail("tree_sizes gives Tree=" + std::to_string(i) + " " + shorten(sizes[i]) + " bytes, the text has " +
           std::to_string(starts[i + 1] - starts[i]) +
           " (LightGBM finds its trees by these sizes; re-save the model with LightGBM)");
    }
  }
}

}  // namespace

ModelInput parse_lightgbm_text(std::string_view text, std::int64_t n_iterations, LightGBMModelInfo* info) {
  if (text.empty()) fail("empty input");
  Lines lines(text);
  std::string_view line;

  // Header: "tree", then key=value lines up to the first "Tree=".
  KeyValues header;
  bool seen_magic = false;
  bool in_trees = false;
  std::vector<RawTree> raw_trees;
  // byte offset of each "Tree=" line, then of "end of trees"; the same with LF line endings
  std::vector<std::size_t> tree_starts;
  std::vector<std::size_t> lf_tree_starts;
  bool ended = false;
  while (lines.next(&line)) {
    const std::string_view s = trim(line);
    if (s.empty()) continue;
    if (!seen_magic) {
      if (s != "tree") fail("not a LightGBM text model (the first line is '" + shorten(s) + "', expected 'tree')");
      seen_magic = true;
      continue;
    }
    if (starts_with(s, "Tree=")) {
      // LightGBM finds a tree by its line starting "Tree=" (and, with tree_sizes, by offset)
      if (!starts_with(line, "Tree=")) fail("line " + std::to_string(lines.number()) + " has blanks before 'Tree='");
      tree_starts.push_back(lines.start());
      lf_tree_starts.push_back(lines.lf_start());
      in_trees = true;
      const std::int64_t k = parse_int(s.substr(5), "tree header");
      if (k != static_cast<std::int64_t>(raw_trees.size())) {
        fail("trees are not numbered 0, 1, 2, ... (found Tree=" + std::to_string(k) + " at position " +
             std::to_string(raw_trees.size()) + ")");
      }
      raw_trees.emplace_back();
      continue;
    }
    if (s == "end of trees") {
      tree_starts.push_back(lines.start());
      lf_tree_starts.push_back(lines.lf_start());
      ended = true;
      break;
    }
    if (!in_trees) {
      add_key_value(header, s, "header");
    } else {
      add_key_value(raw_trees.back().kv, s, "Tree=" + std::to_string(raw_trees.size() - 1));
    }
  }
  if (!seen_magic) fail("not a LightGBM text model (no content)");
  if (!ended) fail("no 'end of trees' line: the model text is truncated or not a LightGBM model");

  LightGBMModelInfo meta;
  // The rest: parameters (linear_tree) and pandas_categorical.
  while (lines.next(&line)) {
    const std::string_view s = trim(line);
    if (starts_with(s, "[linear_tree:")) {
      std::string_view v = s.substr(13);
      if (!v.empty() && v.back() == ']') v.remove_suffix(1);
      v = trim(v);
      if (!v.empty() && v != "0" && v != "false") {
        fail("linear trees (linear_tree=True) are not supported: their leaves are linear functions of the "
             "input, not constants; retrain without linear_tree");
      }
    } else if (starts_with(s, "pandas_categorical:")) {
      meta.pandas_categorical = std::string(trim(s.substr(19)));
    }
  }

  const std::int64_t num_class = int_field(header, "num_class", "header");
  if (num_class < 1 || num_class > 1000000) fail("num_class is out of range");
  std::int64_t per_iteration = num_class;
  if (header.count("num_tree_per_iteration") != 0) per_iteration = int_field(header, "num_tree_per_iteration", "header");
  if (per_iteration < 1 || per_iteration > 1000000) fail("num_tree_per_iteration is out of range");
  const std::int64_t max_feature_idx = int_field(header, "max_feature_idx", "header");
  if (max_feature_idx < 0 || max_feature_idx >= kMaxFeatures) fail("max_feature_idx is out of range");
  const auto n_features = static_cast<std::int32_t>(max_feature_idx + 1);
  meta.num_class = static_cast<std::int32_t>(num_class);
  meta.num_tree_per_iteration = static_cast<std::int32_t>(per_iteration);
  meta.average_output = header.count("average_output") != 0;
  if (const auto it = header.find("version"); it != header.end()) meta.version = std::string(trim(it->second));
  if (const auto it = header.find("objective"); it != header.end()) meta.objective = std::string(trim(it->second));
  if (const auto it = header.find("feature_names"); it != header.end()) {
    for (std::string_view name : split_spaces(it->second)) meta.feature_names.emplace_back(name);
    if (meta.feature_names.size() != static_cast<std::size_t>(n_features)) {
      fail("feature_names has " + std::to_string(meta.feature_names.size()) + " entries, max_feature_idx + 1 is " +
           std::to_string(n_features));
    }
  }
  if (const auto it = header.find("feature_infos"); it != header.end()) {
    for (std::string_view item : split_spaces(it->second)) meta.feature_infos.emplace_back(item);
    if (meta.feature_infos.size() != static_cast<std::size_t>(n_features)) {
      fail("feature_infos has " + std::to_string(meta.feature_infos.size()) + " entries, max_feature_idx + 1 is " +
           std::to_string(n_features));
    }
  }
  if (const auto it = header.find("tree_sizes"); it != header.end()) {
    const auto sizes = split_spaces(it->second);
    const std::size_t listed = sizes.size();
    if (listed != raw_trees.size()) {
      fail("tree_sizes lists " + std::to_string(listed) + " trees but the text has " + std::to_string(raw_trees.size()) +
           " (truncated file?)");
    }
  }
  const auto K = static_cast<std::size_t>(per_iteration);
  if (raw_trees.size() % K != 0) {
    fail(std::to_string(raw_trees.size()) + " trees is not a multiple of num_tree_per_iteration=" + std::to_string(K));
  }
  if (per_iteration != num_class) {
    // LightGBM writes both equal; its predict gives num_class columns from
    // num_tree_per_iteration trees per round, so a file where they differ is read inconsistently.
    fail("num_class=" + std::to_string(num_class) + " but num_tree_per_iteration=" + std::to_string(per_iteration) +
         "; LightGBM writes them equal (re-save the model with LightGBM)");
  }
  meta.n_iterations = static_cast<std::int64_t>(raw_trees.size() / K);
  std::int64_t used = meta.n_iterations;
  if (n_iterations >= 0) {
    if (n_iterations > meta.n_iterations) {
      fail("asked for " + std::to_string(n_iterations) + " iterations, the model has " + std::to_string(meta.n_iterations));
    }
    used = n_iterations;
  }
  meta.n_iterations_used = used;

  ModelInput input;
  input.n_features = n_features;
  input.op = SplitOp::LessEqual;
  input.input_float32 = false;
  input.category_rule = CategoryRule::LightGBM;
  input.base_score.assign(K, 0.0);  // LightGBM folds its initial score into the first trees
  const double weight = meta.average_output && used > 0 ? 1.0 / static_cast<double>(used) : 1.0;
  const std::size_t use_trees = static_cast<std::size_t>(used) * K;
  input.trees.reserve(use_trees);
  CategoryBudget budget;
  for (std::size_t i = 0; i < use_trees; ++i) {
    TreeInput t = build_tree(raw_trees[i], i, n_features, &meta.has_categorical, budget);
    t.output = static_cast<std::int32_t>(i % K);
    t.weight = weight;
    input.trees.push_back(std::move(t));
  }
  check_tree_sizes(header, tree_starts, lf_tree_starts);
  // Linear trees beyond the iterations used are refused too: the file is not a constant-leaf model.
  for (std::size_t i = use_trees; i < raw_trees.size(); ++i) {
    const auto it = raw_trees[i].kv.find("is_linear");
    if (it != raw_trees[i].kv.end() && trim(it->second) != "0") {
      fail("linear trees (linear_tree=True) are not supported: their leaves are linear functions of the "
           "input, not constants; retrain without linear_tree");
    }
  }
  // Strings handed to Python must decode: a corrupted byte would surface as a bare
  // UnicodeDecodeError instead of a message about the model.
  for (const auto* list : {&meta.feature_names, &meta.feature_infos}) {
    for (const std::string& s : *list) {
      if (!is_valid_utf8(s)) fail("feature_names / feature_infos are not valid UTF-8");
    }
  }
  if (!is_valid_utf8(meta.objective) || !is_valid_utf8(meta.version) || !is_valid_utf8(meta.pandas_categorical)) {
    fail("objective, version or pandas_categorical is not valid UTF-8");
  }
  if (info != nullptr) *info = std::move(meta);
  return input;
}

}  // namespace pgexact
