"""scikit-learn: TreeEnsemble.predict against each estimator's own output and leaf routing, and
exact PG² against a cell brute force through the estimator's own predict (docs/supported_models.md)."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest
from sklearn.dummy import DummyRegressor
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor, ExtraTreeRegressor

from threadpoolctl import threadpool_limits

import pgexact
from _cells import FAMILIES, edge_rows, float32_le_boundary, pg2_bruteforce

D = 4
SIGMA = np.array([0.3, 0.5, 0.2, 0.4])
RTOL = 1e-9


@pytest.fixture(autouse=True, scope="module")
def _one_openmp_thread():
    """HistGradientBoosting's OpenMP spin-waits badly on a loaded 2-core machine."""
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


def make_data(seed=0, n=300, nan=True, classes=0, categorical=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    if categorical:
        X[:, 3] = rng.choice([0, 2, 3, 5, 9, 17, 40], n)
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * X[:, 3]
    if categorical:
        y = y + np.isin(X[:, 3], [2, 9, 40]) * 1.5
    if nan:
        X[rng.random(n) < 0.15, 0] = np.nan
        X[rng.random(n) < 0.05, 2] = np.nan
        y = y + np.isnan(X[:, 0]) * 0.8
    if classes:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y


class Case:
    """One fitted estimator, how to get its raw output, its leaf routing and its boundaries."""

    def __init__(self, name, model, output, kind, nan=True):
        self.name, self.model, self.output, self.kind, self.nan = name, model, output, kind, nan

    # ---- the library's own output f
    def f(self, A):
        m, k = self.model, self.output
        if self.kind in ("tree_clf", "forest_clf"):
            return m.predict_proba(A)[:, k]
        if self.kind in ("gb_clf", "hist_clf"):
            r = m.decision_function(A)
            return r if r.ndim == 1 else r[:, k]
        return m.predict(A)

    # ---- float64 sum of leaf values through the library's own routing, in tree order
    def leaf_sum(self, A):
        m, k = self.model, self.output or 0
        if self.kind.startswith("tree") or self.kind.startswith("forest"):
            ests = [m] if self.kind.startswith("tree") else m.estimators_
            leaves = m.apply(A).reshape(len(A), -1)
            w = 1.0 if self.kind.startswith("tree") else 1.0 / len(ests)
            total = np.zeros(len(A))
            for t, e in enumerate(ests):
                v = e.tree_.value[:, 0, k] if self.kind.endswith("clf") else e.tree_.value[:, k, 0]
                total = total + v[leaves[:, t]] * w
            return 0.0 + total
        if self.kind.startswith("gb"):
            leaves = m.apply(A.astype(np.float32)).astype(np.int64).reshape(len(A), *m.estimators_.shape)
            total = np.zeros(len(A))
            for i in range(m.estimators_.shape[0]):
                total = total + m.estimators_[i, k].tree_.value[:, 0, 0][leaves[:, i, k]] * m.learning_rate
            base = m._raw_predict_init(A.astype(np.float32))[0, k]
            return base + total
        # HistGradientBoosting: each predictor routes the preprocessed rows itself
        Xp = m._preprocess_X(A, reset=False)
        known, fmap = m._bin_mapper.make_known_categories_bitsets()
        total = np.zeros(len(A))
        for it in m._predictors:
            total = total + it[k].predict(Xp, known, fmap, 1)
        return m._baseline_prediction.ravel()[k] + total

    # ---- switching points per original feature
    def bounds(self):
        out = {}
        m = self.model
        if self.kind.startswith("hist"):
            is_cat = getattr(m, "is_categorical_", None)
            if is_cat is None:
                original = np.arange(D)
            else:
                original = np.concatenate([np.flatnonzero(is_cat), np.flatnonzero(~is_cat)])
            for it in m._predictors:
                for p in it:
                    nd = p.nodes
                    sel = (nd["is_leaf"] == 0) & (nd["is_categorical"] == 0)
                    for j, t in zip(original[nd["feature_idx"][sel]], nd["num_threshold"][sel]):
                        out.setdefault(int(j), []).append(float(t))
            return {j: np.unique(v) for j, v in out.items()}
        if self.kind.startswith("tree"):
            ests = [m]
        elif self.kind.startswith("forest"):
            ests = m.estimators_
        else:
            ests = m.estimators_.ravel()
        for e in ests:
            t = e.tree_
            sel = t.feature >= 0
            for j, thr in zip(t.feature[sel], t.threshold[sel]):
                out.setdefault(int(j), []).append(float(thr))
        # float32 input: y goes left iff y < midpoint(t32, next float32 up)
        return {j: np.unique(float32_le_boundary(np.array(v))) for j, v in out.items()}

    def splits(self):
        m = self.model
        if self.kind.startswith("hist"):
            return sorted({(j, t) for j, ts in self.bounds().items() for t in ts})
        out = set()
        ests = [m] if self.kind.startswith("tree") else (m.estimators_ if self.kind.startswith("forest")
                                                          else m.estimators_.ravel())
        for e in ests:
            t = e.tree_
            sel = t.feature >= 0
            out |= {(int(j), float(x)) for j, x in zip(t.feature[sel], t.threshold[sel])}
        return sorted(out)

    @property
    def float32(self):
        return not self.kind.startswith("hist")

    def pg_model(self):
        return pgexact.load(self.model, output=self.output)


@functools.lru_cache(maxsize=None)
def build(name) -> Case:
    X, y = make_data()
    Xc, yc = make_data(classes=2)
    X3, y3 = make_data(classes=3)
    Xf, yf = make_data(nan=False)
    Xf3, yf3 = make_data(nan=False, classes=3)
    Xf2, yf2 = make_data(nan=False, classes=2)
    small = dict(max_depth=4, random_state=0)
    if name == "tree_reg":
        return Case(name, DecisionTreeRegressor(**small).fit(X, y), None, "tree_reg")
    if name == "extra_tree_reg":
        return Case(name, ExtraTreeRegressor(**small).fit(X, y), None, "tree_reg")
    if name == "tree_clf_binary":
        return Case(name, DecisionTreeClassifier(**small).fit(Xc, yc), 1, "tree_clf")
    if name.startswith("tree_clf_multi"):
        return Case(name, DecisionTreeClassifier(**small).fit(X3, y3), int(name[-1]), "tree_clf")
    if name == "rf_reg":
        return Case(name, RandomForestRegressor(n_estimators=8, n_jobs=1, **small).fit(X, y), None, "forest_reg")
    if name == "rf_clf_binary":
        return Case(name, RandomForestClassifier(n_estimators=8, n_jobs=1, **small).fit(Xc, yc), 1, "forest_clf")
    if name.startswith("rf_clf_multi"):
        m = RandomForestClassifier(n_estimators=8, n_jobs=1, **small).fit(X3, y3)
        return Case(name, m, int(name[-1]), "forest_clf")
    if name == "et_reg":
        return Case(name, ExtraTreesRegressor(n_estimators=8, n_jobs=1, **small).fit(X, y), None, "forest_reg")
    if name.startswith("et_clf_multi"):
        m = ExtraTreesClassifier(n_estimators=8, n_jobs=1, **small).fit(X3, y3)
        return Case(name, m, int(name[-1]), "forest_clf")
    # GradientBoosting refuses NaN (fit and predict): NaN-free data
    gb = dict(n_estimators=12, max_depth=3, learning_rate=0.3, random_state=0)
    if name == "gb_reg":
        return Case(name, GradientBoostingRegressor(**gb).fit(Xf, yf), None, "gb_reg", nan=False)
    if name == "gb_reg_huber":
        m = GradientBoostingRegressor(loss="huber", **gb).fit(Xf, yf)
        return Case(name, m, None, "gb_reg", nan=False)
    if name == "gb_reg_zero_init":
        m = GradientBoostingRegressor(init="zero", **gb).fit(Xf, yf)
        return Case(name, m, None, "gb_reg", nan=False)
    if name == "gb_clf_binary":
        return Case(name, GradientBoostingClassifier(**gb).fit(Xf2, yf2), None, "gb_clf", nan=False)
    if name.startswith("gb_clf_multi"):
        m = GradientBoostingClassifier(**gb).fit(Xf3, yf3)
        return Case(name, m, int(name[-1]), "gb_clf", nan=False)
    hist = dict(max_iter=12, max_leaf_nodes=8, learning_rate=0.3, random_state=0, early_stopping=False)
    if name == "hist_reg":
        return Case(name, HistGradientBoostingRegressor(**hist).fit(X, y), None, "hist_reg")
    if name == "hist_clf_binary":
        return Case(name, HistGradientBoostingClassifier(**hist).fit(Xc, yc), None, "hist_clf")
    if name.startswith("hist_clf_multi"):
        m = HistGradientBoostingClassifier(**hist).fit(X3, y3)
        return Case(name, m, int(name[-1]), "hist_clf")
    if name == "hist_cat":
        Xk, yk = make_data(categorical=True)
        m = HistGradientBoostingRegressor(categorical_features=[3], **hist).fit(Xk, yk)
        return Case(name, m, None, "hist_reg")
    raise KeyError(name)


NAMES = [
    "tree_reg", "extra_tree_reg", "tree_clf_binary", "tree_clf_multi0", "tree_clf_multi2",
    "rf_reg", "rf_clf_binary", "rf_clf_multi1", "et_reg", "et_clf_multi2",
    "gb_reg", "gb_reg_huber", "gb_reg_zero_init", "gb_clf_binary", "gb_clf_multi0", "gb_clf_multi2",
    "hist_reg", "hist_clf_binary", "hist_clf_multi1", "hist_cat",
]


def probe_rows(c: Case):
    X, _ = make_data(seed=3, n=25, nan=c.nan, categorical=c.name == "hist_cat")
    rows = edge_rows(X, c.splits(), float32=c.float32, seed=1)
    if not c.nan:
        rows = rows[~np.any(np.isnan(rows), axis=1)]
    if c.name == "hist_cat":
        extra = np.repeat(rows[:1], 16, axis=0)
        # known categories, unknown integers, negative, fractional, beyond the bitset, NaN
        extra[:, 3] = [0, 2, 3, 5, 9, 17, 40, 1, 4, 39, 41, 64, 1000, -1, 2.5, np.nan]
        rows = np.vstack([rows, extra])
    return rows


def pg_rows(c: Case, S=()):
    X, _ = make_data(seed=5, n=8, nan=c.nan, categorical=c.name == "hist_cat")
    if c.nan:
        X[1, 0] = np.nan
        X[2, :3] = [np.nan, 0.0, np.nan]
    X[3, :3] = 0.0
    for j in S:  # a row exactly at a threshold of each perturbed feature
        ts = [t for f, t in c.splits() if f == j]
        if ts:
            X[4, j] = ts[len(ts) // 2]
    return X


# ------------------------------------------------------------------------------ predict
@pytest.mark.parametrize("name", NAMES)
def test_predict_equals_library_output(name):
    c = build(name)
    m = pgexact.load(c.model, output=c.output)
    X = probe_rows(c)
    got = m.predict(X)
    assert got.dtype == np.float64 and got.shape == (len(X),)
    ref = c.f(X)
    if c.kind in ("tree_reg", "tree_clf"):
        np.testing.assert_array_equal(got, ref)  # one tree: the leaf value itself
    else:
        # sums in another order than the library (forests divide at the end): rounding only
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-14 * (1 + np.max(np.abs(ref))))


@pytest.mark.parametrize("name", NAMES)
def test_routing_is_exact(name):
    """Bit-for-bit: pgexact's leaves are the leaves the estimator's own routing reaches."""
    c = build(name)
    m = pgexact.load(c.model, output=c.output)
    X = probe_rows(c)
    np.testing.assert_array_equal(m.predict(X), c.leaf_sum(X))


def test_nan_in_training_data_is_routed():
    """The NaN models really learned NaN directions both ways (so NaN rows test something)."""
    for name in ["tree_reg", "rf_reg", "hist_reg"]:
        c = build(name)
        if c.kind.startswith("hist"):
            nodes = np.concatenate([p.nodes for it in c.model._predictors for p in it])
            mgl = nodes["missing_go_to_left"][nodes["is_leaf"] == 0]
        else:
            ests = [c.model] if c.kind.startswith("tree") else c.model.estimators_
            mgl = np.concatenate([e.tree_.missing_go_to_left[e.tree_.feature >= 0] for e in ests])
        assert set(np.unique(mgl)) == {0, 1}, name


def test_float32_boundary_rows_differ():
    """The probe rows straddle float32 rounding boundaries: both sides occur and both are right."""
    c = build("tree_reg")
    j, t = c.splits()[0]
    b = float32_le_boundary(t)
    x = np.zeros((2, D))
    x[:, j] = [np.nextafter(b, -np.inf), np.nextafter(b, np.inf)]
    leaves = c.model.apply(x)
    assert leaves[0] != leaves[1]
    np.testing.assert_array_equal(pgexact.load(c.model).predict(x), c.model.predict(x))


# ------------------------------------------------------------------------------ outputs
def test_classifier_defaults_and_choices():
    assert pgexact.load(build("tree_clf_binary").model).output == 1  # probability of class 1
    assert pgexact.load(build("rf_clf_binary").model).output == 1
    assert pgexact.load(build("gb_clf_binary").model).output == 0  # the margin
    assert pgexact.load(build("gb_clf_binary").model).n_outputs == 1
    assert pgexact.load(build("hist_clf_binary").model).output == 0
    for name in ["tree_clf_multi0", "rf_clf_multi1", "et_clf_multi2", "gb_clf_multi0", "hist_clf_multi1"]:
        with pytest.raises(ValueError, match=r"output.*3 outputs.*0\.\.2"):
            pgexact.load(build(name).model)
        with pytest.raises(ValueError, match="output"):
            pgexact.load(build(name).model, output=3)
    # binary forest: output 0 is the probability of class 0
    c = build("rf_clf_binary")
    X = probe_rows(c)
    np.testing.assert_allclose(pgexact.load(c.model, output=0).predict(X), c.model.predict_proba(X)[:, 0],
                               rtol=1e-13, atol=1e-15)


def test_multi_output_regressor():
    X, y = make_data()
    Y = np.column_stack([y, -2 * y + X[:, 1]])
    m = RandomForestRegressor(n_estimators=4, max_depth=3, random_state=0).fit(X, Y)
    with pytest.raises(ValueError, match="output"):
        pgexact.load(m)
    Xt = probe_rows(build("rf_reg"))
    for k in (0, 1):
        np.testing.assert_allclose(pgexact.load(m, output=k).predict(Xt), m.predict(Xt)[:, k], rtol=1e-13, atol=1e-14)


def test_gb_init_estimator():
    X, y = make_data(nan=False)
    m = GradientBoostingRegressor(n_estimators=5, init=DummyRegressor(strategy="quantile", quantile=0.3)).fit(X, y)
    Xt = probe_rows(build("gb_reg"))
    np.testing.assert_allclose(pgexact.load(m).predict(Xt), m.predict(Xt), rtol=1e-13, atol=1e-14)
    m = GradientBoostingRegressor(n_estimators=5, init=LinearRegression()).fit(X, y)
    with pytest.raises(ValueError, match="init estimator"):
        pgexact.load(m)


def test_hist_poisson_is_raw_log_scale():
    X, y = make_data(nan=True)
    m = HistGradientBoostingRegressor(loss="poisson", max_iter=8, early_stopping=False).fit(X, np.exp(y / 3))
    Xt = probe_rows(build("hist_reg"))
    np.testing.assert_allclose(pgexact.load(m).predict(Xt), m._raw_predict(Xt)[:, 0], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(np.exp(pgexact.load(m).predict(Xt)), m.predict(Xt), rtol=1e-12)


def test_hist_categorical_perturbed_by_category():
    """Issue 18: HistGradientBoosting's categorical feature is perturbed by category, by default
    over the categories its encoder learned, exactly as the model's own predict says."""
    c = build("hist_cat")
    m = pgexact.load(c.model)
    assert list(m._arena.categorical_features) == [3]
    X = pg_rows(c)
    known = np.asarray(c.model._preprocessor.named_transformers_["encoder"].categories_[0], dtype=float)
    np.testing.assert_array_equal(m.split_categories(3), known)
    for S in ([3], [1, 3]):
        got = pgexact.pg2(m, X, S)
        ref = pg2_bruteforce(c.f, X, S, 0.3, "normal", c.bounds(),
                             categorical={3: (0.3, known, np.full(known.size, 1.0 / known.size))})
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-15)
    with pytest.raises(ValueError, match=r"^noise\[3\]:"):
        pgexact.pg2(m, X, [3], noise=["normal"] * 4)
    got = pgexact.pg2(m, X, [0, 1])
    ref = pg2_bruteforce(c.f, X, [0, 1], 0.3, "normal", c.bounds())
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=1e-15)


