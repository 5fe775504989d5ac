"""CatBoost: TreeEnsemble.predict against CatBoost's own RawFormulaVal and leaf indexes, exact PG²
against a cell brute force and a large-sample Monte Carlo through CatBoost's own predict.

The oracles read CatBoost's own JSON export with the json module (nothing of pgexact's parser)
and route with CatBoost itself (``predict``, ``calc_leaf_indexes``). CatBoost casts inputs to
float32 and sends ``float32(x) > border`` to the "true" side, so a border t switches at the
midpoint between t and the next float32 (``_cells.float32_le_boundary``)."""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile

import numpy as np
import pytest

catboost = pytest.importorskip("catboost")
pd = pytest.importorskip("pandas")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pgexact  # noqa: E402
from pgexact import mc  # noqa: E402
from _cells import FAMILIES, edge_rows, float32_le_boundary, pg2_bruteforce  # noqa: E402

D = 4
SIGMA = np.array([0.3, 0.5, 0.2, 0.4])
RTOL = 1e-9
COMMON = dict(thread_count=1, allow_writing_files=False, verbose=False, random_seed=0)


def make_data(seed=0, n=300, nan=True, classes=0):
    """Feature 0 has NaN (when ``nan``), the others are dense."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * X[:, 3]
    if nan:
        X[rng.random(n) < 0.15, 0] = np.nan
        y = y + np.isnan(X[:, 0]) * 1.5
    if classes:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y


class Case:
    def __init__(self, name, model, output=None):
        self.name = name
        self.model = model
        self.output = output
        self.doc = json.loads(_json_bytes(model))
        self.floats = self.doc["features_info"]["float_features"]

    def raw(self, A):
        r = np.asarray(self.model.predict(A, prediction_type="RawFormulaVal", thread_count=1),
                       dtype=np.float64)
        return r[:, self.output or 0] if r.ndim == 2 else r

    def leaf_sum(self, A):
        """scale * (sum of the leaves CatBoost's calc_leaf_indexes reports) + bias."""
        leaves = self.model.calc_leaf_indexes(catboost.Pool(A), thread_count=1)
        scale, bias = self.doc["scale_and_bias"]
        dim = len(bias)
        k = self.output or 0
        total = np.zeros(len(A))
        for t, tree in enumerate(self.doc["oblivious_trees"]):
            values = np.asarray(tree["leaf_values"], dtype=np.float64)[k::dim]
            total = total + values[leaves[:, t]]
        return scale * total + bias[k]

    def splits(self):
        """(input column, border as float64) of every split."""
        out = set()
        for tree in self.doc.get("oblivious_trees", []):
            for s in tree["splits"]:
                f = self.floats[s["float_feature_index"]]
                out.add((f["flat_feature_index"], float(np.float32(s["border"]))))
        return sorted(out)

    def bounds(self):
        out = {}
        for j, t in self.splits():
            out.setdefault(j, []).append(float(float32_le_boundary(t)))
        return {j: np.unique(v) for j, v in out.items()}

    def pg_model(self):
        return self.model if self.output is None else pgexact.load(self.model, output=self.output)


def _json_bytes(model):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.json")
        model.save_model(path, format="json")
        with open(path, "rb") as fh:
            return fh.read()


@functools.lru_cache(maxsize=None)
def build(name) -> Case:
    X, y = make_data(nan=name != "forbidden")
    if name in ("reg", "max", "forbidden"):
        nan_mode = {"reg": "Min", "max": "Max", "forbidden": "Forbidden"}[name]
        m = catboost.CatBoostRegressor(iterations=8, depth=3, nan_mode=nan_mode, **COMMON)
        return Case(name, m.fit(X, y))
    if name == "scaled":
        m = catboost.CatBoostRegressor(iterations=6, depth=2, **COMMON).fit(X, y)
        m.set_scale_and_bias(0.7, -1.25)
        return Case(name, m)
    if name == "binary":
        X, y = make_data(classes=2)
        return Case(name, catboost.CatBoostClassifier(iterations=8, depth=3, **COMMON).fit(X, y))
    if name.startswith("multi"):
        X, y = make_data(classes=3)
        m = catboost.CatBoostClassifier(iterations=5, depth=3, **COMMON).fit(X, y)
        return Case(name, m, output=int(name[-1]))
    raise KeyError(name)


NAMES = ["reg", "max", "forbidden", "scaled", "binary", "multi0", "multi2"]


# doubles either side of where float32 rounding overflows to inf (nan_mode Max puts a border
# at FLT_MAX), and the largest finite values
OVERFLOW = float.fromhex("0x1.ffffffp127")
EXTREMES = [OVERFLOW, float(np.nextafter(OVERFLOW, 0)), float(np.nextafter(OVERFLOW, np.inf)), -OVERFLOW,
            float(np.finfo(np.float64).max), -float(np.finfo(np.float64).max)]


def probe_rows(c: Case):
    X, _ = make_data(seed=3, n=30)
    rows = edge_rows(X, c.splits(), float32=True, seed=1)
    rows = rows[~np.isinf(rows).any(axis=1)]  # pgexact refuses infinite inputs
    extreme = np.repeat(X[:1], len(EXTREMES) * D, axis=0)
    for j in range(D):
        extreme[j * len(EXTREMES):(j + 1) * len(EXTREMES), j] = EXTREMES
    return np.vstack([rows, extreme])


def pg_rows(seed=5, n=8):
    X, _ = make_data(seed=seed, n=n)
    X[1, 0] = np.nan
    X[3, :2] = [np.nan, 0.0]
    return X


# ------------------------------------------------------------------------------ predict
@pytest.mark.parametrize("name", NAMES)
def test_predict_equals_raw_formula_val(name):
    c = build(name)
    m = pgexact.load(c.model, output=c.output)
    X = probe_rows(c)
    got = m.predict(X)
    assert got.dtype == np.float64 and got.shape == (len(X),)
    if name == "scaled":
        # CatBoost multiplies the sum of the leaves by `scale`, pgexact each leaf
        np.testing.assert_allclose(got, c.raw(X), rtol=1e-14, atol=1e-14)
    else:
        np.testing.assert_array_equal(got, c.raw(X))  # same double additions in the same order


@pytest.mark.parametrize("name", NAMES)
def test_routing_is_exact(name):
    """pgexact's leaves are the leaves CatBoost's calc_leaf_indexes reports, at every border
    value, one float32 ulp either side, both sides of the float32 rounding boundary, NaN."""
    c = build(name)
    m = pgexact.load(c.model, output=c.output)
    X = probe_rows(c)
    np.testing.assert_allclose(m.predict(X), c.leaf_sum(X), rtol=1e-15, atol=1e-15)


def test_value_at_a_border_goes_to_the_false_side():
    """float32(x) == border is not > border: x = t routes with x = t - 1 ulp, t + 1 ulp does not."""
    c = build("reg")
    m = pgexact.load(c.model)
    base = make_data(seed=4, n=1, nan=False)[0][0]
    seen_change = False
    for j, t in c.splits():
        t32 = np.float32(t)
        rows = np.repeat(base[None, :], 3, axis=0)
        rows[:, j] = [float(np.nextafter(t32, np.float32(-np.inf))), t, float(np.nextafter(t32, np.float32(np.inf)))]
        ref = c.raw(rows)
        np.testing.assert_array_equal(m.predict(rows), ref)
        assert ref[0] == ref[1]
        seen_change = seen_change or ref[1] != ref[2]
    assert seen_change


@pytest.mark.parametrize("name", ["reg", "max", "forbidden"])
def test_nan_follows_nan_value_treatment(name):
    c = build(name)
    treatments = {f["nan_value_treatment"] for f in c.floats}
    expected = {"reg": "AsFalse", "max": "AsTrue", "forbidden": "AsIs"}[name]
    assert expected in treatments
    m = pgexact.load(c.model)
    X = pg_rows()
    for j in range(D):
        A = X.copy()
        A[:, j] = np.nan
        np.testing.assert_array_equal(m.predict(A), c.raw(A))
    # Min and Max send NaN to different sides
    if name == "max":
        A = X.copy()
        A[:, 0] = np.nan
        reg = build("reg")
        assert not np.array_equal(pgexact.load(reg.model).predict(A), m.predict(A))


def test_binary_default_is_the_log_odds():
    c = build("binary")
    m = pgexact.load(c.model)
    assert m.n_outputs == 1 and m.output == 0
    X = probe_rows(c)
    p = c.model.predict_proba(X)[:, 1]
    np.testing.assert_allclose(1.0 / (1.0 + np.exp(-m.predict(X))), p, rtol=1e-12)


def test_multiclass_requires_output():
    c = build("multi0")
    with pytest.raises(ValueError, match=r"output.*MultiClass.*3 outputs.*0\.\.2"):
        pgexact.load(c.model)
    with pytest.raises(ValueError, match="output"):
        pgexact.load(c.model, output=3)
    m = pgexact.load(c.model, output=1)
    assert m.n_outputs == 3 and m.n_trees == 5


def test_non_symmetric_trees():
    X, y = make_data(classes=3)
    for policy in ("Depthwise", "Lossguide"):
        model = catboost.CatBoostClassifier(iterations=4, depth=3, grow_policy=policy, **COMMON).fit(X, y)
        Xp = probe_rows(build("reg"))
        ref = model.predict(Xp, prediction_type="RawFormulaVal")
        for k in range(3):
            ens = pgexact.load(model, output=k)
            np.testing.assert_array_equal(ens.predict(Xp), ref[:, k])
        got = pgexact.pg2(pgexact.load(model, output=2), pg_rows(), [0, 1])
        bounds = {}
        for t in json.loads(_json_bytes(model))["trees"]:
            stack = [t]
            while stack:
                node = stack.pop()
                if "split" in node:
                    s = node["split"]
                    bounds.setdefault(s["float_feature_index"], []).append(
                        float(float32_le_boundary(float(np.float32(s["border"])))))
                    stack += [node["left"], node["right"]]
        f = lambda A: model.predict(A, prediction_type="RawFormulaVal")[:, 2]  # noqa: E731
        np.testing.assert_allclose(got, pg2_bruteforce(f, pg_rows(), [0, 1], 0.3, "normal", bounds),
                                   rtol=RTOL, atol=1e-15)


def test_every_tree_is_used_like_catboost_predict():
    """use_best_model=True cuts the model at the best iteration (CatBoost does it); without it
    CatBoost's predict uses every tree, and so does pgexact."""
    X, y = make_data()
    Xv, yv = make_data(seed=9, n=100)
    cut = catboost.CatBoostRegressor(iterations=60, depth=3, learning_rate=0.5, use_best_model=True,
                                     od_type="Iter", od_wait=3, **COMMON).fit(X, y, eval_set=(Xv, yv))
    assert cut.tree_count_ == cut.get_best_iteration() + 1 < 60
    full = catboost.CatBoostRegressor(iterations=12, depth=3, learning_rate=0.5, use_best_model=False,
                                      **COMMON).fit(X, y, eval_set=(Xv, yv))
    Xp = probe_rows(build("reg"))
    for model in (cut, full):
        ens = pgexact.load(model)
        assert ens.n_trees == model.tree_count_
        np.testing.assert_array_equal(ens.predict(Xp), model.predict(Xp, prediction_type="RawFormulaVal"))


@pytest.mark.parametrize("kind", ["ranker", "poisson", "multi_rmse"])
def test_other_losses_and_the_ranker(kind):
    """f is RawFormulaVal for any loss (log-scale for Poisson); CatBoostRanker's predict takes no
    prediction_type, so its raw value is read through the base class, by pgexact and by mc."""
    X, y = make_data()
    y = np.abs(y)
    if kind == "ranker":
        m = catboost.CatBoostRanker(iterations=5, depth=3, **COMMON).fit(X, np.round(y), group_id=np.repeat(np.arange(30), 10))
    elif kind == "poisson":
        m = catboost.CatBoostRegressor(iterations=5, depth=3, loss_function="Poisson", **COMMON).fit(X, np.round(y))
    else:
        m = catboost.CatBoostRegressor(iterations=5, depth=3, loss_function="MultiRMSE", **COMMON).fit(X, np.c_[y, -y])
    Xp = probe_rows(build("reg"))
    ref = np.asarray(catboost.CatBoost.predict(m, Xp, prediction_type="RawFormulaVal")).reshape(len(Xp), -1)
    output = 1 if kind == "multi_rmse" else None
    ens = pgexact.load(m, output=output)
    np.testing.assert_array_equal(ens.predict(Xp), ref[:, output or 0])
    rows = pg_rows()[:2]
    exact = pgexact.pg2(ens, rows, [0, 1])
    est, se = mc.pg2(m, rows, [0, 1], output=output, n_samples=20_000, seed=3, return_se=True, n_jobs=1)
    assert np.all(np.abs(est - exact) <= 5 * se + 1e-9)


# ------------------------------------------------------------------------------ files
def test_json_and_cbm_files(tmp_path):
    c = build("multi2")
    X = probe_rows(c)
    c.model.save_model(str(tmp_path / "m.json"), format="json")
    c.model.save_model(str(tmp_path / "m.cbm"))
    (tmp_path / "model.bin").write_bytes((tmp_path / "m.cbm").read_bytes())  # sniffed by its magic
    for name in ("m.json", "m.cbm", "model.bin"):
        ens = pgexact.load(str(tmp_path / name), output=2)
        assert ens.source.startswith("CatBoost file")
        np.testing.assert_array_equal(ens.predict(X), c.raw(X))
    with pytest.raises(ValueError, match="output"):
        pgexact.load(str(tmp_path / "m.json"))


def test_json_file_needs_no_catboost_and_cbm_says_what_to_install(tmp_path, monkeypatch):
    c = build("reg")
    c.model.save_model(str(tmp_path / "m.json"), format="json")
    c.model.save_model(str(tmp_path / "m.cbm"))
    X = probe_rows(c)
    monkeypatch.setitem(sys.modules, "catboost", None)  # import catboost now fails
    np.testing.assert_array_equal(pgexact.load(str(tmp_path / "m.json")).predict(X), c.raw(X))
    with pytest.raises(ImportError, match=r"pip install 'pgexact\[catboost\]'"):
        pgexact.load(str(tmp_path / "m.cbm"))


def test_corrupt_cbm_is_a_value_error_not_a_crash(tmp_path):
    """CatBoost's own reader segfaults on some corrupted .cbm files; it runs in a child process."""
    c = build("reg")
    c.model.save_model(str(tmp_path / "m.cbm"))
    raw = np.frombuffer((tmp_path / "m.cbm").read_bytes(), dtype=np.uint8)
    rng = np.random.default_rng(0)
    for k in range(3):
        bad = raw.copy()
        bad[rng.integers(4, len(bad), 40)] = rng.integers(0, 256, 40)
        path = tmp_path / f"bad{k}.cbm"
        path.write_bytes(bad[: len(bad) - 7 * k].tobytes())
        try:
            pgexact.load(str(path))
        except ValueError as exc:
            assert "bad" in str(exc)
    (tmp_path / "short.cbm").write_bytes(b"CBM1\x00\x00")
    with pytest.raises(ValueError, match="not a readable CatBoost model"):
        pgexact.load(str(tmp_path / "short.cbm"))


# ------------------------------------------------------------------------------ names, refusals
def test_feature_names_and_dataframe():
    X, y = make_data(nan=False)
    names = ["a", "b", "c", "d"]
    df = pd.DataFrame(X, columns=names)
    named = catboost.CatBoostRegressor(iterations=5, depth=2, **COMMON).fit(df, y)
    ens = pgexact.load(named)
    assert ens.feature_names == names
    shuffled = df[["c", "a", "d", "b"]]
    np.testing.assert_array_equal(ens.predict(shuffled), named.predict(df, prediction_type="RawFormulaVal"))
    np.testing.assert_array_equal(pgexact.pg2(named, shuffled.iloc[:4], ["b"]),
                                  pgexact.pg2(named, df.iloc[:4], ["b"]))
    plain = catboost.CatBoostRegressor(iterations=5, depth=2, **COMMON).fit(X, y)
    assert pgexact.load(plain).feature_names is None  # CatBoost's "0", "1", ... are not names
    assert mc.predictor(plain).feature_names is None
    assert mc.predictor(named).feature_names == names


def _categorical_frame(n=300):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=n), "colour": rng.choice(["red", "green"], n),
                       "town": rng.choice(list("pqrstuvw"), n)})
    y = df["a"] + (df["colour"] == "red") + 2.0 * (df["town"] == "p")
    return df, y


