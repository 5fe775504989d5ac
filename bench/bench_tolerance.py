"""``tol=`` on deep forests: seconds of one-row exact PGI² per tolerance, against Monte Carlo.

Random forests on the shipped California housing data (standardised, σ = 0.3, a ranking by
|x|, 1 thread, pair cache off so every call enumerates), one call per row: the exact call at the default
tolerance (1e-13), at ``tol=1e-6`` and ``tol=1e-3``, the largest relative difference from the
default seen over the rows (the certified bound is ``tol``), and ``pgexact.mc.pgi2`` at 100
samples and at the N of a 1 % standard error (from a pilot with ``return_se=True``) on the
same row. Writes its section of bench/RESULTS.md.

    python bench/bench_tolerance.py [--rows 3] [--models rf20,rf100d10,rf100] [--data-dir ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import numpy as np

import pgexact

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import DATA_DIR, write_section  # noqa: E402
from bench_defaults import load_dataset  # noqa: E402

BEGIN, END = "<!-- bench_tolerance:begin -->", "<!-- bench_tolerance:end -->"
SIGMA = 0.3
TOLS = (None, 1e-6, 1e-3)
MODELS = {
    "rf20": ("RandomForestRegressor(20 trees), unbounded depth", dict(n_estimators=20)),
    "rf100d10": ("RandomForestRegressor(max_depth=10)", dict(max_depth=10)),
    "rf100": ("RandomForestRegressor() (100 trees, unbounded depth)", dict()),
}


def timed(fn: Callable[[], Any]) -> tuple:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def run(key: str, Xtr, ytr, Xte, rows: int) -> Dict[str, Any]:
    from sklearn.ensemble import RandomForestRegressor
    label, params = MODELS[key]
    model = RandomForestRegressor(random_state=0, n_jobs=2, **params).fit(Xtr, ytr)
    ens = pgexact.load(model)
    model.set_params(n_jobs=1)
    R = Xte[:rows]
    rk = np.argsort(-np.abs(R), axis=1)
    out: Dict[str, Any] = dict(model=label, rows=rows, leaves=int(sum(
        e.tree_.n_leaves for e in model.estimators_)))
    values: Dict[Any, np.ndarray] = {}
    for tol in TOLS:
        # one call per row: what a user explaining one row pays (a block of rows shares its
        # live leaves, so pruning gains less there)
        seconds, got = 0.0, []
        for i in range(rows):
            s, v = timed(lambda: pgexact.pgi2(ens, R[i:i + 1], rk[i:i + 1], sigma=SIGMA, n_jobs=1,
                                              progress=False, tol=tol))
            seconds += s
            got.append(v)
        values[tol] = np.concatenate(got)
        out[f"t_{tol}"] = seconds / rows
        print(f"  {label} tol={tol}: {seconds / rows:.2f} s/row", file=sys.stderr, flush=True)
    for tol in TOLS[1:]:
        out[f"err_{tol}"] = float(np.max(np.abs(values[tol] - values[None]) / values[None]))
    mc100, _ = timed(lambda: pgexact.mc.pgi2(model, R, rk, sigma=SIGMA, n_samples=100, n_jobs=1,
                                             seed=0))
    _, (mean, se) = timed(lambda: pgexact.mc.pgi2(model, R, rk, sigma=SIGMA, n_samples=400,
                                                  n_jobs=1, seed=1, return_se=True))
    n_for_1pc = int(np.ceil(400 * np.max((se / (0.01 * mean)) ** 2)))
    mcN, _ = timed(lambda: pgexact.mc.pgi2(model, R, rk, sigma=SIGMA, n_samples=n_for_1pc,
                                           n_jobs=1, seed=2))
    out.update(mc100=mc100 / rows, mcN=mcN / rows, N=n_for_1pc)
    return out


def markdown(results: List[Dict[str, Any]]) -> str:
    lines = [BEGIN, "", "## `tol=` on random forests (`bench/bench_tolerance.py`)", "",
             "Seconds per row of exact PGI² (one call per row, mean over the first `--rows` rows of the housing test "
             f"split, σ = {SIGMA}, ranking by |x|, 1 thread, pair cache off), at the default "
             "tolerance and at `tol=1e-6` / `1e-3` (largest relative difference from the default "
             "seen in brackets; certified bound: `tol`), against `pgexact.mc.pgi2` at 100 "
             "samples and at the N of a 1 % standard error on the same rows. Load average at the "
             f"end: {os.getloadavg()[0]:.2f}.", "",
             "| model | leaves | default | tol=1e-6 | tol=1e-3 | MC-100 | MC-N (N) | "
             "exact / MC-N: default → 1e-6 → 1e-3 |",
             "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for r in results:
        lines.append(
            f"| {r['model']} | {r['leaves']:,} | {r['t_None']:.2f} s | {r['t_1e-06']:.2f} s "
            f"({r['err_1e-06']:.0e}) | {r['t_0.001']:.2f} s ({r['err_0.001']:.0e}) | "
            f"{r['mc100'] * 1e3:.1f} ms | {r['mcN']:.2f} s ({r['N']:,}) | "
            f"{r['t_None'] / r['mcN']:.1f} → {r['t_1e-06'] / r['mcN']:.1f} → "
            f"{r['t_0.001'] / r['mcN']:.1f} |")
    lines += ["", END]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=3)
    ap.add_argument("--models", default="rf20,rf100d10,rf100")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    pgexact.set_pair_cache_limit(0)
    Xtr, Xte, ytr, _, _ = load_dataset("housing", args.data_dir, 0)
    results = [run(k, Xtr, ytr, Xte, args.rows) for k in args.models.split(",")]
    text = markdown(results)
    print(text)
    if not args.no_write:
        write_section(text, BEGIN, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
