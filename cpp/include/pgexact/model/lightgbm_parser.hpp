// LightGBM model reader: the text of `Booster.model_to_string()` or a saved model file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pgexact/model/arena.hpp"

namespace pgexact {

struct LightGBMModelInfo {
  std::vector<std::string> feature_names;  // as written in the file (LightGBM invents Column_i)
  std::vector<std::string> feature_infos;  // "[min:max]", "none", or "c1:c2:..." for categorical
  std::string objective;                   // the full objective line, e.g. "binary sigmoid:1"
  std::string version;                     // "v4"
  std::int32_t num_class = 1;
  std::int32_t num_tree_per_iteration = 1; // = the number of outputs
  std::int64_t n_iterations = 0;           // iterations stored in the text
  std::int64_t n_iterations_used = 0;      // iterations turned into the arena
  bool average_output = false;             // random-forest mode: the output is a mean over iterations
  bool has_categorical = false;
  std::string pandas_categorical;          // the JSON after "pandas_categorical:", or empty
};

// Parses LightGBM's text model format. Uses the first `n_iterations` iterations (all of them
// when negative; tree i of an iteration belongs to output i % num_tree_per_iteration). Leaf
// values already include the shrinkage; in rf mode ("average_output") every leaf is weighted by
// 1 / (iterations used). Splits compare `x <= threshold` in double; |x| <= 1e-35 is read as 0,
// as LightGBM does when it reads a dense row. Throws ModelError on anything malformed and on
// linear trees, which pgexact does not support.
ModelInput parse_lightgbm_text(std::string_view text, std::int64_t n_iterations, LightGBMModelInfo* info);

}  // namespace pgexact
