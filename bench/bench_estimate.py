"""pgexact.estimate against the measured time, and the README's "How long will it take" table.

For each model of bench/bench_scaling.py (and a 300-tree depth-8 one, the slow case): the
estimate of ``pg2`` (every feature perturbed), ``pgi2`` of a per-row random ranking and
``rank``, then the measured time of the same call on the same rows (``progress=False``), and
per-row times of MC-100 PGI² (``pgexact.mc.pgi2``, 100 samples per prefix) and of SHAP values
(``shap.TreeExplainer``). Writes a section of bench/RESULTS.md.

    python bench/bench_estimate.py [--rows 8] [--threads 2] [--quick] [--no-write]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_scaling as bs  # noqa: E402  (the models)

import pgexact  # noqa: E402
from _results import write_section  # noqa: E402

MARK_BEGIN = "<!-- estimate-begin -->"
MARK_END = "<!-- estimate-end -->"


def _slow_model():
    import xgboost as xgb

    X, y = bs._synthetic(12, n=3000)
    model = xgb.XGBRegressor(n_estimators=300, max_depth=8, tree_method="hist", random_state=0,
                             nthread=2).fit(X, y)
    return ("XGBoost 300×d8, d=12", "", model, X)


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _fmt(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="bench_scaling's quick models only")
    ap.add_argument("--data-dir", type=Path, default=HERE.parent.parent / "shared" / "datasets")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    import shap

    models = bs._models(args.data_dir, args.quick)
    if not args.quick:
        models.append(_slow_model())
    rng = np.random.default_rng(1)
    est_rows, per_row = [], []
    for label, _, model, X in models:
        R = np.ascontiguousarray(X[rng.choice(X.shape[0], args.rows, replace=False)])
        d = R.shape[1]
        ranking = np.array([rng.permutation(d) for _ in range(args.rows)], dtype=np.int64)
        kw = dict(sigma=0.3, n_jobs=args.threads)
        calls = {
            "pg2": (dict(kind="pg2"), lambda: pgexact.pg2(model, R, np.arange(d), progress=False, **kw)),
            "pgi2": (dict(kind="pgi2", ranking=ranking),
                     lambda: pgexact.pgi2(model, R, ranking, progress=False, **kw)),
            "rank": (dict(kind="rank"), lambda: pgexact.rank(model, R, progress=False, **kw)),
        }
        measured = {}
        for kind, (options, call) in calls.items():
            start = time.perf_counter()
            estimate = pgexact.estimate(model, R, **options, **kw)
            cost = time.perf_counter() - start
            measured[kind] = _timed(call)
            ratio = estimate / measured[kind]
            est_rows.append(f"| {label} | {kind} | {args.rows} | {_fmt(estimate)} | {_fmt(measured[kind])} | "
                            f"{ratio:.2f} | {_fmt(cost)} |")
            print(est_rows[-1], flush=True)
        mc = _timed(lambda: pgexact.mc.pgi2(model, R, ranking, n_samples=100, n_jobs=args.threads,
                                            progress=False))
        explainer = shap.TreeExplainer(model)
        sh = _timed(lambda: explainer.shap_values(R))
        per_row.append(f"| {label} | {_fmt(measured['pgi2'] / args.rows)} | {_fmt(measured['rank'] / args.rows)} | "
                       f"{_fmt(mc / args.rows)} | {_fmt(sh / args.rows)} |")
        print(per_row[-1], flush=True)

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                            text=True).stdout.strip()
    lines = [MARK_BEGIN, "## pgexact.estimate against the measured time (bench/bench_estimate.py)", "",
             f"`python bench/bench_estimate.py --rows {args.rows} --threads {args.threads}` at commit {commit}: "
             f"{args.rows} rows, {args.threads} threads, σ = 0.3. The estimate starts the call, watches the "
             "rate at which the kernel's work units (tree pairs per pass, weighted by leaves × leaves) get "
             "done for about 0.4 s and stops it; `cost` is what the estimate itself took.", "",
             "| model | call | rows | estimate | measured | estimate / measured | cost |",
             "|---|---|--:|--:|--:|--:|--:|", *est_rows, "",
             "### Per row (the README's \"How long will it take\")", "",
             "| model | exact PGI² (given ranking) | greedy rank | MC-100 PGI² | SHAP values |",
             "|---|--:|--:|--:|--:|", *per_row, "", MARK_END]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(text, MARK_BEGIN, MARK_END)


if __name__ == "__main__":
    main()
