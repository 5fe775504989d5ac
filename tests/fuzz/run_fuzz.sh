#!/usr/bin/env bash
# Build a coverage-instrumented, ASan+UBSan pgexact._core with clang, write the seed corpus, and
# run every atheris harness for SECONDS seconds (default 300). See README.md.
#
#   tests/fuzz/run_fuzz.sh [SECONDS] [HARNESS ...]
#
# HARNESS is any of xgboost_json xgboost_ubj lightgbm_text catboost_json arena_bytes (default: all five).
# Environment: PYTHON (default: python3 on PATH), CLANGXX (default: clang++, else clang++-14),
# FUZZ_DIR (default: build/fuzz-run under the repository) for the build, corpora and findings.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
seconds="${1:-300}"
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(xgboost_json xgboost_ubj lightgbm_text catboost_json arena_bytes)

PYTHON="${PYTHON:-python3}"
if [ -z "${CLANGXX:-}" ]; then
  CLANGXX="$(command -v clang++ || command -v clang++-14 || true)"
fi
[ -n "$CLANGXX" ] || { echo "clang++ not found (apt-get install clang libclang-rt-dev)" >&2; exit 2; }
"$PYTHON" -c "import atheris" 2>/dev/null || { echo "atheris not installed: $PYTHON -m pip install atheris" >&2; exit 2; }

work="${FUZZ_DIR:-$repo/build/fuzz-run}"
mkdir -p "$work"
rt="$("$CLANGXX" -print-resource-dir)/lib/linux"

# 1. One preloaded runtime holding both ASan and libFuzzer (atheris uses the preloaded libFuzzer;
#    the instrumented module finds its coverage and ASan symbols there). ASan's preinit object
#    cannot live in a shared library, so it is dropped from a copy of the archive.
if [ ! -f "$work/asan_with_fuzzer.so" ]; then
  cp "$rt/libclang_rt.asan-x86_64.a" "$work/asan_nopreinit.a"
  ar d "$work/asan_nopreinit.a" asan_preinit.cpp.o
  "$CLANGXX" -shared -o "$work/asan_with_fuzzer.so" -Wl,--whole-archive "$work/asan_nopreinit.a" \
    "$rt/libclang_rt.asan_cxx-x86_64.a" "$rt/libclang_rt.fuzzer_no_main-x86_64.a" -Wl,--no-whole-archive \
    -lpthread -ldl -lrt -lm
fi

# 2. The instrumented extension (OpenMP off: one thread per execution is what the fuzzer wants).
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
flags="$flags -fsanitize-coverage=inline-8bit-counters,pc-table,trace-cmp"
cmake -S "$repo" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$CLANGXX" -DCMAKE_CXX_FLAGS="$flags" -DPGEXACT_OPENMP=OFF \
  -DPython_EXECUTABLE="$(command -v "$PYTHON")" -Dpybind11_DIR="$("$PYTHON" -m pybind11 --cmakedir)" >/dev/null
cmake --build "$work/build" --target _core
core="$(ls "$work"/build/_core*.so | head -n1)"

# 3. Seeds: real model files written by the libraries (regenerated each run, small).
"$PYTHON" "$here/make_corpus.py" "$work/seeds"

declare -A seeds=([xgboost_json]=xgb_json [xgboost_ubj]=xgb_ubj [lightgbm_text]=lightgbm [catboost_json]=catboost
                  [arena_bytes]=arena)
declare -A dicts=([xgboost_json]=xgboost.dict [lightgbm_text]=lightgbm.dict [catboost_json]=catboost.dict)
status=0
for h in "${harnesses[@]}"; do
  corpus="$work/corpus/$h"
  artifacts="$work/findings/$h/"
  mkdir -p "$corpus" "$artifacts"
  cp -n "$work/seeds/${seeds[$h]}"/* "$corpus"/ 2>/dev/null || true
  extra=()
  [ -n "${dicts[$h]:-}" ] && extra+=("-dict=$here/${dicts[$h]}")
  echo "== $h: ${seconds}s, corpus $corpus"
  set +e
  (cd "$here" && ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1" PGEXACT_CORE="$core" \
    LD_PRELOAD="$work/asan_with_fuzzer.so" "$PYTHON" "fuzz_$h.py" "$corpus" "${extra[@]}" \
    -max_total_time="$seconds" -max_len=65536 -timeout=20 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts" -print_final_stats=1) 2>&1 | tee "$work/$h.log" | \
    grep -E "INITED|DONE|ERROR|SUMMARY|Traceback|stat::number_of_executed_units|crash-|timeout-|oom-"
  rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" -ne 0 ] && { echo "== $h: FINDING (exit $rc), see $work/$h.log and $artifacts"; status=1; }
done
exit $status
