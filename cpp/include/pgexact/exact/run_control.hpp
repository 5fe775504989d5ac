// Stopping and watching a long batch call from another thread.
//
// A caller that wants to stop a call or show its progress passes a RunControl (nullptr: none)
// to the batch drivers. Workers never throw inside a parallel region: they read `stop` at
// cheap checkpoints (per row, per tree pair of the pair kernel) and skip the rest of their
// work, and the driver returns early; the outputs of a stopped call are meaningless and the
// caller must discard them. `done` advances in units of work (rows, or tree pairs of one pass
// over a block of rows) towards `total`, which the drivers add to before the work starts.
#pragma once

#include <atomic>
#include <cstdint>

namespace pgexact {

struct RunControl {
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> done{0};
  std::atomic<std::int64_t> total{0};
  // A calibration (pgexact.estimate), stopped after a few tenths of a second and its results
  // discarded: the pair kernel's sweeps take each tile's second trees from halfway
  // (pair_sweep.hpp), so that its first units are tree pairs of distant trees, as most of a
  // call's are, not the first trees' pairs among themselves, which cost less per unit (the
  // first 0.3 s of 8 rows of LightGBM(500 trees of 255 leaves) ran 2.6x faster than the rest).
  bool calibration = false;
};

// Whether the caller asked to stop (a relaxed load: a worker sees it within one checkpoint).
inline bool stopped(const RunControl* control) {
  return control != nullptr && control->stop.load(std::memory_order_relaxed);
}

// Whether the call is a calibration (RunControl::calibration).
inline bool calibrating(const RunControl* control) { return control != nullptr && control->calibration; }

// `units` more units of work done.
inline void advance(RunControl* control, std::int64_t units) {
  if (control != nullptr) control->done.fetch_add(units, std::memory_order_relaxed);
}

// `units` more units of work to come.
inline void plan(RunControl* control, std::int64_t units) {
  if (control != nullptr) control->total.fetch_add(units, std::memory_order_relaxed);
}

}  // namespace pgexact
