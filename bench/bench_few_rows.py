"""Calls of one or two rows: the leaf pairs (before) against the walks (after).

``Kernel.pairs`` runs one-row PGI² curves and sets of any model on the union walk, and greedy
rankings of one or two rows (four of CatBoost's) on the shared walks (kernels.hpp's
``few_rows_on_walks``; until 468f40c one-row curves took the shared walks, and only on trees of
at most 128 leaves per tree on average: bench_union_walk.py compares the two). Measured here in one process, alternating before /
after round by round (the machine is shared): "before" is the same call made as a block of a
large call (``block_of_call``, which keeps it on the leaf pairs, as every call was before),
"after" the call as a user makes it. Monte Carlo at 100 samples on the same row and ranking
through the library's own batched predict (``pgexact.mc.pgi2``) on the same threads. The
model object is passed to both sides, so both pay for reading it; rankings by |x| (no SHAP, so
the timings are the kernel's); σ = 0.3. Writes its section of bench/RESULTS.md.

    python bench/bench_few_rows.py [--rounds 3] [--threads 1 2] [--big] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

import pgexact
from pgexact._exact._kernels import block_of_call

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import DATA_DIR, write_section  # noqa: E402

BEGIN, END = "<!-- bench_few_rows:begin -->", "<!-- bench_few_rows:end -->"
SIGMA = 0.3
MANY = 1 << 30  # a whole call this large never takes the walks


def synthetic(n_trees: int):
    import xgboost as xgb
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 8))
    y = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.3 * X[:, 3] ** 2 + X[:, 4:].sum(axis=1)
         + 0.3 * rng.normal(size=4000))
    m = xgb.XGBRegressor(n_estimators=n_trees, max_depth=6, tree_method="hist", random_state=0, nthread=1)
    return f"XGBoost {n_trees}×d6, synthetic d=8", m.fit(X, y), X[3000:]


def housing_models(data_dir: str, big: bool) -> List[Tuple[str, Any, np.ndarray]]:
    import lightgbm as lgb
    import xgboost as xgb
    from catboost import CatBoostRegressor
    from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor, RandomForestRegressor
    from bench_defaults import load_dataset
    Xtr, Xte, ytr, _, _ = load_dataset("housing", data_dir, 0)
    out = [
        ("GradientBoostingRegressor()", GradientBoostingRegressor(random_state=0)),
        ("HistGradientBoostingRegressor()", HistGradientBoostingRegressor(random_state=0)),
        ("LGBMRegressor()", lgb.LGBMRegressor(random_state=0, n_jobs=1, verbose=-1)),
        ("XGBRegressor()", xgb.XGBRegressor(random_state=0, nthread=1)),
        ("CatBoostRegressor(iterations=200)", CatBoostRegressor(iterations=200, random_seed=0, verbose=0,
                                                                thread_count=1, allow_writing_files=False)),
        ("RandomForestRegressor(20, max_depth=10)", RandomForestRegressor(20, max_depth=10, random_state=0,
                                                                          n_jobs=2)),
        ("RandomForestRegressor(5) (unbounded depth)", RandomForestRegressor(5, random_state=0, n_jobs=2)),
    ]
    if big:
        out.append(("CatBoostRegressor() (1000 trees)",
                    CatBoostRegressor(random_seed=0, verbose=0, thread_count=2, allow_writing_files=False)))
    return [(f"{name} on housing", m.fit(Xtr, ytr), Xte) for name, m in out]


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def cases(model, X, threads: int) -> Dict[str, Tuple[Callable[[], Any], Callable[[], Any]]]:
    """case -> (exact call, Monte Carlo call of the same rows for its ratio)."""
    one, two = X[:1], X[:2]
    rk1 = np.argsort(-np.abs(one), axis=1)
    rk2 = np.argsort(-np.abs(two), axis=1)
    kw = dict(sigma=SIGMA, n_jobs=threads, progress=False)
    mc1 = lambda: pgexact.mc.pgi2(model, one, rk1, n_samples=100, seed=0, sigma=SIGMA, n_jobs=threads)  # noqa: E731
    mc2 = lambda: pgexact.mc.pgi2(model, two, rk2, n_samples=100, seed=0, sigma=SIGMA, n_jobs=threads)  # noqa: E731
    return {
        "pgi2 (given ranking), 1 row": (lambda: pgexact.pgi2(model, one, rk1, **kw), mc1),
        "greedy rank, 1 row": (lambda: pgexact.rank(model, one, **kw), mc1),
        "greedy rank, 2 rows": (lambda: pgexact.rank(model, two, **kw), mc2),
    }


def run(label: str, model, X, rounds: int, threads: int) -> List[Dict[str, Any]]:
    runs = cases(model, X, threads)
    t: Dict[str, List[float]] = {f"{k}|{w}": [] for k in runs for w in ("before", "after", "mc")}
    check: Dict[str, Any] = {}
    for _ in range(rounds):
        for k, (exact, mc) in runs.items():
            pgexact.clear_pair_cache()
            with block_of_call(MANY):
                start = time.perf_counter()
                before = exact()
                t[f"{k}|before"].append(time.perf_counter() - start)
            pgexact.clear_pair_cache()
            start = time.perf_counter()
            after = exact()
            t[f"{k}|after"].append(time.perf_counter() - start)
            t[f"{k}|mc"].append(timed(mc))
            check[k] = (before, after)
    pgexact.clear_pair_cache()
    out = []
    for k in runs:
        before, after = check[k]
        if k.startswith("greedy"):
            same = bool(np.array_equal(before, after))
            agree = "same ranking" if same else "RANKING DIFFERS"
        else:
            rel = float(np.max(np.abs(before - after) / np.abs(before)))
            agree = f"{rel:.1e}"
        med = {w: statistics.median(t[f"{k}|{w}"]) for w in ("before", "after", "mc")}
        out.append(dict(model=label, case=k, threads=threads, agree=agree, **med))
    return out


def markdown(rows: List[Dict[str, Any]], rounds: int) -> str:
    lines = [BEGIN, "", "## Few rows on the walks (`bench/bench_few_rows.py`)", "",
             f"Median seconds per call over {rounds} rounds, before / after alternating in one process; "
             "before = the leaf pairs (the call as a block of a large call), after = the call as made "
             "(one-row curves on the union walk, greedy rankings of ≤ 2 rows, ≤ 4 of CatBoost's, on the "
             f"shared walks); MC-100 = `pgexact.mc.pgi2`, 100 samples, same rows, same threads; σ = {SIGMA}. "
             "\"agree\": largest relative difference of the values (pgi2), or whether the rankings are equal. "
             f"Load average at the end: {os.getloadavg()[0]:.2f}.", "",
             "| model | call | threads | before (s) | after (s) | speed-up | exact / MC-100 before → after | agree |",
             "|---|---|--:|--:|--:|--:|--:|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['case']} | {r['threads']} | {r['before']:.4f} | {r['after']:.4f} | "
                     f"{r['before'] / r['after']:.2f}× | {r['before'] / r['mc']:.1f} → {r['after'] / r['mc']:.1f} | "
                     f"{r['agree']} |")
    lines += ["", END]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--big", action="store_true", help="also CatBoostRegressor() (1000 trees), one round")
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    models = [synthetic(100), synthetic(400)] + housing_models(args.data_dir, args.big)
    rows: List[Dict[str, Any]] = []
    for label, model, X in models:
        for threads in args.threads:
            print(f"{label}, {threads} thread(s) ...", file=sys.stderr, flush=True)
            rounds = 1 if "1000 trees" in label else args.rounds
            rows += run(label, model, X, rounds, threads)
    text = markdown(rows, args.rounds)
    print(text)
    if not args.no_write:
        write_section(text, BEGIN, END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
