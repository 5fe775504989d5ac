"""One row's curve and set on the union walk, against the shared walks and the leaf pairs.

A one-row PGI² curve or PG² set now runs on one walk over the union of the row's sets
(cpp/src/exact/union_walk.hpp), whatever the model. Timed here in one process, round by round
on the same row: the leaf pairs (the call as a block of a large call, as every one-row call of
these models was before the few-row route), the shared walks (``Kernel.walks``: the few-row
route of the last round, one walk per chunk of prefixes, chunks dealt among the threads), and
the call as made (the union walk, its tree pairs shared among the threads); Monte Carlo at 100
samples on the same row and ranking through the library's own batched predict
(``pgexact.mc.pgi2``), same threads. Rankings by |x|; σ = 0.3; pair cache cleared before each
call. Writes its section of bench/RESULTS.md.

    python bench/bench_union_walk.py [--rounds 3] [--threads 1 2] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

import pgexact
from pgexact._exact._kernels import Kernel, block_of_call
from pgexact._exact._prepare import prepare_call

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import DATA_DIR, write_section  # noqa: E402
from bench_few_rows import MANY, SIGMA, housing_models, synthetic  # noqa: E402

BEGIN, END = "<!-- bench_union_walk:begin -->", "<!-- bench_union_walk:end -->"
WAYS = ("leaf pairs", "shared walks", "as made")


def more_models(data_dir: str) -> List[Tuple[str, Any, np.ndarray]]:
    """Larger trees than the few-row bench's, and a model over 64 features."""
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import RandomForestRegressor
    from bench_defaults import load_dataset

    Xtr, Xte, ytr, _, _ = load_dataset("housing", data_dir, 0)
    out = [(f"{name} on housing", m.fit(Xtr, ytr), Xte) for name, m in (
        ("XGBRegressor(max_depth=8)", xgb.XGBRegressor(max_depth=8, random_state=0, nthread=2)),
        ("LGBMRegressor(num_leaves=255)", lgb.LGBMRegressor(num_leaves=255, random_state=0, n_jobs=2, verbose=-1)),
        ("RandomForestRegressor(max_depth=10)", RandomForestRegressor(max_depth=10, random_state=0, n_jobs=2)),
    )]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 100))
    y = X[:, :10].sum(axis=1) + X[:, 10] * X[:, 11] + np.sin(X[:, 12]) + 0.1 * rng.normal(size=5000)
    out.append(("XGBRegressor(), synthetic d=100", xgb.XGBRegressor(random_state=0, nthread=2).fit(X, y), X[4000:]))
    return out


def run(label: str, model, X, rounds: int, threads: int) -> List[Dict[str, Any]]:
    ens = pgexact.load(model)
    row = X[:1]
    rk = np.argsort(-np.abs(row), axis=1)
    call = prepare_call(ens, row, sigma=SIGMA, n_jobs=threads)
    ranking = call.ranking(rk)
    mask = np.ones(ens.n_features, np.uint8)

    def leaf_pairs(curve: bool):
        with block_of_call(MANY):
            return pgexact.pg2_curve(ens, row, rk, sigma=SIGMA, n_jobs=threads, progress=False) if curve \
                else pgexact.pg2(ens, row, list(range(ens.n_features)), sigma=SIGMA, n_jobs=threads, progress=False)

    def shared_walks(curve: bool):
        return call.pg2_curve(ranking, kernel=Kernel.walks) if curve else call.pg2(mask, kernel=Kernel.walks)

    def as_made(curve: bool):
        return pgexact.pg2_curve(ens, row, rk, sigma=SIGMA, n_jobs=threads, progress=False) if curve \
            else pgexact.pg2(ens, row, list(range(ens.n_features)), sigma=SIGMA, n_jobs=threads, progress=False)

    out = []
    for curve in (True, False):
        seconds: Dict[str, List[float]] = {w: [] for w in WAYS + ("mc",)}
        values: Dict[str, np.ndarray] = {}
        for _ in range(rounds):
            for way, fn in zip(WAYS, (leaf_pairs, shared_walks, as_made)):
                pgexact.clear_pair_cache()
                start = time.perf_counter()
                values[way] = np.asarray(fn(curve), dtype=float).ravel()
                seconds[way].append(time.perf_counter() - start)
            if curve:
                start = time.perf_counter()
                pgexact.mc.pgi2(model, row, rk, n_samples=100, seed=0, sigma=SIGMA, n_jobs=threads)
                seconds["mc"].append(time.perf_counter() - start)
        ref = values["leaf pairs"]
        agree = max(float(np.max(np.abs(values[w] - ref) / np.abs(ref))) for w in WAYS[1:])
        med = {w: statistics.median(s) if s else float("nan") for w, s in seconds.items()}
        out.append(dict(model=label, case="PGI² curve" if curve else "PG² of every feature", threads=threads,
                        agree=agree, **med))
        print(f"[{label}] {out[-1]['case']}, {threads} thread(s): " +
              ", ".join(f"{w} {med[w]:.4f} s" for w in WAYS) + (f", MC-100 {med['mc']:.4f} s" if curve else ""),
              flush=True)
    return out


def markdown(rows: List[Dict[str, Any]], rounds: int) -> str:
    lines = [BEGIN, "", "## One row on the union walk (`bench/bench_union_walk.py`)", "",
             f"Median seconds per call of one row over {rounds} rounds, the three ways alternating in one "
             "process: the leaf pairs, the shared walks (`Kernel.walks`: one walk per chunk of prefixes, chunks "
             "dealt among the threads: the last round's route for trees of ≤ 128 leaves on average) and the call "
             "as made (the union walk); MC-100 = `pgexact.mc.pgi2`, 100 samples, same row and ranking, same "
             f"threads; σ = {SIGMA}; rankings by |x|. \"agree\": the largest relative difference from the leaf "
             f"pairs. Load average at the end: {os.getloadavg()[0]:.2f}.", "",
             "| model | call | threads | leaf pairs (s) | shared walks (s) | union walk (s) | leaf pairs / union "
             "| shared walks / union | union / MC-100 | agree |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        mc = f"{r['as made'] / r['mc']:.1f}" if r["mc"] == r["mc"] else "—"
        lines.append(f"| {r['model']} | {r['case']} | {r['threads']} | {r['leaf pairs']:.4f} | "
                     f"{r['shared walks']:.4f} | {r['as made']:.4f} | {r['leaf pairs'] / r['as made']:.2f}× | "
                     f"{r['shared walks'] / r['as made']:.2f}× | {mc} | {r['agree']:.1e} |")
    lines += ["", END]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    models = [synthetic(100)] + housing_models(args.data_dir, big=False) + more_models(args.data_dir)
    rows = []
    for threads in args.threads:
        for label, model, X in models:
            rows += run(label, model, X, args.rounds, threads)
    text = markdown(rows, args.rounds)
    print(text)
    if not args.no_write:
        write_section(text, BEGIN, END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
