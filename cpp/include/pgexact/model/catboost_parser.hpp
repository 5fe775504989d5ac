// CatBoost model reader: the JSON of `save_model(..., format="json")`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pgexact/model/arena.hpp"

namespace pgexact {

struct CatBoostModelInfo {
  // One entry per input column (CatBoost's flat feature index); "" where CatBoost recorded no
  // name (a model trained on an array writes "" for every feature).
  std::vector<std::string> feature_names;
  // Per input column, what NaN does: "AsIs" and "AsFalse" (nan_mode Min) send it to the false
  // side, "AsTrue" (nan_mode Max, on a feature with has_nans) to the true side; "" for a column
  // no float feature describes.
  std::vector<std::string> nan_treatment;
  std::string loss_function;               // model_info.params.loss_function.type, or ""
  std::string tree_kind;                   // "oblivious" or "non_symmetric"
  std::int32_t n_outputs = 1;              // approx dimension: 1, or the number of classes
  std::int64_t n_trees = 0;                // trees stored in the file
  std::int64_t n_trees_used = 0;           // trees turned into the arena
  double scale = 1.0;
  std::vector<double> bias;                // per output
};

// Parses CatBoost's JSON model. Uses the first `n_trees` trees (all of them when negative), as
// CatBoost's `predict(ntree_end=n_trees)` does. A float feature goes to the "true" side
// (right, leaf bit set) iff float32(x) > border; NaN goes right only for nan_value_treatment
// "AsTrue" on a feature marked has_nans. A split is read from its split_index, as CatBoost's
// reader does; its float_feature_index and border must agree with it. Oblivious trees become complete binary trees whose level k tests split k (bit k of
// the leaf index); multi-dimensional leaves become one tree per output. Every leaf is
// multiplied by `scale`, and `bias` is the base score. Throws ModelError on anything malformed
// and on categorical (one-hot or CTR), text and embedding features, naming the feature.
ModelInput parse_catboost_json(std::string_view text, std::int64_t n_trees, CatBoostModelInfo* info);

}  // namespace pgexact