def test_hist_string_categories_read_through_its_encoder():
    # issue 29: string categories (categorical_features="from_dtype") are read as the fitted
    # encoder reads them (they used to be refused); non-integer numeric ones still are
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=200), "b": pd.Categorical(rng.choice(["x", "y", "z"], 200))})
    m = HistGradientBoostingRegressor(max_iter=3).fit(df, df["a"] + (df["b"] == "y"))
    np.testing.assert_allclose(pgexact.load(m).predict(df), m.predict(df), rtol=1e-13)
    assert np.all(np.isfinite(pgexact.pgi2(m, df.iloc[:5], sigma=0.3)))
    frac = pd.DataFrame({"a": df["a"], "b": pd.Categorical(rng.choice([0.5, 1.5, 2.5], 200))})
    m2 = HistGradientBoostingRegressor(max_iter=3).fit(frac, frac["a"] + (frac["b"] == 1.5))
    with pytest.raises(ValueError, match="not integers"):
        pgexact.load(m2)


def test_feature_names_from_dataframe():
    X, y = make_data()
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    m = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(df, y)
    ens = pgexact.load(m)
    assert ens.feature_names == ["a", "b", "c", "d"]
    np.testing.assert_allclose(ens.predict(df[["d", "c", "b", "a"]]), m.predict(df), rtol=1e-13)
    assert pgexact.pg2(m, df.iloc[:3], ["b", "c"]).shape == (3,)