def test_one_hot_categorical_splits_are_refused():
    df, y = _categorical_frame()
    m = catboost.CatBoostRegressor(iterations=4, depth=2, one_hot_max_size=10, cat_features=["colour", "town"],
                                   **COMMON).fit(df, y)
    with pytest.raises(ValueError, match=r"categorical feature '(colour|town)' \(column \d\) by one-hot"):
        pgexact.load(m)


def test_ctr_splits_are_refused_naming_the_feature(tmp_path):
    df, y = _categorical_frame()
    m = catboost.CatBoostRegressor(iterations=4, depth=2, one_hot_max_size=2, cat_features=["town"],
                                   **COMMON).fit(df[["a", "town"]], y)
    with pytest.raises(ValueError, match=r"CTR features computed from categorical feature\(s\) 'town' "
                                         r"\(column 1\): a CTR is a target statistic"):
        pgexact.load(m)
    m.save_model(str(tmp_path / "ctr.json"), format="json", pool=catboost.Pool(df[["a", "town"]], y,
                                                                                cat_features=["town"]))
    with pytest.raises(ValueError, match=r"ctr\.json.*CTR.*'town'"):
        pgexact.load(str(tmp_path / "ctr.json"))


def test_declared_unused_categorical_feature_is_refused():
    df, _ = _categorical_frame()
    y = df["a"] * 2.0
    m = catboost.CatBoostRegressor(iterations=3, depth=2, cat_features=["colour"], **COMMON).fit(df[["a", "colour"]], y)
    with pytest.raises(ValueError, match=r"categorical feature 'colour'"):
        pgexact.load(m)


