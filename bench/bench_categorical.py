"""Exact PGI² with categorical features against Monte Carlo, and against the same model's cost
with the categorical features left unperturbed.

Models with categorical splits (LightGBM ``categorical_feature``, XGBoost ``enable_categorical``,
HistGradientBoosting ``categorical_features``) on synthetic data where two categorical features
(30 and 20 categories) and six numeric ones matter. Per model, on the same rows and threads:

* exact PGI² of per-row random rankings with the default noise (numeric features normal,
  σ = 0.3; categorical ones ``noise.categorical(0.3)`` over the model's split categories), and
  with the categorical features fixed (``None``), to see what the category sets cost;
* MC-100: ``pgexact.mc.pgi2`` with 100 samples per prefix through the library's own predict;
* the greedy ranking (``pgexact.rank``) relative to PGI²;
* agreement: ``pgexact.mc.pgi2`` with 4,000 samples per prefix against exact, as z-scores
  (|exact − MC| / standard error) over the rows.

Writes a section of bench/RESULTS.md.

    python bench/bench_categorical.py [--rows 32] [--threads 2] [--no-write]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import pgexact
from _results import write_section  # bench/ is on sys.path when a script there runs

MARK_BEGIN = "<!-- categorical-begin -->"
MARK_END = "<!-- categorical-end -->"


def _data(n: int = 5000):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 30, n), rng.integers(0, 20, n)] +
                        [rng.normal(size=n) for _ in range(6)]).astype(float)
    a, b = rng.normal(size=30), rng.normal(size=20)
    y = (a[X[:, 0].astype(int)] + 0.5 * b[X[:, 1].astype(int)] + X[:, 2] * X[:, 3] + np.sin(2 * X[:, 4])
         + 0.3 * X[:, 5] ** 2 + X[:, 6:].sum(axis=1) + 0.3 * rng.normal(size=n))
    return X, y


def _models(X, y, threads: int):
    import lightgbm as lgb
    import pandas as pd
    import xgboost as xgb
    from sklearn.ensemble import HistGradientBoostingRegressor

    lg = lgb.LGBMRegressor(n_estimators=100, num_leaves=31, random_state=0, n_jobs=threads, verbose=-1,
                           min_data_per_group=20, cat_smooth=1).fit(X, y, categorical_feature=[0, 1])
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    for j in (0, 1):
        frame[f"f{j}"] = pd.Categorical(X[:, j].astype(int), categories=range(30 if j == 0 else 20))
    xg = xgb.XGBRegressor(n_estimators=100, max_depth=6, tree_method="hist", enable_categorical=True,
                          max_cat_to_onehot=1, random_state=0, nthread=threads).fit(frame, y)
    hg = HistGradientBoostingRegressor(max_iter=100, max_leaf_nodes=31, categorical_features=[0, 1],
                                       random_state=0).fit(X, y)
    return [("LightGBM 100×31 leaves", lg, X), ("XGBoost 100×d6 (pandas categories)", xg, frame),
            ("HistGradientBoosting 100×31 leaves", hg, X)]


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--agreement-rows", type=int, default=8)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    X, y = _data()
    rng = np.random.default_rng(1)
    rows = rng.choice(X.shape[0], args.rows, replace=False)
    d = X.shape[1]
    ranking = np.array([rng.permutation(d) for _ in rows], dtype=np.int64)
    fixed = [None, None] + ["normal"] * (d - 2)
    table = []
    agreement = []
    for name, model, data in _models(X, y, args.threads):
        R = data.iloc[rows] if hasattr(data, "iloc") else data[rows]
        kw = dict(sigma=0.3, n_jobs=args.threads, progress=False)
        exact = _timed(lambda: pgexact.pgi2(model, R, ranking=ranking, **kw))
        without = _timed(lambda: pgexact.pgi2(model, R, ranking=ranking, noise=fixed, **kw))
        mc = _timed(lambda: pgexact.mc.pgi2(model, R, ranking, n_samples=100, seed=0, **kw))
        rank = _timed(lambda: pgexact.rank(model, R, **kw))
        n = args.rows
        table.append(f"| {name} | {exact / n * 1e3:.1f} ms | {mc / n * 1e3:.1f} ms | {exact / mc:.2f} | "
                     f"{without / n * 1e3:.1f} ms | {exact / without:.2f} | {rank / exact:.2f} |")
        A = R.iloc[: args.agreement_rows] if hasattr(R, "iloc") else R[: args.agreement_rows]
        truth = pgexact.pgi2(model, A, ranking=ranking[: args.agreement_rows], **kw)
        est, se = pgexact.mc.pgi2(model, A, ranking[: args.agreement_rows], n_samples=4000, seed=3,
                                  return_se=True, **kw)
        z = np.abs(truth - est) / np.maximum(se, 1e-300)
        agreement.append(f"| {name} | {float(np.mean(truth)):.4g} | {float(np.max(z)):.2f} | "
                         f"{float(np.mean(z)):.2f} |")
        print(table[-1], agreement[-1], flush=True)
    lines = [MARK_BEGIN, "## Categorical features (bench/bench_categorical.py)", "",
             f"{args.rows} rows, per-row random rankings of 8 features (2 categorical with 30 and 20 "
             f"categories), {args.threads} thread(s); numeric features normal σ = 0.3, categorical ones "
             "`noise.categorical(0.3)` over the model's split categories (the default). Per-row times; "
             "MC-100 = `pgexact.mc.pgi2`, 100 samples per prefix through the library's predict; "
             "'fixed' = the same call with the categorical features unperturbed (`None`).", "",
             "| model | exact PGI² | MC-100 | exact / MC-100 | exact, categorical fixed | "
             "categorical / fixed | rank / PGI² |", "|---|--:|--:|--:|--:|--:|--:|", *table, "",
             f"Agreement, {args.agreement_rows} rows: MC with 4,000 samples per prefix (through the "
             "library's predict, same categorical perturbation) against exact.", "",
             "| model | mean exact PGI² | max z | mean z |", "|---|--:|--:|--:|", *agreement, "", MARK_END]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(text, MARK_BEGIN, MARK_END)


if __name__ == "__main__":
    main()
