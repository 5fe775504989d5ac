"""LightGBM: TreeEnsemble.predict against LightGBM's own raw score and leaf routing, and exact
PG² against a cell brute force through LightGBM's own predict (docs/supported_models.md)."""

from __future__ import annotations

import functools
import os
import random

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

import pgexact
from pgexact._core import model as core_model
from _cells import FAMILIES, edge_rows, pg2_bruteforce

D = 4
NTHREAD = 1  # LightGBM's OpenMP spin-waits badly on a loaded 2-core machine
SIGMA = np.array([0.3, 0.5, 0.2, 0.4])
RTOL = 1e-9


def make_data(seed=0, n=400, nan=True, zeros=True, categorical=False, classes=0):
    """Feature 0 has NaN, feature 1 many exact zeros and negatives (so LightGBM puts
    thresholds at ±1e-35), feature 3 small integers when ``categorical``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    if zeros:
        X[rng.random(n) < 0.3, 1] = 0.0
    if categorical:
        X[:, 3] = rng.integers(0, 12, n)
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.6 * (X[:, 1] == 0) + 0.3 * X[:, 3]
    if categorical:
        y = y + np.isin(X[:, 3], [1, 4, 7, 9]) * 1.5
    if nan:
        X[rng.random(n) < 0.15, 0] = np.nan
        y = y + np.isnan(X[:, 0]) * 0.8
    if classes:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y


BASE = dict(num_leaves=8, min_data_in_leaf=5, learning_rate=0.3, verbose=-1, num_threads=NTHREAD,
            deterministic=True, seed=1)


class Case:
    def __init__(self, name, model, output=None, X=None):
        self.name = name
        self.model = model  # what is handed to pgexact
        self.booster = model if isinstance(model, lgb.Booster) else model.booster_
        self.output = output
        self.best = self.booster.best_iteration if self.booster.best_iteration > 0 else -1
        dump = self.booster.dump_model(num_iteration=self.best)
        self.K = int(dump["num_tree_per_iteration"])
        self.average = bool(dump.get("average_output", False))
        self.trees = [t["tree_structure"] for t in dump["tree_info"]]
        self.n_iter = len(self.trees) // self.K
        self.X = X

    # ---- the library's own outputs
    def raw(self, A):
        r = np.asarray(self.booster.predict(A, raw_score=True, num_iteration=self.best), dtype=np.float64)
        if r.ndim == 2:
            r = r[:, self.output or 0]
        return r / self.n_iter if self.average else r

    def leaf_sum(self, A):
        """float64 sum of the leaves LightGBM routes to (pred_leaf), in tree order."""
        leaves = np.asarray(self.booster.predict(A, pred_leaf=True, num_iteration=self.best)).reshape(len(A), -1)
        k = self.output or 0
        w = 1.0 / self.n_iter if self.average else 1.0
        total = np.zeros(len(A))
        for t in range(k, len(self.trees), self.K):
            values = leaf_values(self.trees[t])
            total = total + values[leaves[:, t]] * w
        return 0.0 + total

    def bounds(self):
        out = {}
        for t in self.trees:
            for node in walk(t):
                if "split_feature" in node and node["decision_type"] == "<=":
                    out.setdefault(node["split_feature"], []).append(float(node["threshold"]))
        return {j: np.unique(v) for j, v in out.items()}

    def splits(self):
        return sorted({(j, t) for j, ts in self.bounds().items() for t in ts})

    def pg_model(self):
        return self.model if self.output is None else pgexact.load(self.model, output=self.output)


def walk(node):
    yield node
    if "left_child" in node:
        yield from walk(node["left_child"])
        yield from walk(node["right_child"])


def leaf_values(tree):
    leaves = {n["leaf_index"]: n["leaf_value"] for n in walk(tree) if "leaf_index" in n}
    if not leaves:  # a single-leaf tree
        leaves = {0: tree["leaf_value"]}
    out = np.zeros(max(leaves) + 1)
    for i, v in leaves.items():
        out[i] = v
    return out


def pg_rows(seed=5, n=8, categorical=False):
    X, _ = make_data(seed=seed, n=n, categorical=categorical)
    X[1, 0] = np.nan
    X[2, 1] = 0.0
    X[3, :] = [np.nan, 0.0, 0.1, X[3, 3]]
    return X


@functools.lru_cache(maxsize=None)
def build(name) -> Case:
    if name == "reg":  # Booster from lgb.train, NaN and zeros in training data
        X, y = make_data()
        b = lgb.train(dict(BASE, objective="regression"), lgb.Dataset(X, y), num_boost_round=15)
        return Case(name, b)
    if name == "reg_early":  # early stopping, trees kept beyond best_iteration
        X, y = make_data()
        Xv, yv = make_data(seed=9, n=200)
        dtrain = lgb.Dataset(X, y)
        b = lgb.train(dict(BASE, objective="regression"), dtrain, num_boost_round=100,
                      valid_sets=[lgb.Dataset(Xv, yv, reference=dtrain)],
                      callbacks=[lgb.early_stopping(3, verbose=False)], keep_training_booster=True)
        assert 0 < b.best_iteration < b.current_iteration()
        return Case(name, b)
    if name == "binary":
        X, y = make_data(classes=2)
        return Case(name, lgb.LGBMClassifier(n_estimators=12, **BASE).fit(X, y))
    if name.startswith("multi"):
        X, y = make_data(classes=3)
        m = lgb.LGBMClassifier(n_estimators=6, **BASE).fit(X, y)
        return Case(name, m, output=int(name[-1]))
    if name == "rf":
        X, y = make_data()
        m = lgb.LGBMRegressor(boosting_type="rf", n_estimators=10, bagging_freq=1, bagging_fraction=0.7, **BASE)
        return Case(name, m.fit(X, y))
    if name == "rf_binary":
        X, y = make_data(classes=2)
        m = lgb.LGBMClassifier(boosting_type="rf", n_estimators=8, bagging_freq=1, bagging_fraction=0.7, **BASE)
        return Case(name, m.fit(X, y))
    if name == "zero_as_missing":
        X, y = make_data()
        b = lgb.train(dict(BASE, objective="regression", zero_as_missing=True), lgb.Dataset(X, y),
                      num_boost_round=12)
        return Case(name, b)
    if name == "no_missing":  # use_missing=False: NaN is read as 0 (missing type None)
        X, y = make_data()
        b = lgb.train(dict(BASE, objective="regression", use_missing=False), lgb.Dataset(X, y),
                      num_boost_round=12)
        return Case(name, b)
    if name == "categorical":
        X, y = make_data(categorical=True)
        params = dict(BASE, objective="regression", max_cat_to_onehot=2, min_data_per_group=5, cat_smooth=1.0,
                      cat_l2=1.0)
        b = lgb.train(params, lgb.Dataset(X, y, categorical_feature=[3]), num_boost_round=12)
        return Case(name, b)
    raise KeyError(name)


NAMES = ["reg", "reg_early", "binary", "multi0", "multi2", "rf", "rf_binary", "zero_as_missing", "no_missing",
         "categorical"]


def probe_rows(c: Case):
    X, _ = make_data(seed=3, n=30, categorical=c.name == "categorical")
    rows = edge_rows(X, c.splits(), float32=False, zero_band=True, seed=1)
    if c.name == "categorical":
        # categories seen and unseen, negative, fractional, huge, NaN
        extra = np.repeat(rows[:1], 14, axis=0)
        extra[:, 3] = [0, 1, 4, 7, 9, 11, 12, 31, 32, 1000, -1, -0.5, 2.5, np.nan]
        rows = np.vstack([rows, extra])
    return rows


# ------------------------------------------------------------------------------ predict
@pytest.mark.parametrize("name", NAMES)
def test_predict_equals_raw_score(name):
    c = build(name)
    m = pgexact.load(c.model, output=c.output)
    X = probe_rows(c)
    got = m.predict(X)
    assert got.dtype == np.float64 and got.shape == (len(X),)
    ref = c.raw(X)
    if c.average:
        # rf mode: LightGBM sums then divides by the iteration count; pgexact weights each leaf.
        np.testing.assert_allclose(got, ref, rtol=1e-14, atol=1e-15 * (1 + np.max(np.abs(ref))))
    else:
        np.testing.assert_array_equal(got, ref)  # same double additions in the same order


@pytest.mark.parametrize("name", NAMES)
def test_routing_is_exact(name):
    """Bit-for-bit: pgexact's leaves are the leaves LightGBM's pred_leaf reports."""
    c = build(name)
    m = pgexact.load(c.model, output=c.output)
    X = probe_rows(c)
    np.testing.assert_array_equal(m.predict(X), c.leaf_sum(X))


def test_rf_regression_equals_predict():
    c = build("rf")
    X = probe_rows(c)
    np.testing.assert_allclose(pgexact.load(c.model).predict(X), c.model.predict(X), rtol=1e-14, atol=1e-15)


def test_rf_classifier_probability_is_sigmoid_of_f():
    c = build("rf_binary")
    X = probe_rows(c)
    f = pgexact.load(c.model).predict(X)
    np.testing.assert_allclose(1.0 / (1.0 + np.exp(-f)), c.model.predict_proba(X)[:, 1], rtol=1e-12)


def test_missing_types_and_zero_band_are_exercised():
    """The models above cover every decision_type rule, and thresholds at ±1e-35."""
    seen = set()
    band = set()
    for name in NAMES:
        for t in build(name).trees:
            for node in walk(t):
                if "split_feature" in node and node["decision_type"] == "<=":
                    seen.add((node["missing_type"], node["default_left"]))
                    if abs(node["threshold"]) <= 1.1e-35:
                        band.add(np.sign(node["threshold"]))
    assert {m for m, _ in seen} == {"None", "Zero", "NaN"}
    assert {dl for _, dl in seen} == {True, False}
    assert -1.0 in band, "no split at -1e-35: the zero-band rows would test nothing"
    # At such a split a plain `x <= t` would send x = -1e-35 left, LightGBM reads it as 0: right.
    c = build("reg")
    z = float(np.float32(1e-35))
    X = probe_rows(c)[:40].copy()
    lo, at = X.copy(), X.copy()
    lo[:, 1] = np.nextafter(-z, -np.inf)
    at[:, 1] = -z
    assert np.any(c.raw(lo) != c.raw(at))
    np.testing.assert_array_equal(pgexact.load(c.model).predict(at), c.raw(at))


def test_binary_default_is_margin():
    c = build("binary")
    m = pgexact.load(c.model)
    assert m.n_outputs == 1 and m.output == 0
    X = probe_rows(c)
    np.testing.assert_array_equal(m.predict(X), c.model.predict(X, raw_score=True))


def test_multiclass_requires_output():
    c = build("multi0")
    with pytest.raises(ValueError, match=r"output.*3 outputs.*0\.\.2"):
        pgexact.load(c.model)
    with pytest.raises(ValueError, match="output"):
        pgexact.load(c.model, output=3)
    with pytest.raises(TypeError, match="output"):
        pgexact.load(c.model, output=1.5)
    m = pgexact.load(c.model, output=1)
    assert m.n_outputs == 3 and m.n_trees == 6


def test_best_iteration_is_honoured():
    """Like Booster.predict (and the scikit-learn wrappers), pgexact uses best_iteration."""
    c = build("reg_early")
    m = pgexact.load(c.model)
    assert m.n_trees == c.booster.best_iteration < c.booster.current_iteration()
    X = probe_rows(c)
    np.testing.assert_array_equal(m.predict(X), c.booster.predict(X, raw_score=True))
    full = c.booster.predict(X, raw_score=True, num_iteration=-1)
    assert not np.array_equal(m.predict(X), full)


def test_model_file(tmp_path):
    c = build("multi2")
    path = tmp_path / "model.txt"
    c.booster.save_model(str(path))
    m = pgexact.load(str(path), output=2)
    assert m.source.startswith("LightGBM file")
    X = probe_rows(c)
    np.testing.assert_array_equal(m.predict(X), c.raw(X))
    # CRLF line endings read the same
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    np.testing.assert_array_equal(pgexact.load(crlf, output=2).predict(X), c.raw(X))
    with pytest.raises(ValueError, match="output"):
        pgexact.load(str(path))


def test_single_leaf_trees():
    X, y = make_data()
    b = lgb.train(dict(BASE, objective="regression", min_data_in_leaf=1000), lgb.Dataset(X, y), num_boost_round=3)
    m = pgexact.load(b)
    assert b.num_trees() >= 1
    assert m.n_leaves == m.n_nodes == m.n_trees == b.num_trees()
    Xt = probe_rows(build("reg"))
    np.testing.assert_array_equal(m.predict(Xt), b.predict(Xt, raw_score=True))
    np.testing.assert_array_equal(pgexact.pg2(m, Xt[:5], [0, 1]), np.zeros(5))


def test_feature_names_and_dataframe():
    X, y = make_data(nan=False)
    names = ["a", "b", "c", "d"]
    df = pd.DataFrame(X, columns=names)
    m_named = lgb.LGBMRegressor(n_estimators=5, **BASE).fit(df, y)
    ens = pgexact.load(m_named)
    assert ens.feature_names == names
    shuffled = df[["c", "a", "d", "b"]]
    np.testing.assert_array_equal(ens.predict(shuffled), m_named.predict(df, raw_score=True))
    assert pgexact.pg2(m_named, shuffled.iloc[:4], ["b"]).shape == (4,)
    m_plain = lgb.LGBMRegressor(n_estimators=5, **BASE).fit(X, y)
    assert pgexact.load(m_plain).feature_names is None  # LightGBM's Column_i are not names


def test_pandas_category_columns_read_as_lightgbm_reads_them():
    # issue 29: a model trained on pandas category columns (it used to be refused) maps a
    # frame's category columns onto its pandas_categorical, as LightGBM's own predict does
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=300), "b": pd.Categorical(rng.choice([10, 20, 30, 50], 300))})
    y = df["a"] + (df["b"].astype(int) == 20)
    m = lgb.LGBMRegressor(n_estimators=3, min_child_samples=5, **{k: v for k, v in BASE.items()
                                                                  if k != "min_data_in_leaf"}).fit(df, y)
    np.testing.assert_allclose(pgexact.load(m).predict(df), m.predict(df, raw_score=True), rtol=1e-13)
    shuffled = df.assign(b=df["b"].cat.reorder_categories([50, 30, 20, 10]))
    np.testing.assert_allclose(pgexact.load(m).predict(shuffled), m.predict(df, raw_score=True),
                               rtol=1e-13)
    # a DataFrame without category columns is fine
    m2 = lgb.LGBMRegressor(n_estimators=3, **BASE).fit(df[["a"]], y)
    assert pgexact.load(m2).feature_names == ["a"]


def test_linear_trees_are_refused(tmp_path):
    X, y = make_data(nan=False)
    b = lgb.train(dict(BASE, objective="regression", linear_tree=True), lgb.Dataset(X, y), num_boost_round=3)
    with pytest.raises(ValueError, match="linear"):
        pgexact.load(b)
    path = tmp_path / "linear.txt"
    b.save_model(str(path))
    with pytest.raises(ValueError, match="linear"):
        pgexact.load(str(path))


def test_unfitted_model():
    with pytest.raises(ValueError, match="not fitted"):
        pgexact.load(lgb.LGBMRegressor())


# ------------------------------------------------------------------------------ categorical
def test_categorical_feature_perturbed_by_category():
    """Issue 18: a feature LightGBM splits on by category is perturbed by category (the default
    noise.categorical(0.3) over the categories its splits name), exactly as LightGBM's own predict
    on every category says; additive noise for it is refused by name."""
    c = build("categorical")
    m = pgexact.load(c.model)
    assert 3 in list(m._arena.categorical_features)
    X = pg_rows(categorical=True)
    named = m.split_categories(3)
    uniform = np.full(named.size, 1.0 / named.size)
    for S in ([3], [0, 3]):
        got = pgexact.pg2(m, X, S)
        ref = pg2_bruteforce(c.raw, X, S, 0.3, "normal", c.bounds(), categorical={3: (0.3, named, uniform)})
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-15)
    weights = np.arange(1.0, named.size + 1)
    noise = ["normal", "normal", "normal", pgexact.noise.categorical(0.8, named, weights)]
    got = pgexact.pg2(m, X, [3], noise=noise)
    ref = pg2_bruteforce(c.raw, X, [3], 0.3, "normal", c.bounds(),
                         categorical={3: (0.8, named, weights / weights.sum())})
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-15)
    with pytest.raises(ValueError, match=r"^noise\[3\]: the model splits on feature .* by category"):
        pgexact.pg2(m, X, [0], noise=["normal"] * 4)
    curve = pgexact.pg2_curve(m, X, [3, 0, 1, 2])
    assert np.array_equal(curve[:, 0], pgexact.pg2(m, X, [3]))
    got = pgexact.pg2(m, X, [0, 1])
    ref = pg2_bruteforce(c.raw, X, [0, 1], 0.3, "normal", c.bounds())
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=1e-15)
    # the categorical splits really are set splits (not one-hot), so the bitsets are exercised
    sets = [n["threshold"] for t in c.trees for n in walk(t) if n.get("decision_type") == "=="]
    assert any("||" in str(s) for s in sets)


# ------------------------------------------------------------------------------ PG² brute force
PG_SETS = [(0,), (1,), (0, 1), (1, 2)]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("S", PG_SETS, ids=lambda s: "S" + "".join(map(str, s)))
@pytest.mark.parametrize("name", NAMES)
def test_pg2_matches_bruteforce(name, S, family):
    c = build(name)
    X = pg_rows(categorical=name == "categorical")
    # one row exactly at a threshold of each perturbed feature
    for j in S:
        b = c.bounds().get(j)
        if b is not None and len(b):
            X[4, j] = b[len(b) // 2]
    sigma = SIGMA if family != "uniform" else 0.35
    got = pgexact.pg2(c.pg_model(), X, list(S), sigma=sigma, noise=family)
    ref = pg2_bruteforce(c.raw, X, S, sigma, family, c.bounds())
    assert np.all(got >= 0)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=1e-15)


def test_pg2_mixed_families_per_feature():
    c = build("reg")
    X = pg_rows()
    fams = ["laplace", "uniform", "normal", "normal"]
    got = pgexact.pg2(c.model, X, [0, 1], sigma=SIGMA, noise=fams)
    ref = pg2_bruteforce(c.raw, X, [0, 1], SIGMA, fams, c.bounds())
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=1e-15)


# ------------------------------------------------------------------------------ malformed input
def _valid_text(name="categorical"):
    return build(name).booster.model_to_string()


def _token(key, new, index=0):
    """Replace value token ``index`` of the first ``key=`` line."""

    def mutate(s):
        lines = s.split("\n")
        for i, line in enumerate(lines):
            if line.startswith(key + "="):
                parts = line[len(key) + 1:].split(" ")
                parts[index] = new
                lines[i] = key + "=" + " ".join(parts)
                return "\n".join(lines)
        raise AssertionError(key)

    return mutate


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda s: "", "empty"),
        (lambda s: "hello\nworld\n", "not a LightGBM"),
        (lambda s: s[: len(s) // 2], "truncated"),
        (lambda s: s.replace("end of trees", ""), "end of trees"),
        (_token("num_class", "0"), "num_class"),
        (_token("max_feature_idx", "-1"), "max_feature_idx"),
        (_token("left_child", "99"), "child id out of range"),
        (_token("left_child", "-99"), "leaf id out of range"),
        (_token("left_child", "0"), "reached twice|invalid children"),
        (_token("split_feature", "7"), "feature 7"),
        (_token("leaf_value", "inf"), "not finite"),
        (_token("leaf_value", "nan"), "not finite"),
        (_token("decision_type", "12"), "missing type"),
        (_token("decision_type", "-3"), "decision_type"),
        (lambda s: _token("decision_type", "1")(_valid_text("reg")), "num_cat=0"),
        (lambda s: _token("threshold", "nan")(_valid_text("reg")), "NaN threshold"),
        (_token("threshold", "7.5"), "set index"),
        (_token("threshold", "abc"), "threshold"),
        (_token("num_leaves", "0"), "num_leaves"),
        (_token("num_leaves", "3"), "entries"),
        (_token("cat_boundaries", "5"), "cat_boundaries"),
        (_token("cat_threshold", "-1"), "cat_threshold"),
        (_token("tree_sizes", "1 2"), "tree_sizes"),
        (lambda s: s.replace("Tree=1\n", "Tree=5\n", 1), "numbered"),
        (_token("is_linear", "1"), "linear"),
        (lambda s: s.replace("num_tree_per_iteration=1", "num_tree_per_iteration=5"), "multiple"),
        (lambda s: s.replace("num_leaves=", "num_leaves=4\nnum_leaves=", 1), "twice"),
    ],
)
def test_malformed_text_raises_value_error(mutate, message):
    with pytest.raises(ValueError, match=message):
        core_model.parse_lightgbm_text(mutate(_valid_text()), -1)


def test_random_corruptions_never_crash():
    """Random byte / token corruptions: either a valid arena or ValueError, never a crash."""
    text = _valid_text()
    rng = random.Random(0)
    lines = text.split("\n")
    tokens = ["-1", "0", "1", "3", "99", "-99", "2147483648", "nan", "inf", "1e308", "", "x", "=", "Tree=0", "8", "10"]
    outcomes = {"ok": 0, "error": 0}
    for _ in range(300):
        ls = list(lines)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(ls))
            if "=" in ls[i] and rng.random() < 0.8:
                key, _, val = ls[i].partition("=")
                parts = val.split(" ")
                parts[rng.randrange(len(parts))] = rng.choice(tokens)
                ls[i] = key + "=" + " ".join(parts)
            else:
                del ls[i]
        try:
            arena, _ = core_model.parse_lightgbm_text("\n".join(ls), -1)
            arena.predict(np.zeros((2, arena.n_features)), 0)
            outcomes["ok"] += 1
        except ValueError:
            outcomes["error"] += 1
    assert outcomes["error"] > 100


def test_parse_argument_types():
    with pytest.raises(TypeError, match="data"):
        core_model.parse_lightgbm_text(12, -1)
    text = _valid_text()
    a1, meta = core_model.parse_lightgbm_text(text, -1)
    a2, _ = core_model.parse_lightgbm_text(text.encode(), -1)
    assert a1.n_nodes == a2.n_nodes and meta.n_iterations == 12
    a3, meta3 = core_model.parse_lightgbm_text(text, 5)
    assert a3.n_trees == 5 and meta3.n_iterations_used == 5
    with pytest.raises(ValueError, match="iterations"):
        core_model.parse_lightgbm_text(text, 13)


def test_path_that_is_not_a_model(tmp_path):
    p = tmp_path / "junk.txt"
    p.write_text("not a model\n")
    with pytest.raises(ValueError, match="not a recognised model file"):
        pgexact.load(str(p))
    assert os.path.exists(p)