def test_unfitted_and_unsupported():
    with pytest.raises(ValueError, match="not fitted"):
        pgexact.load(RandomForestRegressor())
    with pytest.raises(ValueError, match="not fitted"):
        pgexact.load(HistGradientBoostingClassifier())
    with pytest.raises(TypeError, match="unsupported"):
        pgexact.load(LinearRegression().fit(np.eye(3), np.arange(3)))


# ------------------------------------------------------------------------------ PG² brute force
PG_SETS = [(0,), (2,), (0, 1), (1, 2)]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("S", PG_SETS, ids=lambda s: "S" + "".join(map(str, s)))
@pytest.mark.parametrize("name", NAMES)
def test_pg2_matches_bruteforce(name, S, family):
    c = build(name)
    X = pg_rows(c, S)
    sigma = SIGMA if family != "uniform" else 0.35
    got = pgexact.pg2(c.pg_model(), X, list(S), sigma=sigma, noise=family)
    ref = pg2_bruteforce(c.f, X, S, sigma, family, c.bounds())
    assert np.all(got >= 0)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=1e-15)


# ------------------------------------------------------------------------------ arrays binding
def test_build_arena_from_arrays_validates():
    from pgexact._core import model as core_model

    good = dict(children_left=[1, -1, -1], children_right=[2, -1, -1], feature=[0, -2, -2],
                threshold=[0.5, 0, 0], value=[0, 1.0, 2.0])
    a = core_model.build_arena_from_arrays([good], np.zeros(1), 1, "<=", False, "none")
    np.testing.assert_array_equal(a.predict(np.array([[0.5], [0.6], [np.nan]]), 0), [1.0, 2.0, 2.0])
    cases = [
        (dict(good, children_left=[1, 1, -1]), ValueError, "tree 0"),
        (dict(good, children_left=[5, -1, -1]), ValueError, "invalid children"),
        (dict(good, feature=[3, -2, -2]), ValueError, "feature 3"),
        (dict(good, threshold=[np.nan, 0, 0]), ValueError, "NaN threshold"),
        (dict(good, value=[0, np.inf, 1]), ValueError, "not finite"),
        (dict(good, value=[0, 1.0]), ValueError, "value"),
        (dict(good, children_left=[1.5, -1, -1]), TypeError, "children_left"),
        (dict(good, children_left=[2 ** 40, -1, -1]), ValueError, "children_left"),
        (dict(good, output=1), ValueError, "output"),
        (dict(good, cat_nodes=[0]), ValueError, "cat_bitsets"),
        ({k: v for k, v in good.items() if k != "threshold"}, ValueError, "threshold"),
    ]
    for tree, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            core_model.build_arena_from_arrays([tree], np.zeros(1), 1, "<=", False, "none")
    with pytest.raises(ValueError, match="op"):
        core_model.build_arena_from_arrays([good], np.zeros(1), 1, "<>", False, "none")
    with pytest.raises(ValueError, match="category_rule"):
        core_model.build_arena_from_arrays([good], np.zeros(1), 1, "<=", False, "bogus")
    with pytest.raises(TypeError, match="dict"):
        core_model.build_arena_from_arrays([1], np.zeros(1), 1, "<=", False, "none")
    with pytest.raises(ValueError, match="categorical"):
        core_model.build_arena_from_arrays([dict(good, cat_nodes=[0], cat_bitsets=[[1]])], np.zeros(1), 1, "<=", False, "none")