def test_text_features_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    words = np.array(["good movie", "bad film", "great plot", "awful acting", "fine"])
    df = pd.DataFrame({"a": rng.normal(size=200), "review": words[rng.integers(0, 5, 200)]})
    y = (df["review"].str.contains("good|great")).astype(int)
    m = catboost.CatBoostClassifier(iterations=3, depth=2, text_features=["review"], **COMMON).fit(df, y)
    with pytest.raises(ValueError, match=r"text feature 'review' \(column 1\)"):
        pgexact.load(m)
    m.save_model(str(tmp_path / "text.cbm"))  # CatBoost writes such models as .cbm only
    with pytest.raises(ValueError, match=r"text\.cbm.*text feature 'review' \(column 1\)"):
        pgexact.load(str(tmp_path / "text.cbm"))


def test_unfitted_model():
    with pytest.raises(ValueError, match="not fitted"):
        pgexact.load(catboost.CatBoostRegressor())


# ------------------------------------------------------------------------------ PG² brute force
PG_SETS = [(0,), (1,), (0, 1), (1, 2)]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("S", PG_SETS, ids=lambda s: "S" + "".join(map(str, s)))
@pytest.mark.parametrize("name", NAMES)
def test_pg2_matches_bruteforce(name, S, family):
    c = build(name)
    X = pg_rows()
    for j in S:  # one row exactly at a border of each perturbed feature
        b = [t for f, t in c.splits() if f == j]
        if b:
            X[4, j] = b[len(b) // 2]
    sigma = SIGMA if family != "uniform" else 0.35
    got = pgexact.pg2(c.pg_model(), X, list(S), sigma=sigma, noise=family)
    ref = pg2_bruteforce(c.raw, X, S, sigma, family, c.bounds())
    assert np.all(got >= 0)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=1e-15)


