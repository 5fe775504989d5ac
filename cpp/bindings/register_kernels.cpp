#include <pybind11/stl.h>

#include <limits>
#include <string>

#include "convert.hpp"
#include "interruptible.hpp"
#include "pgexact/exact/kernels.hpp"
#include "pgexact/exact/ranking.hpp"

namespace pgexact::bindings {
namespace {

// `categorical`: None, or (change (d,), cat_begin (d + 1,), cat_value, cat_weight) for the
// features whose family is categorical (pgexact._validation.KernelNoise.categorical).
Noise make_noise(const Arena& a, const CArray<double>& sigma, const CArray<std::uint8_t>& family,
                 const py::object& categorical) {
  require_1d(sigma, a.n_features, "sigma");
  require_1d(family, a.n_features, "noise");
  Noise noise;
  noise.sigma.assign(sigma.data(), sigma.data() + a.n_features);
  for (std::int64_t j = 0; j < a.n_features; ++j) {
    if (family.data()[j] > 4) throw std::invalid_argument("noise: unknown family code");
    noise.family.push_back(static_cast<NoiseFamily>(family.data()[j]));
  }
  if (!categorical.is_none()) {
    const auto parts = categorical.cast<py::tuple>();
    if (parts.size() != 4) throw std::invalid_argument("noise: categorical must be (change, begin, values, weights)");
    const auto change = parts[0].cast<CArray<double>>();
    const auto begin = parts[1].cast<CArray<std::int64_t>>();
    const auto values = parts[2].cast<CArray<double>>();
    const auto weights = parts[3].cast<CArray<double>>();
    require_1d(change, a.n_features, "noise");
    require_1d(begin, a.n_features + 1, "noise");
    if (values.ndim() != 1 || weights.ndim() != 1) throw std::invalid_argument("noise: categories must be 1-D");
    noise.change.assign(change.data(), change.data() + a.n_features);
    noise.cat_begin.assign(begin.data(), begin.data() + a.n_features + 1);
    noise.cat_value.assign(values.data(), values.data() + values.shape(0));
    noise.cat_weight.assign(weights.data(), weights.data() + weights.shape(0));
  }
  noise.validate(a.n_features);
  return noise;
}

// reference: the paper's unpruned walk; shared = false: the node-pair walks without sharing;
// pairs = false: the node-pair walks shared between rows and sets (all for tests and
// before/after benchmarks); the default is the leaf-pair kernel where it applies.
Pruning pruning_of(bool reference, bool shared, bool pairs) {
  if (reference) return Pruning::None;
  if (!shared) return Pruning::Separate;
  return pairs ? Pruning::Full : Pruning::Walk;
}

// The perturbed-feature mask: one (d,) mask for every row, or an (n, d) mask, one per row.
// Returns whether it is per row.
bool check_mask(const Arena& a, const CArray<std::uint8_t>& mask, std::int64_t n_rows) {
  if (mask.ndim() == 2) {
    require_2d(mask, a.n_features, "features");
    if (mask.shape(0) != n_rows) throw std::invalid_argument("features: mask must have one row per row of X");
    return true;
  }
  require_1d(mask, a.n_features, "features");
  return false;
}

}  // namespace

void register_kernels(py::module_& m) {
  m.def(
      "pg2",
      [](const Arena& a, const CArray<double>& X, const CArray<std::uint8_t>& mask, const CArray<double>& sigma,
         const CArray<std::uint8_t>& family, int n_threads, bool reference, bool shared, bool pairs, const py::object& categorical,
         const py::object& progress) {
        require_2d(X, a.n_features, "X");
        const std::int64_t n = X.shape(0);
        const bool per_row = check_mask(a, mask, n);
        const Noise noise = make_noise(a, sigma, family, categorical);
        py::array_t<double> out(n);
        const double* x = X.data();
        const std::uint8_t* mk = mask.data();
        double* o = out.mutable_data();
        run_interruptible([&](RunControl* control) {
          pg2_batch(a, noise, x, n, mk, per_row, n_threads, pruning_of(reference, shared, pairs), o, control);
        }, progress);
        return out;
      },
      py::arg("arena"), py::arg("X"), py::arg("mask"), py::arg("sigma"), py::arg("family"),
      py::arg("n_threads") = 0, py::arg("reference") = false, py::arg("shared") = true, py::arg("pairs") = true,
      py::arg("categorical") = py::none(),
      py::arg("progress") = py::none());

  m.def(
      "pg2_curve",
      [](const Arena& a, const CArray<double>& X, const CArray<std::int64_t>& ranking, std::int64_t n_steps,
         const CArray<double>& sigma, const CArray<std::uint8_t>& family, int n_threads, bool reference, bool shared, bool pairs, const py::object& categorical,
         const py::object& progress) {
        require_2d(X, a.n_features, "X");
        const std::int64_t n = X.shape(0);
        bool per_row = false;
        if (ranking.ndim() == 2) {
          require_2d(ranking, a.n_features, "ranking");
          if (ranking.shape(0) != n) throw std::invalid_argument("ranking: must have one row per row of X");
          per_row = true;
        } else {
          require_1d(ranking, a.n_features, "ranking");
        }
        if (n_steps < 0) n_steps = a.n_features;
        const Noise noise = make_noise(a, sigma, family, categorical);
        py::array_t<double> out({n, n_steps});
        const double* x = X.data();
        const std::int64_t* rk = ranking.data();
        double* o = out.mutable_data();
        run_interruptible([&](RunControl* control) {
          pg2_curve_batch(a, noise, x, n, rk, per_row, n_steps, n_threads, pruning_of(reference, shared, pairs), o, control);
        }, progress);
        return out;
      },
      py::arg("arena"), py::arg("X"), py::arg("ranking"), py::arg("n_steps"), py::arg("sigma"), py::arg("family"),
      py::arg("n_threads") = 0, py::arg("reference") = false, py::arg("shared") = true, py::arg("pairs") = true,
      py::arg("categorical") = py::none(),
      py::arg("progress") = py::none());

  m.def(
      "greedy_rank",
      [](const Arena& a, const CArray<double>& X, const CArray<double>& sigma, const CArray<std::uint8_t>& family,
         int n_threads, bool reference, bool shared, bool pairs, const py::object& categorical,
         const py::object& progress) {
        require_2d(X, a.n_features, "X");
        const std::int64_t n = X.shape(0);
        const std::int64_t d = a.n_features;
        const Noise noise = make_noise(a, sigma, family, categorical);
        py::array_t<std::int64_t> ranking({n, d});
        py::array_t<double> curve({n, d});
        const double* x = X.data();
        std::int64_t* r = ranking.mutable_data();
        double* c = curve.mutable_data();
        run_interruptible([&](RunControl* control) {
          greedy_rank_batch(a, noise, x, n, n_threads, pruning_of(reference, shared, pairs), r, c, control);
        }, progress);
        return py::make_tuple(ranking, curve);
      },
      py::arg("arena"), py::arg("X"), py::arg("sigma"), py::arg("family"), py::arg("n_threads") = 0,
      py::arg("reference") = false, py::arg("shared") = true, py::arg("pairs") = true,
      py::arg("categorical") = py::none(), py::arg("progress") = py::none());

  m.def(
      "expected",
      [](const Arena& a, const CArray<double>& X, const CArray<std::uint8_t>& mask, const CArray<double>& sigma,
         const CArray<std::uint8_t>& family, int n_threads, const py::object& categorical, const py::object& progress) {
        require_2d(X, a.n_features, "X");
        const std::int64_t n = X.shape(0);
        const bool per_row = check_mask(a, mask, n);
        const Noise noise = make_noise(a, sigma, family, categorical);
        py::array_t<double> out(n);
        const double* x = X.data();
        const std::uint8_t* mk = mask.data();
        double* o = out.mutable_data();
        run_interruptible([&](RunControl* control) {
          expected_batch(a, noise, x, n, mk, per_row, n_threads, o, control);
        }, progress);
        return out;
      },
      py::arg("arena"), py::arg("X"), py::arg("mask"), py::arg("sigma"), py::arg("family"), py::arg("n_threads") = 0, py::arg("categorical") = py::none(),
      py::arg("progress") = py::none());

  m.def(
      "first_moments",
      [](const Arena& a, const CArray<double>& X, const CArray<double>& sigma, const CArray<std::uint8_t>& family,
         int n_threads, const py::object& categorical, const py::object& progress) {
        require_2d(X, a.n_features, "X");
        const std::int64_t n = X.shape(0);
        const Noise noise = make_noise(a, sigma, family, categorical);
        py::array_t<double> out({n, static_cast<std::int64_t>(a.n_features)});
        const double* x = X.data();
        double* o = out.mutable_data();
        run_interruptible([&](RunControl* control) {
          first_moments_batch(a, noise, x, n, n_threads, o, control);
        }, progress);
        return out;
      },
      py::arg("arena"), py::arg("X"), py::arg("sigma"), py::arg("family"), py::arg("n_threads") = 0, py::arg("categorical") = py::none(),
      py::arg("progress") = py::none());

  m.def("max_threads", []() { return resolve_threads(0, std::numeric_limits<std::int64_t>::max()); });
}

}  // namespace pgexact::bindings
