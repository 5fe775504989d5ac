// build_arena_from_arrays: a model whose trees the Python side reads as numpy arrays
// (scikit-learn). Only the conversion happens here; build_arena validates the model.
#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "convert.hpp"
#include "pgexact/model/arena.hpp"

namespace pgexact::bindings {
namespace {

std::string where(std::size_t t, const char* key) {
  return "trees[" + std::to_string(t) + "]['" + key + "']";
}

// A 1-D array of integers (bool, int or uint dtype), checked to fit in [lo, hi].
std::vector<std::int64_t> int_vector(const py::handle& obj, const std::string& name, std::int64_t lo, std::int64_t hi) {
  py::array a = py::array::ensure(obj);
  if (!a) throw py::type_error(name + ": expected an integer array");
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u' && kind != 'b') {
    throw py::type_error(name + ": expected an integer array, got dtype " + std::string(py::str(a.dtype())));
  }
  if (a.ndim() != 1) throw std::invalid_argument(name + ": expected a 1-D array");
  if (kind == 'u' && a.itemsize() == 8) {
    // uint64 beyond int64 would wrap: check before the conversion.
    auto u = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast | kAligned>::ensure(a);
    for (py::ssize_t k = 0; k < u.size(); ++k) {
      if (u.data()[k] > static_cast<std::uint64_t>(hi)) throw std::invalid_argument(name + ": value out of range");
    }
  }
  auto c = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast | kAligned>::ensure(a);
  std::vector<std::int64_t> out(c.data(), c.data() + c.size());
  for (std::int64_t v : out) {
    if (v < lo || v > hi) {
      throw std::invalid_argument(name + ": value " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "]");
    }
  }
  return out;
}

std::vector<double> double_vector(const py::handle& obj, const std::string& name) {
  py::array a = py::array::ensure(obj);
  if (!a) throw py::type_error(name + ": expected a numeric array");
  const char kind = a.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u') {
    throw py::type_error(name + ": expected a real-valued array, got dtype " + std::string(py::str(a.dtype())));
  }
  if (a.ndim() != 1) throw std::invalid_argument(name + ": expected a 1-D array");
  auto c = py::array_t<double, py::array::c_style | py::array::forcecast | kAligned>::ensure(a);
  return std::vector<double>(c.data(), c.data() + c.size());
}

template <typename T>
std::vector<T> narrow(const std::vector<std::int64_t>& v) {
  std::vector<T> out;
  out.reserve(v.size());
  for (std::int64_t x : v) out.push_back(static_cast<T>(x));
  return out;
}

void require_length(std::size_t got, std::size_t n, const std::string& name) {
  if (got != n) {
    throw std::invalid_argument(name + ": expected " + std::to_string(n) + " entries (one per node), got " +
                                std::to_string(got));
  }
}

