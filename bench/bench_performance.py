"""Exact PGI² against a 100-sample Monte Carlo, on the four models of the performance targets.

For each model: exact PGI² per row (all d prefixes of a fixed per-row ranking) and Monte Carlo
PGI² with 100 and 1000 samples per prefix through the library's own batched predict
(``pgexact.mc``), on the same rows and the same threads, interleaved and repeated; the paper's
unpruned pair walk (the reference kernel) on a few rows where it finishes in reasonable time.
The same exact kernel with shared walks turned off (one pair recursion per row and prefix)
is timed alongside, for the before/after. Then: greedy ranking on the wine model (shared and
not), 1 vs 2 threads, model load time at 10⁵ nodes, and arena size per node. Writes a
markdown section into bench/RESULTS.md.

    python bench/bench_performance.py [--rows 20] [--repeats 3] [--data-dir ../shared/datasets]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_xgboost as bx  # noqa: E402  (shared loaders and machine info)

import pgexact  # noqa: E402
from pgexact._core import exact as core_exact  # noqa: E402
from pgexact._core.exact import Kernel, Perturbation  # noqa: E402

MARK_BEGIN = "<!-- performance-begin -->"
MARK_END = "<!-- performance-end -->"


def _models(data_dir: Path, seed: int):
    import lightgbm as lgb
    import xgboost as xgb

    _, _, Xw_tr, Xw_te, yw_tr, _ = bx.load_wine(data_dir, seed)
    _, _, Xh_tr, Xh_te, yh_tr, _ = bx.load_housing(data_dir, seed)
    xgb_common = dict(tree_method="hist", random_state=seed, nthread=2)
    return [
        ("XGBoost 40 trees depth 4, wine (d=11)", "≤ 1",
         xgb.XGBRegressor(n_estimators=40, max_depth=4, **xgb_common).fit(Xw_tr, yw_tr), Xw_te),
        ("XGBoost 100 trees depth 6, housing (d=8)", "≤ 1",
         xgb.XGBRegressor(n_estimators=100, max_depth=6, **xgb_common).fit(Xh_tr, yh_tr), Xh_te),
        ("LightGBM 100 trees 31 leaves, housing (d=8)", "≤ 1",
         lgb.LGBMRegressor(random_state=seed, n_jobs=2, verbose=-1).fit(Xh_tr, yh_tr), Xh_te),
        ("XGBoost 20 trees depth 10, housing (d=8)", "≤ 1",
         xgb.XGBRegressor(n_estimators=20, max_depth=10, **xgb_common).fit(Xh_tr, yh_tr), Xh_te),
    ]


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_model(label, target, model, X_test, *, rows, repeats, sigma, seed, reference_budget_s, log):
    rng = np.random.default_rng(seed)
    X = X_test[rng.choice(len(X_test), size=min(rows, len(X_test)), replace=False)]
    n, d = X.shape
    ranking = np.argsort(rng.random((n, d)), axis=1)
    ens = pgexact.load(model)
    sig = np.full(d, sigma)
    fam = np.zeros(d, dtype=np.uint8)
    pert = Perturbation(sig, fam)  # the perturbation, bound once

    exact = lambda: pgexact.pgi2(ens, X, ranking, sigma=sigma, n_jobs=2)  # noqa: E731
    mc100 = lambda: pgexact.mc.pgi2(model, X, ranking, sigma=sigma, n_samples=100, n_jobs=2)  # noqa: E731
    mc1000 = lambda: pgexact.mc.pgi2(model, X, ranking, sigma=sigma, n_samples=1000, n_jobs=2)  # noqa: E731
    # The same kernels with one pair walk per (row, prefix): the state before shared walks.
    separate = lambda: core_exact.pg2_curve(ens._arena, X, ranking, d, pert, 2, Kernel.separate_walks).mean(axis=1)  # noqa: E731
    exact(), mc100()  # warm-up: first-call costs are not what we compare
    t_exact, t_100, t_1000, t_sep = [], [], [], []
    for _ in range(repeats):  # interleaved, so load changes hit all of them alike
        t_exact.append(_median_time(exact, 1))
        t_100.append(_median_time(mc100, 1))
        t_1000.append(_median_time(mc1000, 1))
        t_sep.append(_median_time(separate, 1))
    te, t1, t2, ts = (statistics.median(v) / n for v in (t_exact, t_100, t_1000, t_sep))

    # The unpruned pair walk on the first rows, if one row fits the budget.
    t_ref = None
    probe = X[:1]
    t0 = time.perf_counter()
    core_exact.pg2_curve(ens._arena, probe, ranking[:1], d, pert, 2, Kernel.reference)
    one = time.perf_counter() - t0
    if one * 3 <= reference_budget_s:
        k = min(3, n)
        t0 = time.perf_counter()
        core_exact.pg2_curve(ens._arena, X[:k], ranking[:k], d, pert, 2, Kernel.reference)
        t_ref = (time.perf_counter() - t0) / k
    elif one <= reference_budget_s:
        t_ref = one
    log(f"{label}: exact {te * 1e3:.2f} ms, MC-100 {t1 * 1e3:.2f} ms, ratio {te / t1:.2f}")
    return {
        "label": label, "target": target, "leaves": ens.n_leaves, "nodes": ens.n_nodes, "d": d, "rows": n,
        "exact": te, "mc100": t1, "mc1000": t2, "separate": ts, "reference": t_ref,
    }


def bench_extras(model, X_test, *, rows, repeats, sigma, seed, data_dir, log):
    """Greedy rank vs MC-100 on wine, thread scaling, load time and arena size."""
    import xgboost as xgb

    rng = np.random.default_rng(seed)
    X = X_test[rng.choice(len(X_test), size=min(rows, len(X_test)), replace=False)]
    n, d = X.shape
    ens = pgexact.load(model)
    ranking = np.argsort(rng.random((n, d)), axis=1)
    sig = np.full(d, sigma)
    fam = np.zeros(d, dtype=np.uint8)
    pert = Perturbation(sig, fam)  # the perturbation, bound once
    t_rank = statistics.median([_median_time(lambda: pgexact.rank(ens, X, sigma=sigma, n_jobs=2), 1)
                                for _ in range(repeats)]) / n
    t_rank_sep = statistics.median([_median_time(lambda: core_exact.greedy_rank(ens._arena, X, pert, 2, Kernel.separate_walks), 1)
                                    for _ in range(repeats)]) / n
    t_mc = statistics.median([_median_time(lambda: pgexact.mc.pgi2(model, X, ranking, sigma=sigma,
                                                                   n_samples=100, n_jobs=2), 1)
                              for _ in range(repeats)]) / n
    # 1 and 2 threads interleaved (this machine is shared: a neighbour's load hits both alike).
    one, two = [], []
    for _ in range(max(repeats, 5)):
        one.append(_median_time(lambda: pgexact.pgi2(ens, X, ranking, sigma=sigma, n_jobs=1), 1))
        two.append(_median_time(lambda: pgexact.pgi2(ens, X, ranking, sigma=sigma, n_jobs=2), 1))
    t1, t2 = statistics.median(one), statistics.median(two)
    log(f"greedy rank {t_rank * 1e3:.2f} ms/row vs MC-100 {t_mc * 1e3:.2f}; threads speed-up {t1 / t2:.2f}")

    _, _, Xh_tr, _, yh_tr, _ = bx.load_housing(data_dir, seed)
    big = xgb.XGBRegressor(n_estimators=400, max_depth=8, tree_method="hist", random_state=seed,
                           nthread=2).fit(Xh_tr, yh_tr)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.json")
        big.get_booster().save_model(path)
        t_load = statistics.median([_median_time(lambda: pgexact.load(path), 1) for _ in range(repeats)])
        big_ens = pgexact.load(path)
    sizes = [(e.n_nodes, len(e._arena.to_bytes())) for e in (ens, big_ens)]
    log(f"load {big_ens.n_nodes} nodes: {t_load * 1e3:.0f} ms")
    return {"rank": t_rank, "rank_separate": t_rank_sep, "rank_mc100": t_mc, "speedup": t1 / t2, "load_nodes": big_ens.n_nodes,
            "load_s": t_load, "sizes": sizes}


def _ms(s):
    return "—" if s is None else (f"{s * 1e3:.2f} ms" if s < 10 else f"{s:.1f} s")


def markdown(results, extras, args, info):
    lines = [
        MARK_BEGIN,
        "## Performance targets (issue 7): exact PGI² / Monte Carlo-100",
        "",
        f"Produced by `python bench/bench_performance.py --rows {args.rows} --repeats {args.repeats}` "
        f"on {time.strftime('%Y-%m-%d')}; load average at the end: {info['load']}.",
        "",
        "| model | leaves | target | exact PGI² / row | MC-100 / row | MC-1000 / row | **exact / MC-100** "
        "| exact / MC-1000 | one walk per set / row | its / MC-100 | unpruned pair walk / row | unpruned / MC-100 |",
        "|---|--:|:-:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in results:
        ref = r["reference"]
        ref_ratio = "—" if ref is None else f"{ref / r['mc100']:.0f}"
        lines.append(
            f"| {r['label']} | {r['leaves']} | {r['target']} | {_ms(r['exact'])} | {_ms(r['mc100'])} | "
            f"{_ms(r['mc1000'])} | **{r['exact'] / r['mc100']:.2f}** | {r['exact'] / r['mc1000']:.2f} | "
            f"{_ms(r['separate'])} | {r['separate'] / r['mc100']:.2f} | {_ms(ref)} | {ref_ratio} |"
        )
    e = extras
    lines += [
        "",
        f"- Greedy ranking (d(d+1)/2 PG² evaluations) on the wine model: {_ms(e['rank'])} per row, "
        f"{e['rank'] / e['rank_mc100']:.1f}× the MC-100 PGI² of that row ({_ms(e['rank_mc100'])}); target ≤ 1. "
        f"With one walk per candidate set: {_ms(e['rank_separate'])} per row.",
        f"- Threads: exact PGI² on the wine model, 2 threads vs 1: {e['speedup']:.2f}× (target ≥ 1.6).",
        f"- Load: an XGBoost model of {e['load_nodes']:,} nodes loads from its JSON file in "
        f"{e['load_s'] * 1e3:.0f} ms (target: well under a second).",
        "- Memory: the arena is linear in the model; serialised size per node "
        + ", ".join(f"{b / nn:.1f} B at {nn:,} nodes" for nn, b in e["sizes"])
        + "; per-thread scratch is O(nodes + boundaries + trees) per variant of a shared walk (at most "
        "64 variants, the per-variant tables sized to about 8 MiB each per thread), no n² table.",
        "",
        "Same rows, same per-row random rankings, 2 threads for both sides (`n_jobs=2`; the "
        "libraries' own predict with 2 threads through `pgexact.mc`), medians of interleaved repeats. "
        "Exact values are within 1e-12 relative of the unpruned reference (tested). Gaussian σ = 0.3 "
        "on standardised features. \"One walk per set\" is the same exact kernel with shared walks "
        "turned off (`_core.exact.pg2_curve(..., kernel=Kernel.separate_walks)`): one pair recursion per (row, prefix), the "
        "kernel before shared walks; \"unpruned\" is the paper's pair walk.",
        MARK_END,
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=bx.REPO.parent / "shared" / "datasets")
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sigma", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference-budget", type=float, default=20.0,
                    help="seconds the unpruned walk may take on a model before it is skipped")
    ap.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731

    models = _models(args.data_dir, args.seed)
    results = [bench_model(label, target, model, X, rows=args.rows, repeats=args.repeats, sigma=args.sigma,
                           seed=args.seed, reference_budget_s=args.reference_budget, log=log)
               for label, target, model, X in models]
    extras = bench_extras(models[0][2], models[0][3], rows=args.rows, repeats=args.repeats, sigma=args.sigma,
                          seed=args.seed, data_dir=args.data_dir, log=log)
    info = {"load": " ".join(f"{v:.2f}" for v in os.getloadavg())}
    text = markdown(results, extras, args, info)
    print(text)
    if not args.no_write:
        old = args.results.read_text() if args.results.exists() else ""
        if MARK_BEGIN in old and MARK_END in old:
            new = old[: old.index(MARK_BEGIN)] + text + old[old.index(MARK_END) + len(MARK_END) + 1:]
        else:
            new = old.rstrip() + "\n\n" + text
        args.results.write_text(new)


if __name__ == "__main__":
    main()
