// Array conversion helpers shared by the register_* files. Shapes are checked here, with the
// argument's public name in the message, before any pointer is handed to the C++ core.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace pgexact::bindings {

namespace py = pybind11;

// numpy's NPY_ARRAY_ALIGNED. A contiguous array need not be aligned (a view into a byte buffer,
// as dask and pickle protocol 5 hand out); reading one through T* is undefined behaviour, so
// pybind11 passes the flag to numpy, which copies such an array into an aligned one.
inline constexpr int kAligned = 0x0100;

template <typename T>
using CArray = py::array_t<T, py::array::c_style | py::array::forcecast | kAligned>;

inline void require_2d(const py::array& a, std::int64_t cols, const char* name) {
  if (a.ndim() != 2) throw std::invalid_argument(std::string(name) + ": expected a 2-D array");
  if (a.shape(1) != cols) {
    throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(cols) + " columns, got " +
                                std::to_string(a.shape(1)));
  }
}

inline void require_1d(const py::array& a, std::int64_t len, const char* name) {
  if (a.ndim() != 1 || a.shape(0) != len) {
    throw std::invalid_argument(std::string(name) + ": expected a 1-D array of length " + std::to_string(len));
  }
}

}  // namespace pgexact::bindings
