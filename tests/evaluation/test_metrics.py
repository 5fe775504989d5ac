"""pgexact.metrics: nmae, global scores and conciseness by hand, the SHAP ranking, compare."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import shap
import xgboost as xgb
from sklearn.ensemble import RandomForestClassifier

import pgexact
from pgexact import metrics
from conftest import NTHREAD

D = 4


# ---------------------------------------------------------------------------------- nmae
def test_nmae_hand_values():
    assert metrics.nmae([1.0, 2.0, 3.0], [1.0, 2.0, 4.0]) == pytest.approx(1.0 / 6.0)
    assert metrics.nmae([-2.0, 2.0], [0.0, 0.0]) == pytest.approx(1.0)
    assert metrics.nmae(np.array([[1.0, -1.0], [2.0, 4.0]]), np.array([[1.5, -1.0], [2.0, 3.0]])) \
        == pytest.approx(1.5 / 8.0)
    assert metrics.nmae([0.0, 0.0], [0.0, 0.0]) == 0.0
    assert metrics.nmae([0.0], [1.0]) == math.inf
    assert isinstance(metrics.nmae([1.0], [2.0]), float)


def test_nmae_bad_input():
    with pytest.raises(ValueError, match="approx"):
        metrics.nmae([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="exact"):
        metrics.nmae([1.0, np.nan], [1.0, 2.0])


# -------------------------------------------------------------------- scores, conciseness
RANKINGS = np.array([[0, 1, 2], [1, 0, 2]])


def test_global_scores_by_hand():
    np.testing.assert_allclose(metrics.global_scores(RANKINGS, "geom"), [0.75, 0.75, 0.25])
    np.testing.assert_allclose(metrics.global_scores(RANKINGS, "top1"), [0.5, 0.5, 0.0])
    np.testing.assert_allclose(metrics.global_scores(RANKINGS, "top2"), [1.0, 1.0, 0.0])
    np.testing.assert_allclose(metrics.global_scores(RANKINGS, "top3"), [1.0, 1.0, 1.0])
    # one row given as a vector
    np.testing.assert_allclose(metrics.global_scores([2, 0, 1], "geom"), [0.25, 0.125, 0.5])


def test_conciseness_by_hand():
    # geom: R = (3/4, 3/4, 1/4) -> p = (3/7, 3/7, 1/7)
    want = 2 * (3 / 7) * math.log2(7 / 3) + (1 / 7) * math.log2(7)
    assert metrics.conciseness(RANKINGS) == pytest.approx(want, rel=1e-12)
    assert metrics.conciseness(RANKINGS, "top1") == pytest.approx(1.0)  # two features, half each
    assert metrics.conciseness(RANKINGS, "top2") == pytest.approx(1.0)
    assert metrics.conciseness(RANKINGS, "top3") == pytest.approx(math.log2(3))
    same_top = np.array([[2, 0, 1], [2, 1, 0], [2, 0, 1]])
    assert metrics.conciseness(same_top, "top1") == 0.0  # one feature takes everything
    # every permutation once: all features equal, log2(d) bits
    perms = np.array(list(itertools.permutations(range(4))))
    for scheme in ("geom", "top1", "top2", "top3"):
        assert metrics.conciseness(perms, scheme) == pytest.approx(2.0)
    # one row, geom: p proportional to (1/2, 1/4, 1/8)
    p = np.array([4, 2, 1]) / 7
    assert metrics.conciseness([0, 1, 2]) == pytest.approx(float(-(p * np.log2(p)).sum()))


def test_scores_bad_input():
    with pytest.raises(ValueError, match="rankings"):
        metrics.global_scores([[0, 0, 1]], "geom")
    with pytest.raises(ValueError, match="scheme"):
        metrics.global_scores(RANKINGS, "top4")
    with pytest.raises(ValueError, match="scheme"):
        metrics.conciseness(RANKINGS, "gain")
    with pytest.raises(ValueError, match="scheme"):
        metrics.conciseness(RANKINGS, "median")
    assert math.isnan(metrics.conciseness(np.zeros((0, 3), dtype=np.int64), "top1"))


# --------------------------------------------------------------------- models for the rest
@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, D))
    y = 2.0 * X[:, 0] + X[:, 1] * X[:, 2]
    reg = xgb.XGBRegressor(n_estimators=10, max_depth=3, nthread=NTHREAD, random_state=0).fit(X, y)
    clf = RandomForestClassifier(n_estimators=5, max_depth=4, n_jobs=NTHREAD, random_state=0).fit(X, y > 0)
    return reg, clf, rng.normal(size=(12, D))


def test_explainer_uses_the_shared_global_scores(fitted):
    reg, _, rows = fitted
    ex = pgexact.Explainer(reg, sigma=0.3)(rows)
    for scheme in ("geom", "top1", "top2"):
        s = ex.global_importance(scheme)
        np.testing.assert_allclose(s.reindex(ex.feature_names).to_numpy(),
                                   metrics.global_scores(ex.ranking, scheme))
    np.testing.assert_array_equal(ex.rank_counts(), metrics.rank_counts(ex.ranking))
    assert metrics.conciseness(ex) == metrics.conciseness(ex.ranking)  # an Explanation is accepted


def test_shap_ranking_matches_shap(fitted):
    reg, clf, rows = fitted
    R = metrics.shap_ranking(reg, rows)
    assert R.dtype == np.int64 and R.shape == rows.shape
    phi = shap.TreeExplainer(reg).shap_values(rows)
    np.testing.assert_array_equal(R, np.argsort(-np.abs(phi), axis=1, kind="stable"))
    # a forest classifier: the class-1 probability, pgexact.load's default column
    Rc = metrics.shap_ranking(clf, rows)
    phic = np.asarray(shap.TreeExplainer(clf).shap_values(rows))[..., 1]
    np.testing.assert_array_equal(Rc, np.argsort(-np.abs(phic), axis=1, kind="stable"))


def test_shap_ranking_ties_go_to_the_lower_index():
    X = np.random.default_rng(0).normal(size=(200, D))
    m = xgb.XGBRegressor(n_estimators=3, max_depth=2, nthread=NTHREAD).fit(X, X[:, 2])
    R = metrics.shap_ranking(m, X[:5])
    assert np.all(R[:, 0] == 2)
    np.testing.assert_array_equal(R[:, 1:], np.tile([0, 1, 3], (5, 1)))  # phi = 0 for all three


def test_shap_ranking_needs_the_library_model(fitted, tmp_path):
    reg, _, rows = fitted
    with pytest.raises(TypeError, match="model"):
        metrics.shap_ranking(pgexact.load(reg), rows)
    path = tmp_path / "m.json"
    reg.save_model(str(path))
    with pytest.raises(TypeError, match="model"):
        metrics.shap_ranking(str(path), rows)
    with pytest.raises(TypeError, match="model"):
        metrics.shap_ranking(path, rows)


def test_compare_structure(fitted):
    reg, _, rows = fitted
    mine = np.random.default_rng(9).normal(size=rows.shape)
    table = metrics.compare(reg, rows, sigma_rank=0.3, sigma_eval=(0.1, 0.5), methods={"mine": mine})
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == ["greedy", "shap", "mine"]
    assert list(table.index) == [0.1, 0.5] and table.index.name == "sigma_eval"
    assert np.all(np.isfinite(table.to_numpy())) and np.all(table.to_numpy() >= 0)
    # the cells are mean exact PGI² of each ranking
    greedy = pgexact.rank(reg, rows, sigma=0.3)
    assert table.loc[0.5, "greedy"] == pytest.approx(pgexact.pgi2(reg, rows, greedy, sigma=0.5).mean(), rel=1e-12)
    assert table.loc[0.1, "mine"] == pytest.approx(pgexact.pgi2(reg, rows, attributions=mine, sigma=0.1).mean(),
                                                   rel=1e-12)
    assert table.loc[0.1, "shap"] == pytest.approx(
        pgexact.pgi2(reg, rows, metrics.shap_ranking(reg, rows), sigma=0.1).mean(), rel=1e-12)
    # default noise levels, no extra methods
    assert metrics.compare(reg, rows[:3]).shape == (4, 2)


def test_compare_without_a_library_model_drops_shap(fitted):
    reg, _, rows = fitted
    with pytest.warns(UserWarning, match="shap"):
        table = metrics.compare(pgexact.load(reg), rows[:3], sigma_eval=0.3)
    assert list(table.columns) == ["greedy"] and table.shape == (1, 1)


def test_compare_bad_input(fitted):
    reg, _, rows = fitted
    with pytest.raises(ValueError, match="methods"):
        metrics.compare(reg, rows, methods={"greedy": np.ones(rows.shape)})
    with pytest.raises(ValueError, match="attributions"):
        metrics.compare(reg, rows, methods={"mine": np.ones((rows.shape[0], D + 1))})
    with pytest.raises(ValueError, match="sigma_eval"):
        metrics.compare(reg, rows, sigma_eval=(0.1, -1.0))
    with pytest.raises(TypeError, match="methods"):
        metrics.compare(reg, rows, methods=[np.ones(rows.shape)])
