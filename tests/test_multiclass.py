"""Multi-class models (issue 18): output= by position or class label, and output="all".

Every class of an ``output="all"`` call must be bit for bit the single-class call
``output=k`` (np.array_equal, never allclose): the model is parsed once and each output's
kernels run exactly as they would alone.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import dask.array as da  # noqa: E402
import lightgbm as lgb  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import shap  # noqa: E402
import xgboost as xgb  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)

import pgexact  # noqa: E402
import pgexact.dask  # noqa: E402
from pgexact._exact._api import rank_with_curve  # noqa: E402
from conftest import FEATURE_NAMES, NTHREAD  # noqa: E402

K = 3
D = 5
SIGMA = np.array([0.3, 0.5, 0.2, 0.8, 0.4])


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def make_data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    score = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3]
    y = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))  # 0, 1, 2
    return X, y


@pytest.fixture(scope="module")
def data():
    X, y = make_data()
    rows = X[:12].copy()
    rows[3, 1] = np.nan  # a missing value stays missing in every class
    return X, y, rows


def _fit(kind, X, y):
    if kind == "xgboost":
        return xgb.XGBClassifier(n_estimators=8, max_depth=3, nthread=NTHREAD, random_state=0).fit(X, y)
    if kind == "random_forest":
        return RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0).fit(X, y)
    if kind == "lightgbm":
        return lgb.LGBMClassifier(n_estimators=8, num_leaves=7, verbose=-1, n_jobs=NTHREAD,
                                  random_state=0).fit(X, y)
    if kind == "hist_gradient_boosting":
        return HistGradientBoostingClassifier(max_iter=6, max_depth=3, random_state=0).fit(X, y)
    if kind == "gradient_boosting":
        return GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    raise AssertionError(kind)


KINDS = ["xgboost", "random_forest", "lightgbm", "hist_gradient_boosting", "gradient_boosting"]


@pytest.fixture(scope="module", params=KINDS)
def model(request, data):
    X, y, _ = data
    return _fit(request.param, X, y)


# ------------------------------------------------------------------ every class, bit for bit
def test_all_classes_equal_single_class_calls(model, data):
    _, _, rows = data
    kw = dict(sigma=SIGMA, n_jobs=2)
    assert pgexact.load(model, output=0).n_outputs == K
    pg2 = pgexact.pg2(model, rows, [0, 2], output="all", **kw)
    pgi2 = pgexact.pgi2(model, rows, output="all", **kw)
    pgu2 = pgexact.pgu2(model, rows, output="all", **kw)
    expected = pgexact.expected(model, rows, [1, 3], output="all", **kw)
    ranking, curve = rank_with_curve(model, rows, output="all", **kw)
    rk = pgexact.rank(model, rows, output="all", **kw)
    fixed = np.array([4, 2, 0, 1, 3])
    curve_fixed = pgexact.pg2_curve(model, rows, fixed, output="all", **kw)
    n = rows.shape[0]
    assert pg2.shape == pgi2.shape == pgu2.shape == expected.shape == (n, K)
    assert ranking.shape == curve.shape == rk.shape == curve_fixed.shape == (n, K, D)
    for k in range(K):
        assert np.array_equal(pg2[:, k], pgexact.pg2(model, rows, [0, 2], output=k, **kw))
        assert np.array_equal(pgi2[:, k], pgexact.pgi2(model, rows, output=k, **kw))
        assert np.array_equal(pgu2[:, k], pgexact.pgu2(model, rows, output=k, **kw))
        assert np.array_equal(expected[:, k], pgexact.expected(model, rows, [1, 3], output=k, **kw))
        one_ranking, one_curve = rank_with_curve(model, rows, output=k, **kw)
        assert np.array_equal(ranking[:, k], one_ranking)
        assert np.array_equal(curve[:, k], one_curve)
        assert np.array_equal(rk[:, k], one_ranking)
        assert np.array_equal(curve_fixed[:, k], pgexact.pg2_curve(model, rows, fixed, output=k, **kw))
    # the classes differ (the test would not notice a class repeated K times otherwise)
    assert not np.array_equal(pgi2[:, 0], pgi2[:, 1])


def test_explainer_every_class_by_default(model, data):
    _, _, rows = data
    ex = pgexact.Explainer(model, sigma=SIGMA)(rows)
    n = rows.shape[0]
    assert ex.is_multi_output and ex.n_outputs == K
    assert ex.values.shape == ex.ranking.shape == ex.curve.shape == (n, D, K)
    assert ex.base_values.shape == ex.pgi2.shape == ex.pg2.shape == (n, K)
    assert ex.data.shape == (n, D)
    assert ex.output_names == ["class 0", "class 1", "class 2"]
    for k in range(K):
        one = pgexact.Explainer(model, sigma=SIGMA, output=k)(rows)
        for name in ("values", "ranking", "curve", "base_values", "pgi2"):
            assert np.array_equal(getattr(ex, name)[..., k], getattr(one, name)), name
        assert np.array_equal(ex.data, one.data, equal_nan=True)
        sliced = ex[:, :, k]
        assert np.array_equal(sliced.values, one.values) and sliced.output_names == one.output_names
        assert np.array_equal(ex.for_output(k).ranking, one.ranking)
        # and the greedy ranking is pgexact.rank's, whose "all" layout is (n, K, d)
        assert np.array_equal(ex.ranking[..., k], pgexact.rank(model, rows, sigma=SIGMA, output="all")[:, k])
    assert np.array_equal(pgexact.Explainer(model, sigma=SIGMA, output="all")(rows).values, ex.values)


def test_base_values_are_the_library_raw_output(data):
    """f(x) of every class against XGBoost's own margin and the forest's own predict_proba."""
    X, y, rows = data
    rows = rows[~np.isnan(rows).any(axis=1)]
    booster_model = _fit("xgboost", X, y)
    ex = pgexact.Explainer(booster_model)(rows)
    margin = booster_model.predict(rows, output_margin=True)
    np.testing.assert_allclose(ex.base_values, margin, rtol=1e-5, atol=1e-5)  # XGBoost sums in float32
    forest = _fit("random_forest", X, y)
    ex = pgexact.Explainer(forest)(rows)
    np.testing.assert_allclose(ex.base_values, forest.predict_proba(rows), rtol=1e-12, atol=1e-15)


def test_single_output_models_keep_their_shapes(data):
    X, y, rows = data
    reg = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, y.astype(float))
    assert pgexact.pgi2(reg, rows).shape == (12,)
    assert pgexact.rank(reg, rows).shape == (12, D)
    ex = pgexact.Explainer(reg)(rows)
    assert ex.values.shape == (12, D) and not ex.is_multi_output
    # output="all" on a single-output model: an outputs axis of length 1, equal to the default
    assert np.array_equal(pgexact.pgi2(reg, rows, output="all")[:, 0], pgexact.pgi2(reg, rows))
    assert pgexact.rank(reg, rows, output="all").shape == (12, 1, D)
    # a binary forest classifier keeps its default (the probability of class 1) and (n, d)
    clf = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, y == 2)
    ex = pgexact.Explainer(clf)(rows)
    assert ex.values.shape == (12, D) and ex.output_names == "class True"
    assert pgexact.pgi2(clf, rows, output="all").shape == (12, 2)  # P(False), P(True)


# ------------------------------------------------------------------ labels and positions
@pytest.fixture(scope="module")
def shifted(data):
    """Labels 1, 2, 3: the int 1 is a label (position 0) and a position (label 2)."""
    X, y, _ = data
    return RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y + 1)


def test_ambiguous_int_is_refused(shifted, data):
    _, _, rows = data
    for output in (1, 2, np.int64(1)):
        with pytest.raises(ValueError, match=r"^output: .*both a class label.*ClassLabel.*ClassPosition"):
            pgexact.pg2(shifted, rows, [0], output=output)
    with pytest.raises(ValueError, match=r"^output: .*both a class label"):
        pgexact.Explainer(shifted, output=1)
    by_position = pgexact.pg2(shifted, rows, [0], output=pgexact.ClassPosition(1))
    by_label = pgexact.pg2(shifted, rows, [0], output=pgexact.ClassLabel(2))
    assert np.array_equal(by_position, by_label)
    # 3 is a label only (position 2), 0 a position only (label 1)
    assert np.array_equal(pgexact.pg2(shifted, rows, [0], output=3),
                          pgexact.pg2(shifted, rows, [0], output=pgexact.ClassPosition(2)))
    assert np.array_equal(pgexact.pg2(shifted, rows, [0], output=0),
                          pgexact.pg2(shifted, rows, [0], output=pgexact.ClassLabel(1)))
    # the forest's own probability of the class labelled 3
    ens = pgexact.load(shifted, output=3)
    np.testing.assert_allclose(ens.predict(rows[:3]), shifted.predict_proba(rows[:3])[:, 2], rtol=1e-12)


def test_string_labels(data):
    X, y, rows = data
    names = np.array(["low", "mid", "high"])[y]
    clf = lgb.LGBMClassifier(n_estimators=5, num_leaves=5, verbose=-1, n_jobs=NTHREAD,
                             random_state=0).fit(X, names)
    assert list(clf.classes_) == ["high", "low", "mid"]
    assert np.array_equal(pgexact.pgi2(clf, rows, output="mid"), pgexact.pgi2(clf, rows, output=2))
    assert np.array_equal(pgexact.pgi2(clf, rows, output="high"), pgexact.pgi2(clf, rows, output=0))
    ex = pgexact.Explainer(clf)(rows)
    assert ex.output_names == ["class high", "class low", "class mid"]
    assert np.array_equal(ex[:, :, "mid"].values, ex.values[..., 2])
    assert np.array_equal(ex.for_output("class low").values, ex.values[..., 1])
    with pytest.raises(TypeError, match=r"^output: .*'high', 'low', 'mid'"):
        pgexact.pgi2(clf, rows, output="medium")
    with pytest.raises(ValueError, match=r"^output: .*3 outputs.*class label in \['high'"):
        pgexact.load(clf)


def test_output_errors(data):
    X, y, rows = data
    model = _fit("xgboost", X, y)
    booster = model.get_booster()
    with pytest.raises(ValueError, match=r"^output: .*out of range"):
        pgexact.pg2(model, rows, [0], output=3)
    with pytest.raises(TypeError, match=r"^output: "):
        pgexact.pg2(model, rows, [0], output=1.0)  # classes_ are ints: a float is no label
    with pytest.raises(TypeError, match=r"^output: "):
        pgexact.pg2(model, rows, [0], output=True)
    with pytest.raises(ValueError, match=r"^output: ClassLabel\(1\) needs a classifier"):
        pgexact.pg2(booster, rows, [0], output=pgexact.ClassLabel(1))
    with pytest.raises(ValueError, match=r"^output: .*not one of the class labels"):
        pgexact.pg2(model, rows, [0], output=pgexact.ClassLabel(7))
    with pytest.raises(ValueError, match=r"^output: load\(\) returns one output"):
        pgexact.load(model, output="all")
    one = pgexact.load(model, output=1)
    with pytest.raises(ValueError, match=r"^output: this TreeEnsemble holds output 1"):
        pgexact.pgi2(one, rows, output="all")
    # binary boosted model: one output (the margin of class 1), labels do not name outputs
    binary = xgb.XGBClassifier(n_estimators=3, max_depth=2, nthread=NTHREAD).fit(X, y == 2)
    with pytest.raises(ValueError, match=r"^output: .*class labels do not name its outputs"):
        pgexact.load(binary, output=pgexact.ClassLabel(True))
    assert pgexact.load(binary, output=0).output == 0  # a position, as before


def test_one_output_at_a_time_functions_refuse_all(data):
    X, y, rows = data
    model = _fit("xgboost", X, y)
    with pytest.raises(ValueError, match=r"^output: infidelity computes one output at a time; loop"):
        pgexact.infidelity(model, rows, np.zeros((12, D)), output="all")
    with pytest.raises(ValueError, match=r"^output: Monte Carlo .*one output at a time; loop"):
        pgexact.mc.pgi2(model, rows, output="all", n_samples=10, seed=0)
    with pytest.raises(ValueError, match=r"^output: .*one output at a time"):
        pgexact.openxai.pgi(model, rows, np.ones((12, D)), output="all", exact=True)
    with pytest.raises(ValueError, match=r"^output: .*one output at a time"):
        pgexact.openxai.pgi(model, rows, np.ones((12, D)), output="all")
    with pytest.raises(ValueError, match=r"^output: pgexact.dask.pgi2 computes one output at a time"):
        pgexact.dask.pgi2(model, da.from_array(rows, chunks=6), output="all")


def test_monte_carlo_takes_labels(shifted, data):
    _, _, rows = data
    a = pgexact.mc.pg2(shifted, rows, [0, 1], output=3, n_samples=200, seed=1, n_jobs=1)
    b = pgexact.mc.pg2(shifted, rows, [0, 1], output=pgexact.ClassPosition(2), n_samples=200, seed=1,
                       n_jobs=1)  # a forest sums its trees in thread order
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match=r"^output: .*both a class label"):
        pgexact.mc.pg2(shifted, rows, [0], output=1, n_samples=10, seed=0)


# ------------------------------------------------------------------ rankings and attributions
def test_attributions_per_class(data):
    X, y, rows = data
    model = _fit("xgboost", X, y)
    rng = np.random.default_rng(3)
    A = rng.normal(size=(12, D, K))  # shap's multi-output layout
    expected = np.column_stack([pgexact.pgi2(model, rows, attributions=A[..., k], output=k)
                                for k in range(K)])
    assert np.array_equal(pgexact.pgi2(model, rows, attributions=A, output="all"), expected)
    as_list = [A[..., k] for k in range(K)]  # older shap: one (n, d) array per class
    assert np.array_equal(pgexact.pgi2(model, rows, attributions=as_list, output="all"), expected)
    explanation = shap.Explanation(values=A, data=rows, base_values=np.zeros((12, K)))
    assert np.array_equal(pgexact.pgi2(model, rows, attributions=explanation, output="all"), expected)
    pgu = np.column_stack([pgexact.pgu2(model, rows, attributions=A[..., k], output=k) for k in range(K)])
    assert np.array_equal(pgexact.pgu2(model, rows, attributions=A, output="all"), pgu)
    # one (n, d) array applies to every class
    shared = pgexact.pgi2(model, rows, attributions=A[..., 0], output="all")
    for k in range(K):
        assert np.array_equal(shared[:, k], pgexact.pgi2(model, rows, attributions=A[..., 0], output=k))
    # shap's own multi-class values, straight in
    phi = shap.TreeExplainer(model).shap_values(rows)
    assert np.asarray(phi).shape == (12, D, K)
    via_shap = pgexact.pgi2(model, rows, attributions=phi, output="all")
    assert np.array_equal(via_shap[:, 1], pgexact.pgi2(model, rows, attributions=np.asarray(phi)[..., 1], output=1))
    assert np.array_equal(pgexact.metrics.shap_values(model, rows, output="all"), np.asarray(phi, dtype=float))


def test_rankings_per_class(data):
    X, y, rows = data
    model = _fit("random_forest", X, y)
    R = pgexact.rank(model, rows, output="all")
    # the greedy rankings fed back: PGI² of each class's own ranking, from its curve
    via_rankings = pgexact.pgi2(model, rows, R, output="all")
    for k in range(K):
        assert np.array_equal(via_rankings[:, k], pgexact.pgi2(model, rows, R[:, k], output=k))
    fixed = np.arange(D)[::-1]
    shared = pgexact.pgi2(model, rows, fixed, output="all")
    assert np.array_equal(shared[:, 2], pgexact.pgi2(model, rows, fixed, output=2))


def test_mismatched_shapes_name_the_argument(data):
    X, y, rows = data
    model = _fit("xgboost", X, y)
    with pytest.raises(ValueError, match=r"^attributions: expected shape \(n, d, 3\)"):
        pgexact.pgi2(model, rows, attributions=np.ones((12, D, 2)), output="all")
    with pytest.raises(ValueError, match=r"^attributions: a list of 2 arrays, but the model has 3"):
        pgexact.pgi2(model, rows, attributions=[np.ones((12, D))] * 2, output="all")
    with pytest.raises(ValueError, match=r"^ranking: expected shape \(n, 3, d\)"):
        pgexact.pgi2(model, rows, np.zeros((12, 2, D), dtype=int), output="all")
    with pytest.raises(ValueError, match=r"^ranking: "):
        pgexact.pg2_curve(model, rows, np.zeros((12, K, D), dtype=int), output="all")  # not permutations
    with pytest.raises(ValueError, match=r"^attributions: "):  # per-class attributions need "all"
        pgexact.pgi2(model, rows, attributions=np.ones((12, D, K)), output=1)
    with pytest.raises(ValueError, match=r"^ranking: give either"):
        pgexact.pgi2(model, rows, np.arange(D), attributions=np.ones((12, D, K)), output="all")


# ------------------------------------------------------------------ names, pandas, shap, plots
def test_dataframe_columns_matched_by_name(data):
    X, y, rows = data
    frame = pd.DataFrame(X, columns=FEATURE_NAMES)
    model = xgb.XGBClassifier(n_estimators=6, max_depth=3, nthread=NTHREAD, random_state=0).fit(frame, y)
    order = [3, 0, 4, 2, 1]
    shuffled = pd.DataFrame(rows, columns=FEATURE_NAMES).iloc[:, order]
    straight = pd.DataFrame(rows, columns=FEATURE_NAMES)
    pgi = pgexact.pgi2(model, shuffled, output="all")
    assert np.array_equal(pgi, pgexact.pgi2(model, straight, output="all"))
    R = pgexact.rank(model, shuffled, output="all")  # positions of the shuffled columns
    R_straight = pgexact.rank(model, straight, output="all")
    assert np.array_equal(np.asarray(order)[R], R_straight)
    for k in range(K):
        assert np.array_equal(R[:, k], pgexact.rank(model, shuffled, output=k))
    ex = pgexact.Explainer(model)(shuffled)
    assert ex.feature_names == [FEATURE_NAMES[j] for j in order]
    assert np.array_equal(ex.values, pgexact.Explainer(model)(straight).values[:, order, :])
    # attributions as a DataFrame by name apply to every class
    A = pd.DataFrame(np.random.default_rng(0).normal(size=(12, D)), columns=FEATURE_NAMES)
    assert np.array_equal(pgexact.pgi2(model, shuffled, attributions=A, output="all"),
                          pgexact.pgi2(model, straight, attributions=A, output="all"))


def test_to_shap_and_shap_plots_per_class(data):
    X, y, rows = data
    model = _fit("lightgbm", X, y)
    ex = pgexact.Explainer(model)(rows)
    s = ex.to_shap()
    assert isinstance(s, shap.Explanation)
    assert s.values.shape == (12, D, K) and np.asarray(s.base_values).shape == (12, K)
    assert np.asarray(s.data).shape == (12, D)
    for k in range(K):
        one = s[:, :, k]
        assert one.values.shape == (12, D)
        assert np.array_equal(one.values, ex.values[..., k])
        np.testing.assert_allclose(one.values.sum(axis=1), ex.pg2[:, k], rtol=1e-9, atol=1e-12)
        shap.plots.beeswarm(one, show=False)
        plt.close("all")
        shap.plots.bar(one, show=False)
        plt.close("all")
        shap.plots.waterfall(s[0, :, k], show=False)
        plt.close("all")


def test_global_importance_and_plots_per_class(data):
    X, y, rows = data
    model = _fit("random_forest", X, y)
    ex = pgexact.Explainer(model)(rows)
    table = ex.global_importance()
    assert list(table.columns) == ex.output_names and table.columns.name == "output"
    assert sorted(table.index) == sorted(ex.feature_names)
    assert np.all(np.diff(table.sum(axis=1).to_numpy()) <= 0)  # most important overall first
    for k, name in enumerate(ex.output_names):
        one = pgexact.Explainer(model, output=k)(rows).global_importance("top2")
        pd.testing.assert_series_equal(ex.global_importance("top2", output=k), one)
        geom = ex.global_importance(output=k)
        pd.testing.assert_series_equal(table[name].loc[geom.index], geom, check_names=False)
    assert np.array_equal(ex.rank_counts(output=1), ex.for_output(1).rank_counts())
    with pytest.raises(ValueError, match=r"^output: this Explanation holds 3 outputs"):
        ex.plot("bar")
    with pytest.raises(ValueError, match=r"^output: this Explanation holds 3 outputs"):
        ex.rank_counts()
    for kind in ("bar", "ranks", "beeswarm"):
        ax = ex.plot(kind, output="class 2")
        assert ax.get_title()
    ax = ex[0].plot("waterfall", output=1)
    assert "PG²" in ax.get_title()
    assert "3 outputs" in repr(ex) and "class 1" in repr(ex)


def test_explanation_slicing_keeps_every_class(data):
    X, y, rows = data
    ex = pgexact.Explainer(_fit("xgboost", X, y))(rows)
    part = ex[2:5]
    assert part.values.shape == (3, D, K) and part.base_values.shape == (3, K)
    row = ex[4]
    assert row.values.shape == (D, K) and row.base_values.shape == (K,) and row.is_single_row
    assert np.array_equal(ex[2:5, :, 1].values, ex.for_output(1)[2:5].values)
    assert np.array_equal(ex[4, :, 0].values, ex.values[4, :, 0])
    with pytest.raises(TypeError, match=r"^index: "):
        ex[:, 0, 1]
    with pytest.raises(ValueError, match=r"^output: "):
        ex.for_output(3)


def test_compare_and_estimate_every_class(data):
    X, y, rows = data
    model = _fit("xgboost", X, y)
    A = np.random.default_rng(1).normal(size=(12, D, K))
    table = pgexact.metrics.compare(model, rows, sigma_eval=(0.3,), methods={"noise": A}, output="all")
    assert table.columns.names == ["output", "method"]
    assert list(table.columns.get_level_values(0).unique()) == ["class 0", "class 1", "class 2"]
    for k in range(K):
        one = pgexact.metrics.compare(model, rows, sigma_eval=(0.3,), methods={"noise": A[..., k]}, output=k)
        assert np.array_equal(table[f"class {k}"].to_numpy(), one.to_numpy())
    with pytest.raises(ValueError, match=r"^methods\['noise'\]: expected shape \(n, d, 3\)"):
        pgexact.metrics.compare(model, rows, methods={"noise": A[..., :2]}, output="all")
    seconds = pgexact.estimate(model, rows, "rank", output="all")
    assert seconds > 0


def test_catboost_and_model_files_every_class(data, tmp_path):
    """CatBoost's multi-class export and saved model files go through the same one parse."""
    catboost = pytest.importorskip("catboost")
    X, y, rows = data
    cb = catboost.CatBoostClassifier(iterations=6, depth=3, loss_function="MultiClass", verbose=False,
                                     thread_count=NTHREAD, random_seed=0,
                                     allow_writing_files=False).fit(X, y)
    xgb_model = _fit("xgboost", X, y)
    path = tmp_path / "model.json"
    xgb_model.get_booster().save_model(str(path))
    lgb_model = _fit("lightgbm", X, y)
    text = tmp_path / "model.txt"
    lgb_model.booster_.save_model(str(text))
    for model in (cb, str(path), str(text)):
        every = pgexact.pgi2(model, rows, output="all")
        assert every.shape == (12, K)
        for k in range(K):
            assert np.array_equal(every[:, k], pgexact.pgi2(model, rows, output=k))
    # a file has no class labels: output is a position
    assert np.array_equal(pgexact.pgi2(str(path), rows, output="all"), pgexact.pgi2(xgb_model, rows, output="all"))