@pytest.mark.parametrize("name", ["reg", "multi2"])
def test_pg2_against_monte_carlo_through_catboost_predict(name):
    c = build(name)
    rows = pg_rows()[:3]
    feats = [0, 2, 3]
    exact = pgexact.pg2(c.pg_model(), rows, feats, sigma=SIGMA)
    est, se = mc.pg2(c.model, rows, feats, sigma=SIGMA, output=c.output, n_samples=100_000, seed=1,
                     return_se=True, n_jobs=1)
    assert np.all(np.abs(est - exact) <= 5 * se + 1e-9), (est, exact, se)
    assert np.all(se < 0.05 * exact + 1e-9)  # the comparison has teeth


# ------------------------------------------------------------------------------ the rest of the API
def test_explainer_and_rank():
    c = build("reg")
    X = pg_rows()
    exp = pgexact.Explainer(c.model, sigma=0.3)(X)
    np.testing.assert_allclose(exp.pg2, pgexact.pg2(c.model, X, np.ones(D, bool), sigma=0.3), rtol=1e-12)
    assert exp.ranking.shape == (len(X), D)


def test_dask_accepts_catboost():
    da = pytest.importorskip("dask.array")
    import pgexact.dask as pgd

    c = build("reg")
    X = pg_rows(n=20)
    lazy = pgd.pg2(c.model, da.from_array(X, chunks=(7, D)), [0, 1])
    np.testing.assert_array_equal(lazy.compute(scheduler="sync"), pgexact.pg2(c.model, X, [0, 1]))


