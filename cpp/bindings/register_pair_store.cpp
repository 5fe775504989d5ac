// _core.exact's pair store (pgexact/exact/pair_store.hpp): its budget, what it holds, clearing
// it. Each call takes the store's mutex for a moment; none runs a kernel.
#include <pybind11/pybind11.h>

#include <stdexcept>

#include "pgexact/exact/pair_store.hpp"

namespace py = pybind11;

namespace pgexact::bindings {

void register_pair_store(py::module_& m) {
  m.def(
      "set_pair_store_budget",
      [](std::int64_t bytes) {
        if (bytes < 0) throw std::invalid_argument("max_bytes: must be >= 0 (0 turns the store off)");
        set_pair_store_budget(bytes);
      },
      py::arg("max_bytes"), "Sets the bytes the pair store may hold (0: off), dropping models to fit.");
  m.def(
      "pair_store_info",
      [] {
        const PairStoreInfo info = pair_store_info();
        py::dict out;
        out["max_bytes"] = info.max_bytes;
        out["bytes"] = info.bytes;
        out["models"] = info.models;
        out["hits"] = info.hits;
        out["misses"] = info.misses;
        return out;
      },
      "What the pair store holds: max_bytes, bytes, models, hits, misses.");
  m.def("clear_pair_store", &clear_pair_store, "Drops every kept pair list and resets the counters.");
  m.def("pause_pair_store", &pause_pair_store, py::arg("pause"),
        "pause=True: calls neither read nor add to the store until the matching pause=False (a count).");
  m.attr("DEFAULT_PAIR_STORE_BYTES") = kDefaultPairStoreBytes;
}

}  // namespace pgexact::bindings
