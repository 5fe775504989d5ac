#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "convert.hpp"
#include "pgexact/model/xgboost_parser.hpp"

namespace pgexact::bindings {

void register_xgboost(py::module_& m) {
  py::class_<XGBoostModelInfo>(m, "XGBoostModelInfo", "What the XGBoost parser read besides the trees.")
      .def_readonly("feature_names", &XGBoostModelInfo::feature_names)
      .def_readonly("feature_types", &XGBoostModelInfo::feature_types)
      .def_readonly("objective", &XGBoostModelInfo::objective)
      .def_readonly("booster", &XGBoostModelInfo::booster)
      .def_readonly("n_outputs", &XGBoostModelInfo::n_outputs)
      .def_readonly("num_class", &XGBoostModelInfo::num_class)
      .def_readonly("n_iterations", &XGBoostModelInfo::n_iterations)
      .def_readonly("best_iteration", &XGBoostModelInfo::best_iteration)
      .def_readonly("version", &XGBoostModelInfo::version)
      .def("as_dict", [](const XGBoostModelInfo& info) {
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
        return meta;
      }, "The fields as a dict (kept with a TreeEnsemble, which pickles it).");

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
        return py::make_tuple(arena, info);
      },
      py::arg("data"), py::arg("n_iterations") = -1,
      "Parse XGBoost JSON/UBJSON model bytes into (Arena, XGBoostModelInfo).");
}

}  // namespace pgexact::bindings
