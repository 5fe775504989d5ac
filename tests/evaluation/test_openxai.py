"""pgexact.openxai against an independent re-implementation of OpenXAI's PGI / PGU definition."""

from __future__ import annotations

import math

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import auc as sk_auc

import pgexact
from pgexact import openxai
from conftest import NTHREAD

D = 6


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, D))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3]
    yc = (y > 0).astype(int)
    xg = xgb.XGBRegressor(n_estimators=10, max_depth=3, nthread=NTHREAD, random_state=0).fit(X, y)
    lg = lgb.LGBMClassifier(n_estimators=10, num_leaves=8, n_jobs=NTHREAD, verbose=-1, random_state=0).fit(X, yc)
    rf = RandomForestClassifier(n_estimators=5, max_depth=5, n_jobs=NTHREAD, random_state=0).fit(X, yc)
    models = {
        # (model, the library's own raw output: margin / raw score / class-1 probability)
        "xgb": (xg, lambda Z: xg.predict(Z, output_margin=True).astype(np.float64)),  # float32 margins
        "lgb": (lg, lambda Z: lg.predict(Z, raw_score=True)),
        "rf": (rf, lambda Z: rf.predict_proba(Z)[:, 1]),
    }
    rows = rng.normal(size=(4, D))
    attributions = rng.normal(size=(4, D))
    attributions[0, [1, 4]] = 0.7  # a tie: the lower index ranks first
    return models, rows, attributions


def reference(predict, rows, attributions, *, k, sigma, n_samples, seed, auc, invert):
    """OpenXAI's eval_pred_faithfulness, written from its definition with plain loops.

    Per row: the top-K features by |attribution| (ties to the lower index); for each k the
    mask of perturbed features is the top k (PGI) or its complement (PGU); the gap is the mean
    of |f(x') - f(x)| over n_samples draws; with auc the k = 1..K values are integrated by
    sklearn.metrics.auc on arange(K) / (K - 1). The draws are pgexact's documented stream:
    row i uses block i of (n_samples, d) standard normals of default_rng(seed), for every k.
    """
    n, d = rows.shape
    K = k if isinstance(k, int) else math.ceil(round(k * d, 9))
    z = np.random.default_rng(seed).standard_normal((n, n_samples, d))
    out = []
    for i in range(n):
        x = rows[i]
        order = sorted(range(d), key=lambda j: (-abs(attributions[i, j]), j))
        fx = predict(x[None, :])[0]
        values = []
        for kk in (range(1, K + 1) if auc else [K]):
            top = set(order[:kk])
            moved = [j for j in range(d) if (j in top) != invert]
            pts = np.repeat(x[None, :], n_samples, axis=0)
            for j in moved:
                pts[:, j] = x[j] + z[i, :, j] * sigma
            values.append(np.mean(np.abs(predict(pts) - fx)))
        out.append(sk_auc(np.arange(K) / (K - 1), values) if auc and K > 1 else values[-1])
    return np.array(out)


@pytest.mark.parametrize("name", ["xgb", "lgb", "rf"])
@pytest.mark.parametrize("metric", ["pgi", "pgu"])
@pytest.mark.parametrize("k,auc", [(0.25, True), (0.5, True), (4, True), (0.5, False), (1, True)])
def test_matches_independent_reimplementation(setup, name, metric, k, auc):
    models, rows, attributions = setup
    model, predict = models[name]
    fn = getattr(openxai, metric)
    got = fn(model, rows, attributions, k=k, sigma=0.3, n_samples=200, auc=auc, seed=5)
    want = reference(predict, rows, attributions, k=k, sigma=0.3, n_samples=200, seed=5, auc=auc,
                     invert=(metric == "pgu"))
    assert got.shape == (rows.shape[0],)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_k_conventions(setup):
    models, rows, attributions = setup
    model, _ = models["xgb"]
    kw = dict(sigma=0.3, n_samples=50, seed=1)
    # a fraction means ceil(k * d) features: 0.25 * 6 -> 2, 0.5 * 6 -> 3 (not 4), 1.0 -> all
    for frac, K in ((0.25, 2), (0.5, 3), (1.0, D)):
        np.testing.assert_array_equal(openxai.pgi(model, rows, attributions, k=frac, **kw),
                                      openxai.pgi(model, rows, attributions, k=K, **kw))
    # K = 1: the single value, whatever auc says
    np.testing.assert_array_equal(openxai.pgi(model, rows, attributions, k=1, auc=True, **kw),
                                  openxai.pgi(model, rows, attributions, k=1, auc=False, **kw))
    # PGU at k = d perturbs nothing
    np.testing.assert_array_equal(openxai.pgu(model, rows, attributions, k=D, auc=False, **kw), 0.0)


