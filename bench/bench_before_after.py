"""The exact kernels of two checkouts on the same models and rows, timed alternately.

Each case (model, call, rows) runs in a child process per checkout (``PYTHONPATH`` set to the
checkout's ``python/`` with its built extension), the two checkouts one after the other and
the whole round repeated, so that both see the same load on a shared machine; the table gives
the median seconds per call of each and their ratio. Models are trained once here and pickled
for the children. Values are compared too: the two checkouts must agree within 1e-12 relative
(not a ranking's, which a near tie may flip between kernels, nor an estimate's, a projection).

    python bench/bench_before_after.py --before ../old-checkout [--after .] [--rounds 3] [--data-dir ../shared/datasets]
        [--cases a,b,...] [--write]

Without ``--cases`` every case runs but the slow ones (``SLOW``: minutes a call), which run
when named.

Build each checkout's extension first (``pip install -e``-free: the CMake build copied into
``python/pgexact/``, or an installed wheel's ``_core`` copied there).
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _checkouts import run_in_checkout  # noqa: E402
from _results import DATA_DIR, write_section  # noqa: E402

BEGIN = "<!-- bench_before_after:begin -->"
END = "<!-- bench_before_after:end -->"

CHILD = r'''
import json, pickle, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
import pgexact
model, X, call, rows, reps = pickle.load(open(sys.argv[1], "rb"))
ens = pgexact.load(model)
X = X[:rows]
R = np.argsort(-np.abs(X), axis=1)
def run():
    if call == "pgi2":
        return pgexact.pgi2(ens, X, R, sigma=0.3, n_jobs=1, progress=False)
    if call == "rank":
        return pgexact.rank(ens, X, sigma=0.3, n_jobs=1, progress=False).astype(float)
    if call == "pg2_one":
        return pgexact.pg2(ens, X, [0], sigma=0.3, n_jobs=1, progress=False)
    if call == "pg2_all":
        return pgexact.pg2(ens, X, list(range(X.shape[1])), sigma=0.3, n_jobs=1, progress=False)
    if call == "estimate_rank":  # the seconds of the estimate itself; its value is a projection
        return [pgexact.estimate(ens, X, "rank", sigma=0.3, n_jobs=1)]
    raise SystemExit(call)
times = []
for _ in range(reps):
    t0 = time.perf_counter(); value = run(); times.append(time.perf_counter() - t0)
print(json.dumps({"seconds": min(times), "value": np.asarray(value).ravel().tolist()}))
'''


def _synthetic(d: int, seed: int = 0, n: int = 4000):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] ** 2 + 0.1 * rng.normal(size=n)
    return X, y


def _housing(data_dir: str):
    import pandas as pd

    df = pd.read_csv(Path(data_dir) / "california_housing.csv").dropna()
    y = df.pop("median_house_value").to_numpy() / 1e5
    X = df.drop(columns=["ocean_proximity"]).to_numpy()
    X = (X - X.mean(0)) / X.std(0)
    idx = np.random.default_rng(0).permutation(len(X))
    cut = int(0.8 * len(X))
    return X[idx[:cut]], y[idx[:cut]], X[idx[cut:]]


#: cases that take minutes a call: run only when named in --cases
SLOW = {"lgbm500-pgi2-64", "lgbm500-rank-64"}


def cases(data_dir: str):
    """(key, description, model factory, call, rows, reps); the housing data from `data_dir`."""
    import catboost
    import lightgbm
    import xgboost as xgb
    from sklearn.ensemble import RandomForestRegressor

    def xgb_model(trees, depth, d):
        def make():
            X, y = _synthetic(d)
            return xgb.XGBRegressor(n_estimators=trees, max_depth=depth, nthread=2, random_state=0).fit(X, y), X
        return make

    def housing(factory):
        def make():
            Xtr, ytr, Xte = _housing(data_dir)
            return factory().fit(Xtr, ytr), Xte
        return make

    def rf(trees, depth):
        return housing(lambda: RandomForestRegressor(n_estimators=trees, max_depth=depth, n_jobs=2, random_state=0))

    xgb_default = housing(lambda: xgb.XGBRegressor(nthread=2, random_state=0))
    lgbm_default = housing(lambda: lightgbm.LGBMRegressor(n_jobs=2, random_state=0, verbose=-1))
    cat200 = housing(lambda: catboost.CatBoostRegressor(iterations=200, thread_count=2, random_seed=0,
                                                        verbose=False))
    xgb500 = housing(lambda: xgb.XGBRegressor(n_estimators=500, max_depth=8, nthread=2, random_state=0))
    lgbm500 = housing(lambda: lightgbm.LGBMRegressor(n_estimators=500, num_leaves=255, n_jobs=2, random_state=0,
                                                     verbose=-1))
    return [
        ("xgb-rank-64", "XGBRegressor(), housing: greedy rank, 64 rows", xgb_default, "rank", 64, 1),
        ("lgbm-rank-64", "LGBMRegressor(), housing: greedy rank, 64 rows", lgbm_default, "rank", 64, 1),
        ("cat200-rank-64", "CatBoostRegressor(iterations=200), housing: greedy rank, 64 rows", cat200, "rank", 64, 1),
        ("xgb500-estimate-rank-64", "XGBRegressor(500, max_depth=8), housing: estimate of rank, 64 rows", xgb500,
         "estimate_rank", 64, 3),
        # (SLOW: 64 rows of the 500 trees of 255 leaves take 8-10 min for pgi2, more to rank.)
        ("lgbm500-pgi2-64", "LGBMRegressor(500, num_leaves=255), housing: pgi2 (given ranking), 64 rows", lgbm500,
         "pgi2", 64, 1),
        ("lgbm500-rank-64", "LGBMRegressor(500, num_leaves=255), housing: greedy rank, 64 rows", lgbm500, "rank", 64, 1),
        ("xgb100-pgi2-1", "XGBoost 100×d6, d=8: pgi2 (given ranking), 1 row", xgb_model(100, 6, 8), "pgi2", 1, 3),
        ("xgb100-pgi2-64", "XGBoost 100×d6, d=8: pgi2 (given ranking), 64 rows", xgb_model(100, 6, 8), "pgi2", 64, 2),
        ("xgb100-rank-1", "XGBoost 100×d6, d=8: greedy rank, 1 row", xgb_model(100, 6, 8), "rank", 1, 2),
        ("xgb100-rank-8", "XGBoost 100×d6, d=8: greedy rank, 8 rows", xgb_model(100, 6, 8), "rank", 8, 2),
        ("xgb100w-pgi2-1", "XGBoost 100×d6, d=100: pgi2 (given ranking), 1 row", xgb_model(100, 6, 100), "pgi2", 1, 3),
        ("xgb100w-pgi2-8", "XGBoost 100×d6, d=100: pgi2 (given ranking), 8 rows", xgb_model(100, 6, 100), "pgi2", 8, 1),
        ("xgb100w-rank-1", "XGBoost 100×d6, d=100: greedy rank, 1 row", xgb_model(100, 6, 100), "rank", 1, 1),
        ("xgb300-one-1", "XGBoost 300×d8, d=12: pg2 of one feature, 1 row", xgb_model(300, 8, 12), "pg2_one", 1, 3),
        ("rf20d10-pgi2-1", "RandomForest 20 trees, max_depth=10, housing: pgi2, 1 row", rf(20, 10), "pgi2", 1, 2),
        ("rf5-pgi2-1", "RandomForest 5 trees, unbounded depth, housing: pgi2, 1 row", rf(5, None), "pgi2", 1, 2),
        ("rf5-pgi2-8", "RandomForest 5 trees, unbounded depth, housing: pgi2, 8 rows", rf(5, None), "pgi2", 8, 1),
        ("rf20d10-rank-1", "RandomForest 20 trees, max_depth=10, housing: greedy rank, 1 row", rf(20, 10), "rank", 1, 1),
        ("rf5-rank-1", "RandomForest 5 trees, unbounded depth, housing: greedy rank, 1 row", rf(5, None), "rank", 1, 1),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, type=Path)
    ap.add_argument("--after", default=Path(__file__).resolve().parents[1], type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cases", default="")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--data-dir", default=DATA_DIR, help="where california_housing.csv is")
    args = ap.parse_args()
    wanted = set(filter(None, args.cases.split(",")))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        made = {}
        for key, desc, make, call, n_rows, reps in cases(args.data_dir):
            if (wanted and key not in wanted) or (not wanted and key in SLOW):
                continue
            if make not in made:
                made[make] = make()
            model, X = made[make]
            case_file = Path(tmp) / f"{key}.pkl"
            with open(case_file, "wb") as f:
                pickle.dump((model, X, call, n_rows, reps), f)
            seconds = {"before": [], "after": []}
            values = {}
            for _ in range(args.rounds):
                for side, checkout in (("before", args.before), ("after", args.after)):
                    res = run_in_checkout(checkout.resolve(), CHILD, case_file, args.timeout)
                    seconds[side].append(res["seconds"])
                    values[side] = np.asarray(res["value"])
            if call not in ("rank", "estimate_rank"):
                np.testing.assert_allclose(values["after"], values["before"], rtol=1e-12, atol=1e-300)
            b, a = statistics.median(seconds["before"]), statistics.median(seconds["after"])
            rows.append((desc, b, a, b / a))
            print(f"{desc}: before {b:.4f} s, after {a:.4f} s, {b / a:.2f}× faster", flush=True)
    commit = subprocess.run(["git", "-C", str(args.after), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    base = subprocess.run(["git", "-C", str(args.before), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    lines = [BEGIN, "", f"## Kernel before/after (`bench/bench_before_after.py`, {base} → {commit})", "",
             "Median seconds per call over alternating rounds (children with each checkout on the same "
             "pickled models, 1 thread, σ = 0.3, SHAP-free rankings by |x|); values agree within 1e-12.", "",
             "| case | before (s) | after (s) | speed-up |", "|---|--:|--:|--:|"]
    lines += [f"| {d} | {b:.4f} | {a:.4f} | {r:.2f}× |" for d, b, a, r in rows]
    lines += ["", END]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section(text, BEGIN, END)


if __name__ == "__main__":
    main()