def test_cli_model_file_accepts_catboost(tmp_path):
    pytest.importorskip("xgboost")
    pytest.importorskip("shap")
    pytest.importorskip("matplotlib")
    from pgexact import cli

    X, y = make_data(nan=False, n=200)
    names = ["w", "x", "y_", "z"]
    df = pd.DataFrame(X, columns=names).assign(target=y)
    csv = tmp_path / "data.csv"
    df.to_csv(csv, index=False)
    model = catboost.CatBoostRegressor(iterations=5, depth=2, **COMMON).fit(df[names[::-1]], y)
    for ext in ("json", "cbm"):
        path = tmp_path / f"m.{ext}"
        model.save_model(str(path), format=ext)
        out = tmp_path / f"out_{ext}"
        assert cli.main(["ranking", "--data", str(csv), "--target", "target", "--model-file", str(path),
                         "--samples", "10", "--out", str(out), "--quiet", "--n-jobs", "1"]) == 0
        res = json.loads((out / "results.json").read_text())
        assert res["data"]["feature_names"] == names[::-1]


# ------------------------------------------------------------------------------ any model CatBoost reads
F32 = st.floats(-3, 3, width=32, allow_nan=False)
VALUE = st.floats(-10, 10)


@st.composite
def catboost_documents(draw):
    """A CatBoost JSON model: 1-3 float features (increasing float32 borders, any
    nan_value_treatment and has_nans), 1-4 oblivious or non-symmetric trees of depth <= 3,
    1-3 outputs, any scale and bias."""
    floats, pool = [], []
    for k in range(draw(st.integers(1, 3))):
        borders = sorted(set(draw(st.lists(F32, max_size=4))))
        floats.append(dict(borders=borders, feature_id="", feature_index=k, flat_feature_index=k,
                           has_nans=draw(st.booleans()),
                           nan_value_treatment=draw(st.sampled_from(["AsIs", "AsFalse", "AsTrue"]))))
        pool += [(k, b) for b in borders]
    dim = draw(st.integers(1, 3))

    def split(k, b):
        return dict(border=b, float_feature_index=k, split_index=pool.index((k, b)), split_type="FloatFeature")

    def nested(depth):
        if depth == 0 or not pool or draw(st.booleans()):
            v = draw(st.lists(VALUE, min_size=dim, max_size=dim))
            return {"value": v if dim > 1 else v[0], "weight": 1}
        return {"split": split(*draw(st.sampled_from(pool))), "left": nested(depth - 1), "right": nested(depth - 1)}

    def oblivious():
        depth = draw(st.integers(0, 3)) if pool else 0
        leaves = draw(st.lists(VALUE, min_size=dim << depth, max_size=dim << depth))
        return {"leaf_values": leaves, "leaf_weights": [1] * (1 << depth),
                "splits": [split(*draw(st.sampled_from(pool))) for _ in range(depth)]}

    n_trees = draw(st.integers(1, 4))
    doc = {"features_info": {"float_features": floats},
           "scale_and_bias": [draw(st.floats(0.25, 4)), draw(st.lists(VALUE, min_size=dim, max_size=dim))]}
    if draw(st.booleans()):
        doc["trees"] = [nested(3) for _ in range(n_trees)]
    else:
        doc["oblivious_trees"] = [oblivious() for _ in range(n_trees)]
    return doc


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=catboost_documents(), seed=st.integers(0, 2**32 - 1))
def test_any_model_reads_as_catboost_reads_it(doc, seed):
    """CatBoost's own JSON reader and predict are the oracle for random models: NaN under every
    (nan_value_treatment, has_nans), values at each border and one float32 ulp either side."""
    floats = doc["features_info"]["float_features"]
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, len(floats))) * 2
    X[rng.random(X.shape) < 0.2] = np.nan
    for k, f in enumerate(floats):
        for j, b in enumerate(f["borders"]):
            b32 = np.float32(b)
            X[(3 * j) % 40:(3 * j) % 40 + 3, k] = [b, np.nextafter(b32, np.float32(-np.inf)),
                                                    np.nextafter(b32, np.float32(np.inf))]
    dim = len(doc["scale_and_bias"][1])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.json")
        with open(path, "w") as fh:
            json.dump(doc, fh)
        model = catboost.CatBoost()
        model.load_model(path, format="json")
        ref = np.asarray(model.predict(X, prediction_type="RawFormulaVal", thread_count=1)).reshape(len(X), -1)
        assert ref.shape[1] == dim
        for k in range(dim):
            got = pgexact.load(path, output=k if dim > 1 else None).predict(X)
            # CatBoost multiplies the sum of the leaves by scale, pgexact each leaf
            np.testing.assert_allclose(got, ref[:, k], rtol=1e-12, atol=1e-12)


