"""TreeEnsemble.predict against XGBoost's own margin (docs/supported_models.md)."""

import numpy as np
import pytest

import pgexact
from _oracle import round_boundary
from conftest import CASE_NAMES

EPS32 = float(np.finfo(np.float32).eps)


def predict_rows(case, max_splits=400):
    """Random rows, NaN rows, and for each split: x = t, one float32 ulp either side,
    just either side of the float32 rounding boundary, and NaN."""
    rng = np.random.default_rng(123)
    d = case.d
    rows = [case.X, rng.normal(size=(40, d))]
    nan_rows = rng.normal(size=(10, d))
    nan_rows[rng.random(nan_rows.shape) < 0.4] = np.nan
    nan_rows[0, :] = np.nan
    rows.append(nan_rows)
    splits = case.oracle.all_splits()[:max_splits]
    base = rng.normal(size=(len(splits), d))
    for (f, t), x in zip(splits, base):
        b = float(round_boundary(t))
        for v in (
            float(t),
            float(np.nextafter(t, np.float32(-np.inf))),
            float(np.nextafter(t, np.float32(np.inf))),
            np.nextafter(b, -np.inf),  # float64: rounds to the float32 below t -> left
            np.nextafter(b, np.inf),  # float64: rounds to t -> right
            np.nan,
        ):
            r = x.copy()
            r[f] = v
            rows.append(r[None, :])
    return np.vstack(rows)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_predict_equals_xgboost_margin(cases, name):
    c = cases(name)
    m = pgexact.load(c.model, output=c.output)
    X = predict_rows(c)
    got = m.predict(X)
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.float64
    assert got.shape == (X.shape[0],)
    ref = c.oracle.xgb_margin(X, c.output)
    # XGBoost accumulates in float32: allow a few ulps per tree of the running sum.
    atol = 4 * c.oracle.n_trees * EPS32 * (1 + np.max(np.abs(ref)) + c.oracle.scale(c.output))
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=atol)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_predict_routing_is_exact(cases, name):
    """In float64, predict - (leaf sum by XGBoost's own routing) is one constant (the base)."""
    c = cases(name)
    m = pgexact.load(c.model, output=c.output)
    X = predict_rows(c)
    diff = m.predict(X) - c.oracle.leaf_sum(X, c.output)
    scale = 1 + c.oracle.scale(c.output) + abs(float(diff[0]))
    assert np.ptp(diff) <= 1e-12 * scale, (
        f"routing differs from XGBoost on rows {np.flatnonzero(np.abs(diff - np.median(diff)) > 1e-12 * scale)[:10]}"
    )


@pytest.mark.parametrize("name", [n for n in CASE_NAMES if not n.startswith("multi")])
def test_structure_counts(cases, name):
    c = cases(name)
    m = pgexact.load(c.model)
    assert m.n_trees == c.oracle.n_trees
    assert m.n_nodes == c.oracle.n_nodes
    assert m.n_leaves == c.oracle.n_leaves
    assert m.n_features == c.d


@pytest.mark.parametrize("k", [0, 1, 2])
def test_multiclass_output_k(cases, k):
    c = cases(f"multi{k}")
    m = pgexact.load(c.model, output=k)
    assert m.n_features == c.d
    X = predict_rows(c, max_splits=50)
    full = c.oracle.booster.predict(c.oracle.dmatrix(X), output_margin=True)
    assert full.shape == (X.shape[0], 3)
    np.testing.assert_allclose(m.predict(X), full[:, k], rtol=1e-6, atol=1e-5)


def test_load_from_booster_and_sklearn_and_paths_agree(cases, model_files):
    c = cases("reg")
    X = predict_rows(c, max_splits=80)
    ref = pgexact.load(c.model).predict(X)
    for src in (c.booster, str(model_files["json"]), model_files["json"],
                str(model_files["ubj"]), model_files["ubj"]):
        np.testing.assert_array_equal(pgexact.load(src).predict(X), ref)


def test_load_treeensemble_passthrough(cases):
    c = cases("dart")
    m = pgexact.load(c.model)
    m2 = pgexact.load(m)
    X = c.X
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    np.testing.assert_array_equal(
        pgexact.pg2(m, X, [0, 1]), pgexact.pg2(c.model, X, [0, 1])
    )


def test_binary_classifier_defaults_to_margin(cases):
    c = cases("binary")
    X = c.X
    m = pgexact.load(c.model)
    margin = c.model.predict(X, output_margin=True)
    np.testing.assert_allclose(m.predict(X), margin, rtol=1e-6, atol=1e-5)
    proba = c.model.predict_proba(X)[:, 1]
    assert not np.allclose(m.predict(X), proba, atol=1e-3)


def test_predict_accepts_float32_input(cases):
    c = cases("reg")
    X = predict_rows(c, max_splits=80)
    X32 = X.astype(np.float32)
    m = pgexact.load(c.model)
    np.testing.assert_array_equal(m.predict(X32), m.predict(X32.astype(np.float64)))


@pytest.mark.parametrize("name", ["reg", "base_score", "binary", "multi0", "lossguide", "dart", "nan", "rf", "deep"])
def test_models_in_memory_are_read_from_ubjson_as_from_their_json(cases, name, monkeypatch):
    """A Booster or wrapper in memory is saved as UBJSON (about 9x faster for XGBoost to write
    and no decimal text to parse): every output's arena is the one its JSON gives, byte for byte."""
    from pgexact._models._xgboost import booster_and_iterations, xgboost_outputs

    c = cases(name)
    booster, n_iterations = booster_and_iterations(c.model)
    from_json = xgboost_outputs(bytes(booster.save_raw(raw_format="json")), n_iterations, "json")
    formats = []
    save_raw = type(booster).save_raw
    monkeypatch.setattr(type(booster), "save_raw",
                        lambda self, raw_format="ubj": formats.append(raw_format) or save_raw(self, raw_format))
    for k in range(from_json.n_outputs):
        loaded = pgexact.load(c.model, output=k) if from_json.n_outputs > 1 else pgexact.load(c.model)
        assert loaded._arena.to_bytes() == from_json.select(k)._arena.to_bytes()
    assert formats and set(formats) == {"ubj"}


def test_a_model_splitting_by_category_is_read_from_json(monkeypatch):
    """Its pandas categories (cats.enc) are read from the JSON text, so it stays on JSON."""
    import pandas as pd
    import xgboost as xgb

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=300), "b": pd.Categorical(rng.integers(0, 4, 300))})
    model = xgb.XGBRegressor(n_estimators=5, max_depth=3, enable_categorical=True, tree_method="hist",
                             nthread=1).fit(frame, frame["a"] + frame["b"].cat.codes)
    formats = []
    save_raw = xgb.Booster.save_raw
    monkeypatch.setattr(xgb.Booster, "save_raw",
                        lambda self, raw_format="ubj": formats.append(raw_format) or save_raw(self, raw_format))
    ens = pgexact.load(model)
    assert set(formats) == {"json"}
    assert ens._meta.get("xgboost_categories")
