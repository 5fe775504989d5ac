#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "convert.hpp"
#include "pgexact/model/lightgbm_parser.hpp"

namespace pgexact::bindings {

void register_lightgbm(py::module_& m) {
  py::class_<LightGBMModelInfo>(m, "LightGBMModelInfo", "What the LightGBM parser read besides the trees.")
      .def_readonly("feature_names", &LightGBMModelInfo::feature_names)
      .def_readonly("feature_infos", &LightGBMModelInfo::feature_infos)
      .def_readonly("objective", &LightGBMModelInfo::objective)
      .def_readonly("version", &LightGBMModelInfo::version)
      .def_readonly("num_class", &LightGBMModelInfo::num_class)
      .def_readonly("num_tree_per_iteration", &LightGBMModelInfo::num_tree_per_iteration)
      .def_readonly("n_iterations", &LightGBMModelInfo::n_iterations)
      .def_readonly("n_iterations_used", &LightGBMModelInfo::n_iterations_used)
      .def_readonly("average_output", &LightGBMModelInfo::average_output)
      .def_readonly("has_categorical", &LightGBMModelInfo::has_categorical)
      .def_readonly("pandas_categorical", &LightGBMModelInfo::pandas_categorical)
      .def_property_readonly("n_outputs", [](const LightGBMModelInfo& info) { return info.num_tree_per_iteration; })
      .def("as_dict", [](const LightGBMModelInfo& info) {
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
        return meta;
      }, "The fields as a dict (kept with a TreeEnsemble, which pickles it).");

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
        return py::make_tuple(arena, info);
      },
      py::arg("data"), py::arg("n_iterations") = -1,
      "Parse LightGBM model text (model_to_string() or a model file) into (Arena, LightGBMModelInfo).");
}

}  // namespace pgexact::bindings
