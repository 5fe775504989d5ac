#include "pair_store.hpp"

#include <algorithm>
#include <list>
#include <mutex>
#include <new>

#include "pgexact/model/serialize.hpp"

// The store (pgexact/exact/pair_store.hpp): one process-wide list of models, most recently used
// first, behind one mutex. The mutex guards the list and the counters only; the lists
// themselves are immutable once published and shared by pointer, so a kernel reads them with
// no lock held, and a model dropped while a call still reads it lives until that call ends.
namespace pgexact {
namespace pairs {
namespace {

struct Entry {
  std::string key;
  std::shared_ptr<const StoredPairs> lists;
};

struct Store {
  std::mutex mutex;
  std::list<Entry> models;  // most recently used first
  // Hashes of the keys of recent calls that found no lists (a hash: a collision only makes a
  // call keep lists it need not have kept).
  std::list<std::uint64_t> seen;
  std::int64_t budget = kDefaultPairStoreBytes;
  std::int64_t paused = 0;  // pause_pair_store's count
  std::int64_t held = 0;
  std::int64_t hits = 0, misses = 0;

  static std::int64_t cost(const Entry& e) {
    return static_cast<std::int64_t>(e.key.size() + (e.lists ? e.lists->bytes : 0));
  }
  // Drops the least recently used models, except `keep`, until the store fits the budget.
  void shrink(const Entry* keep = nullptr) {
    for (auto it = models.end(); held > budget && it != models.begin();) {
      --it;
      if (&*it == keep) continue;
      held -= cost(*it);
      it = models.erase(it);
    }
  }
};

Store& store() {
  static Store* s = new Store();  // never destroyed: kernels may still run at interpreter exit
  return *s;
}

// A serialised node takes about this many bytes (five int32 arrays, three doubles, a flag byte).
constexpr std::int64_t kBytesPerNode = 45;
// Models remembered as seen.
constexpr std::size_t kSeenModels = 16;

std::uint64_t fnv1a(const std::string& bytes) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

StoreView open_store(const Arena& arena, const LeafBoxes& boxes) {
  Store& s = store();
  StoreView view;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    view.budget = s.budget;
    // Paused: no key, so nothing is read or published; the budget still sizes the call's own
    // kept lists (PairCache).
    if (s.paused > 0) return view;
  }
  // Lists of a call that perturbs some feature by category hold that call's cells.
  if (boxes.set_features != 0 || view.budget == 0) return view;
  if (static_cast<std::int64_t>(arena.feature.size()) * kBytesPerNode > view.budget / 8) return view;
  view.key = serialize_arena(arena);
  if (static_cast<std::int64_t>(view.key.size()) > view.budget / 8) {
    view.key.clear();
    return view;
  }
  const std::uint64_t seen_hash = fnv1a(view.key);  // before the lock: O(key)
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto it = s.models.begin(); it != s.models.end(); ++it) {
    if (it->key == view.key) {
      s.models.splice(s.models.begin(), s.models, it);
      view.stored = it->lists;
      ++s.hits;
      return view;
    }
  }
  ++s.misses;
  const auto it = std::find(s.seen.begin(), s.seen.end(), seen_hash);
  view.seen_before = it != s.seen.end();
  if (view.seen_before) s.seen.erase(it);
  s.seen.push_front(seen_hash);
  if (s.seen.size() > kSeenModels) s.seen.pop_back();
  return view;
}

void publish(const StoreView& view, KeptLists&& fresh, std::size_t bytes) {
  if (view.key.empty() || bytes == 0) return;
  try {
    auto lists = std::make_shared<StoredPairs>();
    if (view.stored) *lists = *view.stored;  // the layers before this call (pointers)
    lists->layers.push_back(std::make_shared<const KeptLists>(std::move(fresh)));
    lists->bytes += bytes;
    Store& s = store();
    std::lock_guard<std::mutex> lock(s.mutex);
    const std::int64_t cost = static_cast<std::int64_t>(view.key.size() + lists->bytes);
    if (cost > s.budget) return;
    // Another call on the model may have published meanwhile: the entry with more lists wins.
    for (auto it = s.models.begin(); it != s.models.end(); ++it) {
      if (it->key != view.key) continue;
      if (it->lists && it->lists->bytes >= lists->bytes) return;
      s.held -= Store::cost(*it);
      s.models.erase(it);
      break;
    }
    s.models.push_front(Entry{view.key, std::move(lists)});
    s.held += cost;
    s.shrink(&s.models.front());
  } catch (const std::bad_alloc&) {
    // Keeping lists is an optimisation: without memory for it, the next call enumerates again.
  }
}

}  // namespace pairs

void set_pair_store_budget(std::int64_t bytes) {
  pairs::Store& s = pairs::store();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.budget = std::max<std::int64_t>(bytes, 0);
  s.shrink();
}

PairStoreInfo pair_store_info() {
  pairs::Store& s = pairs::store();
  std::lock_guard<std::mutex> lock(s.mutex);
  return PairStoreInfo{s.budget, s.held, static_cast<std::int64_t>(s.models.size()), s.hits, s.misses};
}

void pause_pair_store(bool pause) {
  pairs::Store& s = pairs::store();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.paused = std::max<std::int64_t>(s.paused + (pause ? 1 : -1), 0);
}

void clear_pair_store() {
  pairs::Store& s = pairs::store();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.models.clear();
  s.seen.clear();
  s.held = 0;
  s.hits = s.misses = 0;
}

}  // namespace pgexact
