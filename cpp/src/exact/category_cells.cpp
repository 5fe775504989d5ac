#include "pgexact/exact/category_cells.hpp"

#include <algorithm>
#include <cmath>

namespace pgexact {
namespace {

// A value's signature: where each split on the feature sends it.
std::string signature(const Arena& a, const CategoryCells::Feature& f, double x) {
  std::string key(f.split_nodes.size(), '\0');
  for (std::size_t k = 0; k < f.split_nodes.size(); ++k) key[k] = a.goes_left(f.split_nodes[k], x) ? '\1' : '\0';
  return key;
}

}  // namespace

CategoryCells::CategoryCells(const Arena& a) : index_(static_cast<std::size_t>(a.n_features), -1) {}

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
    f.n_category_cells = f.n_cells;
    f.cell_weight.assign(static_cast<std::size_t>(f.n_cells), 0.0);
    for (std::size_t k = 0; k < f.category_cell.size(); ++k) f.cell_weight[f.category_cell[k]] += f.category_weight[k];
    for (const double x : values) add(x);
    f.words = (f.n_cells + 63) / 64;
    if (f.words == 1) {
      f.inside_by_byte.assign(8 * 256, 0.0);
      f.outside_by_byte.assign(8 * 256, 0.0);
      for (std::int32_t b = 0; b < 8; ++b) {
        for (std::int32_t v = 0; v < 256; ++v) {
          for (std::int32_t i = 0; i < 8; ++i) {
            const std::int32_t c = 8 * b + i;
            if (c >= f.n_category_cells) break;
            ((v >> i) & 1 ? f.inside_by_byte : f.outside_by_byte)[static_cast<std::size_t>(256 * b + v)] += f.cell_weight[c];
          }
        }
      }
    }
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
  std::string key(reinterpret_cast<const char*>(bits), static_cast<std::size_t>(f.words) * sizeof(std::uint64_t));
  const auto found = f.id_of.find(key);
  if (found != f.id_of.end()) return found->second;
  const std::int32_t id = f.n_sets();
  f.id_of.emplace(std::move(key), id);
  f.bits.insert(f.bits.end(), bits, bits + f.words);
  return id;
}

std::int32_t CategoryCells::narrow(Feature& f, std::int32_t set, std::int32_t split, bool left_side) {
  const auto words = static_cast<std::size_t>(f.words);
  std::vector<std::uint64_t> out(words);
  const std::uint64_t* s = f.set(set);
  const std::uint64_t* l = f.left.data() + static_cast<std::size_t>(split) * words;
  for (std::size_t w = 0; w < words; ++w) out[w] = s[w] & (left_side ? l[w] : ~l[w]);
  if (f.n_cells % 64 != 0) out[words - 1] &= (std::uint64_t{1} << (f.n_cells % 64)) - 1;  // no cells past the last
  return intern(f, out.data());
}

void CategoryCells::Feature::probabilities(std::int32_t a, std::int32_t b, double* inside, double* outside) const {
  // W and W' over the category cells in order (see the file comment).
  const std::uint64_t* p = set(a);
  const std::uint64_t* q = set(b);
  double in = 0.0, out = 0.0;
  if (words == 1) {
    const std::uint64_t both = p[0] & q[0];
    for (std::int32_t k = 0; k < 8 && 8 * k < n_category_cells; ++k) {
      const std::size_t at = static_cast<std::size_t>(256 * k) + ((both >> (8 * k)) & 0xffu);
      in += inside_by_byte[at];
      out += outside_by_byte[at];
    }
  } else {
    for (std::int32_t c = 0; c < n_category_cells; ++c) {
      (((p[c / 64] & q[c / 64]) >> (c % 64)) & 1u ? in : out) += cell_weight[static_cast<std::size_t>(c)];
    }
  }
  *inside = 1.0 - change * out;
  *outside = change * in;
}

}  // namespace pgexact
