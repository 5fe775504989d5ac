// Leaf-pair lists kept across calls, per model, within a memory budget.
//
// Which leaf pairs intersect depends on the model alone (leaf_pairs.hpp): not on the rows, the
// perturbed sets or the noise, as long as no feature is perturbed by category. A call on a
// model therefore enumerates the same lists as the call before it on the same model; the store
// keeps the lists a call enumerated in full, so the next call reads them instead (a kept list
// is the list enumerated again, entry for entry: results are the same bits either way). A call
// whose passes need only the pairs of a few live leaves (one row) enumerates just those and
// keeps nothing; when the same model comes again, that call enumerates and keeps the full lists.
//
// A model is recognised by its content (the arena's serialised bytes, compared in full), not
// by the object that holds it, so a model object parsed again on every call is still found,
// and two different models never share lists. Models whose serialised form would take more
// than an eighth of the budget are not stored (deep forests: their lists would not fit
// anyway). The least recently used models are dropped first; 0 turns the store off.
#pragma once

#include <cstdint>

namespace pgexact {

struct PairStoreInfo {
  std::int64_t max_bytes = 0;  // the budget
  std::int64_t bytes = 0;      // held now: lists and model keys
  std::int64_t models = 0;     // models with kept lists
  std::int64_t hits = 0;       // calls that found their model's lists
  std::int64_t misses = 0;     // calls on a storable model that found none
};

// The default budget: 192 MiB, what one call may keep for its own later passes.
inline constexpr std::int64_t kDefaultPairStoreBytes = std::int64_t{192} << 20;

// Sets the budget (bytes >= 0) and drops models until the store fits it.
void set_pair_store_budget(std::int64_t bytes);
PairStoreInfo pair_store_info();
// Drops every kept list and resets the counters.
void clear_pair_store();
// While paused (a count: pauses may nest and overlap), calls neither read the store nor add to
// it, as with no store but keeping lists for their own later passes as usual: pgexact.estimate
// times a call as it runs on a model seen for the first time (a store holding part of a
// model's lists made its first tenths of a second run at 1.3-1.7x the call's rate) and leaves
// the store as it found it. Calls of other threads meanwhile run without it too: slower, the
// same bits.
void pause_pair_store(bool pause);

}  // namespace pgexact
