// Internal to the leaf-pair kernel (not installed): the store's side that the sweep sees
// (pgexact/exact/pair_store.hpp says what the store is for).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "pgexact/exact/leaf_pairs.hpp"
#include "pgexact/exact/pair_store.hpp"

namespace pgexact {
namespace pairs {

// Kept lists of one call: per first tree t, (s, chunk) -> list.
using KeptLists = std::vector<std::unordered_map<std::int64_t, PairList>>;

inline std::int64_t list_key(std::int64_t s, std::int32_t chunk) { return s * 1048576 + chunk; }

// A model's stored lists: the layers published by successive calls, each immutable once
// published, so calls running at the same time read them without a lock.
struct StoredPairs {
  std::vector<std::shared_ptr<const KeptLists>> layers;
  std::size_t bytes = 0;

  const PairList* find(std::int64_t t, std::int64_t s, std::int32_t chunk) const {
    for (const auto& layer : layers) {
      const auto& mine = (*layer)[static_cast<std::size_t>(t)];
      const auto hit = mine.find(list_key(s, chunk));
      if (hit != mine.end()) return &hit->second;
    }
    return nullptr;
  }
};

// What one call needs from the store: the model's key ("" when the model is not stored), its
// stored lists at the start of the call (null when none) and the budget then.
struct StoreView {
  std::string key;
  std::shared_ptr<const StoredPairs> stored;
  std::int64_t budget = 0;
  // Whether a call on this model came before and kept nothing (its passes enumerated only live
  // pairs): the model is being called again, so this call enumerates full lists to keep.
  bool seen_before = false;
};

// Looks the model up. `boxes` tells whether a feature is perturbed by category (then the lists
// depend on the call, and the model is not stored).
StoreView open_store(const Arena& arena, const LeafBoxes& boxes);

// Adds the lists a call kept to its model's entry (a new layer over `view.stored`), if the
// entry then fits the budget; evicts the least recently used other models as needed.
void publish(const StoreView& view, KeptLists&& fresh, std::size_t bytes);

}  // namespace pairs
}  // namespace pgexact
