"""Exact PGI² against Monte Carlo as models grow: the performance issue's table, in one run.

For each model: exact PGI² per row of a per-row random ranking (all d prefixes) with the
default kernel (enumerated leaf pairs, rows in SIMD lanes) and with the previous kernel (shared
node-pair walks, ``_core.exact`` ``Kernel.walks``) for the before/after; Monte Carlo PGI² with 100
samples per prefix through the library's own batched predict (``pgexact.mc.pgi2``); the greedy
ranking (``pgexact.rank``) against exact PGI² of a given ranking. Same rows, same thread count
for every side, interleaved, median of repeats; ratios are taken within one run, so they hold on
a loaded machine. Then the growth exponents in trees and depth, fitted on the synthetic
XGBoost models. Writes a section of bench/RESULTS.md.

    python bench/bench_scaling.py [--rows 64] [--threads 1 2] [--quick] [--big] [--data-dir ../shared/datasets]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import sys

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_xgboost as bx  # noqa: E402  (the paper's data loaders, split and standardisation)
from bench_performance import _median_time as _median  # noqa: E402

import pgexact  # noqa: E402
from _results import write_section  # noqa: E402
from pgexact._core import exact as core_exact  # noqa: E402
from pgexact._core.exact import Kernel, Perturbation  # noqa: E402
MARK_BEGIN = "<!-- scaling-begin -->"
MARK_END = "<!-- scaling-end -->"


def _synthetic(d: int, n: int = 4000, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.3 * X[:, 3] ** 2 + X[:, 4:].sum(axis=1) + 0.3 * rng.normal(size=n)
    return X, y


def _models(data_dir: Path, quick: bool):
    import lightgbm as lgb
    import xgboost as xgb

    def xgbr(T, depth, X, y):
        return xgb.XGBRegressor(n_estimators=T, max_depth=depth, tree_method="hist", random_state=0, nthread=2).fit(X, y)

    X8, y8 = _synthetic(8)
    _, _, Xw, Xw_te, yw, _ = bx.load_wine(data_dir, 0)
    _, _, Xh, Xh_te, yh, _ = bx.load_housing(data_dir, 0)
    out = [("XGBoost 40×d4, standardised wine (Bigger)", "≤ 1", xgbr(40, 4, Xw, yw), Xw_te)]
    out.append(("XGBoost 100×d6, d=8", "≤ 10", xgbr(100, 6, X8, y8), X8))
    out.append(("LightGBM 100×31 leaves, d=8", "≤ 4",
                lgb.LGBMRegressor(n_estimators=100, random_state=0, n_jobs=2, verbose=-1).fit(X8, y8), X8))
    out.append(("XGBoost 20×d10, standardised housing", "≤ 30", xgbr(20, 10, Xh, yh), Xh_te))
    if not quick:
        out.append(("XGBoost 400×d6, d=8", "≤ 70", xgbr(400, 6, X8, y8), X8))
    return out


def _measure(model, X, rows: int, threads: int, repeats: int, old: bool, rank: bool, seed: int = 1):
    rng = np.random.default_rng(seed)
    ens = pgexact.load(model)
    R = np.ascontiguousarray(X[rng.choice(X.shape[0], rows, replace=False)])
    d = R.shape[1]
    ranking = np.array([rng.permutation(d) for _ in range(rows)], dtype=np.int64)
    sigma = np.full(d, 0.3)
    family = np.zeros(d, np.uint8)
    pert = Perturbation(sigma, family)  # the perturbation, bound once
    arena = ens._arena
    new = _median(lambda: core_exact.pg2_curve(arena, R, ranking, d, pert, threads), repeats)
    mc = _median(lambda: pgexact.mc.pgi2(model, R, ranking, sigma=0.3, n_samples=100, n_jobs=threads), repeats)
    res = {"exact": new / rows, "mc100": mc / rows}
    if old:
        few = max(8, rows // 8)
        res["walk"] = _median(lambda: core_exact.pg2_curve(arena, R[:few], ranking[:few], d, pert, threads, Kernel.walks), 1) / few
    if rank:
        res["rank"] = _median(lambda: core_exact.greedy_rank(arena, R, pert, threads), 1) / rows
    return res


def _fit(xs, ys) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the 400-tree model and the growth fits")
    ap.add_argument("--data-dir", type=Path, default=HERE.parent.parent / "shared" / "datasets")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--big", action="store_true",
                    help="also the issue's large case: XGBoost 300×d8 with 25 features, 16 rows, 2 threads")
    ap.add_argument("--only-big", action="store_true", help="only the large case (implies --big, --no-write)")
    args = ap.parse_args()
    if args.only_big:
        args.big, args.no_write, args.threads, args.quick = True, True, [], True

    lines = [MARK_BEGIN, "## Scaling (bench/bench_scaling.py)", "",
             f"{args.rows} rows, per-row random rankings, σ = 0.3, normal noise; per-row times; "
             "MC-100 = `pgexact.mc.pgi2` with 100 samples per prefix through the library's predict; "
             "`walk` = the previous kernel (shared node-pair walks) in the same run.", ""]
    for threads in args.threads:
        lines += [f"### {threads} thread(s)", "",
                  "| model | exact PGI² | MC-100 | exact / MC-100 | target | walk (before) | walk / exact | rank / PGI² |",
                  "|---|--:|--:|--:|--:|--:|--:|--:|"]
        for name, target, model, X in _models(args.data_dir, args.quick):
            r = _measure(model, X, args.rows, threads, args.repeats, old=True, rank=True)
            row = (f"| {name} | {r['exact'] * 1e3:.2f} ms | {r['mc100'] * 1e3:.2f} ms | {r['exact'] / r['mc100']:.1f} | "
                   f"{target} | {r['walk'] * 1e3:.1f} ms | {r['walk'] / r['exact']:.1f} | {r['rank'] / r['exact']:.2f} |")
            print(row, flush=True)
            lines.append(row)
        lines.append("")
    if not args.quick:
        import xgboost as xgb

        X8, y8 = _synthetic(8)
        lines += ["### Growth (1 thread, synthetic d = 8)", "", "| model | exact PGI² | MC-100 | ratio |", "|---|--:|--:|--:|"]
        by_trees, by_depth = [], []
        for T, depth in [(25, 6), (50, 6), (100, 6), (200, 6), (100, 3), (100, 4), (100, 8)]:
            m = xgb.XGBRegressor(n_estimators=T, max_depth=depth, tree_method="hist", random_state=0, nthread=2).fit(X8, y8)
            r = _measure(m, X8, 32, 1, 1, old=False, rank=False)
            (by_trees if depth == 6 else by_depth).append((T, depth, r["exact"], r["mc100"]))
            row = f"| XGBoost {T}×d{depth} | {r['exact'] * 1e3:.2f} ms | {r['mc100'] * 1e3:.2f} ms | {r['exact'] / r['mc100']:.1f} |"
            print(row, flush=True)
            lines.append(row)
        trees = [b for b in by_trees]
        depth = sorted(by_depth + [b for b in by_trees if b[0] == 100], key=lambda b: b[1])
        lines += ["", f"Fitted growth of exact PGI²: trees^{_fit([b[0] for b in trees], [b[2] for b in trees]):.2f} "
                  f"(MC-100: trees^{_fit([b[0] for b in trees], [b[3] for b in trees]):.2f}); from depth 3 to 8: "
                  f"×{depth[-1][2] / depth[0][2]:.0f}.", ""]
    if args.big:
        import xgboost as xgb

        X25, y25 = _synthetic(25)
        m = xgb.XGBRegressor(n_estimators=300, max_depth=8, tree_method="hist", random_state=0, nthread=2).fit(X25, y25)
        r = _measure(m, X25, 16, 2, 1, old=False, rank=False)
        lines += ["### Large model (16 rows, 2 threads)", "", "| model | exact PGI² | MC-100 | ratio | target |",
                  "|---|--:|--:|--:|--:|",
                  f"| XGBoost 300×d8, d=25 | {r['exact']:.2f} s | {r['mc100'] * 1e3:.1f} ms | "
                  f"{r['exact'] / r['mc100']:.0f} | ≤ 1 s per row |", ""]
        print(lines[-2], flush=True)
    lines.append(MARK_END)
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(text, MARK_BEGIN, MARK_END)


if __name__ == "__main__":
    main()
