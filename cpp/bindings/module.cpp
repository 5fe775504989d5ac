// pgexact._core: the private extension module. Each concept registers itself from its own file.
#include <pybind11/pybind11.h>

#include "pgexact/model/arena.hpp"

namespace py = pybind11;

namespace pgexact::bindings {
void register_arena(py::module_& m);
void register_xgboost(py::module_& m);
void register_lightgbm(py::module_& m);
void register_catboost(py::module_& m);
void register_arrays(py::module_& m);
void register_kernels(py::module_& m);
}  // namespace pgexact::bindings

PYBIND11_MODULE(_core, m) {
  m.doc() = "pgexact C++ core (private; use the pgexact package)";
  // A malformed or unsupported model is the caller's input error, not an internal failure.
  py::register_exception<pgexact::ModelError>(m, "ModelError", PyExc_ValueError);
  pgexact::bindings::register_arena(m);
  pgexact::bindings::register_xgboost(m);
  pgexact::bindings::register_lightgbm(m);
  pgexact::bindings::register_catboost(m);
  pgexact::bindings::register_arrays(m);
  pgexact::bindings::register_kernels(m);
#ifdef PGEXACT_OPENMP
  m.attr("openmp") = true;
#else
  m.attr("openmp") = false;
#endif
}
