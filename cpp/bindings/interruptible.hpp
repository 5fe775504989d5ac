// Long kernel calls that Ctrl-C stops and a progress callback watches.
//
// The work runs on its own std::thread (its OpenMP team works as from any thread) while the
// calling thread, which holds the GIL only between waits, wakes every 25 ms: it runs
// PyErr_CheckSignals (a pending SIGINT raises KeyboardInterrupt: the work is told to stop,
// joined, and the exception propagates) and calls `progress(done, total)` if given (an
// exception there stops the work the same way). The worker touches no Python object, and the
// calling thread waits for it before returning or raising, so no thread outlives the call
// and the next call starts from a clean state. 25 ms, not 100: pgexact.estimate watches a run
// for about a tenth of a second and needs several reports in it (a GIL taken 40 times a second
// costs nothing the kernels would notice; the bar redraws at most every 0.1 s, _progress.py).
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "pgexact/exact/run_control.hpp"

namespace pgexact::bindings {

namespace py = pybind11;

// How often the waiting thread checks for Ctrl-C and reports progress.
constexpr std::chrono::milliseconds kPollInterval{25};

// Runs work(&control) as described above. `progress` is None or a callable(done, total);
// `calibration`: the run is a calibration (RunControl::calibration).
// Call it with the GIL held, after every Python argument has been converted: `work` must only
// read memory that this frame keeps alive (converted arrays, the immutable arena, outputs).
template <typename Work>
void run_interruptible(Work&& work, const py::object& progress, bool calibration = false) {
  RunControl control;
  control.calibration = calibration;
  std::mutex mutex;
  std::condition_variable finished_cv;
  bool finished = false;
  std::exception_ptr failure;
  bool python_error = false;  // the error indicator is set (signal or progress callback)
  {
    // Safe to release: the worker only reads converted, contiguous inputs and writes outputs
    // owned by the calling frame, and the arena is immutable; Python objects are only touched
    // below with the GIL taken back.
    py::gil_scoped_release release;
    std::thread worker([&] {
      try {
        work(&control);
      } catch (...) {
        failure = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      finished = true;
      finished_cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mutex);
    while (!finished && !python_error) {
      finished_cv.wait_for(lock, kPollInterval);
      if (finished) break;
      lock.unlock();
      {
        py::gil_scoped_acquire acquire;
        if (PyErr_CheckSignals() != 0) {
          python_error = true;
        } else if (!progress.is_none()) {
          PyObject* result = PyObject_CallFunction(progress.ptr(), "LL",
                                                   static_cast<long long>(control.done.load()),
                                                   static_cast<long long>(control.total.load()));
          if (result == nullptr) python_error = true;
          Py_XDECREF(result);
        }
      }
      if (python_error) control.stop.store(true);
      lock.lock();
    }
    finished_cv.wait(lock, [&] { return finished; });
    lock.unlock();
    worker.join();
  }
  if (python_error) throw py::error_already_set();
  if (failure) std::rethrow_exception(failure);
  if (!progress.is_none()) progress(control.total.load(), control.total.load());
}

}  // namespace pgexact::bindings
