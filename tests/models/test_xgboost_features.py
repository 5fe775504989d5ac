"""Further XGBoost model features: base_score links, categorical splits,
vector-leaf refusal."""

import numpy as np
import pytest
import xgboost as xgb

import pgexact
from _oracle import XGBModel, pg2_bruteforce
from conftest import NTHREAD, make_data


@pytest.mark.parametrize(
    "objective,base_score",
    [
        ("binary:logistic", 0.3),
        ("binary:logistic", None),
        ("reg:logistic", None),
        ("count:poisson", None),
        ("reg:gamma", 2.0),
        ("reg:tweedie", None),
        ("reg:absoluteerror", None),
    ],
)
def test_base_score_links(objective, base_score):
    X, y = make_data(5, n=300)
    if objective in ("binary:logistic", "reg:logistic"):
        y = (y > np.median(y)).astype(float)
    else:
        y = np.exp(0.3 * y)
    params = dict(objective=objective, max_depth=3, nthread=NTHREAD, seed=0)
    if base_score is not None:
        params["base_score"] = base_score
    b = xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=6)
    Xt = np.random.default_rng(1).normal(size=(30, 5))
    Xt[0, 2] = np.nan
    ref = b.predict(xgb.DMatrix(Xt), output_margin=True)
    got = pgexact.load(b).predict(Xt)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-5)


@pytest.fixture(scope="module")
def categorical_booster():
    rng = np.random.default_rng(3)
    X, y = make_data(6, n=400)
    X[:, 1] = rng.integers(0, 6, size=len(X))
    y = y + np.array([0.0, 2.0, -1.0, 3.0, 0.5, -2.0])[X[:, 1].astype(int)]
    d = xgb.DMatrix(X, label=y, feature_types=["q", "c", "q", "q", "q"], enable_categorical=True)
    params = dict(max_depth=3, nthread=NTHREAD, tree_method="hist", max_cat_to_onehot=1, seed=0)
    return xgb.train(params, d, num_boost_round=8)


def test_categorical_predict(categorical_booster):
    o = XGBModel(categorical_booster)
    assert any(np.any(t["split_type"] == 1) for t in o.trees)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 5))
    X[:, 1] = rng.integers(0, 6, size=40)
    X[0, 1] = np.nan
    ref = o.xgb_margin(X)
    got = pgexact.load(categorical_booster).predict(X)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-5)
    diff = got - o.leaf_sum(X)
    assert np.ptp(diff) <= 1e-12 * (1 + o.scale() + abs(diff[0]))


def test_categorical_pg2_numeric_and_categorical_features(categorical_booster):
    """Issue 18: the categorical feature is perturbed by category over the categories XGBoost's
    splits name (the default), as XGBoost's own routing says on every category."""
    o = XGBModel(categorical_booster)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(5, 5))
    X[:, 1] = rng.integers(0, 6, size=5)
    got = pgexact.pg2(categorical_booster, X, [0, 2])
    ref = pg2_bruteforce(o, X, (0, 2), 0.3)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-14 * (1 + o.scale()) ** 2)
    named = pgexact.load(categorical_booster).split_categories(1)
    assert named.size >= 2
    cats = {1: (0.3, named, np.full(named.size, 1.0 / named.size))}
    for S in ([1], [0, 1]):
        got = pgexact.pg2(categorical_booster, X, S)
        ref = pg2_bruteforce(o, X, S, 0.3, categorical=cats)
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-14 * (1 + o.scale()) ** 2)
    with pytest.raises(ValueError, match=r"^noise\[1\]:"):
        pgexact.pg2(categorical_booster, X, [1], noise=["normal"] * 5)


def test_vector_leaf_refused():
    X, y = make_data(7, n=200)
    Y = np.stack([y, -y], axis=1)
    b = xgb.train(
        dict(tree_method="hist", multi_strategy="multi_output_tree", max_depth=2, nthread=NTHREAD),
        xgb.DMatrix(X, label=Y), num_boost_round=2,
    )
    with pytest.raises((ValueError, NotImplementedError), match="(?i)vector|multi"):
        pgexact.load(b, output=0)


def test_sklearn_wrapper_uses_best_iteration():
    X, y = make_data(8, n=400)
    est = xgb.XGBRegressor(n_estimators=60, max_depth=3, learning_rate=0.5, nthread=NTHREAD,
                           early_stopping_rounds=3, random_state=0)
    est.fit(X[:300], y[:300], eval_set=[(X[300:], y[300:])], verbose=False)
    best = est.best_iteration
    assert best + 1 < est.get_booster().num_boosted_rounds()  # early stopping kicked in
    Xt = np.random.default_rng(2).normal(size=(20, 5))
    m = pgexact.load(est)
    assert m.n_trees == best + 1
    np.testing.assert_allclose(m.predict(Xt), est.predict(Xt, output_margin=True), rtol=1e-6, atol=1e-5)


def test_xgbrf_classifier_margin():
    X, y = make_data(9, n=300)
    lab = (y > np.median(y)).astype(int)
    est = xgb.XGBRFClassifier(n_estimators=5, max_depth=3, nthread=NTHREAD, random_state=0).fit(X, lab)
    Xt = np.random.default_rng(3).normal(size=(20, 5))
    Xt[0, 0] = np.nan
    np.testing.assert_allclose(pgexact.load(est).predict(Xt), est.predict(Xt, output_margin=True),
                               rtol=1e-6, atol=1e-5)
    o = XGBModel(est.get_booster())
    np.testing.assert_allclose(pgexact.pg2(est, Xt[:4], [0, 3]), pg2_bruteforce(o, Xt[:4], (0, 3), 0.3),
                               rtol=1e-9, atol=1e-14 * (1 + o.scale()) ** 2)


@pytest.mark.parametrize("fmt", ["4E-1", "[4E-1]", "0.4", "4.000000E-01"])
def test_base_score_string_formats_in_files(tmp_path, fmt):
    import json

    X, y = make_data(10, n=300)
    lab = (y > np.median(y)).astype(float)
    b = xgb.train(dict(objective="binary:logistic", max_depth=3, nthread=NTHREAD, seed=0),
                  xgb.DMatrix(X, label=lab), num_boost_round=5)
    raw = json.loads(bytes(b.save_raw("json")))
    raw["learner"]["learner_model_param"]["base_score"] = fmt
    path = tmp_path / "m.json"
    path.write_text(json.dumps(raw))
    ref_booster = xgb.Booster(model_file=str(path))
    Xt = np.random.default_rng(4).normal(size=(10, 5))
    ref = ref_booster.predict(xgb.DMatrix(Xt), output_margin=True)
    np.testing.assert_allclose(pgexact.load(path).predict(Xt), ref, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(pgexact.load(ref_booster).predict(Xt), ref, rtol=1e-6, atol=1e-5)
