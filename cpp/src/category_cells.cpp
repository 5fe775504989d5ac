#include "pgexact/category_cells.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pgexact {
namespace {

// Bound on a feature's meet table (leaf sets x prefix sets): beyond it the model's category
// sets on one feature are too many for the exact kernel's tables.
constexpr std::int64_t kMaxMeets = std::int64_t{1} << 25;

// A value's signature: where each split on the feature sends it.
std::string signature(const Arena& a, const CategoryCells::Feature& f, double x) {
  std::string key(f.split_nodes.size(), '\0');
  for (std::size_t k = 0; k < f.split_nodes.size(); ++k) key[k] = a.goes_left(f.split_nodes[k], x) ? '\1' : '\0';
  return key;
}

std::string key_of(const std::uint64_t* bits, std::int32_t words) {
  return std::string(reinterpret_cast<const char*>(bits), static_cast<std::size_t>(words) * sizeof(std::uint64_t));
}

}  // namespace

CategoryCells::CategoryCells(const Arena& a)
    : index_(static_cast<std::size_t>(a.n_features), -1), n_bounds_(static_cast<std::int64_t>(a.bounds.size())) {}

CategoryCells::CategoryCells(const Arena& a, const Noise& noise, const double* X, std::int64_t n_rows)
    : CategoryCells(a) {
  const std::int32_t d = a.n_features;
  for (std::int32_t j = 0; j < d; ++j) {
    if (!noise.categorical(j)) continue;
    index_[j] = static_cast<std::int32_t>(features_.size());
    features_.emplace_back();
    features_.back().feature = j;
    features_.back().change = noise.change[j];
  }
  if (features_.empty()) return;
  split_.assign(static_cast<std::size_t>(a.n_nodes()), -1);
  for (std::int32_t n = 0; n < a.n_nodes(); ++n) {
    const std::int32_t j = a.feature[n];
    if (j < 0 || index_[j] < 0) continue;
    Feature& f = features_[index_[j]];
    split_[n] = static_cast<std::int32_t>(f.split_nodes.size());
    f.split_nodes.push_back(n);
  }
  for (Feature& f : features_) {
    const std::int32_t j = f.feature;
    // The values x'_j can take: the categories (with their probabilities) and the rows' own.
    std::vector<double> values;
    for (std::int64_t i = 0; i < n_rows; ++i) {
      const double x = X[i * d + j];
      if (!std::isnan(x)) values.push_back(x);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    std::vector<std::string> signatures;
    auto add = [&](double x) {
      std::string key = signature(a, f, x);
      const auto found = f.cell_of_signature.find(key);
      if (found != f.cell_of_signature.end()) return found->second;
      const std::int32_t cell = f.n_cells++;
      f.cell_of_signature.emplace(key, cell);
      signatures.push_back(std::move(key));
      return cell;
    };
    for (std::int64_t k = noise.cat_begin[j]; k < noise.cat_begin[j + 1]; ++k) {
      f.category_cell.push_back(add(noise.cat_value[k]));
      f.category_weight.push_back(noise.cat_weight[k]);
    }
    for (const double x : values) add(x);
    f.words = (f.n_cells + 63) / 64;
    const auto words = static_cast<std::size_t>(f.words);
    f.left.assign(f.split_nodes.size() * words, 0);
    for (std::int32_t c = 0; c < f.n_cells; ++c) {
      for (std::size_t k = 0; k < f.split_nodes.size(); ++k) {
        if (signatures[static_cast<std::size_t>(c)][k]) f.left[k * words + static_cast<std::size_t>(c) / 64] |= std::uint64_t{1} << (c % 64);
      }
    }
    std::vector<std::uint64_t> all(words, 0);
    for (std::int32_t c = 0; c < f.n_cells; ++c) all[static_cast<std::size_t>(c) / 64] |= std::uint64_t{1} << (c % 64);
    intern(f, all.data());  // id 0: every cell
  }
}

std::int32_t CategoryCells::intern(Feature& f, const std::uint64_t* bits) {
  std::string key = key_of(bits, f.words);
  const auto found = f.id_of.find(key);
  if (found != f.id_of.end()) return found->second;
  const std::int32_t id = f.n_sets();
  f.id_of.emplace(std::move(key), id);
  f.bits.insert(f.bits.end(), bits, bits + f.words);
  // W and W' summed over the categories in the noise's order (see the file comment).
  double in = 0.0, out = 0.0;
  for (std::size_t k = 0; k < f.category_cell.size(); ++k) {
    const std::int32_t c = f.category_cell[k];
    ((bits[c / 64] >> (c % 64)) & 1u ? in : out) += f.category_weight[k];
  }
  bool none = true;
  for (std::int32_t w = 0; w < f.words; ++w) none = none && bits[w] == 0;
  f.inside.push_back(in);
  f.outside.push_back(out);
  f.empty.push_back(none ? 1 : 0);
  return id;
}

std::int32_t CategoryCells::narrow(Feature& f, std::int32_t set, std::int32_t split, bool left_side) {
  const auto words = static_cast<std::size_t>(f.words);
  std::vector<std::uint64_t> out(words);
  const std::uint64_t* s = f.bits.data() + static_cast<std::size_t>(set) * words;
  const std::uint64_t* l = f.left.data() + static_cast<std::size_t>(split) * words;
  for (std::size_t w = 0; w < words; ++w) out[w] = s[w] & (left_side ? l[w] : ~l[w]);
  if (f.n_cells % 64 != 0) out[words - 1] &= (std::uint64_t{1} << (f.n_cells % 64)) - 1;  // no cells past the last
  return intern(f, out.data());
}

void CategoryCells::finish(const Arena& a, const std::vector<std::vector<std::int32_t>>& leaf_sets) {
  std::int64_t next = static_cast<std::int64_t>(a.bounds.size());
  for (std::size_t i = 0; i < features_.size(); ++i) {
    Feature& f = features_[i];
    const auto words = static_cast<std::size_t>(f.words);
    f.n_prefix = f.n_sets();
    f.leaf_rank.assign(static_cast<std::size_t>(f.n_prefix), -1);
    const auto& leaves = leaf_sets[i];
    if (static_cast<std::int64_t>(leaves.size()) * f.n_prefix > kMaxMeets) {
      throw std::invalid_argument("noise: the model's splits on feature " + std::to_string(f.feature) +
                                  " form too many distinct category sets for the exact kernel");
    }
    for (std::size_t r = 0; r < leaves.size(); ++r) f.leaf_rank[leaves[r]] = static_cast<std::int32_t>(r);
    f.meet.assign(leaves.size() * static_cast<std::size_t>(f.n_prefix), 0);
    std::vector<std::uint64_t> both(words);
    for (std::size_t r = 0; r < leaves.size(); ++r) {
      for (std::int32_t p = 0; p < f.n_prefix; ++p) {
        const std::uint64_t* u = f.bits.data() + static_cast<std::size_t>(leaves[r]) * words;
        const std::uint64_t* q = f.bits.data() + static_cast<std::size_t>(p) * words;
        for (std::size_t w = 0; w < words; ++w) both[w] = u[w] & q[w];
        f.meet[r * static_cast<std::size_t>(f.n_prefix) + static_cast<std::size_t>(p)] = intern(f, both.data());
      }
    }
    f.leaf_rank.resize(static_cast<std::size_t>(f.n_sets()), -1);
    if (next + 2 * static_cast<std::int64_t>(f.n_sets()) > (std::int64_t{1} << 30)) {
      throw std::invalid_argument("noise: too many category sets for the exact kernel");
    }
    f.base = static_cast<std::int32_t>(next);
    next += 2 * static_cast<std::int64_t>(f.n_sets());
  }
  n_bounds_ = next;
}

std::int32_t CategoryCells::cell_of(const Arena& a, const Feature& f, double x) const {
  const auto found = f.cell_of_signature.find(signature(a, f, x));
  return found == f.cell_of_signature.end() ? -1 : found->second;
}

}  // namespace pgexact
