#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "convert.hpp"
#include "pgexact/model/lightgbm_parser.hpp"

namespace pgexact::bindings {

void register_lightgbm(py::module_& m) {
  m.def(
      "parse_lightgbm_text",
      [](const py::object& data, std::int64_t n_iterations) {
        std::string text;  // one copy, owned here, so the GIL can be released
        if (py::isinstance<py::bytes>(data)) {
          text = data.cast<std::string>();
        } else if (py::isinstance<py::str>(data)) {
          text = data.cast<std::string>();  // UTF-8
        } else {
          throw py::type_error("data: expected the LightGBM model text as str or bytes");
        }
        LightGBMModelInfo info;
        std::shared_ptr<Arena> arena;
        {
          py::gil_scoped_release release;  // pure C++ on a private buffer
          arena = std::make_shared<Arena>(build_arena(parse_lightgbm_text(text, n_iterations, &info)));
        }
        py::dict meta;
        meta["feature_names"] = info.feature_names;
        meta["feature_infos"] = info.feature_infos;
        meta["objective"] = info.objective;
        meta["version"] = info.version;
        meta["num_class"] = info.num_class;
        meta["num_tree_per_iteration"] = info.num_tree_per_iteration;
        meta["n_outputs"] = info.num_tree_per_iteration;
        meta["n_iterations"] = info.n_iterations;
        meta["n_iterations_used"] = info.n_iterations_used;
        meta["average_output"] = info.average_output;
        meta["has_categorical"] = info.has_categorical;
        meta["pandas_categorical"] = info.pandas_categorical;
        return py::make_tuple(arena, meta);
      },
      py::arg("data"), py::arg("n_iterations") = -1,
      "Parse LightGBM model text (model_to_string() or a model file) into (Arena, metadata dict).");
}

}  // namespace pgexact::bindings
