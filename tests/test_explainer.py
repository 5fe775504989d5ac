"""pgexact.Explainer / Explanation: values, shap round trip, global importance, plots, slicing."""

from __future__ import annotations

import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import lightgbm as lgb  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import shap  # noqa: E402
import xgboost as xgb  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LinearRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import pgexact  # noqa: E402
from conftest import FEATURE_NAMES, NTHREAD, make_data  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIGMA = np.array([0.3, 0.5, 0.2, 0.8, 0.4])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def small():
    """A small regressor trained on numpy (no feature names) and a few rows with a NaN."""
    X, y = make_data(5, n=300)
    model = xgb.XGBRegressor(n_estimators=8, max_depth=3, nthread=NTHREAD, random_state=0).fit(X, y)
    rows = np.random.default_rng(3).normal(size=(9, 5))
    rows[4, 2] = np.nan
    return model, rows


@pytest.fixture(scope="module")
def ex(small):
    model, rows = small
    return pgexact.Explainer(model, sigma=SIGMA)(rows)


# ------------------------------------------------------------------------------ the numbers
def test_values_sum_to_all_feature_pg2(small, ex):
    model, rows = small
    full = pgexact.pg2(model, rows, list(range(5)), sigma=SIGMA)
    np.testing.assert_allclose(ex.values.sum(axis=1), full, rtol=1e-10, atol=0)
    np.testing.assert_allclose(ex.pg2, full, rtol=1e-10, atol=0)


