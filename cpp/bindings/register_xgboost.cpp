#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "convert.hpp"
#include "pgexact/model/xgboost_parser.hpp"

namespace pgexact::bindings {

void register_xgboost(py::module_& m) {
  m.def(
      "parse_xgboost_json",
      [](const py::bytes& data, std::int64_t n_iterations) {
        std::string bytes = data;  // one copy, owned here, so the GIL can be released
        XGBoostModelInfo info;
        std::shared_ptr<Arena> arena;
        {
          py::gil_scoped_release release;  // pure C++ on a private buffer
          arena = std::make_shared<Arena>(build_arena(parse_xgboost_json(bytes, n_iterations, &info)));
        }
        py::dict meta;
        meta["feature_names"] = info.feature_names;
        meta["feature_types"] = info.feature_types;
        meta["objective"] = info.objective;
        meta["booster"] = info.booster;
        meta["n_outputs"] = info.n_outputs;
        meta["num_class"] = info.num_class;
        meta["n_iterations"] = info.n_iterations;
        meta["best_iteration"] = info.best_iteration;
        meta["version"] = info.version;
        return py::make_tuple(arena, meta);
      },
      py::arg("data"), py::arg("n_iterations") = -1,
      "Parse XGBoost JSON/UBJSON model bytes into (Arena, metadata dict).");
}

}  // namespace pgexact::bindings
