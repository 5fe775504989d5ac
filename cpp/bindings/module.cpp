// pgexact._core: the private extension module, in two submodules, one per side of the seam:
//   _core.model  the parsers, their metadata and the node arena (register_arena.cpp,
//                register_arrays.cpp, register_<library>.cpp);
//   _core.exact  the perturbation, the kernel choice and the kernels (register_perturbation.cpp,
//                register_kernels.cpp, register_pair_store.cpp).
// Each concept registers itself from its own file; a new one adds a register_<concept>.cpp, a
// declaration and a call below, its line in CMakeLists.txt and its stub in python/pgexact/_core/.
#include <pybind11/pybind11.h>

#include <string>

#include "pgexact/model/arena.hpp"

namespace py = pybind11;

namespace pgexact::bindings {
void register_arena(py::module_& m);
void register_xgboost(py::module_& m);
void register_lightgbm(py::module_& m);
void register_catboost(py::module_& m);
void register_arrays(py::module_& m);
void register_perturbation(py::module_& m);
void register_kernels(py::module_& m);
void register_pair_store(py::module_& m);
}  // namespace pgexact::bindings

namespace {

// A submodule importable by name (``import pgexact._core.model``), as pickle needs for its classes.
py::module_ submodule(py::module_& parent, const char* name, const char* doc) {
  py::module_ sub = parent.def_submodule(name, doc);
  py::module_::import("sys").attr("modules")[py::str(sub.attr("__name__"))] = sub;
  return sub;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "pgexact C++ core (private; use the pgexact package)";
#ifdef PGEXACT_OPENMP
  m.attr("openmp") = true;
#else
  m.attr("openmp") = false;
#endif

  py::module_ model = submodule(m, "model", "Parsers, their metadata and the immutable node arena.");
  // A malformed or unsupported model is the caller's input error, not an internal failure.
  py::register_exception<pgexact::ModelError>(model, "ModelError", PyExc_ValueError);
  pgexact::bindings::register_arena(model);
  pgexact::bindings::register_xgboost(model);
  pgexact::bindings::register_lightgbm(model);
  pgexact::bindings::register_catboost(model);
  pgexact::bindings::register_arrays(model);

  py::module_ exact = submodule(m, "exact", "The perturbation, the kernel choice and the exact kernels.");
  pgexact::bindings::register_perturbation(exact);
  pgexact::bindings::register_kernels(exact);
  pgexact::bindings::register_pair_store(exact);
}
