#!/usr/bin/env bash
# Build pgexact with AddressSanitizer + UndefinedBehaviorSanitizer (-DPGEXACT_SANITIZE=ON) and run
# the test suite under it, without touching the normal (editable) install.
#
#   scripts/run_sanitized_tests.sh [pytest args...]      (default: the whole suite, -x -q)
#
# PYTHON: the interpreter whose environment has the build and test dependencies (scikit-build-core,
#         pybind11, numpy, pytest, xgboost, lightgbm, scikit-learn, ...); default python3.
# SANITIZE_DIR: where the build and a private virtualenv go; default build/asan in the repository.
#
# How: a private virtualenv sees the base environment's packages through a plain path entry (so
# the base environment's editable pgexact finder is not loaded) and gets a sanitized, non-editable
# pgexact installed into it. Python itself is not instrumented, so the compiler's ASan runtime is
# LD_PRELOADed; leak detection is off (CPython keeps interned objects to the end). UBSan stops at
# the first report (-fno-sanitize-recover=undefined), ASan at the first error: either fails the run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
PYTHON="${PYTHON:-python3}"
work="${SANITIZE_DIR:-$repo/build/asan}"
venv="$work/venv"
mkdir -p "$work"

base_site="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if [ ! -x "$venv/bin/python" ]; then
  "$PYTHON" -m venv --without-pip "$venv"
fi
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$base_site" > "$site/_pgexact_base_env.pth"

# The sanitized build (RelWithDebInfo for readable reports), installed into the private venv only.
"$PYTHON" -m pip install --quiet --no-build-isolation --no-deps --upgrade --target "$site" \
  -Ccmake.define.PGEXACT_SANITIZE=ON -Ccmake.build-type=RelWithDebInfo -Cbuild-dir="$work/build" "$repo"


asan_rt="$(${CXX:-g++} -print-file-name=libasan.so)"
[ -f "$asan_rt" ] || { echo "cannot find libasan.so (set CXX to the compiler that built the core)" >&2; exit 2; }
# libstdc++ is preloaded too: python does not link it, and without it ASan's __cxa_throw
# interceptor finds no real __cxa_throw and aborts on the first C++ exception (xgboost throws some).
cxx_rt="$(${CXX:-g++} -print-file-name=libstdc++.so.6)"
export LD_PRELOAD="$asan_rt:$cxx_rt${LD_PRELOAD:+:$LD_PRELOAD}"
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

"$venv/bin/python" - <<'EOF'
import sys, sysconfig
import pgexact._core as c
own = sysconfig.get_paths()["purelib"]
if not c.__file__.startswith(own):
    sys.exit(f"expected the sanitized pgexact from {own}, got {c.__file__}")
print("sanitized pgexact:", c.__file__)
EOF

cd "$repo"
if [ $# -eq 0 ]; then
  set -- tests -x -q -p no:cacheprovider
fi
exec "$venv/bin/python" -m pytest "$@"
