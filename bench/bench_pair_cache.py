"""Repeated calls on one model with the pair cache off and on (``pgexact.set_pair_cache_limit``).

The leaf pairs a call enumerates depend on the model alone; the cache keeps them for the next
call on the same model. Measured here, in one process, alternating cache off / on round by
round (the machine is shared): the first call on a model (which pays for keeping the lists),
the calls after it, and Monte Carlo at 100 samples on the same rows through the library's own
batched predict (``pgexact.mc.pgi2``), 1 thread everywhere.

Models: the scaling benchmark's synthetic XGBoost 100 × depth 6 (d = 8) and the issue's
``XGBRegressor()`` on the shipped California housing data (standardised). Rankings: by |x|
(no SHAP, so the timings are the kernel's). Writes its section of bench/RESULTS.md.

    python bench/bench_pair_cache.py [--rounds 3] [--data-dir ../shared/datasets]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import numpy as np

import pgexact

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import DATA_DIR, write_section  # noqa: E402

BEGIN, END = "<!-- bench_pair_cache:begin -->", "<!-- bench_pair_cache:end -->"
SIGMA = 0.3


def synthetic():
    import xgboost as xgb
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 8))
    y = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.3 * X[:, 3] ** 2 + X[:, 4:].sum(axis=1)
         + 0.3 * rng.normal(size=4000))
    m = xgb.XGBRegressor(n_estimators=100, max_depth=6, tree_method="hist", random_state=0,
                         nthread=1)
    return "XGBoost 100×d6, synthetic d=8", m.fit(X, y), X


def housing(data_dir: str):
    import xgboost as xgb
    from bench_defaults import load_dataset
    Xtr, Xte, ytr, _, _ = load_dataset("housing", data_dir, 0)
    m = xgb.XGBRegressor(random_state=0, nthread=1)
    return "XGBRegressor() on housing", m.fit(Xtr, ytr), Xte


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def cases(model, X) -> Dict[str, Callable[[], Any]]:
    rk = np.argsort(-np.abs(X[:64]), axis=1)
    one, many = X[1000:1001], X[:64]
    loop_rows = X[1000:1008]
    loop_rk = np.argsort(-np.abs(loop_rows), axis=1)
    return {
        "pgi2, 1 row": lambda: pgexact.pgi2(model, one, rk[:1], sigma=SIGMA, n_jobs=1, progress=False),
        "pgi2, 64 rows": lambda: pgexact.pgi2(model, many, rk, sigma=SIGMA, n_jobs=1, progress=False),
        "pgi2, 8 one-row calls": lambda: [pgexact.pgi2(model, loop_rows[i:i + 1], loop_rk[i:i + 1],
                                                      sigma=SIGMA, n_jobs=1, progress=False)
                                          for i in range(8)],
        "greedy rank, 1 row": lambda: pgexact.rank(model, one, sigma=SIGMA, n_jobs=1, progress=False),
        "greedy rank, 8 rows": lambda: pgexact.rank(model, many[:8], sigma=SIGMA, n_jobs=1,
                                                    progress=False),
        "MC-100 pgi2, 1 row": lambda: pgexact.mc.pgi2(model, one, rk[:1], sigma=SIGMA, n_samples=100,
                                                      n_jobs=1, seed=0),
        "MC-100 pgi2, 64 rows": lambda: pgexact.mc.pgi2(model, many, rk, sigma=SIGMA, n_samples=100,
                                                        n_jobs=1, seed=0),
    }


def run(label: str, model, X, rounds: int) -> List[Dict[str, Any]]:
    runs = cases(model, X)
    exact = [k for k in runs if not k.startswith("MC")]
    t: Dict[str, List[float]] = {f"{k}|{state}|{when}": [] for k in exact
                                 for state in ("off", "on") for when in ("first", "next")}
    t.update({k: [] for k in runs if k.startswith("MC")})
    default = pgexact._core.exact.DEFAULT_PAIR_STORE_BYTES
    for _ in range(rounds):
        for state in ("off", "on"):
            for k in exact:
                pgexact.set_pair_cache_limit(0 if state == "off" else default)
                pgexact.clear_pair_cache()
                t[f"{k}|{state}|first"].append(timed(runs[k]))
                t[f"{k}|{state}|next"].append(min(timed(runs[k]) for _ in range(2)))
        for k in runs:
            if k.startswith("MC"):
                t[k].append(timed(runs[k]))
    pgexact.set_pair_cache_limit(default)
    med = {k: statistics.median(v) for k, v in t.items()}
    out = []
    for k in exact:
        mc = med["MC-100 pgi2, 1 row"] if "1 row" in k else med["MC-100 pgi2, 64 rows"]
        if "8 rows" in k:
            mc = med["MC-100 pgi2, 64 rows"] / 8
        if "8 one-row" in k:
            mc = 8 * med["MC-100 pgi2, 1 row"]
        out.append(dict(model=label, case=k, off=med[f"{k}|off|next"], first=med[f"{k}|on|first"],
                        next=med[f"{k}|on|next"], mc=mc, pgi2_mc=k.startswith("pgi2")))
    return out


def markdown(rows: List[Dict[str, Any]], rounds: int) -> str:
    import os
    lines = [BEGIN, "", "## Pair cache: repeated calls on one model (`bench/bench_pair_cache.py`)", "",
             f"Median seconds over {rounds} rounds, cache off / on alternating in one process, 1 "
             f"thread, σ = {SIGMA}, rankings by |x|; MC-100 = `pgexact.mc.pgi2` with 100 samples on "
             "the same rows (for greedy rows, MC-100 of PGI² on the same number of rows). "
             f"Load average at the end: {os.getloadavg()[0]:.2f}.", "",
             "| model | call | cache off | on, first call | on, next calls | speed-up next | "
             "next / MC-100 (off → on) |",
             "|---|---|--:|--:|--:|--:|--:|"]
    for r in rows:
        ratio = f"{r['off'] / r['mc']:.0f} → {r['next'] / r['mc']:.0f}" if r["pgi2_mc"] else "—"
        lines.append(f"| {r['model']} | {r['case']} | {r['off']:.4f} | {r['first']:.4f} | "
                     f"{r['next']:.4f} | {r['off'] / r['next']:.2f}× | {ratio} |")
    lines += ["", END]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    rows: List[Dict[str, Any]] = []
    for label, model, X in (synthetic(), housing(args.data_dir)):
        print(f"{label} ...", file=sys.stderr)
        rows += run(label, model, X, args.rounds)
    text = markdown(rows, args.rounds)
    print(text)
    if not args.no_write:
        write_section(text, BEGIN, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
