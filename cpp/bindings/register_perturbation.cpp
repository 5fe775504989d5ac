// _core.exact.Perturbation: the perturbation of every feature, validated once when it is built
// and then handed to any number of kernel calls as it is (pgexact/exact/noise.hpp's Noise).
// _core.exact.NoiseFamily: the family codes, which the Python side checks its table against.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "convert.hpp"
#include "pgexact/exact/noise.hpp"

namespace pgexact::bindings {
namespace {

template <typename T>
py::array_t<T> to_array(const std::vector<T>& v) {
  py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

template <typename T>
std::vector<T> to_vector(const CArray<T>& a) {
  return std::vector<T>(a.data(), a.data() + a.size());
}

// sigma (d,) and family codes (d,); for categorical features (code 3) change (d,), cat_begin
// (d + 1,) offsets into cat_value / cat_weight (pgexact._exact._perturbation.KernelNoise).
std::shared_ptr<Noise> make_perturbation(const CArray<double>& sigma, const CArray<std::uint8_t>& family,
                                         const py::object& change, const py::object& cat_begin,
                                         const py::object& cat_value, const py::object& cat_weight) {
  if (sigma.ndim() != 1) throw std::invalid_argument("sigma: expected a 1-D array");
  const std::int64_t d = sigma.shape(0);
  require_1d(family, d, "noise");
  auto noise = std::make_shared<Noise>();
  noise->sigma = to_vector(sigma);
  for (std::int64_t j = 0; j < d; ++j) {
    if (family.data()[j] > 4) throw std::invalid_argument("noise: unknown family code");
    noise->family.push_back(static_cast<NoiseFamily>(family.data()[j]));
  }
  const int given = int(!change.is_none()) + int(!cat_begin.is_none()) + int(!cat_value.is_none()) +
                    int(!cat_weight.is_none());
  if (given != 0 && given != 4) {
    throw std::invalid_argument("noise: categorical noise needs change, cat_begin, cat_value and cat_weight together");
  }
  if (given == 4) {
    const auto p = change.cast<CArray<double>>();
    const auto begin = cat_begin.cast<CArray<std::int64_t>>();
    const auto values = cat_value.cast<CArray<double>>();
    const auto weights = cat_weight.cast<CArray<double>>();
    require_1d(p, d, "noise");
    require_1d(begin, d + 1, "noise");
    if (values.ndim() != 1 || weights.ndim() != 1) throw std::invalid_argument("noise: categories must be 1-D");
    noise->change = to_vector(p);
    noise->cat_begin = to_vector(begin);
    noise->cat_value = to_vector(values);
    noise->cat_weight = to_vector(weights);
  }
  noise->validate(d);
  return noise;
}

}  // namespace

void register_perturbation(py::module_& m) {
  const std::pair<const char*, NoiseFamily> families[] = {
      {"normal", NoiseFamily::Normal},           {"uniform", NoiseFamily::Uniform},
      {"laplace", NoiseFamily::Laplace},         {"categorical", NoiseFamily::Categorical},
      {"fixed", NoiseFamily::Fixed}};
  py::enum_<NoiseFamily> family(m, "NoiseFamily", "The family code of each feature's perturbation.");
  py::dict codes;
  for (const auto& [name, code] : families) {
    family.value(name, code);
    codes[name] = static_cast<int>(code);
  }
  m.attr("NOISE_FAMILIES") = codes;

  py::class_<Noise, std::shared_ptr<Noise>>(
      m, "Perturbation",
      "The perturbation of every feature, validated once; kernels take it as it is.")
      .def(py::init(&make_perturbation), py::arg("sigma"), py::arg("family"), py::arg("change") = py::none(),
           py::arg("cat_begin") = py::none(), py::arg("cat_value") = py::none(),
           py::arg("cat_weight") = py::none())
      .def_property_readonly("n_features", [](const Noise& n) { return static_cast<std::int64_t>(n.sigma.size()); })
      .def_property_readonly("sigma", [](const Noise& n) { return to_array(n.sigma); })
      .def_property_readonly("family",
                             [](const Noise& n) {
                               std::vector<std::uint8_t> codes;
                               for (NoiseFamily f : n.family) codes.push_back(static_cast<std::uint8_t>(f));
                               return to_array(codes);
                             })
      .def_property_readonly("change", [](const Noise& n) { return to_array(n.change); })
      .def_property_readonly("cat_begin", [](const Noise& n) { return to_array(n.cat_begin); })
      .def_property_readonly("cat_value", [](const Noise& n) { return to_array(n.cat_value); })
      .def_property_readonly("cat_weight", [](const Noise& n) { return to_array(n.cat_weight); })
      .def("__repr__", [](const Noise& n) {
        return "<pgexact._core.exact.Perturbation of " + std::to_string(n.sigma.size()) + " features>";
      });
}

}  // namespace pgexact::bindings
