#include "pair_sweep.hpp"

namespace pgexact {
namespace pairs {

void reduce_trees(const std::vector<double>& sum, const std::vector<double>& comp, std::int64_t n_trees,
                  std::size_t width, std::vector<double>& out) {
  out.assign(width, 0.0);
  std::vector<double> c(width, 0.0);
  for (std::int64_t t = 0; t < n_trees; ++t) {
    const std::size_t base = static_cast<std::size_t>(t) * width;
    for (std::size_t i = 0; i < width; ++i) add_compensated(out[i], c[i], sum[base + i] + comp[base + i]);
  }
  for (std::size_t i = 0; i < width; ++i) {
    const double value = out[i] + c[i];
    out[i] = value > 0.0 ? value : 0.0;
  }
}

}  // namespace pairs
}  // namespace pgexact
