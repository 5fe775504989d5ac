// _core.exact: the kernels over rows, each run on a worker thread with the GIL released
// (interruptible.hpp), and _core.exact.Kernel, which of the exact kernels computes PG2.
// Every kernel takes a Perturbation (register_perturbation.cpp) built once per call.
#include <pybind11/stl.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "convert.hpp"
#include "interruptible.hpp"
#include "pgexact/exact/kernels.hpp"
#include "pgexact/exact/pair_kernel.hpp"
#include "pgexact/exact/ranking.hpp"

namespace pgexact::bindings {
namespace {

// The perturbation must describe the arena's features.
const Noise& check_noise(const Arena& a, const Noise& noise) {
  if (static_cast<std::int64_t>(noise.sigma.size()) != a.n_features) {
    throw std::invalid_argument("sigma: expected a 1-D array of length " + std::to_string(a.n_features));
  }
  return noise;
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

// The tolerance the caller allows (pgexact._exact._tolerance validated it for users).
double check_tol(double tol) {
  if (!(tol >= 0.0 && tol < 1.0)) throw std::invalid_argument("tol: must be a number in [0, 1)");
  return tol;
}

}  // namespace

void register_kernels(py::module_& m) {
  py::enum_<Pruning>(m, "Kernel", "Which exact kernel computes PG2 (kernels.hpp's Pruning).")
      .value("pairs", Pruning::Full,
             "the default: enumerated leaf pairs where they apply (shared walks for calls of one or two rows "
             "that they do faster), else shared walks")
      .value("leaf_pairs", Pruning::Pairs, "pairs without the few-row choice: enumerated leaf pairs wherever they apply")
      .value("walks", Pruning::Walk, "the node-pair walks shared between rows and sets")
      .value("separate_walks", Pruning::Separate, "the node-pair walks without sharing")
      .value("reference", Pruning::None, "the paper's unpruned pair walk");

  py::enum_<FewRowsCall>(m, "FewRowsCall", "The kinds of call few_rows_on_walks tells apart.")
      .value("set", FewRowsCall::Set)
      .value("curve", FewRowsCall::Curve)
      .value("greedy", FewRowsCall::Greedy);
  m.def(
      "few_rows_on_walks",
      [](const Arena& a, const Noise& noise, std::int64_t n_rows, FewRowsCall call) {
        return few_rows_on_walks(a, noise, n_rows, call);
      },
      py::arg("arena"), py::arg("perturbation"), py::arg("n_rows"), py::arg("call"),
      "Whether Kernel.pairs runs a call of n_rows rows of this kind on the walks (kernels.hpp).");
  m.def(
      "pg2_planning_share",
      [](const Arena& a, const Noise& noise, std::int64_t n_rows) { return pg2_planning_share(a, noise, n_rows); },
      py::arg("arena"), py::arg("perturbation"), py::arg("n_rows"),
      "The share of a leaf-pair pg2 call's progress units that plan its projected tree pairs (pair_kernel.hpp).");
  m.def(
      "pg2_block_rows", [](const Arena& a, std::int64_t n_rows) { return pg2_block_rows(a, n_rows); },
      py::arg("arena"), py::arg("n_rows"),
      "Rows per block of a leaf-pair pg2 call on n_rows rows, 0 where that kernel does not apply (pair_kernel.hpp).");

  m.def(
      "pg2",
      [](const Arena& a, const CArray<double>& X, const CArray<std::uint8_t>& mask, const Noise& noise,
         int n_threads, Pruning kernel, const py::object& progress, double tol, bool calibration) {
        require_2d(X, a.n_features, "X");
        const std::int64_t n = X.shape(0);
        const bool per_row = check_mask(a, mask, n);
        check_tol(tol);
        check_noise(a, noise);
        py::array_t<double> out(n);
        const double* x = X.data();
        const std::uint8_t* mk = mask.data();
        double* o = out.mutable_data();
        run_interruptible([&](RunControl* control) {
          pg2_batch(a, noise, x, n, mk, per_row, n_threads, kernel, o, control, tol);
        }, progress, calibration);
        return out;
      },
      py::arg("arena"), py::arg("X"), py::arg("mask"), py::arg("perturbation"), py::arg("n_threads") = 0,
      py::arg("kernel") = Pruning::Full, py::arg("progress") = py::none(), py::arg("tol") = kDefaultTolerance,
      py::arg("calibration") = false);

  m.def(
      "pg2_curve",
      [](const Arena& a, const CArray<double>& X, const CArray<std::int64_t>& ranking, std::int64_t n_steps,
         const Noise& noise, int n_threads, Pruning kernel, const py::object& progress, double tol, bool calibration) {
        require_2d(X, a.n_features, "X");
        const std::int64_t n = X.shape(0);
        check_tol(tol);
        bool per_row = false;
        if (ranking.ndim() == 2) {
          require_2d(ranking, a.n_features, "ranking");
          if (ranking.shape(0) != n) throw std::invalid_argument("ranking: must have one row per row of X");
          per_row = true;
        } else {
          require_1d(ranking, a.n_features, "ranking");
        }
        if (n_steps < 0) n_steps = a.n_features;
        check_noise(a, noise);
        py::array_t<double> out({n, n_steps});
        const double* x = X.data();
        const std::int64_t* rk = ranking.data();
        double* o = out.mutable_data();
        run_interruptible([&](RunControl* control) {
          pg2_curve_batch(a, noise, x, n, rk, per_row, n_steps, n_threads, kernel, o, control, tol);
        }, progress, calibration);
        return out;
      },
      py::arg("arena"), py::arg("X"), py::arg("ranking"), py::arg("n_steps"), py::arg("perturbation"),
      py::arg("n_threads") = 0, py::arg("kernel") = Pruning::Full, py::arg("progress") = py::none(),
      py::arg("tol") = kDefaultTolerance, py::arg("calibration") = false);

  m.def(
      "greedy_rank",
      [](const Arena& a, const CArray<double>& X, const Noise& noise, int n_threads, Pruning kernel,
         const py::object& progress, double tol, bool calibration) {
        require_2d(X, a.n_features, "X");
        const std::int64_t n = X.shape(0);
        const std::int64_t d = a.n_features;
        check_noise(a, noise);
        check_tol(tol);
        py::array_t<std::int64_t> ranking({n, d});
        py::array_t<double> curve({n, d});
        const double* x = X.data();
        std::int64_t* r = ranking.mutable_data();
        double* c = curve.mutable_data();
        run_interruptible([&](RunControl* control) {
          greedy_rank_batch(a, noise, x, n, n_threads, kernel, r, c, control, tol);
        }, progress, calibration);
        return py::make_tuple(ranking, curve);
      },
      py::arg("arena"), py::arg("X"), py::arg("perturbation"), py::arg("n_threads") = 0,
      py::arg("kernel") = Pruning::Full, py::arg("progress") = py::none(), py::arg("tol") = kDefaultTolerance,
      py::arg("calibration") = false);

  m.def(
      "expected",
      [](const Arena& a, const CArray<double>& X, const CArray<std::uint8_t>& mask, const Noise& noise,
         int n_threads, const py::object& progress) {
        require_2d(X, a.n_features, "X");
        const std::int64_t n = X.shape(0);
        const bool per_row = check_mask(a, mask, n);
        check_noise(a, noise);
        py::array_t<double> out(n);
        const double* x = X.data();
        const std::uint8_t* mk = mask.data();
        double* o = out.mutable_data();
        run_interruptible([&](RunControl* control) {
          expected_batch(a, noise, x, n, mk, per_row, n_threads, o, control);
        }, progress);
        return out;
      },
      py::arg("arena"), py::arg("X"), py::arg("mask"), py::arg("perturbation"), py::arg("n_threads") = 0,
      py::arg("progress") = py::none());

  m.def(
      "first_moments",
      [](const Arena& a, const CArray<double>& X, const Noise& noise, int n_threads, const py::object& progress) {
        require_2d(X, a.n_features, "X");
        const std::int64_t n = X.shape(0);
        check_noise(a, noise);
        py::array_t<double> out({n, static_cast<std::int64_t>(a.n_features)});
        const double* x = X.data();
        double* o = out.mutable_data();
        run_interruptible([&](RunControl* control) {
          first_moments_batch(a, noise, x, n, n_threads, o, control);
        }, progress);
        return out;
      },
      py::arg("arena"), py::arg("X"), py::arg("perturbation"), py::arg("n_threads") = 0,
      py::arg("progress") = py::none());

  m.def("max_threads", []() { return resolve_threads(0, std::numeric_limits<std::int64_t>::max()); });
}

}  // namespace pgexact::bindings
