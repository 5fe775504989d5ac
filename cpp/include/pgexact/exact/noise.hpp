// The perturbation of each feature. Additive families, x'_j = x_j + delta_j: the kernels only
// need the CDF of delta_j, returned as the pair (F, 1 - F) with each side computed directly in
// its own tail, so probabilities of far-away cells keep their relative precision. Categorical:
// x'_j = x_j with probability 1 - p, else a category c drawn with probability w_c, so
// P(x'_j in A) = (1 - p) [x_j in A] + p sum_{c in A} w_c for any set A of values (a leaf's
// path, or two leaves' paths together): PG2 still factorises over features. Fixed: x'_j = x_j.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace pgexact {

// sigma is always the standard deviation of delta.
enum class NoiseFamily : std::uint8_t {
  Normal = 0,   // N(0, sigma^2)
  Uniform = 1,  // U(-a, a), a = sigma * sqrt(3)
  Laplace = 2,  // Laplace(0, b), b = sigma / sqrt(2)
  Categorical = 3,  // keep x_j with probability 1 - change, else draw a category (no sigma)
  Fixed = 4,        // never perturbed (no sigma)
};

struct CdfPair {
  double lower;  // P(delta < u)
  double upper;  // P(delta > u)
};

// P(delta < u) and P(delta > u) for one family and scale.
CdfPair noise_cdf(NoiseFamily family, double sigma, double u);

// G(u) with G' (u) = u p(u) and G(+-inf) = 0, so E[delta 1(l < delta < h)] = G(h) - G(l).
double noise_partial_moment(NoiseFamily family, double sigma, double u);

// Per-feature noise: family and standard deviation of each feature's delta; for categorical
// features the change probability and the categories with their probabilities.
struct Noise {
  std::vector<NoiseFamily> family;
  std::vector<double> sigma;            // additive families only
  std::vector<double> change;           // categorical: p; empty when no feature is categorical
  std::vector<std::int64_t> cat_begin;  // n_features + 1 offsets into cat_value / cat_weight
  std::vector<double> cat_value;        // integer category codes
  std::vector<double> cat_weight;       // their probabilities (sum 1 per feature)

  bool perturbs(std::int64_t j) const { return family[j] != NoiseFamily::Fixed; }
  bool categorical(std::int64_t j) const { return family[j] == NoiseFamily::Categorical; }
  bool additive(std::int64_t j) const { return static_cast<std::uint8_t>(family[j]) <= 2; }
  bool has_categorical() const;

  // Throws std::invalid_argument unless every additive feature has a finite positive sigma and
  // every categorical one a change in (0, 1] and non-empty categories with weights summing to 1.
  void validate(std::int64_t n_features) const;
};

}  // namespace pgexact
