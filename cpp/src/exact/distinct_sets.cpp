// The variants of a call that perturb the same features of the model (distinct_sets.hpp).
#include "distinct_sets.hpp"

#include <map>
#include <utility>

#include "walk_common.hpp"

namespace pgexact {

void DistinctSets::copy_values(const double* values, double* out) const {
  for (std::size_t v = 0; v < of_variant.size(); ++v) out[v] = values[of_variant[v]];
}

DistinctSets distinct_sets(const Arena& a, const Noise& noise, const Variant* variants, std::int64_t count) {
  const auto d = static_cast<std::size_t>(a.n_features);
  const std::vector<std::uint8_t> split_on = a.used_features();
  // Key: the row and the features of the model the set moves, 64 to a word.
  using Key = std::pair<const double*, std::vector<std::uint64_t>>;
  std::map<Key, std::int64_t> index;
  DistinctSets out;
  out.of_variant.resize(static_cast<std::size_t>(count));
  std::vector<std::uint64_t> words((d + 63) / 64);
  for (std::int64_t v = 0; v < count; ++v) {
    const Variant& var = variants[v];
    std::fill(words.begin(), words.end(), 0);
    for (std::size_t j = 0; j < d; ++j) {
      if (split_on[j] && walk::perturbs_in_row(noise, var.mask, var.row, static_cast<std::int64_t>(j))) {
        words[j / 64] |= std::uint64_t{1} << (j % 64);
      }
    }
    const auto found = index.emplace(Key{var.row, words}, out.size());
    if (found.second) out.variants.push_back(var);
    out.of_variant[static_cast<std::size_t>(v)] = found.first->second;
  }
  return out;
}

}  // namespace pgexact
