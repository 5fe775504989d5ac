"""Pairs, bytes and nanoseconds per intersecting leaf pair of the pair kernel, from C++.

Builds the ``pgexact_profile_pairs`` driver (``profile_pairs.cpp``, CMake target outside the
package build) into ``build/profile``, trains the scaling benchmark's synthetic XGBoost models,
and for each prints the enumeration (pairs of every tree pair, ns per pair) and the time of one
set pass, one curve (all d prefixes) and one greedy ranking on ``--rows`` rows, with the pass
time per pair and row. Run it under ``perf record -g`` (``--perf``) to see where a pass spends
its time; the extension module is stripped, this driver is not.

    python bench/profile/profile_pairs.py [--rows 32] [--threads 1] [--perf MODE]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "profile"


def build() -> Path:
    import pybind11

    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(BUILD), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O3 -g", f"-Dpybind11_DIR={pybind11.get_cmake_dir()}"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(BUILD), "--target", "pgexact_profile_pairs"], check=True,
                   stdout=subprocess.DEVNULL)
    return BUILD / "pgexact_profile_pairs"


def models(quick: bool):
    import xgboost as xgb

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 8))
    y = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.3 * X[:, 3] ** 2 + X[:, 4:].sum(axis=1) + 0.3 * rng.normal(size=4000)
    sizes = [(40, 4), (100, 6), (20, 10)] + ([] if quick else [(400, 6)])
    for trees, depth in sizes:
        m = xgb.XGBRegressor(n_estimators=trees, max_depth=depth, tree_method="hist", random_state=0, nthread=2)
        yield f"XGBoost {trees}×d{depth}, d=8", m.fit(X, y), X


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="skip the 400-tree model")
    ap.add_argument("--perf", choices=["set", "curve", "rank"], help="record this mode under perf (100×d6 only)")
    args = ap.parse_args()
    driver = build()
    print("| model | pairs (s ≥ t) | bytes / pair | enumeration ns / pair | set pass ns / (pair·row) | "
          "curve ns / (pair·row) | rank ns / (pair·row) |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, X in models(args.quick):
            path, rows_path = Path(tmp) / "model.json", Path(tmp) / "rows.bin"
            model.get_booster().save_model(str(path))
            np.ascontiguousarray(X[: args.rows], dtype=np.float64).tofile(rows_path)

            def run(mode: str) -> str:
                cmd = [str(driver), str(path), str(rows_path), str(args.rows), mode, str(args.threads)]
                if args.perf == mode and "100×d6" in name:
                    cmd = ["perf", "record", "-g", "-o", str(ROOT / "build" / f"perf-{mode}.data")] + cmd
                return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout

            count = run("count")
            pairs = int(re.search(r"pairs \(s >= t\) (\d+)", count).group(1))
            per_pair = float(re.search(r"([\d.]+) bytes per pair", count).group(1))
            enum_ns = float(re.search(r"= ([\d.]+) ns per pair", count).group(1))
            cols = []
            for mode in ("set", "curve", "rank"):
                sec = float(re.search(r": ([\d.]+) s,", run(mode)).group(1))
                # The pass time per pair and row, enumeration (paid once per call) taken out.
                cols.append((sec - enum_ns * 1e-9 * pairs) * 1e9 / (pairs * args.rows))
            print(f"| {name} | {pairs:,} | {per_pair:.1f} | {enum_ns:.0f} | {cols[0]:.1f} | {cols[1]:.1f} | "
                  f"{cols[2]:.1f} |", flush=True)
    if args.perf:
        print(f"perf data: build/perf-{args.perf}.data (perf report -i ...)", file=sys.stderr)


if __name__ == "__main__":
    main()
