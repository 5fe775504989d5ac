"""``pgexact-bench demo``: exact PGI² against Monte Carlo on scikit-learn's diabetes data.

Trains the paper's "Bigger" XGBoost regressor (40 trees, depth 4) on the standardised 80:20
split and compares, on the test rows, the exact PGI² of the greedy ranking with Monte Carlo
estimates at a few sample counts: time per row and NMAE against the exact value.
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

import pgexact
from pgexact import mc
from pgexact.metrics import nmae

from .._optional import install_hint, optional

from .common import (call_progress, Args, Json, UsageError, bar, echo, fmt_time, log, require_matplotlib,
                     require_xgboost, save_figure, text_table, timed, versions, write_json)
from .data import load_named
from .models import RECIPES, fit_xgb

__all__ = ["cmd_demo", "demo_figure", "demo_table", "run_demo"]


def run_demo(args: Args, X: np.ndarray, model: Any) -> Tuple[np.ndarray, float, List[Json]]:
    """Greedy ranking, exact PGI² and Monte Carlo PGI² at each ``--iterations`` on rows ``X``.

    Returns ``(ranking, seconds for the ranking, rows)``; each row is one method with its mean
    PGI², NMAE against the exact value and time per row.
    """
    n, d = X.shape
    te = pgexact.load(model)
    common = dict(sigma=args.sigma, n_jobs=args.n_jobs, progress=call_progress(args))
    # warm up both paths on one row (thread pools, first-call allocations)
    pgexact.pgi2(te, X[:1], np.arange(d), **common)
    mc.pgi2(model, X[:1], np.arange(d), n_samples=10, seed=args.seed, **common)

    pbar = bar(args, total=2 + len(args.iterations), desc="demo")
    pbar.set_postfix_str("greedy ranking")
    ranking, t_rank = timed(pgexact.rank, te, X, **common)
    ranking = np.asarray(ranking, dtype=np.int64)
    pbar.update()
    pbar.set_postfix_str("exact PGI2")
    exact, t_exact = timed(pgexact.pgi2, te, X, ranking, **common)
    exact = np.asarray(exact, dtype=np.float64)
    pbar.update()

    results = [dict(method="exact", samples=None, mean_pgi2=float(exact.mean()), nmae=0.0,
                    mean_se=0.0, time_per_row_s=t_exact / n)]
    for k in args.iterations:
        pbar.set_postfix_str(f"Monte Carlo, {k} samples")
        (est, se), t = timed(mc.pgi2, model, X, ranking, n_samples=k, seed=args.seed,
                             return_se=True, **common)
        results.append(dict(method="monte_carlo", samples=int(k), mean_pgi2=float(est.mean()),
                            nmae=nmae(exact, est), mean_se=float(np.nanmean(se)),
                            time_per_row_s=t / n))
        pbar.update()
    pbar.close()
    return ranking, t_rank, results


def demo_table(results: Sequence[Json]) -> str:
    """The printed table: one line per method, times relative to the exact computation."""
    rows = []
    for r in results:
        rows.append([
            "exact" if r["method"] == "exact" else "Monte Carlo",
            "-" if r["samples"] is None else f"{r['samples']:,}",
            f"{r['mean_pgi2']:.4g}",
            "0 (reference)" if r["method"] == "exact" else f"{r['nmae']:.4f}",
            fmt_time(r["time_per_row_s"]),
            f"{r['time_per_row_s'] / results[0]['time_per_row_s']:.3g}x",
        ])
    return text_table(
        ["method", "samples/prefix", "mean PGI2", "NMAE vs exact", "time/row", "time / exact time"],
        rows, "lrrrrr",
    )


def cmd_demo(args: Args) -> int:
    """The ``demo`` subcommand: train, compare, print the table, write results.json."""
    require_xgboost()
    if args.rows is not None and args.rows < 1:
        raise UsageError("--rows must be >= 1")
    if not args.sigma > 0:
        raise UsageError("--sigma must be positive")
    if not args.iterations or min(args.iterations) < 1:
        raise UsageError("--iterations must be positive integers")

    log(args, "training the model (XGBoost, 40 trees, depth 4) on diabetes ...")
    data = load_named("diabetes", None, seed=args.seed)
    model = fit_xgb(data.Xtr, data.ytr, RECIPES["bigger"], seed=args.seed, n_jobs=args.n_jobs)
    names = data.names
    if args.rows is not None and args.rows > data.Xte.shape[0]:
        raise UsageError(f"--rows: the diabetes test split has {data.Xte.shape[0]} rows; pass "
                         f"at most {data.Xte.shape[0]} (or leave --rows out for all of them)")
    X = data.Xte if args.rows is None else data.Xte[: args.rows]
    n, d = X.shape
    rmse = float(np.sqrt(np.mean((model.predict(data.Xte) - data.yte) ** 2)))

    ranking, t_rank, results = run_demo(args, X, model)
    top1 = np.bincount(ranking[:, 0], minlength=d)
    j = int(np.argmax(top1))
    threads = args.n_jobs if args.n_jobs is not None else (os.cpu_count() or 1)
    print(
        f"pgexact demo: XGBoost regressor (40 trees, depth 4, test RMSE {rmse:.1f}) on "
        f"scikit-learn diabetes ({d} standardised features)\n"
        f"{n} test rows, Gaussian noise sigma={args.sigma:g}, {threads} thread(s), "
        f"seed {args.seed}\n"
        f"greedy exact PG2 ranking, computed once and shared by all methods: "
        f"{fmt_time(t_rank / n)} per row; most frequent top feature: {names[j]} "
        f"({top1[j] / n:.0%} of rows)\n"
    )
    print(demo_table(results))
    print("\nNMAE = sum|exact - MC| / sum|exact| over the rows; PGI2 averages PG2 over the "
          f"top-k prefixes, k = 1..{d}.")

    payload = dict(
        command="demo", dataset="diabetes", n_features=d, n_rows=n, sigma=args.sigma,
        seed=args.seed, n_jobs=args.n_jobs, threads=threads,
        model=dict(library="xgboost", n_estimators=40, max_depth=4, test_rmse=rmse),
        feature_names=names, ranking_time_per_row_s=t_rank / n,
        top1_counts={names[i]: int(c) for i, c in enumerate(top1) if c},
        rows=results, versions=versions(),
    )
    png = demo_figure(args, results)
    if png is not None:
        payload["figures"] = [os.path.basename(png)]
    path = write_json(args, "results.json", payload)
    log(args, f"wrote {path}")
    return 0


def demo_figure(args: Args, results: Sequence[Json]) -> Optional[str]:
    """demo.png: Monte Carlo's NMAE and time per row against its sample count, exact marked.

    Returns the path, or None (with a note on screen) when matplotlib is not installed.
    """
    if optional("matplotlib") is None:
        echo(f"(no demo.png: figures need matplotlib, {install_hint('matplotlib')})")
        return None
    require_matplotlib()
    import matplotlib.pyplot as plt

    mc_rows = [r for r in results if r["method"] == "monte_carlo"]
    k = [r["samples"] for r in mc_rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    left.loglog(k, [max(r["nmae"], 1e-16) for r in mc_rows], "o-", label="Monte Carlo")
    left.set_xlabel("Monte Carlo samples per prefix")
    left.set_ylabel("NMAE of mean PGI² vs exact")
    left.set_title("error (exact: 0)")
    right.loglog(k, [r["time_per_row_s"] for r in mc_rows], "o-", label="Monte Carlo")
    right.axhline(results[0]["time_per_row_s"], color="k", ls="--", label="exact")
    right.set_xlabel("Monte Carlo samples per prefix")
    right.set_ylabel("seconds per row")
    right.set_title("time")
    right.legend()
    fig.tight_layout()
    return save_figure(args, fig, "demo.png")
