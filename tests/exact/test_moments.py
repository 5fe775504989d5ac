"""pgexact.expected and pgexact.infidelity against plain Monte Carlo through each library's predict."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from sklearn.ensemble import RandomForestRegressor

import pgexact
from conftest import NTHREAD, make_data

D = 5
N_MC = 100_000
SIGMA = np.array([0.4, 0.7, 0.3, 0.9, 0.5])


@pytest.fixture(scope="module")
def models():
    X, y = make_data(21, n=400)
    xg = xgb.XGBRegressor(n_estimators=12, max_depth=3, nthread=NTHREAD, random_state=0).fit(X, y)
    lg = lgb.LGBMRegressor(n_estimators=12, num_leaves=8, n_jobs=NTHREAD, verbose=-1, random_state=0).fit(X, y)
    rf = RandomForestRegressor(n_estimators=6, max_depth=5, n_jobs=NTHREAD, random_state=0).fit(X, y)
    return {
        "xgb": (xg, lambda Z: xg.get_booster().inplace_predict(Z, predict_type="margin")),
        "lgb": (lg, lambda Z: lg.booster_.predict(Z, raw_score=True, num_threads=NTHREAD)),
        "rf": (rf, rf.predict),
    }


@pytest.fixture(scope="module")
def rows():
    r = np.random.default_rng(6).normal(size=(3, D))
    r[1, 3] = np.nan  # stays missing under perturbation
    return r


def unit_draws(family, rng, shape):
    """Zero-mean, unit-variance draws of each family (sigma is the standard deviation)."""
    if family == "normal":
        return rng.standard_normal(shape)
    if family == "uniform":
        return rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), shape)
    return rng.laplace(0.0, np.sqrt(0.5), shape)


def mean_and_se(v):
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))


@pytest.mark.parametrize("family", ["normal", "uniform", "laplace"])
@pytest.mark.parametrize("name", ["xgb", "lgb", "rf"])
def test_expected_and_infidelity_agree_with_monte_carlo(models, rows, name, family):
    model, predict = models[name]
    feats = [0, 1, 3]
    attributions = np.random.default_rng(1).normal(size=rows.shape)
    exp_exact = pgexact.expected(model, rows, feats, sigma=SIGMA, noise=family)
    inf_exact = pgexact.infidelity(model, rows, attributions, sigma=SIGMA, noise=family)
    assert exp_exact.shape == inf_exact.shape == (rows.shape[0],)
    rng = np.random.default_rng([["xgb", "lgb", "rf"].index(name), ["normal", "uniform", "laplace"].index(family)])
    for r, x in enumerate(rows):
        fx = predict(x[None, :])[0]
        # E[f(x')] with only `feats` moved
        z = unit_draws(family, rng, (N_MC, D)) * SIGMA
        pts = np.repeat(x[None, :], N_MC, axis=0)
        pts[:, feats] += z[:, feats]
        mean, se = mean_and_se(predict(pts))
        assert abs(exp_exact[r] - mean) <= 5 * se + 1e-6 * (1 + abs(mean)), (r, exp_exact[r], mean, se)
        # Yeh et al.: E[(a'I - (f(x) - f(x - I)))^2], I on every feature
        I = unit_draws(family, rng, (N_MC, D)) * SIGMA
        gap = fx - predict(x[None, :] - I)
        mean, se = mean_and_se((I @ attributions[r] - gap) ** 2)
        assert abs(inf_exact[r] - mean) <= 5 * se + 1e-6 * (1 + mean), (r, inf_exact[r], mean, se)


def test_expected_with_no_feature_moved_is_the_prediction(models, rows):
    model, predict = models["xgb"]
    mask = np.zeros(D, dtype=bool)
    np.testing.assert_allclose(pgexact.expected(model, rows, mask, sigma=SIGMA), predict(rows),
                               rtol=1e-5, atol=1e-6)


def test_infidelity_of_zero_attributions_is_all_feature_pg2(models, rows):
    model, _ = models["lgb"]
    np.testing.assert_allclose(
        pgexact.infidelity(model, rows, np.zeros_like(rows), sigma=SIGMA),
        pgexact.pg2(model, rows, list(range(D)), sigma=SIGMA), rtol=1e-9, atol=1e-12)


def test_infidelity_bad_attributions(models, rows):
    model, _ = models["rf"]
    with pytest.raises(ValueError, match="attributions"):
        pgexact.infidelity(model, rows, np.zeros((rows.shape[0], D + 1)))
    bad = np.zeros_like(rows)
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="attributions"):
        pgexact.infidelity(model, rows, bad)
