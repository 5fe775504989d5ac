#!/usr/bin/env python
"""``output="all"`` against K separate single-class calls on a 3-class XGBoost model.

The model: ``XGBClassifier`` with 100 trees per class (300 trees), depth 6, fitted on
California housing's 8 standardised features with the target cut into terciles (a synthetic
8-feature 3-class problem when the file is absent). On ``--rows`` test rows, with the same
threads, each line times (median of ``--repeats`` interleaved runs):

* ``load``: parsing the model (XGBoost JSON, the comparison with XGBoost's margin) for every
  class: ``load(model, output=k)`` K times against one ``output="all"`` parse;
* ``pg2`` (every feature perturbed), ``pgi2`` (greedy ranking and its curve), ``rank`` and
  ``Explainer(model)(X)``: ``output="all"`` against ``output=k`` for k = 0..K-1.

Every class of ``output="all"`` is checked to equal the single-class call bit for bit.

Run:  python bench/bench_multiclass.py [--data-dir ../shared/datasets] [--rows 64] [--repeats 3]
It prints a markdown table and (unless --no-write) replaces its section of bench/RESULTS.md.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any, Callable, Dict, List

import numpy as np

import pgexact
from pgexact._models._adapters import load_outputs
from pgexact.bench.common import fmt_time, timed

from _results import write_section  # bench/ is on sys.path when a script there runs

K = 3
MARK_BEGIN = "<!-- multiclass-begin -->"
MARK_END = "<!-- multiclass-end -->"
NOTE = ("What `\"all\"` shares is the parse (XGBoost's JSON read once, each class selected with "
        "`Arena.select_output`), the check against XGBoost's own margin and the validation of the "
        "rows. Each class's kernels then run exactly as `output=k` alone (the leaf-pair tables are "
        "per class's trees, which is what makes the results bit-identical), so kernel-bound calls "
        "take about as long either way.")


def dataset(data_dir: str, seed: int) -> Any:
    path = os.path.join(data_dir, "california_housing.csv")
    rng = np.random.default_rng(seed)
    if os.path.exists(path):
        import pandas as pd

        frame = pd.read_csv(path)
        target = "median_house_value"
        X = frame.drop(columns=[target]).select_dtypes("number").to_numpy(dtype=float)
        y_raw = frame[target].to_numpy(dtype=float)
        source = "California housing (terciles of median_house_value)"
    else:
        X = rng.normal(size=(20000, 8))
        y_raw = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] + 0.1 * rng.normal(size=len(X))
        source = "synthetic, 8 features"
    y = np.digitize(y_raw, np.quantile(y_raw, [1 / 3, 2 / 3]))
    X = (X - np.nanmean(X, axis=0)) / np.nanstd(X, axis=0)
    order = rng.permutation(len(X))
    return X[order], y[order], source


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                           "shared", "datasets"))
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md")
    args = parser.parse_args(argv)

    import xgboost as xgb

    X, y, source = dataset(args.data_dir, 0)
    n_train = min(len(X) - args.rows, 16000)
    model = xgb.XGBClassifier(n_estimators=100, max_depth=6, learning_rate=0.1, random_state=0,
                              n_jobs=args.n_jobs or 0).fit(X[:n_train], y[:n_train])
    rows = np.ascontiguousarray(X[-args.rows:])
    ex_kw: Dict[str, Any] = dict(sigma=0.3, n_jobs=args.n_jobs)
    kw: Dict[str, Any] = dict(sigma=0.3, n_jobs=args.n_jobs, progress=False)

    def each(fn: Callable[..., np.ndarray]) -> Callable[[], Any]:
        return lambda: [fn(output=k) for k in range(K)]

    cases: Dict[str, Any] = {
        "load (parse + check)": (lambda: load_outputs(model, "all"),
                                 lambda: [pgexact.load(model, output=k) for k in range(K)]),
        "pg2, every feature": (lambda: pgexact.pg2(model, rows, np.ones(8, bool), output="all", **kw),
                               each(lambda output: pgexact.pg2(model, rows, np.ones(8, bool),
                                                               output=output, **kw))),
        "pgi2 (greedy)": (lambda: pgexact.pgi2(model, rows, output="all", **kw),
                          each(lambda output: pgexact.pgi2(model, rows, output=output, **kw))),
        "rank": (lambda: pgexact.rank(model, rows, output="all", **kw),
                 each(lambda output: pgexact.rank(model, rows, output=output, **kw))),
        "Explainer(model)(X)": (lambda: pgexact.Explainer(model, **ex_kw)(rows, progress=False).values,
                                each(lambda output: pgexact.Explainer(model, output=output, **ex_kw)(rows, progress=False).values)),
    }
    head = (f"XGBClassifier, {K} classes x 100 trees, depth 6; {source}; {args.rows} rows; "
            f"n_jobs={args.n_jobs}; {os.cpu_count()} CPUs; median of {args.repeats} interleaved runs")
    table = ["| call | output=\"all\" | K separate calls | separate / all |", "|---|--:|--:|--:|"]
    print(head + "\n")
    print("\n".join(table))
    for name, (together, apart) in cases.items():
        t_all: List[float] = []
        t_each: List[float] = []
        for _ in range(args.repeats):
            a, t = timed(together)
            t_all.append(t)
            b, t = timed(apart)
            t_each.append(t)
        if not name.startswith("load"):
            last = -1 if name.startswith("Explainer") else 1
            for k in range(K):
                one = b[k]
                mine = a[..., k] if last == -1 else a[:, k]
                assert np.array_equal(mine, one), f"{name}: class {k} differs from output={k}"
        m_all, m_each = statistics.median(t_all), statistics.median(t_each)
        table.append(f"| {name} | {fmt_time(m_all, 'µs')} | {fmt_time(m_each, 'µs')} | {m_each / m_all:.2f} |")
        print(table[-1], flush=True)
    if not args.no_write:
        text = "\n".join([MARK_BEGIN, "## Multi-class: output=\"all\" (bench/bench_multiclass.py)", "",
                          head + ". Every class of `output=\"all\"` equal to `output=k` bit for bit "
                          "(checked).", "", *table, "", NOTE, "", MARK_END])
        write_section(text, MARK_BEGIN, MARK_END)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
