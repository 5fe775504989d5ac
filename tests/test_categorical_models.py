"""Issue 18 on real models: categorical features perturbed by category, through each library.

LightGBM (``categorical_feature``), XGBoost (``enable_categorical``) and HistGradientBoosting
(``categorical_features``) models whose categorical features matter: exact PG² against an
enumeration of every drawn category through the library's own predict, together with a
numeric feature enumerated by cells; large-sample Monte Carlo through the library's predict
with the same categorical perturbation; the issue's LightGBM case (a dominant categorical
feature: ranked by its exact gain, SHAP attributions accepted, Monte Carlo agreeing); the same
perturbation in ``expected``, ``Explainer``, ``pgexact.dask`` and ``pgexact.openxai``; errors
that name the argument passed.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

import pgexact
from _oracle import XGBModel
from pgexact.noise import categorical

N_CAT = 12


def _data(seed: int = 0, n: int = 3000):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.integers(0, N_CAT, n), rng.normal(size=n),
                         rng.integers(0, 5, n)]).astype(float)
    effect = rng.normal(scale=2.0, size=N_CAT)
    y = effect[X[:, 1].astype(int)] + 0.5 * X[:, 0] + 0.4 * X[:, 2] * (X[:, 3] - 2) + 0.1 * rng.normal(size=n)
    return X, y


@pytest.fixture(scope="module")
def data():
    return _data()


@pytest.fixture(scope="module")
def lgbm(data):
    lgb = pytest.importorskip("lightgbm")
    X, y = data
    model = lgb.LGBMRegressor(n_estimators=30, num_leaves=12, verbose=-1, n_jobs=2, min_data_per_group=10,
                              cat_smooth=1, random_state=0).fit(X, y, categorical_feature=[1, 3])
    return model, lambda A: model.predict(A, raw_score=True)


@pytest.fixture(scope="module")
def xgbm(data):
    import xgboost as xgb

    X, y = data
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["b"] = pd.Categorical(X[:, 1].astype(int), categories=range(N_CAT))
    frame["d"] = pd.Categorical(X[:, 3].astype(int), categories=range(5))
    model = xgb.XGBRegressor(n_estimators=25, max_depth=4, tree_method="hist", enable_categorical=True,
                             max_cat_to_onehot=1, nthread=2, random_state=0).fit(frame, y)
    oracle = XGBModel(model.get_booster())  # XGBoost's own routing (pred_leaf), leaves summed in double
    return model, oracle.leaf_sum


@pytest.fixture(scope="module")
def hgb(data):
    from sklearn.ensemble import HistGradientBoostingRegressor

    X, y = data
    model = HistGradientBoostingRegressor(max_iter=30, max_leaf_nodes=12, categorical_features=[1, 3],
                                          random_state=0).fit(X, y)
    return model, lambda A: model._raw_predict(A).ravel()


def _rows(data, n=6):
    X = data[0][:n].copy()
    X[1, 1] = N_CAT + 3   # a category no split names
    X[2, 3] = np.nan      # missing stays missing
    return X


def _enumerate(predict, X, features, options):
    """E[(f(x') - f(x))^2] and E f(x') - f(x) over every combination of drawn values."""
    out = []
    for x in X:
        choices = []
        for j in range(X.shape[1]):
            if j in features and j in options and not np.isnan(x[j]):
                values, probs = options[j](x[j])
                choices.append(list(zip(values, probs)))
            else:
                choices.append([(x[j], 1.0)])
        combos = list(itertools.product(*choices))
        A = np.array([[v for v, _ in c] for c in combos])
        P = np.array([np.prod([p for _, p in c]) for c in combos])
        f = predict(A)
        f0 = predict(x[None, :])[0]
        out.append((float(P @ (f - f0) ** 2), float(P @ (f - f0))))
    return np.array(out)


def _category_options(p, categories, weights):
    categories = np.asarray(categories, dtype=float)
    weights = np.asarray(weights, dtype=float) / np.sum(weights)
    return lambda x: (np.concatenate([[x], categories]), np.concatenate([[1 - p], p * weights]))


@pytest.mark.parametrize("library", ["lgbm", "xgbm", "hgb"])
def test_against_enumeration_through_the_library(library, data, request):
    model, predict = request.getfixturevalue(library)
    X = _rows(data)
    ens = pgexact.load(model)
    assert ens.categorical_features == [1, 3]
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]) if library == "xgbm" else X
    named_b, named_d = ens.split_categories(1), ens.split_categories(3)
    defaults = {1: _category_options(0.3, named_b, np.ones(named_b.size)),
                3: _category_options(0.3, named_d, np.ones(named_d.size))}
    for features in ([1], [3], [1, 3]):
        got = pgexact.pg2(model, frame, features=features, sigma=0.3)
        want = _enumerate(predict, X, features, defaults)
        np.testing.assert_allclose(got, want[:, 0], rtol=1e-9, atol=1e-13)
        shift = pgexact.expected(model, frame, features=features, sigma=0.3) - ens.predict(frame)
        np.testing.assert_allclose(shift, want[:, 1], rtol=1e-9, atol=1e-12)
    # chosen categories and weights (background frequencies), a feature left alone with None
    codes, counts = np.unique(data[0][:, 1], return_counts=True)
    noise = ["normal", categorical(0.7, codes, counts), "normal", None]
    got = pgexact.pg2(model, frame, features=[1, 3], sigma=0.3, noise=noise)
    want = _enumerate(predict, X, [1], {1: _category_options(0.7, codes, counts)})
    np.testing.assert_allclose(got, want[:, 0], rtol=1e-9, atol=1e-13)


@pytest.mark.parametrize("library", ["lgbm", "xgbm", "hgb"])
def test_monte_carlo_with_the_same_perturbation(library, data, request):
    """Numeric and categorical features perturbed together: Monte Carlo through the library's
    own predict agrees with exact within its standard error."""
    model, _ = request.getfixturevalue(library)
    X = _rows(data, 8)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]) if library == "xgbm" else X
    ranking = np.array([[1, 0, 3, 2], [3, 2, 1, 0]] * 4)
    exact = pgexact.pgi2(model, frame, ranking, sigma=0.4)
    est, se = pgexact.mc.pgi2(model, frame, ranking, sigma=0.4, n_samples=6000, seed=7, return_se=True)
    z = np.abs(est - exact) / np.maximum(se, 1e-12)
    assert np.all(z < 5), z


def test_issue_case_dominant_categorical_feature(lgbm, data):
    """The issue's LightGBM case: the categorical feature is ranked where its exact gain puts it
    (not last with gain 0), SHAP attributions and metrics.compare work, Monte Carlo agrees."""
    model, _ = lgbm
    X = data[0][:16]
    ranking, curve = pgexact.rank_with_curve(model, X, sigma=0.3) if hasattr(pgexact, "rank_with_curve") \
        else (pgexact.rank(model, X, sigma=0.3), None)
    singles = np.column_stack([pgexact.pg2(model, X, features=[j], sigma=0.3) for j in range(4)])
    np.testing.assert_array_equal(ranking[:, 0], np.argmax(singles, axis=1))
    assert np.mean(ranking[:, 0] == 1) > 0.8  # the dominant feature comes first
    shap = pytest.importorskip("shap")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = shap.TreeExplainer(model).shap_values(X)
    exact = pgexact.pgi2(model, X, attributions=values, sigma=0.3)
    est, se = pgexact.mc.pgi2(model, X, attributions=values, sigma=0.3, n_samples=4000, seed=3, return_se=True)
    assert np.all(np.abs(est - exact) < 5 * se)
    table = pgexact.metrics.compare(model, X[:4])
    assert np.all(np.isfinite(np.asarray(table, dtype=float)))
    ex = pgexact.Explainer(model, sigma=0.3)(X[:6])
    assert np.all(np.argmax(np.asarray(ex.values), axis=1) == np.argmax(ex.values, axis=1))
    np.testing.assert_allclose(np.asarray(ex.values).sum(axis=1),
                               pgexact.pg2(model, X[:6], features=[0, 1, 2, 3], sigma=0.3), rtol=1e-12)


def test_dask_and_openxai_use_the_same_perturbation(lgbm, data):
    da = pytest.importorskip("dask.array")
    import pgexact.dask as pgd

    model, _ = lgbm
    X = data[0][:40]
    want = pgexact.pgi2(model, X, sigma=0.3)
    got = pgd.pgi2(model, da.from_array(X, chunks=(7, 4)), sigma=0.3).compute(scheduler="sync")
    assert np.array_equal(got, want)  # other rows in the call never change a row's bits
    attributions = np.random.default_rng(0).normal(size=X[:8].shape)
    exact = pgexact.openxai.pgi(model, X[:8], attributions, k=2, sigma=0.3, exact=True, auc=False)
    ranking = np.argsort(-np.abs(attributions), axis=1, kind="stable")
    np.testing.assert_allclose(exact, pgexact.pg2_curve(model, X[:8], ranking, sigma=0.3)[:, 1], rtol=1e-14)
    mc_value = pgexact.openxai.pgi(model, X[:8], attributions, k=2, sigma=0.3, n_samples=200, seed=1)
    assert np.all(np.isfinite(mc_value))


def test_monte_carlo_draws_categories_by_their_weights(lgbm, data):
    """The Monte Carlo stream draws categories with the given probabilities and keeps NaN."""
    model, _ = lgbm
    X = data[0][:1].copy()
    from pgexact.noise import Sampler
    from pgexact._exact._perturbation import as_noise

    kn = as_noise(["normal", categorical(0.5, [2, 5, 7], [0.2, 0.3, 0.5]), None, categorical(0.3)], 0.3,
                  pgexact.load(model))
    sampler = Sampler(kn.family, 0, kn.categorical)
    draws = sampler.perturb(np.vstack([X, [[0.0, np.nan, 1.0, 2.0]]]), 20000, kn.sigma)
    values, counts = np.unique(draws[0, :, 1], return_counts=True)
    freq = dict(zip(values, counts / counts.sum()))
    keep = X[0, 1]
    expect = {2.0: 0.1, 5.0: 0.15, 7.0: 0.25}
    expect[keep] = expect.get(keep, 0.0) + 0.5
    for v, p in expect.items():
        assert abs(freq.get(v, 0.0) - p) < 0.015, (v, freq)
    assert np.all(np.isnan(draws[1, :, 1]))        # missing stays missing
    assert np.all(draws[0, :, 2] == X[0, 2]) and np.all(draws[1, :, 2] == 1.0)  # None: never moved


def test_errors_name_the_argument_passed(lgbm, data):
    model, _ = lgbm
    X = data[0][:3]
    with pytest.raises(ValueError, match=r"^noise\[1\]: the model splits on feature .* by category"):
        pgexact.pgi2(model, X, sigma=0.3, noise=["normal"] * 4)
    with pytest.raises(ValueError, match=r"^noise\[0\]: the model names no categories for feature"):
        pgexact.pg2(model, X, features=[0], noise=[categorical(0.3), categorical(0.3), "normal", None])
    with pytest.raises(ValueError, match=r"^p: "):
        categorical(1.5)
    with pytest.raises(ValueError, match=r"^weights: given without categories"):
        categorical(0.3, weights=[1, 2])
    with pytest.raises(ValueError, match=r"^categories: categories must be distinct"):
        categorical(0.3, [1, 1])
    with pytest.raises(ValueError, match=r"^weights: expected 2 weights"):
        categorical(0.3, [1, 2], [1.0])
    with pytest.raises(ValueError, match=r"^noise: infidelity is defined for additive noise"):
        pgexact.infidelity(model, X, np.ones((3, 4)), sigma=0.3)
    with pytest.raises(TypeError, match=r"^noise: expected .*categorical"):
        pgexact.pg2(model, X, features=[0], noise=None)