def test_ranking_pgi2_curve_and_base_values_match_the_api(small, ex):
    model, rows = small
    np.testing.assert_array_equal(ex.ranking, pgexact.rank(model, rows, sigma=SIGMA))
    assert ex.ranking.dtype == np.int64 and ex.ranking.shape == (9, 5)
    np.testing.assert_array_equal(ex.pgi2, pgexact.pgi2(model, rows, sigma=SIGMA))
    np.testing.assert_allclose(ex.curve, pgexact.pg2_curve(model, rows, ex.ranking, sigma=SIGMA),
                               rtol=1e-12, atol=0)
    np.testing.assert_array_equal(ex.base_values, pgexact.load(model).predict(rows))
    np.testing.assert_allclose(ex.base_values, model.predict(rows, output_margin=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ex.data, rows)


def test_values_are_the_greedy_gains(ex):
    gains = np.take_along_axis(ex.values, ex.ranking, axis=1)
    np.testing.assert_array_equal(gains[:, 0], ex.curve[:, 0])
    np.testing.assert_array_equal(gains[:, 1:], np.diff(ex.curve, axis=1))


def test_noise_and_n_jobs_are_passed_through(small):
    model, rows = small
    e = pgexact.Explainer(model, sigma=0.4, noise="laplace", n_jobs=1)(rows)
    np.testing.assert_array_equal(e.ranking, pgexact.rank(model, rows, sigma=0.4, noise="laplace"))
    np.testing.assert_array_equal(e.pgi2, pgexact.pgi2(model, rows, sigma=0.4, noise="laplace"))


def test_model_is_parsed_once(data, monkeypatch):
    X, y = data
    model = xgb.XGBRegressor(n_estimators=3, max_depth=2, nthread=NTHREAD, random_state=0).fit(X, y)
    explainer = pgexact.Explainer(model)

    def boom(*_a, **_k):
        raise AssertionError("the model was parsed again")

    monkeypatch.setattr(model, "get_booster", boom)
    monkeypatch.setattr(pgexact.explain.explainer, "load_outputs", boom)
    a, b = explainer(X[:3]), explainer(X[3:5])
    assert a.values.shape == (3, 5) and b.values.shape == (2, 5)


# ------------------------------------------------------------------------------ shap
def test_to_shap_round_trip(ex):
    s = ex.to_shap()
    assert isinstance(s, shap.Explanation)
    np.testing.assert_array_equal(s.values, ex.values)
    # issue 16: base values 0, so base + values add up in PG² units
    np.testing.assert_array_equal(s.base_values, np.zeros_like(ex.base_values))
    np.testing.assert_allclose(s.values.sum(axis=1) + s.base_values, ex.pg2, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(s.data, ex.data)
    assert list(s.feature_names) == ex.feature_names == ["x0", "x1", "x2", "x3", "x4"]
    one = ex[2].to_shap()
    np.testing.assert_array_equal(one.values, ex.values[2])
    assert float(one.base_values) == 0.0
    # shap's own slicing agrees with ours
    np.testing.assert_array_equal(s[2].values, one.values)


def test_shap_plots_run(ex):
    s = ex.to_shap()
    shap.plots.bar(s, show=False)
    plt.close("all")
    shap.plots.beeswarm(s, show=False)
    plt.close("all")
    shap.plots.waterfall(s[0], show=False)
    plt.close("all")
    shap.plots.waterfall(ex[1].to_shap(), show=False)
    plt.close("all")
    shap.plots.bar(ex[3].to_shap(), show=False)


# ------------------------------------------------------------------------------ global importance
def _hand_made():
    """4 rows, 3 features, rankings and values chosen by hand."""
    ranking = np.array([[0, 1, 2], [0, 2, 1], [1, 0, 2], [2, 1, 0]])
    values = np.array([[3.0, 1.0, 0.5], [2.0, 0.0, 1.0], [1.0, 4.0, -1.0], [0.0, 1.0, 2.0]])
    curve = np.cumsum(np.take_along_axis(values, ranking, axis=1), axis=1)
    return pgexact.Explanation(values=values, ranking=ranking, curve=curve, base_values=np.zeros(4),
                               data=np.zeros((4, 3)), feature_names=["a", "b", "c"])


def test_global_importance_hand_computed():
    e = _hand_made()
    # ranks (1-based): a = 1, 1, 2, 3;  b = 2, 3, 1, 2;  c = 3, 2, 3, 1
    geom = e.global_importance("geom")
    assert list(geom.index) == ["a", "b", "c"]
    assert geom.to_dict() == {"a": 0.5 + 0.5 + 0.25 + 0.125, "b": 0.25 + 0.125 + 0.5 + 0.25,
                              "c": 0.125 + 0.25 + 0.125 + 0.5}
    assert geom.sum() == 4 * (1 - 2.0 ** -3)
    top1 = e.global_importance("top1")
    assert top1.to_dict() == {"a": 0.5, "b": 0.25, "c": 0.25}
    assert list(top1.index) == ["a", "b", "c"]  # the b / c tie keeps column order
    top2 = e.global_importance("top2")
    assert top2.to_dict() == {"a": 0.75, "b": 0.75, "c": 0.5}
    assert list(top2.index) == ["a", "b", "c"]
    top3 = e.global_importance("TOP3")
    assert top3.to_dict() == {"a": 1.0, "b": 1.0, "c": 1.0}
    gain = e.global_importance("gain")
    assert gain.to_dict() == {"a": 1.5, "b": 1.5, "c": 0.625}
    assert gain.index.name == "feature" and "gain" in gain.name
    np.testing.assert_array_equal(e.rank_counts(), [[2, 1, 1], [1, 2, 1], [1, 1, 2]])
    # one row: the same definitions with n = 1
    assert e[2].global_importance("geom").to_dict() == {"b": 0.5, "a": 0.25, "c": 0.125}
    assert e[2].global_importance("top1").to_dict() == {"b": 1.0, "a": 0.0, "c": 0.0}


def test_global_importance_gain_is_mean_values(ex):
    gain = ex.global_importance("gain")
    assert np.all(np.diff(gain.to_numpy()) <= 0)
    np.testing.assert_array_equal(gain[ex.feature_names].to_numpy(), ex.values.mean(axis=0))


# ------------------------------------------------------------------------------ names
def test_dataframe_names_on_an_unnamed_model(small):
    model, rows = small
    names = ["alpha", "beta", "gamma", "delta", "eps"]
    e = pgexact.Explainer(model, sigma=SIGMA)(pd.DataFrame(rows, columns=names))
    assert e.feature_names == names
    assert list(e.to_shap().feature_names) == names
    assert set(e.global_importance().index) == set(names)
    np.testing.assert_array_equal(e.values, pgexact.Explainer(model, sigma=SIGMA)(rows).values)


def test_dataframe_names_on_a_named_model_in_any_column_order(named_model, data):
    X, _ = data
    df = pd.DataFrame(X[:6], columns=FEATURE_NAMES)
    permuted = df[["s1", "age", "s2", "bp", "bmi"]]
    explainer = pgexact.Explainer(named_model)
    a, b, c = explainer(df), explainer(permuted), explainer(X[:6])
    assert a.feature_names == c.feature_names == FEATURE_NAMES
    # everything per feature follows X as passed (issue 16)
    perm = [FEATURE_NAMES.index(n) for n in permuted.columns]
    assert b.feature_names == list(permuted.columns)
    np.testing.assert_array_equal(a.values[:, perm], b.values)
    np.testing.assert_array_equal(a.data[:, perm], b.data)
    np.testing.assert_array_equal(np.asarray(perm)[b.ranking], a.ranking)
    np.testing.assert_array_equal(a.values, c.values)
    assert list(b.to_shap().feature_names) == list(permuted.columns)
    assert set(b.global_importance("top2").index) == set(FEATURE_NAMES)
    assert explainer.feature_names == FEATURE_NAMES


# ------------------------------------------------------------------------------ other models
@pytest.mark.parametrize("kind", ["lightgbm", "hist", "rf_classifier"])
def test_other_libraries(kind, data):
    X, y = data
    if kind == "lightgbm":
        model = lgb.LGBMRegressor(n_estimators=6, num_leaves=6, verbose=-1, n_jobs=NTHREAD).fit(X, y)
    elif kind == "hist":
        model = HistGradientBoostingRegressor(max_iter=6, max_depth=3, random_state=0).fit(X, y)
    else:
        model = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y > 0)
    e = pgexact.Explainer(model)(X[:5])
    np.testing.assert_allclose(e.values.sum(axis=1), pgexact.pg2(model, X[:5], list(range(5))),
                               rtol=1e-10, atol=0)
    np.testing.assert_array_equal(e.ranking, pgexact.rank(model, X[:5]))
    if kind == "rf_classifier":
        assert e.output_names == "class True"
        np.testing.assert_allclose(e.base_values, model.predict_proba(X[:5])[:, 1], rtol=1e-12)


def test_multiclass_needs_output(multi_model, data):
    X, _ = data
    # issue 18: a multi-class model is explained for every class by default (it was refused)
    every = pgexact.Explainer(multi_model)(X[:4])
    assert every.values.shape == (4, X.shape[1], 3)
    e = pgexact.Explainer(multi_model, output=2)(X[:4])
    assert e.output_names == "class 2"
    ref = pgexact.load(multi_model, output=2)
    np.testing.assert_array_equal(e.ranking, pgexact.rank(ref, X[:4]))
    assert "class 2" in repr(e)


def test_binary_boosted_classifier_output_name(binary_model, data):
    X, _ = data
    assert pgexact.Explainer(binary_model).output_names == "class 1 (margin)"


# ------------------------------------------------------------------------------ Pipeline
def test_pipeline_last_step(data):
    X, y = data
    df = pd.DataFrame(X, columns=FEATURE_NAMES)
    pipe = make_pipeline(StandardScaler(), RandomForestRegressor(n_estimators=4, max_depth=3, random_state=0))
    pipe.fit(df, y)
    Xt = pipe[:-1].transform(df.iloc[:5])
    e = pgexact.Explainer(pipe)(df.iloc[:5])  # raw rows: the Pipeline transforms them (issue 16)
    ref = pgexact.Explainer(pipe[-1])(Xt)
    np.testing.assert_array_equal(e.values, ref.values)
    np.testing.assert_allclose(e.base_values, pipe.predict(df.iloc[:5]), rtol=1e-12)
    assert e.feature_names == FEATURE_NAMES  # from the earlier steps' get_feature_names_out()
    assert "Pipeline" in repr(pgexact.Explainer(pipe))


def test_pipeline_errors(data):
    X, y = data
    linear = make_pipeline(StandardScaler(), LinearRegression()).fit(X, y)
    with pytest.raises(TypeError, match="model"):
        pgexact.Explainer(linear)
    pca = make_pipeline(PCA(n_components=3), RandomForestRegressor(n_estimators=2, max_depth=2, random_state=0))
    pca.fit(X, y)
    explainer = pgexact.Explainer(pca)
    assert explainer.feature_names == ["pca0", "pca1", "pca2"]
    with pytest.raises(ValueError, match=r"X: .*transform"):
        explainer(pca[:-1].transform(X[:3]))  # already transformed: 3 columns instead of 5
    assert explainer(X[:3]).values.shape == (3, 3)  # raw rows (issue 16)


# ------------------------------------------------------------------------------ slicing, repr
def test_slicing(ex):
    one = ex[2]
    assert one.is_single_row and one.shape == (5,)
    np.testing.assert_array_equal(one.values, ex.values[2])
    np.testing.assert_array_equal(one.ranking, ex.ranking[2])
    np.testing.assert_array_equal(one.data, ex.data[2])
    assert one.base_values == ex.base_values[2] and one.pgi2 == ex.pgi2[2] and one.pg2 == ex.pg2[2]
    assert one.feature_names == ex.feature_names
    np.testing.assert_array_equal(ex[-1].values, ex.values[8])
    for sub, rows in ((ex[:4], slice(0, 4)), (ex[[0, 3, -1]], [0, 3, 8]),
                      (ex[np.arange(9) % 2 == 0], slice(0, None, 2))):
        assert sub.shape == ex.values[rows].shape and len(sub) == sub.shape[0]
        for field in ("values", "ranking", "curve", "pgi2", "base_values", "data"):
            np.testing.assert_array_equal(getattr(sub, field), getattr(ex, field)[rows])
    assert len(ex[:0]) == 0
    assert [e.base_values for e in ex] == list(ex.base_values)


@pytest.mark.parametrize("index, error", [
    ("x0", TypeError), (1.5, TypeError), (None, TypeError), ((slice(None), 0), TypeError),
    (9, IndexError), (-10, IndexError), ([0, 12], IndexError), (np.ones(3, dtype=bool), ValueError),
    (np.zeros((2, 2), dtype=int), ValueError), (True, TypeError),
])
def test_bad_index(ex, index, error):
    with pytest.raises(error, match="index"):
        ex[index]


def test_single_row_cannot_be_indexed(ex):
    with pytest.raises(TypeError, match="index"):
        ex[0][0]
    with pytest.raises(TypeError):
        len(ex[0])


def test_repr(ex):
    text = repr(ex)
    assert "9 rows x 5 features" in text and "top features (geom)" in text and "PGI²" in text
    one = repr(ex[0])
    assert "1 row x 5 features" in one and "greedy ranking" in one
    assert "sigma=array(5)" in text
    assert "features" in repr(pgexact.Explainer(xgb.XGBRegressor(n_estimators=2).fit(np.eye(3), [1, 2, 3])))


# ------------------------------------------------------------------------------ plots
@pytest.mark.parametrize("kind", ["bar", "ranks"])
def test_plot_returns_axes(ex, kind):
    ax = ex.plot(kind)
    assert isinstance(ax, matplotlib.axes.Axes)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert sorted(labels) == sorted(ex.feature_names)
    _, given = plt.subplots()
    assert ex.plot(kind, scheme="top2", max_display=3, ax=given) is given
    assert len(given.get_yticklabels()) == 3


def test_plot_bar_order_and_single_row(ex):
    ax = ex.plot("bar", scheme="gain")
    top = ex.global_importance("gain").index[0]
    ticks = {t.get_text(): pos for t, pos in zip(ax.get_yticklabels(), ax.get_yticks())}
    assert ticks[top] == max(ticks.values())  # largest bar on top
    assert isinstance(ex[0].plot("ranks"), matplotlib.axes.Axes)


# ------------------------------------------------------------------------------ argument errors
def test_argument_errors(small, ex):
    model, rows = small
    with pytest.raises(ValueError, match="scheme"):
        ex.global_importance("median")
    with pytest.raises(ValueError, match="scheme"):
        ex.global_importance("top6")
    with pytest.raises(ValueError, match="scheme"):
        ex.global_importance("top0")
    with pytest.raises(TypeError, match="scheme"):
        ex.global_importance(2)
    with pytest.raises(ValueError, match="kind"):
        ex.plot("pie")
    with pytest.raises(TypeError, match="kind"):
        ex.plot(None)
    with pytest.raises(ValueError, match="max_display"):
        ex.plot("bar", max_display=0)
    with pytest.raises(ValueError, match="scheme"):
        ex.plot("bar", scheme="nope")
    with pytest.raises(ValueError, match="sigma"):
        pgexact.Explainer(model, sigma=-1.0)
    with pytest.raises(ValueError, match="sigma"):
        pgexact.Explainer(model, sigma=[0.1, 0.2])
    with pytest.raises(ValueError, match="noise"):
        pgexact.Explainer(model, noise="cauchy")
    with pytest.raises(ValueError, match="n_jobs"):
        pgexact.Explainer(model, n_jobs=0)
    with pytest.raises(TypeError, match="model"):
        pgexact.Explainer(object())
    with pytest.raises(ValueError, match="X"):
        pgexact.Explainer(model)(rows[:, :3])
    with pytest.raises(ValueError, match="feature_names"):
        pgexact.Explanation(values=np.zeros((2, 3)), ranking=np.zeros((2, 3), int), curve=np.zeros((2, 3)),
                            base_values=np.zeros(2), data=np.zeros((2, 3)), feature_names=["a"])


# ------------------------------------------------------------------------------ the example
def test_example_runs(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg", PGEXACT_EXAMPLE_SMALL="1", PGEXACT_EXAMPLE_OUT=str(tmp_path))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "explain_xgboost.py")],
                          env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("pgexact_bar", "pgexact_ranks", "pgexact_beeswarm", "shap_beeswarm", "pgexact_vs_shap"):
        path = tmp_path / f"{name}.png"
        assert path.exists() and path.stat().st_size > 1000, name
    assert "mean PGI²" in proc.stdout
