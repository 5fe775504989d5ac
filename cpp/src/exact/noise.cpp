#include "pgexact/exact/noise.hpp"

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
    case NoiseFamily::Categorical:  // no interval masses: the kernels never ask
    case NoiseFamily::Fixed:
      break;
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
    case NoiseFamily::Categorical:  // no moments on intervals: the kernels never ask
    case NoiseFamily::Fixed:
      break;
  }
  return 0.0;
}

bool Noise::has_categorical() const {
  for (const NoiseFamily f : family) {
    if (f == NoiseFamily::Categorical) return true;
  }
  return false;
}

void Noise::validate(std::int64_t n_features) const {
  if (static_cast<std::int64_t>(sigma.size()) != n_features ||
      static_cast<std::int64_t>(family.size()) != n_features) {
    throw std::invalid_argument("sigma: expected one value per feature (" + std::to_string(n_features) +
                                "), got " + std::to_string(sigma.size()));
  }
  const bool any_categorical = has_categorical();
  if (any_categorical && (static_cast<std::int64_t>(change.size()) != n_features ||
                          static_cast<std::int64_t>(cat_begin.size()) != n_features + 1 || cat_begin[0] != 0 ||
                          cat_begin[static_cast<std::size_t>(n_features)] != static_cast<std::int64_t>(cat_value.size()) ||
                          cat_weight.size() != cat_value.size())) {
    throw std::invalid_argument("noise: categorical noise needs change (d), cat_begin (d + 1) and one weight per "
                                "category value");
  }
  for (std::size_t j = 0; j < sigma.size(); ++j) {
    if (static_cast<std::uint8_t>(family[j]) > 4) throw std::invalid_argument("noise: unknown family");
    if (family[j] == NoiseFamily::Fixed) continue;
    if (family[j] == NoiseFamily::Categorical) {
      if (!(change[j] > 0.0 && change[j] <= 1.0)) {
        throw std::invalid_argument("noise: categorical change probability must be in (0, 1] for feature " +
                                    std::to_string(j));
      }
      const std::int64_t b = cat_begin[j], e = cat_begin[j + 1];
      if (!(b < e)) throw std::invalid_argument("noise: no categories for categorical feature " + std::to_string(j));
      double total = 0.0;
      for (std::int64_t k = b; k < e; ++k) {
        if (!std::isfinite(cat_value[k]) || !(cat_weight[k] >= 0.0) || !std::isfinite(cat_weight[k])) {
          throw std::invalid_argument("noise: category values and weights must be finite (weights >= 0) for feature " +
                                      std::to_string(j));
        }
        total += cat_weight[k];
      }
      if (!(std::fabs(total - 1.0) <= 1e-9)) {
        throw std::invalid_argument("noise: category weights must sum to 1 for feature " + std::to_string(j));
      }
      continue;
    }
    if (!(sigma[j] > 0.0) || !std::isfinite(sigma[j])) {
      throw std::invalid_argument("sigma: must be positive and finite, got " + std::to_string(sigma[j]) +
                                  " for feature " + std::to_string(j));
    }
  }
}

}  // namespace pgexact