def test_exact_is_the_squared_gap_with_the_same_sets(setup):
    models, rows, attributions = setup
    model, _ = models["lgb"]
    d = D
    for metric, invert in (("pgi", False), ("pgu", True)):
        got = getattr(openxai, metric)(model, rows, attributions, k=0.5, sigma=0.3, exact=True)
        single = getattr(openxai, metric)(model, rows, attributions, k=0.5, sigma=0.3, exact=True,
                                          auc=False)
        K = 3
        want, last = [], []
        for i in range(rows.shape[0]):
            order = sorted(range(d), key=lambda j: (-abs(attributions[i, j]), j))
            values = []
            for kk in range(1, K + 1):
                moved = order[kk:] if invert else order[:kk]
                values.append(pgexact.pg2(model, rows[i:i + 1], moved, sigma=0.3)[0] if moved else 0.0)
            want.append(sk_auc(np.arange(K) / (K - 1), values))
            last.append(values[-1])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(single, last, rtol=1e-12, atol=1e-15)


def test_exact_agrees_with_monte_carlo_squared_gap(setup):
    """exact=True against pgexact.mc's squared gap on the same top-k sets (5 SE)."""
    models, rows, attributions = setup
    model, _ = models["rf"]
    exact = openxai.pgi(model, rows, attributions, k=2, sigma=0.5, exact=True, auc=False)
    order = np.argsort(-np.abs(attributions), axis=1, kind="stable")
    mask = np.zeros(rows.shape, dtype=bool)
    np.put_along_axis(mask, order[:, :2], True, axis=1)
    est, se = pgexact.mc.pg2(model, rows, mask, sigma=0.5, n_samples=50_000, seed=3, return_se=True)
    assert np.all(np.abs(est - exact) <= 5 * se + 1e-9)


def test_seed(setup):
    models, rows, attributions = setup
    model, _ = models["xgb"]
    a = openxai.pgu(model, rows, attributions, seed=3)
    np.testing.assert_array_equal(a, openxai.pgu(model, rows, attributions, seed=3))
    assert not np.array_equal(a, openxai.pgu(model, rows, attributions, seed=4))


def test_dataframe_and_vector_attributions(setup):
    import pandas as pd

    models, rows, attributions = setup
    model, _ = models["lgb"]
    df = pd.DataFrame(rows, columns=[f"Column_{j}" for j in range(D)])
    np.testing.assert_array_equal(openxai.pgi(model, df, attributions, seed=0),
                                  openxai.pgi(model, rows, attributions, seed=0))
    one = attributions[0]
    np.testing.assert_array_equal(openxai.pgi(model, rows, one, seed=0),
                                  openxai.pgi(model, rows, np.tile(one, (rows.shape[0], 1)), seed=0))


@pytest.mark.parametrize("fn", [openxai.pgi, openxai.pgu])
def test_bad_input(setup, fn):
    models, rows, attributions = setup
    model, _ = models["xgb"]
    with pytest.raises(ValueError, match="attributions"):
        fn(model, rows, attributions[:, :-1])
    with pytest.raises(ValueError, match="attributions"):
        fn(model, rows, attributions[:-1])
    bad = attributions.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="attributions"):
        fn(model, rows, bad)
    with pytest.raises(ValueError, match="attributions"):
        fn(model, rows, bad, exact=True)
    for k in (0, 0.0, -1, D + 1, 1.5, -0.25, float("nan")):
        with pytest.raises(ValueError, match="k"):
            fn(model, rows, attributions, k=k)
    with pytest.raises(TypeError, match="k"):
        fn(model, rows, attributions, k="all")
    for n_samples in (0, -3):
        with pytest.raises(ValueError, match="n_samples"):
            fn(model, rows, attributions, n_samples=n_samples)
    with pytest.raises(ValueError, match="seed"):
        fn(model, rows, attributions, seed=-1)
    with pytest.raises(ValueError, match="sigma"):
        fn(model, rows, attributions, sigma=0.0)