def test_cli_model_file_without_catboost_says_so(tmp_path, monkeypatch, capsys):
    pytest.importorskip("xgboost")
    from pgexact import cli

    X, y = make_data(nan=False, n=100)
    pd.DataFrame(X, columns=list("abcd")).assign(target=y).to_csv(tmp_path / "data.csv", index=False)
    model = catboost.CatBoostRegressor(iterations=3, depth=2, **COMMON).fit(X, y)
    model.save_model(str(tmp_path / "m.json"), format="json")
    monkeypatch.setitem(sys.modules, "catboost", None)  # import catboost now fails
    with pytest.raises(SystemExit) as exc:
        cli.main(["ranking", "--data", str(tmp_path / "data.csv"), "--target", "target", "--model-file",
                  str(tmp_path / "m.json"), "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    assert "--model-file: catboost is not installed" in capsys.readouterr().err


def test_monte_carlo_refuses_categorical_models():
    df, y = _categorical_frame()
    m = catboost.CatBoostRegressor(iterations=3, depth=2, cat_features=["colour"], **COMMON).fit(df[["a", "colour"]], y)
    with pytest.raises(ValueError, match=r"categorical feature 'colour' \(column 1\)"):
        mc.pg2(m, np.zeros((2, 2)), [0], n_samples=10)
