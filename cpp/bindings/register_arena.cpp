#include <pybind11/stl.h>

#include <memory>

#include "convert.hpp"
#include "pgexact/model/arena.hpp"
#include "pgexact/model/serialize.hpp"

namespace pgexact::bindings {

void register_arena(py::module_& m) {
  py::class_<Arena, std::shared_ptr<Arena>>(m, "Arena", "Immutable flat node arena of a tree ensemble.")
      .def_property_readonly("n_trees", &Arena::n_trees)
      .def_property_readonly("n_nodes", &Arena::n_nodes)
      .def_property_readonly("n_leaves", &Arena::n_leaves)
      .def_readonly("n_features", &Arena::n_features)
      .def_readonly("n_outputs", &Arena::n_outputs)
      .def_readonly("max_depth", &Arena::max_depth)
      .def_readonly("base_score", &Arena::base_score)
      .def_property_readonly("categorical_features",
                             [](const Arena& a) {
                               std::vector<std::int32_t> out;
                               for (std::int32_t j = 0; j < a.n_features; ++j) {
                                 if (a.categorical_feature[j]) out.push_back(j);
                               }
                               return out;
                             })
      .def("split_categories", [](const Arena& a, std::int32_t j) {
            if (j < 0 || j >= a.n_features) throw std::invalid_argument("feature: index out of range");
            return a.split_categories(j);
          }, py::arg("feature"))
      .def_property_readonly("used_features", &Arena::used_features)
      .def(
          "select_output",
          [](const Arena& a, std::int32_t output) { return std::make_shared<Arena>(a.select_output(output)); },
          py::arg("output"), "Single-output arena with only the trees of `output`.")
      .def(
          "select_trees",
          [](const Arena& a, const std::vector<std::int64_t>& trees) { return std::make_shared<Arena>(a.select_trees(trees)); },
          py::arg("trees"), "The given trees (indices, in order) as an arena of their own.")
      .def(
          "predict",
          [](const Arena& a, const CArray<double>& X, std::int32_t output) {
            require_2d(X, a.n_features, "X");
            if (output < 0 || output >= a.n_outputs) throw std::invalid_argument("output: out of range");
            const std::int64_t n = X.shape(0);
            py::array_t<double> out(n);
            const double* x = X.data();
            double* o = out.mutable_data();
            {
              // Safe: the arena is immutable and X/out are owned by this frame; no Python
              // object is touched while the GIL is released.
              py::gil_scoped_release release;
              for (std::int64_t i = 0; i < n; ++i) o[i] = a.predict_row(x + i * a.n_features, output);
            }
            return out;
          },
          py::arg("X"), py::arg("output") = 0, "Raw output of every row, as the library computes it.")
      .def(
          "to_bytes", [](const Arena& a) { return py::bytes(serialize_arena(a)); },
          "Compact binary form (validated again by from_bytes).")
      .def_static(
          "from_bytes",
          [](const py::bytes& data) {
            std::string bytes = data;
            py::gil_scoped_release release;  // pure C++ on a private copy
            return std::make_shared<Arena>(deserialize_arena(bytes));
          },
          py::arg("data"))
      .def(py::pickle([](const Arena& a) { return py::make_tuple(py::bytes(serialize_arena(a))); },
                      [](const py::tuple& state) {
                        if (state.size() != 1) throw std::invalid_argument("Arena: bad pickle state");
                        return std::make_shared<Arena>(deserialize_arena(state[0].cast<std::string>()));
                      }))
      .def(
          "apply",
          [](const Arena& a, const CArray<double>& X) {
            require_2d(X, a.n_features, "X");
            const std::int64_t n = X.shape(0);
            const std::int64_t t = a.n_trees();
            py::array_t<std::int32_t> out({n, t});
            const double* x = X.data();
            std::int32_t* o = out.mutable_data();
            {
              py::gil_scoped_release release;  // same reasoning as predict
              for (std::int64_t i = 0; i < n; ++i) {
                for (std::int64_t k = 0; k < t; ++k) o[i * t + k] = a.leaf_of(k, x + i * a.n_features);
              }
            }
            return out;
          },
          py::arg("X"), "Arena id of the leaf each tree routes each row to.");
}

}  // namespace pgexact::bindings
