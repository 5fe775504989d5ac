"""pgexact.mc: Monte Carlo against the exact values, its 1/sqrt(n) rate, reproducibility."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from sklearn.ensemble import RandomForestRegressor

import pgexact
from pgexact import mc
from conftest import NTHREAD, make_data

D = 5
SIGMA = np.array([0.3, 0.6, 0.2, 0.8, 0.4])


@pytest.fixture(scope="module")
def models():
    X, y = make_data(11, n=400)
    return {
        "xgb": xgb.XGBRegressor(n_estimators=15, max_depth=3, nthread=NTHREAD, random_state=0).fit(X, y),
        "lgb": lgb.LGBMRegressor(n_estimators=15, num_leaves=8, n_jobs=NTHREAD, verbose=-1,
                                 random_state=0).fit(X, y),
        "rf": RandomForestRegressor(n_estimators=8, max_depth=5, n_jobs=NTHREAD, random_state=0).fit(X, y),
    }


@pytest.fixture(scope="module")
def rows():
    r = np.random.default_rng(5).normal(size=(3, D))
    r[2, 1] = np.nan  # a missing value stays missing
    return r


# --------------------------------------------------------------------- convergence to exact
@pytest.mark.parametrize("name", ["xgb", "lgb", "rf"])
def test_pg2_and_curves_within_5_se_at_1e5_samples(models, rows, name):
    m = models[name]
    feats = [0, 2, 3]
    ranking = np.array([3, 0, 4, 1, 2])
    exact = pgexact.pg2(m, rows, feats, sigma=SIGMA)
    est, se = mc.pg2(m, rows, feats, sigma=SIGMA, n_samples=100_000, seed=1, return_se=True, n_jobs=NTHREAD)
    assert np.all(np.abs(est - exact) <= 5 * se + 1e-7), (est, exact, se)

    ex_curve = pgexact.pg2_curve(m, rows, ranking, sigma=SIGMA)
    mc_curve, se_curve = mc.pg2_curve(m, rows, ranking, sigma=SIGMA, n_samples=100_000, seed=2,
                                      return_se=True, n_jobs=NTHREAD)
    assert np.all(np.abs(mc_curve - ex_curve) <= 5 * se_curve + 1e-7)

    for mc_fn, ex_fn in ((mc.pgi2, pgexact.pgi2), (mc.pgu2, pgexact.pgu2)):
        e = ex_fn(m, rows, ranking, sigma=SIGMA)
        v, s = mc_fn(m, rows, ranking, sigma=SIGMA, n_samples=100_000, seed=3, return_se=True,
                     n_jobs=NTHREAD)
        assert np.all(np.abs(v - e) <= 5 * s + 1e-7), (mc_fn.__name__, v, e, s)


def test_error_falls_like_one_over_sqrt_n(models):
    """RMS relative error over 60 rows at n = 250 * 4^j: log-log slope close to -1/2."""
    m = models["xgb"]
    X = np.random.default_rng(8).normal(size=(60, D))
    exact = pgexact.pg2(m, X, list(range(D)), sigma=SIGMA)
    ns = [250, 1000, 4000, 16000, 64000]
    rms = []
    for j, n in enumerate(ns):
        est = mc.pg2(m, X, list(range(D)), sigma=SIGMA, n_samples=n, seed=100 + j, n_jobs=NTHREAD)
        rms.append(np.sqrt(np.mean(((est - exact) / exact) ** 2)))
    slope = np.polyfit(np.log(ns), np.log(rms), 1)[0]
    assert -0.65 <= slope <= -0.35, (slope, rms)


# ----------------------------------------------------------------------- reproducibility
def test_same_seed_same_numbers_other_seed_differs(models, rows):
    m = models["lgb"]
    a = mc.pgi2(m, rows, np.arange(D), sigma=SIGMA, n_samples=500, seed=7)
    b = mc.pgi2(m, rows, np.arange(D), sigma=SIGMA, n_samples=500, seed=7)
    c = mc.pgi2(m, rows, np.arange(D), sigma=SIGMA, n_samples=500, seed=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("name", ["xgb", "rf"])
def test_chunking_and_n_jobs_do_not_change_results(models, rows, name, monkeypatch):
    m = models[name]
    kw = dict(sigma=SIGMA, n_samples=3000, seed=4, return_se=True)
    ref, ref_se = mc.pg2_curve(m, rows, np.arange(D), n_jobs=1, **kw)
    got, got_se = mc.pg2_curve(m, rows, np.arange(D), n_jobs=NTHREAD, **kw)
    # same draws; a forest's threads may sum the trees in another order (last-bit differences)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
    # tiny batches: one row at a time, a few hundred samples per predict call
    monkeypatch.setattr(mc, "_MAX_ELEMENTS_PER_CALL", 7 * D * D)
    small, small_se = mc.pg2_curve(m, rows, np.arange(D), n_jobs=1, **kw)
    np.testing.assert_allclose(small, ref, rtol=1e-12, atol=0)
    np.testing.assert_allclose(small_se, ref_se, rtol=1e-9, atol=0)


def test_library_predict_and_tree_ensemble_give_the_same_estimate(models, rows):
    m = models["xgb"]
    kw = dict(sigma=SIGMA, n_samples=2000, seed=9)
    a = mc.pgu2(m, rows, np.arange(D), **kw)
    b = mc.pgu2(pgexact.load(m), rows, np.arange(D), **kw)
    # same draws; XGBoost sums its margin in float32, TreeEnsemble.predict in double
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-9)


def test_absolute_gap_is_below_root_mean_square(models, rows):
    """Jensen on the shared draws: E|g| <= sqrt(E g^2) for every row."""
    m = models["rf"]
    kw = dict(sigma=SIGMA, n_samples=2000, seed=10)
    ab = mc.pg2_curve(m, rows, np.arange(D), **kw)  # squared, per prefix
    gi = mc.pgi(m, rows, np.arange(D), **kw)
    assert np.all(gi <= np.sqrt(ab).mean(axis=1) + 1e-12)
    assert np.all(np.isfinite(gi)) and np.all(gi >= 0)


def test_bad_n_samples(models, rows):
    with pytest.raises(ValueError, match="n_samples"):
        mc.pg2(models["xgb"], rows, [0], n_samples=0)
    with pytest.raises(TypeError, match="n_samples"):
        mc.pg2(models["xgb"], rows, [0], n_samples=2.5)
