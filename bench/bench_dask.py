#!/usr/bin/env python
"""Rows per second of exact PGI² through ``pgexact.dask`` on 1 and 2 worker processes.

Model: XGBoost, 40 trees, depth 4 (the paper's "bigger" recipe) on red wine quality
(11 standardised features, 80:20 split; a synthetic 11-feature regression when the file is
absent). Rows: the test rows tiled to ``--rows``. Metric: ``pgi2`` with one fixed ranking (the
greedy ranking of the first test row, computed once and not timed).

For each setup, the median over ``--repeats`` runs of the wall time of building the lazy array
(including the model broadcast) plus ``.compute()``, after one warm-up run:

* in-memory ``pgexact.pgi2`` with ``n_jobs=1`` (and ``n_jobs=2``), for reference;
* ``pgexact.dask.pgi2`` on a ``LocalCluster(n_workers=k, threads_per_worker=1,
  processes=True)`` for k = 1, 2, with ``n_jobs=1`` per task (the default).

Every result is checked to be identical to the in-memory one.

Run:  python bench/bench_dask.py [--data-dir ../shared/datasets] [--rows 2000] [--chunk 250]
It prints a markdown table and (unless --no-write) appends it to bench/RESULTS.md.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def load_data(data_dir: Path, seed: int):
    from sklearn.model_selection import train_test_split

    path = data_dir / "winequality_red.csv"
    if path.exists():
        import pandas as pd

        df = pd.read_csv(path, sep=";")
        y = df.pop("quality").to_numpy(dtype=np.float64)
        X, name = df.to_numpy(dtype=np.float64), "red wine quality"
    else:
        from sklearn.datasets import make_friedman1

        X, y = make_friedman1(n_samples=1600, n_features=11, noise=0.5, random_state=seed)
        name = "synthetic (Friedman #1, 11 features)"
    Xtr, Xte, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=seed)
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    return name, (Xtr - mu) / sd, (Xte - mu) / sd, ytr


def _interleaved(setups, repeats):
    """Median wall and CPU time per setup; the setups take turns, so load drifts hit them alike.

    Each setup is ``(name, run, cpu)``: ``cpu()`` reads the CPU seconds used so far by every
    process the setup computes in (this one, plus the worker processes).
    """
    outs = {name: run() for name, run, _ in setups}  # warm-up: imports, model on the workers
    wall = {name: [] for name, _, _ in setups}
    cpu = {name: [] for name, _, _ in setups}
    for _ in range(repeats):
        for name, run, cpu_now in setups:
            c0, t0 = cpu_now(), time.perf_counter()
            outs[name] = run()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(cpu_now() - c0)
    return ({n: statistics.median(v) for n, v in wall.items()},
            {n: statistics.median(v) for n, v in cpu.items()}, outs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "datasets"))
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--chunk", type=int, default=250, help="rows per dask block")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sigma", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    logging.getLogger("distributed").setLevel(logging.ERROR)

    import dask.array as da
    import xgboost as xgb
    from distributed import Client, LocalCluster

    import pgexact
    import pgexact.dask as pgd

    dataset, Xtr, Xte, ytr = load_data(Path(args.data_dir), args.seed)
    model = xgb.XGBRegressor(n_estimators=40, max_depth=4, learning_rate=0.3, tree_method="hist",
                             random_state=args.seed, n_jobs=1).fit(Xtr, ytr)
    te = pgexact.load(model)
    X = np.ascontiguousarray(np.resize(Xte, (args.rows, Xte.shape[1])))  # test rows, tiled
    n, d = X.shape
    ranking = pgexact.rank(te, X[:1], sigma=args.sigma)[0]
    print(f"{dataset}: 40 trees depth 4, {te.n_leaves} leaves, {d} features, {n} rows, "
          f"blocks of {args.chunk}, ranking {ranking.tolist()}", flush=True)

    dx = da.from_array(X, chunks=(args.chunk, d))
    clusters = {
        k: LocalCluster(n_workers=k, threads_per_worker=1, processes=True,
                        dashboard_address=":0", silence_logs=logging.ERROR)
        for k in (1, 2)
    }
    clients = {k: Client(c, set_as_default=False) for k, c in clusters.items()}
    try:
        for k, client in clients.items():
            client.wait_for_workers(k)

        def in_memory(n_jobs):
            return lambda: pgexact.pgi2(te, X, ranking, sigma=args.sigma, n_jobs=n_jobs)

        def on_dask(k):
            def run():
                with clients[k].as_current():  # the model is broadcast by this client
                    return pgd.pgi2(te, dx, ranking, sigma=args.sigma).compute()
            return run

        labels = {
            "mem1": ("in-memory `pgexact.pgi2`, n_jobs=1", "-"),
            "mem2": ("in-memory `pgexact.pgi2`, n_jobs=2", "-"),
            "dask1": ("`pgexact.dask.pgi2`, LocalCluster, 1 worker process x 1 thread", "1"),
            "dask2": ("`pgexact.dask.pgi2`, LocalCluster, 2 worker processes x 1 thread", "2"),
        }
        def cpu_here():
            return time.process_time()

        def cpu_with(k):
            def read():
                workers = clients[k].run(time.process_time)  # CPU seconds of each worker process
                return time.process_time() + sum(workers.values())
            return read

        med, cpu, outs = _interleaved(
            [("mem1", in_memory(1), cpu_here), ("mem2", in_memory(2), cpu_here),
             ("dask1", on_dask(1), cpu_with(1)), ("dask2", on_dask(2), cpu_with(2))],
            args.repeats)
    finally:
        logging.getLogger("distributed").setLevel(logging.ERROR)  # quiet shutdown
        for k in (1, 2):
            clients[k].close()
            clusters[k].close()
    for name, out in outs.items():
        assert np.array_equal(out, outs["mem1"]), f"{name} differs from the in-memory result"
    rows = [(*labels[name], med[name], cpu[name]) for name in labels]
    for label, _, t, c in rows:
        print(f"{label}: {n / t:.0f} rows/s, {n / c:.0f} rows per CPU-second", flush=True)

    one = next(t for _, w, t, _ in rows if w == "1")
    lines = [
        f"### pgexact.dask: exact PGI² rows per second ({datetime.date.today().isoformat()})",
        "",
        f"{dataset}, XGBoost 40 trees depth 4 ({te.n_leaves} leaves), d = {d}, {n} rows in "
        f"blocks of {args.chunk}, sigma = {args.sigma}, one fixed ranking; median of "
        f"{args.repeats} interleaved runs after a warm-up, wall time including graph "
        f"construction and the model broadcast; CPU time summed over the client and worker "
        f"processes. Machine: {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f} at the end of the run (other jobs compete for the cores "
        f"when it exceeds the CPU count); Python "
        f"{platform.python_version()}. All results identical to the in-memory ones.",
        "",
        "| setup | workers | wall time | rows / s | vs 1 worker | CPU time | rows / CPU-s |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for label, w, t, c in rows:
        lines.append(f"| {label} | {w} | {t:.2f} s | {n / t:,.0f} | {one / t:.2f}x "
                     f"| {c:.2f} s | {n / c:,.0f} |")
    table = "\n".join(lines)
    print()
    print(table)
    if not args.no_write:
        out = HERE / "RESULTS.md"
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(table + "\n\n")
        print(f"\nappended to {out}")


if __name__ == "__main__":
    main()
