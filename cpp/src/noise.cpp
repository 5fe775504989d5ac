#include "pgexact/noise.hpp"

#include <cmath>
#include <string>

namespace pgexact {

CdfPair noise_cdf(NoiseFamily family, double sigma, double u) {
  if (std::isinf(u)) return u < 0 ? CdfPair{0.0, 1.0} : CdfPair{1.0, 0.0};
  switch (family) {
    case NoiseFamily::Normal: {
      // Phi(z) = erfc(-z / sqrt(2)) / 2, evaluated on the side where it is small.
      const double z = u / sigma;
      if (z < 0) {
        const double lo = 0.5 * std::erfc(-z * M_SQRT1_2);
        return {lo, 1.0 - lo};
      }
      const double up = 0.5 * std::erfc(z * M_SQRT1_2);
      return {1.0 - up, up};
    }
    case NoiseFamily::Uniform: {
      const double a = sigma * std::sqrt(3.0);
      if (u <= -a) return {0.0, 1.0};
      if (u >= a) return {1.0, 0.0};
      return {(u + a) / (2.0 * a), (a - u) / (2.0 * a)};
    }
    case NoiseFamily::Laplace: {
      const double z = u / (sigma * M_SQRT1_2);
      if (z < 0) {
        const double lo = 0.5 * std::exp(z);
        return {lo, 1.0 - lo};
      }
      const double up = 0.5 * std::exp(-z);
      return {1.0 - up, up};
    }
  }
  return {0.0, 1.0};
}

double noise_partial_moment(NoiseFamily family, double sigma, double u) {
  if (std::isinf(u)) return 0.0;
  switch (family) {
    case NoiseFamily::Normal: {
      // -sigma * phi(u / sigma)
      const double z = u / sigma;
      return -sigma * std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
    }
    case NoiseFamily::Uniform: {
      // u^2 / (4a) inside the support, constant a / 4 outside; shifted so that G(+-inf) = 0.
      const double a = sigma * std::sqrt(3.0);
      const double c = std::fmin(std::fabs(u), a);
      return (c * c - a * a) / (4.0 * a);
    }
    case NoiseFamily::Laplace: {
      const double b = sigma * M_SQRT1_2;
      const double au = std::fabs(u);
      return -0.5 * (au + b) * std::exp(-au / b);
    }
  }
  return 0.0;
}

void Noise::validate(std::int64_t n_features) const {
  if (static_cast<std::int64_t>(sigma.size()) != n_features ||
      static_cast<std::int64_t>(family.size()) != n_features) {
    throw std::invalid_argument("sigma: expected one value per feature (" + std::to_string(n_features) +
                                "), got " + std::to_string(sigma.size()));
  }
  for (std::size_t j = 0; j < sigma.size(); ++j) {
    if (!(sigma[j] > 0.0) || !std::isfinite(sigma[j])) {
      throw std::invalid_argument("sigma: must be positive and finite, got " + std::to_string(sigma[j]) +
                                  " for feature " + std::to_string(j));
    }
    if (static_cast<std::uint8_t>(family[j]) > 2) throw std::invalid_argument("noise: unknown family");
  }
}

}  // namespace pgexact
