"""Child process of tests/test_differential_fuzz.py: loads model files with pgexact and with the
library that wrote them, and prints what each predicts.

    python tests/_differential_driver.py KIND LIST START

KIND is xgboost, lightgbm or catboost; LIST a text file of model paths, one a line; START the
first line to read (the parent restarts the child past a file that crashed the library). For
every file, one JSON line before each reader runs ({"i": k, "stage": "pgexact" | "library"})
and one with its outcome ({"i": k, "pgexact": ...} / {"i": k, "library": ...}): "refused" with
the exception's type and message, or the predictions on fixed rows (one list per output) and
the feature count. The library reads only the files pgexact loads: a file pgexact refuses has
nothing to compare. For XGBoost, pgexact's line also holds a bound of XGBoost's float32
accumulation error per row and output: 2^-23 x (number of terms) x (|base| + sum of
|tree contribution|), the terms taken from pgexact's own per-tree predictions. Output is
flushed after every line, so a crash or a hang names its file.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import warnings

import numpy as np


def rows(d: int) -> np.ndarray:
    """Fixed rows: zeros, NaN, ramps, normals, small non-negative integers (categories)."""
    rng = np.random.default_rng(27)
    out = [np.zeros(d), np.full(d, np.nan), np.linspace(-2.0, 2.0, d), np.linspace(3.0, -1.0, d)]
    out += list(rng.normal(size=(6, d)))
    out += list(np.abs(np.round(rng.normal(scale=3.0, size=(4, d)))))
    x = rng.normal(size=(2, d))
    x[rng.random(x.shape) < 0.5] = np.nan
    out += list(x)
    return np.array(out, dtype=np.float64)


def emit(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def finite_list(a: np.ndarray):
    """Values as repr strings, so that inf and NaN survive JSON."""
    return [[repr(float(v)) for v in col] for col in a]


# ----------------------------------------------------------------------------- pgexact
def pgexact_side(path: str, kind: str):
    import pgexact
    try:
        from pgexact._models._adapters import load_outputs
    except ImportError:  # before the modules moved (issue 26)
        from pgexact._adapters import load_outputs

    ensembles = load_outputs(path, "all")
    d = ensembles[0].n_features
    X = rows(d)
    preds = np.array([e.predict(X) for e in ensembles])
    out = {"d": d, "pred": finite_list(preds)}
    if kind == "xgboost":
        bounds = []
        for e in ensembles:
            arena = e._arena
            base = arena.select_trees([]).predict(X, 0)
            terms = [np.abs(base)]
            for t in range(arena.n_trees):
                terms.append(np.abs(arena.select_trees([t]).predict(X, 0) - base))
            total = np.sum(terms, axis=0)
            bounds.append(2.0 ** -23 * (len(terms) + 1) * total)
        out["tol"] = finite_list(np.array(bounds))
    del pgexact
    return out


# ----------------------------------------------------------------------------- libraries
def xgboost_side(path: str):
    import xgboost as xgb

    booster = xgb.Booster(model_file=path)
    d = booster.num_features()
    X = rows(d)
    types = booster.feature_types
    cats = bool(types) and "c" in types
    dm = xgb.DMatrix(X, feature_types=types, enable_categorical=cats, missing=np.nan)
    pred = np.asarray(booster.predict(dm, output_margin=True, validate_features=False), dtype=np.float64)
    pred = pred.reshape(len(X), -1).T
    return {"d": d, "pred": finite_list(pred)}


def lightgbm_side(path: str):
    import lightgbm as lgb

    booster = lgb.Booster(model_file=path)
    d = booster.num_feature()
    X = rows(d)
    pred = np.asarray(booster.predict(X, raw_score=True), dtype=np.float64)
    pred = pred.reshape(len(X), -1).T
    # rf mode: LightGBM's raw score sums the trees, pgexact's f is their average (predict())
    text = open(path, "rb").read()
    average = b"\naverage_output\n" in text.replace(b"\r\n", b"\n")
    if average:
        pred = pred / max(booster.current_iteration(), 1)
    return {"d": d, "pred": finite_list(pred), "average": average}


def catboost_side(path: str):
    import catboost

    model = catboost.CatBoost()
    model.load_model(path, format="json")
    # CatBoost reads float feature k from column flat_feature_index (its feature count is the
    # number of features, which a gap in those indices makes smaller than the columns it reads)
    with open(path, "rb") as fh:
        floats = json.loads(fh.read())["features_info"].get("float_features") or []
    d = max([len(model.feature_names_ or [])] + [int(f["flat_feature_index"]) + 1 for f in floats])
    X = rows(d)
    pred = np.asarray(model.predict(X, prediction_type="RawFormulaVal", thread_count=1), dtype=np.float64)
    pred = pred.reshape(len(X), -1).T
    return {"d": d, "pred": finite_list(pred)}


FILE_SECONDS = 20  # both readers on one tiny model file take milliseconds

LIBRARY = {"xgboost": xgboost_side, "lightgbm": lightgbm_side, "catboost": catboost_side}


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def main(argv) -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    warnings.simplefilter("ignore")
    kind, listing, start = argv[0], argv[1], int(argv[2])
    with open(listing) as fh:
        paths = [line.rstrip("\n") for line in fh if line.strip()]
    import pgexact  # noqa: F401 - import once, before the first file
    __import__(kind)
    # A reader stuck on one file is killed by SIGALRM (its default action), which the parent
    # reads as a hang of that file's last stage; Python handlers would not run inside C++.
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    for k in range(start, len(paths)):
        path = paths[k]
        signal.alarm(FILE_SECONDS)
        emit({"i": k, "stage": "pgexact"})
        try:
            emit({"i": k, "pgexact": pgexact_side(path, kind)})
        except ValueError as exc:
            emit({"i": k, "pgexact": "refused", "why_pgexact": describe(exc), "valueerror": True})
            continue  # nothing to compare (and the library's reader crashes on many such files)
        except Exception as exc:  # noqa: BLE001 - anything but ValueError is a finding
            emit({"i": k, "pgexact": "refused", "why_pgexact": describe(exc), "valueerror": False})
            continue
        emit({"i": k, "stage": "library"})
        try:
            emit({"i": k, "library": LIBRARY[kind](path)})
        except Exception as exc:  # noqa: BLE001 - the library refusing a file is fine
            emit({"i": k, "library": "refused", "why_library": describe(exc)})
    signal.alarm(0)
    emit({"done": True})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
