"""Shared fixtures: small XGBoost models (fixed seeds, 2 threads) and test rows."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _oracle import XGBModel, round_boundary  # noqa: E402

D = 5
N_TRAIN = 400
NTHREAD = 2
FEATURE_NAMES = ["age", "bmi", "bp", "s1", "s2"]


def make_data(seed=0, n=N_TRAIN, d=D):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 2.0 * np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] + 0.25 * X[:, 4] ** 2
    y = y + 0.1 * rng.normal(size=n)
    return X, y


@dataclass
class Case:
    """One model under test.

    ``model`` is what is handed to pgexact (a Booster, an sklearn wrapper or a path);
    ``output`` is the class for multi-class models (None otherwise).
    """

    name: str
    model: object
    booster: xgb.Booster
    output: int | None
    X: np.ndarray  # test rows (float64, some NaN, some at thresholds)
    oracle: XGBModel = field(repr=False, default=None)

    def __post_init__(self):
        if self.oracle is None:
            self.oracle = XGBModel(self.booster)

    @property
    def d(self) -> int:
        return self.X.shape[1]

    def pg_model(self):
        """What to pass as ``model`` to pgexact.pg2 & co."""
        import pgexact

        if self.output is None:
            return self.model
        return pgexact.load(self.model, output=self.output)


def make_test_rows(oracle: XGBModel, seed: int, n_random: int = 4) -> np.ndarray:
    """Random rows, rows with NaN, a row at thresholds and a row at rounding boundaries."""
    rng = np.random.default_rng(seed)
    d = oracle.n_features
    rows = [rng.normal(size=d) for _ in range(n_random)]
    r = rng.normal(size=d)
    r[1] = np.nan
    rows.append(r)
    r = rng.normal(size=d)
    r[[0, 2]] = np.nan
    rows.append(r)
    at_t = rng.normal(size=d)
    at_b = rng.normal(size=d)
    for f in range(d):
        t = oracle.thresholds(f)
        if len(t):
            pick = t[len(t) // 2]
            at_t[f] = float(pick)  # exactly at a float32 threshold
            at_b[f] = float(round_boundary(t[(len(t) // 3)]))  # exactly at a rounding boundary
    rows += [at_t, at_b]
    return np.array(rows, dtype=np.float64)


# ----------------------------------------------------------------------------- data
@pytest.fixture(scope="session")
def data():
    return make_data(0)


@pytest.fixture(scope="session")
def nan_data():
    X, y = make_data(1)
    rng = np.random.default_rng(11)
    X = X.copy()
    X[rng.random(X.shape) < 0.15] = np.nan
    return X, y


# ----------------------------------------------------------------------------- models
@pytest.fixture(scope="session")
def reg_model(data):
    X, y = data
    return xgb.XGBRegressor(
        n_estimators=15, max_depth=3, learning_rate=0.3, tree_method="exact",
        nthread=NTHREAD, random_state=0,
    ).fit(X, y)


@pytest.fixture(scope="session")
def base_score_booster(data):
    X, y = data
    params = dict(max_depth=3, eta=0.3, base_score=3.75, nthread=NTHREAD, tree_method="hist", seed=1)
    return xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=12)


@pytest.fixture(scope="session")
def binary_model(data):
    X, y = data
    lab = (y > np.median(y)).astype(int)
    return xgb.XGBClassifier(
        n_estimators=15, max_depth=3, nthread=NTHREAD, random_state=0
    ).fit(X, lab)


@pytest.fixture(scope="session")
def multi_model(data):
    X, y = data
    lab = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    return xgb.XGBClassifier(
        n_estimators=8, max_depth=3, nthread=NTHREAD, random_state=0
    ).fit(X, lab)


@pytest.fixture(scope="session")
def lossguide_booster(data):
    X, y = data
    params = dict(
        grow_policy="lossguide", tree_method="hist", max_leaves=9, max_depth=0,
        eta=0.3, nthread=NTHREAD, seed=2,
    )
    return xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=10)


@pytest.fixture(scope="session")
def dart_model(data):
    X, y = data
    return xgb.XGBRegressor(
        booster="dart", rate_drop=0.3, skip_drop=0.0, n_estimators=12, max_depth=3,
        nthread=NTHREAD, random_state=0,
    ).fit(X, y)


@pytest.fixture(scope="session")
def nan_booster(nan_data):
    X, y = nan_data
    params = dict(max_depth=4, eta=0.3, nthread=NTHREAD, tree_method="hist", seed=3)
    return xgb.train(params, xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=12)


@pytest.fixture(scope="session")
def deep_booster(nan_data):
    """Deeper, larger model (more shared features between trees, more leaf pairs)."""
    X, y = nan_data
    params = dict(max_depth=6, eta=0.2, nthread=NTHREAD, tree_method="hist", max_bin=64, seed=5,
                  subsample=0.8, colsample_bynode=0.8)
    return xgb.train(params, xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=30)


@pytest.fixture(scope="session")
def rf_model(data):
    X, y = data
    return xgb.XGBRFRegressor(
        n_estimators=6, max_depth=3, nthread=NTHREAD, random_state=0
    ).fit(X, y)


@pytest.fixture(scope="session")
def named_model(data):
    """Regressor trained on a DataFrame: the booster carries feature names."""
    X, y = data
    df = pd.DataFrame(X, columns=FEATURE_NAMES)
    return xgb.XGBRegressor(n_estimators=10, max_depth=3, nthread=NTHREAD, random_state=0).fit(df, y)


@pytest.fixture(scope="session")
def const_feature_booster(data):
    """Feature 3 is constant in training, so no tree splits on it (exact PG2 ties)."""
    X, y = data
    X = X.copy()
    X[:, 3] = 0.0
    params = dict(max_depth=3, eta=0.3, nthread=NTHREAD, tree_method="hist", seed=4)
    return xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=8)


@pytest.fixture(scope="session")
def model_files(tmp_path_factory, reg_model):
    d = tmp_path_factory.mktemp("models")
    paths = {}
    for ext in ("json", "ubj"):
        p = d / f"reg.{ext}"
        reg_model.get_booster().save_model(str(p))
        paths[ext] = p
    return paths


# ----------------------------------------------------------------------------- cases
CASE_NAMES = [
    "reg", "base_score", "binary", "multi0", "multi1", "multi2", "lossguide", "dart",
    "nan", "rf", "json_path", "ubj_path", "deep",
]


@pytest.fixture(scope="session")
def cases(request):
    """Lazily built dict name -> Case (only the models a test needs are trained)."""
    built = {}

    def get(name):
        if name in built:
            return built[name]
        fx = request.getfixturevalue
        if name == "reg":
            m = fx("reg_model")
            c = Case(name, m, m.get_booster(), None, None)
        elif name == "base_score":
            b = fx("base_score_booster")
            c = Case(name, b, b, None, None)
        elif name == "binary":
            m = fx("binary_model")
            c = Case(name, m, m.get_booster(), None, None)
        elif name.startswith("multi"):
            m = fx("multi_model")
            c = Case(name, m, m.get_booster(), int(name[-1]), None)
        elif name == "lossguide":
            b = fx("lossguide_booster")
            c = Case(name, b, b, None, None)
        elif name == "dart":
            m = fx("dart_model")
            c = Case(name, m, m.get_booster(), None, None)
        elif name == "nan":
            b = fx("nan_booster")
            c = Case(name, b, b, None, None)
        elif name == "deep":
            b = fx("deep_booster")
            c = Case(name, b, b, None, None)
        elif name == "rf":
            m = fx("rf_model")
            c = Case(name, m, m.get_booster(), None, None)
        elif name == "json_path":
            c = Case(name, str(fx("model_files")["json"]), fx("reg_model").get_booster(), None, None)
        elif name == "ubj_path":
            c = Case(name, fx("model_files")["ubj"], fx("reg_model").get_booster(), None, None)
        else:  # pragma: no cover
            raise KeyError(name)
        c.X = make_test_rows(c.oracle, seed=CASE_NAMES.index(name))
        built[name] = c
        return c

    return get


@pytest.fixture(params=CASE_NAMES)
def case(request, cases):
    return cases(request.param)
