// Noise families for the perturbation x'_j = x_j + delta_j. The kernels only need the CDF of
// delta_j, returned as the pair (F, 1 - F) with each side computed directly in its own tail,
// so probabilities of far-away cells keep their relative precision.
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
};

struct CdfPair {
  double lower;  // P(delta < u)
  double upper;  // P(delta > u)
};

// P(delta < u) and P(delta > u) for one family and scale.
CdfPair noise_cdf(NoiseFamily family, double sigma, double u);

// G(u) with G' (u) = u p(u) and G(+-inf) = 0, so E[delta 1(l < delta < h)] = G(h) - G(l).
double noise_partial_moment(NoiseFamily family, double sigma, double u);

// Per-feature noise: family and standard deviation of each feature's delta.
struct Noise {
  std::vector<NoiseFamily> family;
  std::vector<double> sigma;

  // Throws std::invalid_argument unless there is one finite positive sigma per feature.
  void validate(std::int64_t n_features) const;
};

}  // namespace pgexact
