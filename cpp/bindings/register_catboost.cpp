#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "convert.hpp"
#include "pgexact/model/catboost_parser.hpp"

namespace pgexact::bindings {

void register_catboost(py::module_& m) {
  py::class_<CatBoostModelInfo>(m, "CatBoostModelInfo", "What the CatBoost parser read besides the trees.")
      .def_readonly("feature_names", &CatBoostModelInfo::feature_names)
      .def_readonly("nan_treatment", &CatBoostModelInfo::nan_treatment)
      .def_readonly("loss_function", &CatBoostModelInfo::loss_function)
      .def_readonly("tree_kind", &CatBoostModelInfo::tree_kind)
      .def_readonly("n_outputs", &CatBoostModelInfo::n_outputs)
      .def_readonly("n_trees", &CatBoostModelInfo::n_trees)
      .def_readonly("n_trees_used", &CatBoostModelInfo::n_trees_used)
      .def_readonly("scale", &CatBoostModelInfo::scale)
      .def_readonly("bias", &CatBoostModelInfo::bias)
      .def("as_dict", [](const CatBoostModelInfo& info) {
        py::dict meta;
        meta["feature_names"] = info.feature_names;
        meta["nan_treatment"] = info.nan_treatment;
        meta["loss_function"] = info.loss_function;
        meta["tree_kind"] = info.tree_kind;
        meta["n_outputs"] = info.n_outputs;
        meta["n_trees"] = info.n_trees;
        meta["n_trees_used"] = info.n_trees_used;
        meta["scale"] = info.scale;
        meta["bias"] = info.bias;
        return meta;
      }, "The fields as a dict (kept with a TreeEnsemble, which pickles it).");

  m.def(
      "parse_catboost_json",
      [](const py::object& data, std::int64_t n_trees) {
        std::string text;  // one copy, owned here, so the GIL can be released
        if (py::isinstance<py::bytes>(data) || py::isinstance<py::str>(data)) {
          text = data.cast<std::string>();  // str as UTF-8
        } else {
          throw py::type_error("data: expected the CatBoost JSON model as str or bytes");
        }
        CatBoostModelInfo info;
        std::shared_ptr<Arena> arena;
        {
          py::gil_scoped_release release;  // pure C++ on a private buffer
          arena = std::make_shared<Arena>(build_arena(parse_catboost_json(text, n_trees, &info)));
        }
        return py::make_tuple(arena, info);
      },
      py::arg("data"), py::arg("n_trees") = -1,
      "Parse CatBoost JSON model text (save_model(..., format='json')) into (Arena, CatBoostModelInfo).");
}

}  // namespace pgexact::bindings
