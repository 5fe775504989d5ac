// XGBoost model reader: the JSON of `Booster.save_raw("json")` or a `.json` / `.ubj` file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pgexact/model/arena.hpp"

namespace pgexact {

struct XGBoostModelInfo {
  std::vector<std::string> feature_names;  // empty when the model was trained without names
  std::vector<std::string> feature_types;
  std::string objective;
  std::string booster;                     // "gbtree" or "dart"
  std::int32_t n_outputs = 1;              // max(num_class, num_target, 1)
  std::int32_t num_class = 0;
  std::int64_t n_iterations = 0;           // boosting rounds stored in the file
  std::int64_t best_iteration = -1;        // -1 when the file records none
  std::vector<std::int64_t> version;       // [major, minor, patch] of the XGBoost that wrote it
};

// Parses XGBoost's JSON or UBJSON model (detected from the bytes). Uses the trees of the first
// `n_iterations` boosting rounds (all of them when negative), applies the objective's link to
// `base_score`, multiplies DART leaves by `weight_drop`. Throws ModelError on anything malformed
// or unsupported (gblinear, vector-leaf trees, unknown objectives).
ModelInput parse_xgboost_json(std::string_view bytes, std::int64_t n_iterations,
                              XGBoostModelInfo* info);

}  // namespace pgexact
