"""Monte Carlo parses a model only when its library may have split it by category: the
baseline of every speed comparison must not pay for a parse it does not need."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor

import pgexact
import pgexact._models._adapters as adapters


def _data(seed=0, n=300, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=n)


@pytest.fixture
def count_loads(monkeypatch):
    calls = []
    real = adapters.load

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(adapters, "load", counting)
    return calls


def test_numeric_models_are_not_parsed(count_loads):
    X, y = _data()
    for model in (RandomForestRegressor(n_estimators=5, random_state=0).fit(X, y),
                  xgb.XGBRegressor(n_estimators=5, max_depth=3).fit(X, y),
                  HistGradientBoostingRegressor(max_iter=5).fit(X, y)):
        est = pgexact.mc.pgi2(model, X[:3], [0, 1, 2, 3], n_samples=50, seed=1)
        assert np.all(np.isfinite(est))
    assert count_loads == []


def test_categorical_models_are_parsed(count_loads):
    X, y = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["d"] = pd.Categorical(np.floor(np.abs(X[:, 3]) * 2).astype(int))
    model = HistGradientBoostingRegressor(max_iter=5, categorical_features=[3]).fit(
        frame.assign(d=frame["d"].cat.codes).to_numpy(), y)
    pgexact.mc.pgi2(model, frame.assign(d=frame["d"].cat.codes).to_numpy()[:3], [0, 1, 2, 3],
                    n_samples=50, seed=1)
    assert len(count_loads) == 1