TreeInput tree_from_dict(const py::dict& d, std::size_t t) {
  constexpr std::int64_t kMaxId = std::numeric_limits<std::int32_t>::max();
  for (const char* key : {"children_left", "children_right", "feature", "threshold", "value"}) {
    if (!d.contains(key)) throw std::invalid_argument("trees[" + std::to_string(t) + "]: missing key '" + key + "'");
  }
  TreeInput tree;
  const auto left = int_vector(d["children_left"], where(t, "children_left"), -1, kMaxId);
  const std::size_t n = left.size();
  tree.left = narrow<std::int32_t>(left);
  tree.right = narrow<std::int32_t>(int_vector(d["children_right"], where(t, "children_right"), -1, kMaxId));
  require_length(tree.right.size(), n, where(t, "children_right"));
  // Leaves may carry any placeholder feature (scikit-learn writes -2): only inner nodes are checked.
  auto feature = int_vector(d["feature"], where(t, "feature"), std::numeric_limits<std::int32_t>::min(), kMaxId);
  require_length(feature.size(), n, where(t, "feature"));
  tree.feature = narrow<std::int32_t>(feature);
  tree.threshold = double_vector(d["threshold"], where(t, "threshold"));
  require_length(tree.threshold.size(), n, where(t, "threshold"));
  tree.value = double_vector(d["value"], where(t, "value"));
  require_length(tree.value.size(), n, where(t, "value"));
  if (d.contains("missing_go_to_left")) {
    tree.default_left = narrow<std::uint8_t>(int_vector(d["missing_go_to_left"], where(t, "missing_go_to_left"), 0, 255));
    require_length(tree.default_left.size(), n, where(t, "missing_go_to_left"));
    for (auto& b : tree.default_left) b = b != 0 ? 1 : 0;
  } else {
    tree.default_left.assign(n, 0);
  }
  if (d.contains("missing")) {
    tree.missing = narrow<std::uint8_t>(int_vector(d["missing"], where(t, "missing"), 0, 3));
    require_length(tree.missing.size(), n, where(t, "missing"));
  }
  if (d.contains("cat_nodes")) {
    tree.cat_nodes = narrow<std::int32_t>(int_vector(d["cat_nodes"], where(t, "cat_nodes"), 0, kMaxId));
    if (!d.contains("cat_bitsets")) throw std::invalid_argument(where(t, "cat_bitsets") + ": missing (cat_nodes given)");
    const py::object sets_obj = d["cat_bitsets"];
    if (!py::isinstance<py::sequence>(sets_obj)) {
      throw py::type_error(where(t, "cat_bitsets") + ": expected a sequence of uint32 arrays");
    }
    const auto sets = py::reinterpret_borrow<py::sequence>(sets_obj);
    if (static_cast<std::size_t>(py::len(sets)) != tree.cat_nodes.size()) {
      throw std::invalid_argument(where(t, "cat_bitsets") + ": expected one bitset per entry of cat_nodes");
    }
    for (std::size_t k = 0; k < tree.cat_nodes.size(); ++k) {
      const std::string name = where(t, "cat_bitsets") + "[" + std::to_string(k) + "]";
      const auto words = int_vector(sets[k], name, 0, std::numeric_limits<std::uint32_t>::max());
      if (static_cast<std::int64_t>(words.size()) * 32 > kMaxCategory) {
        throw std::invalid_argument(name + ": more than 2^24 categories");
      }
      tree.cat_bitsets.push_back(narrow<std::uint32_t>(words));
    }
  } else if (d.contains("cat_bitsets")) {
    throw std::invalid_argument(where(t, "cat_nodes") + ": missing (cat_bitsets given)");
  }
  if (d.contains("output")) tree.output = py::cast<std::int32_t>(d["output"]);
  if (d.contains("weight")) tree.weight = py::cast<double>(d["weight"]);
  return tree;
}

SplitOp op_of(const std::string& op) {
  if (op == "<") return SplitOp::Less;
  if (op == "<=") return SplitOp::LessEqual;
  throw std::invalid_argument("op: expected '<' or '<=', got '" + op + "'");
}

CategoryRule rule_of(const std::string& rule) {
  if (rule == "none") return CategoryRule::None;
  if (rule == "xgboost") return CategoryRule::XGBoost;
  if (rule == "lightgbm") return CategoryRule::LightGBM;
  if (rule == "sklearn_hist") return CategoryRule::SklearnHist;
  throw std::invalid_argument("category_rule: expected 'none', 'xgboost', 'lightgbm' or 'sklearn_hist', got '" + rule + "'");
}

}  // namespace

void register_arrays(py::module_& m) {
  m.def(
      "build_arena_from_arrays",
      [](const py::sequence& trees, const py::object& base_score, std::int64_t n_features, const std::string& op,
         bool input_float32, const std::string& category_rule) {
        ModelInput input;
        input.op = op_of(op);
        input.category_rule = rule_of(category_rule);
        input.input_float32 = input_float32;
        if (n_features <= 0 || n_features > kMaxFeatures) {
          throw std::invalid_argument("n_features: expected a value in [1, " + std::to_string(kMaxFeatures) + "]");
        }
        input.n_features = static_cast<std::int32_t>(n_features);
        input.base_score = double_vector(base_score, "base_score");
        const auto n_trees = static_cast<std::size_t>(py::len(trees));
        input.trees.reserve(n_trees);
        for (std::size_t t = 0; t < n_trees; ++t) {
          py::object item = trees[t];
          if (!py::isinstance<py::dict>(item)) throw py::type_error("trees[" + std::to_string(t) + "]: expected a dict");
          input.trees.push_back(tree_from_dict(item.cast<py::dict>(), t));
        }
        std::shared_ptr<Arena> arena;
        {
          py::gil_scoped_release release;  // pure C++ on data copied out of Python above
          arena = std::make_shared<Arena>(build_arena(std::move(input)));
        }
        return arena;
      },
      py::arg("trees"), py::arg("base_score"), py::arg("n_features"), py::arg("op") = "<=",
      py::arg("input_float32") = false, py::arg("category_rule") = "none",
      "Build an Arena from per-tree numpy arrays: a list of dicts with children_left, children_right "
      "(-1 at leaves), feature, threshold, value (leaf values), and optional missing_go_to_left, missing "
      "(MissingRule codes), cat_nodes + cat_bitsets (uint32 words, bit c of word c//32 = category c), "
      "output (int) and weight (float).");
}

}  // namespace pgexact::bindings
