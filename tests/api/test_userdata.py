"""Data as users have it: DataFrames, categories, missing values, sparse input, class labels.

1. pandas ``category`` columns read as each library reads them at predict time (XGBoost's
   stored categories, LightGBM's ``pandas_categorical``, HistGradientBoosting's encoder), by the
   exact functions, ``mc``, ``openxai``, the ``Explainer`` and ``dask`` alike; exact PG² on a
   categorical frame equals the enumeration of the perturbed categories through the library's
   own ``predict`` on the frame.
2. NaN refused for a model whose own predict refuses it, naming ``X``, the column and the row.
3. Class labels of binary boosted classifiers.
8. ``xgboost.DMatrix`` and SciPy sparse rows, read as the model's library reads them.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import pgexact
from pgexact.noise import categorical

pd = pytest.importorskip("pandas")
xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
sp = pytest.importorskip("scipy.sparse")
from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor,  # noqa: E402
                              HistGradientBoostingRegressor, RandomForestClassifier,
                              RandomForestRegressor)

HOUSING = "/work/shared/datasets/california_housing.csv"
NTHREAD = 2


def _housing(n=2500, seed=0):
    if os.path.isfile(HOUSING):
        df = pd.read_csv(HOUSING).sample(n, random_state=seed)
    else:  # pragma: no cover - the shipped data is part of the project
        pytest.skip("shipped housing data not found")
    df["ocean_proximity"] = df["ocean_proximity"].astype("category")
    y = df.pop("median_house_value") / 1e5
    return df, y


@pytest.fixture(scope="module")
def housing():
    X, y = _housing()
    return X, y


def _raw(kind, model, X):
    """The library's own raw output on X (a DataFrame with category columns)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "xgboost":
            return np.asarray(model.predict(X, output_margin=True), dtype=np.float64)
        if kind == "lightgbm":
            return np.asarray(model.predict(X, raw_score=True), dtype=np.float64)
        return np.asarray(model.predict(X), dtype=np.float64)


def _fit(kind, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "xgboost":
            return xgb.XGBRegressor(n_estimators=12, max_depth=4, enable_categorical=True,
                                    tree_method="hist", nthread=NTHREAD, random_state=0).fit(X, y)
        if kind == "lightgbm":
            return lgb.LGBMRegressor(n_estimators=12, num_leaves=15, min_child_samples=5,
                                     verbose=-1, n_jobs=NTHREAD, random_state=0).fit(X, y)
        return HistGradientBoostingRegressor(max_iter=12, categorical_features="from_dtype",
                                             random_state=0).fit(X, y)


KINDS = ["xgboost", "lightgbm", "hist_gradient_boosting"]


@pytest.fixture(scope="module", params=KINDS)
def catmodel(request, housing):
    X, y = housing
    return request.param, _fit(request.param, X, y)


def _scrambled(frame):
    """The same rows, columns reversed and the categories listed in another order."""
    out = frame[frame.columns[::-1]].copy()
    cats = list(frame["ocean_proximity"].cat.categories)
    out["ocean_proximity"] = out["ocean_proximity"].cat.reorder_categories(cats[::-1])
    return out


# ------------------------------------------------------------------- 1. category columns
def test_category_frame_predicts_as_the_library(catmodel, housing):
    kind, model = catmodel
    X, _ = housing
    rows = X.iloc[:200]
    ref = _raw(kind, model, rows)
    rtol = 1e-6 if kind == "xgboost" else 1e-12  # XGBoost returns float32 margins
    ens = pgexact.load(model)
    np.testing.assert_allclose(ens.predict(rows), ref, rtol=rtol, atol=rtol * np.abs(ref).max())
    np.testing.assert_allclose(ens.predict(_scrambled(rows)), ref, rtol=rtol,
                               atol=rtol * np.abs(ref).max())


def test_results_do_not_depend_on_column_or_category_order(catmodel, housing):
    kind, model = catmodel
    X, _ = housing
    rows = X.iloc[:6]
    a = pgexact.pgi2(model, rows, sigma=0.3)
    b = pgexact.pgi2(model, _scrambled(rows), sigma=0.3)
    assert np.array_equal(a, b)
    assert np.all(np.isfinite(a)) and np.all(a > 0)


def _enumerate_pg2(kind, model, row, column, categories, p):
    """PG²(x, {column}) under categorical(p) noise uniform over ``categories``, enumerated
    through the library's own predict on DataFrames holding the categories themselves."""
    base = _raw(kind, model, row)[0]
    w = np.full(len(categories), 1.0 / len(categories))
    total = 0.0
    for c, wc in zip(categories, w):
        moved = row.copy()
        moved[column] = pd.Categorical([c], categories=row[column].cat.categories)
        total += p * wc * (_raw(kind, model, moved)[0] - base) ** 2
    return total  # keeping x_j (probability 1 - p) adds 0


def test_exact_pg2_on_category_frame_equals_enumeration_through_library_predict(catmodel,
                                                                                 housing):
    kind, model = catmodel
    X, _ = housing
    cats = list(X["ocean_proximity"].cat.categories)
    codes = list(range(len(cats)))  # every library here reads housing's strings as codes
    j = list(X.columns).index("ocean_proximity")
    noise = [None] * X.shape[1]
    noise[j] = categorical(0.4, codes)
    rows = X.iloc[[0, 3, 7, 11, 19]]
    exact = pgexact.pg2(model, rows, features=["ocean_proximity"], noise=noise, sigma=0.3)
    for i in range(len(rows)):
        ref = _enumerate_pg2(kind, model, rows.iloc[[i]], "ocean_proximity", cats, 0.4)
        rtol = 1e-5 if kind == "xgboost" else 1e-10  # XGBoost's predict is float32
        np.testing.assert_allclose(exact[i], ref, rtol=rtol, atol=1e-12)
    assert np.any(exact > 0)


def test_every_entry_point_reads_category_frames(catmodel, housing):
    kind, model = catmodel
    X, _ = housing
    rows = X.iloc[:4]
    exact = pgexact.pgi2(model, rows, sigma=0.3)
    ex = pgexact.Explainer(model, sigma=0.3)(rows)
    assert np.array_equal(ex.pgi2, exact)
    ranking = pgexact.rank(model, rows, sigma=0.3)
    est = pgexact.mc.pgi2(model, rows, ranking, sigma=0.3, n_samples=3000, seed=0)
    np.testing.assert_allclose(est, exact, rtol=0.25)
    gap = pgexact.openxai.pgi(model, rows, np.ones((4, X.shape[1])), k=2, sigma=0.3)
    assert np.all(np.isfinite(gap))


def test_dask_reads_category_frames(catmodel, housing):
    dd = pytest.importorskip("dask.dataframe")
    import pgexact.dask as pgd

    kind, model = catmodel
    X, _ = housing
    rows = X.iloc[:8]
    ens = pgexact.load(model)
    lazy = pgd.pgi2(ens, dd.from_pandas(rows, npartitions=2, sort=False), sigma=0.3)
    assert np.array_equal(lazy.compute(scheduler="synchronous"),
                          pgexact.pgi2(ens, rows, sigma=0.3))


def test_unseen_categories_route_as_the_library_routes_them(catmodel, housing):
    kind, model = catmodel
    X, _ = housing
    rows = X.iloc[:3].copy()
    cats = list(X["ocean_proximity"].cat.categories)
    rows["ocean_proximity"] = pd.Categorical(["NOWHERE", cats[1], None], categories=cats + ["NOWHERE"])
    if kind == "xgboost":
        with pytest.raises(Exception):
            _raw(kind, model, rows)  # XGBoost refuses a category it never saw
        with pytest.raises(ValueError, match=r"^X: row 0, column 'ocean_proximity': category 'NOWHERE'"):
            pgexact.pgi2(model, rows, sigma=0.3)
        return
    ref = _raw(kind, model, rows)  # LightGBM and scikit-learn: unseen is missing
    np.testing.assert_allclose(pgexact.load(model).predict(rows), ref, rtol=1e-12, atol=1e-12)


def test_category_column_the_model_reads_as_numbers_is_refused(housing):
    X, y = housing
    numeric = X.assign(ocean_proximity=X["ocean_proximity"].cat.codes)
    model = xgb.XGBRegressor(n_estimators=3, max_depth=3, nthread=NTHREAD).fit(numeric, y)
    with pytest.raises(TypeError, match=r"^X: column 'ocean_proximity' is a pandas category"):
        pgexact.pgi2(model, X.iloc[:3], sigma=0.3)


def test_lightgbm_frame_category_columns_matched_in_order_or_codes(housing):
    X, y = housing
    model = _fit("lightgbm", X, y)
    # numeric columns hold the codes, as a numpy array does for LightGBM's own predict
    codes = X.iloc[:30].assign(ocean_proximity=X["ocean_proximity"].cat.codes[:30])
    arr = codes.to_numpy(dtype=np.float64)
    ref = model.predict(arr, raw_score=True)
    np.testing.assert_allclose(pgexact.load(model).predict(arr), ref, rtol=1e-12)
    np.testing.assert_allclose(pgexact.load(model).predict(codes), ref, rtol=1e-12)
    # a frame with another number of category columns than the model's pandas_categorical is
    # refused, as LightGBM refuses it
    two = X.iloc[:3].assign(longitude=X["longitude"].iloc[:3].astype("category"))
    with pytest.raises(ValueError):
        model.predict(two)
    with pytest.raises(ValueError, match=r"^X: this LightGBM model was trained on 1 pandas category"):
        pgexact.pgi2(model, two, sigma=0.3)


def test_lightgbm_model_file_with_pandas_categorical(housing, tmp_path):
    X, y = housing
    model = _fit("lightgbm", X, y)
    path = tmp_path / "lgb.txt"
    model.booster_.save_model(str(path))
    rows = X.iloc[:50]
    np.testing.assert_allclose(pgexact.load(str(path)).predict(rows),
                               _raw("lightgbm", model, rows), rtol=1e-12)


def test_xgboost_json_file_keeps_its_categories(housing, tmp_path):
    X, y = housing
    model = _fit("xgboost", X, y)
    path = tmp_path / "xgb.json"
    model.save_model(path)
    rows = _scrambled(X.iloc[:50])
    ref = _raw("xgboost", model, X.iloc[:50])
    np.testing.assert_allclose(pgexact.load(str(path)).predict(rows), ref, rtol=1e-6)


def test_hist_gradient_boosting_numeric_categories_from_dtype():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.normal(size=600),
                      "b": pd.Categorical(rng.choice([3, 7, 11, 20], 600))})
    y = X["a"] + (X["b"].astype(int) == 7) * 2.0 - (X["b"].astype(int) == 20)
    model = HistGradientBoostingRegressor(max_iter=8, categorical_features="from_dtype").fit(X, y)
    rows = X.iloc[:40]
    np.testing.assert_allclose(pgexact.load(model).predict(rows), model.predict(rows), rtol=1e-12)
    unseen = rows.copy()
    unseen["b"] = pd.Categorical(rng.choice([3, 5, 11], 40))
    np.testing.assert_allclose(pgexact.load(model).predict(unseen), model.predict(unseen),
                               rtol=1e-12)


# ------------------------------------------------------------------- 2. missing values
@pytest.fixture(scope="module")
def nan_rows():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] + X[:, 1] * X[:, 2]
    rows = X[:6].copy()
    rows[4, 2] = np.nan
    return X, y, rows


@pytest.mark.parametrize("cls", [GradientBoostingRegressor, GradientBoostingClassifier])
def test_nan_refused_where_the_library_refuses_it(cls, nan_rows):
    X, y, rows = nan_rows
    target = y if cls is GradientBoostingRegressor else (y > 0)
    model = cls(n_estimators=5, max_depth=2, random_state=0).fit(X, target)
    with pytest.raises(ValueError):
        model.predict(rows)  # the library itself
    msg = r"^X: row 4, column 2 is missing \(NaN\), and " + cls.__name__
    for call in (lambda: pgexact.pgi2(model, rows, sigma=0.3),
                 lambda: pgexact.pg2(model, rows, [0], sigma=0.3),
                 lambda: pgexact.load(model).predict(rows),
                 lambda: pgexact.Explainer(model, sigma=0.3)(rows),
                 lambda: pgexact.mc.pgi2(model, rows, np.arange(4), n_samples=4, seed=0)):
        with pytest.raises(ValueError, match=msg):
            call()
    all_nan = np.full((1, 4), np.nan)  # used to give 0.0
    with pytest.raises(ValueError, match=r"^X: row 0, column 0 is missing"):
        pgexact.pgi2(model, all_nan, sigma=0.3)
    frame = pd.DataFrame(rows, columns=["a", "b", "c", "d"])
    named = cls(n_estimators=5, max_depth=2, random_state=0).fit(
        pd.DataFrame(X, columns=["a", "b", "c", "d"]), target)
    with pytest.raises(ValueError, match=r"^X: row 4, column 'c' is missing"):
        pgexact.pgi2(named, frame[["d", "c", "b", "a"]], sigma=0.3)


def test_nan_kept_where_the_installed_library_routes_it(nan_rows):
    X, y, rows = nan_rows
    forest = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
    routed = True
    try:
        ref = forest.predict(rows)
    except ValueError:
        routed = False
    if routed:  # scikit-learn >= 1.4: trees route NaN, and pgexact follows
        np.testing.assert_allclose(pgexact.load(forest).predict(rows), ref, rtol=1e-12)
        assert np.all(np.isfinite(pgexact.pgi2(forest, rows, sigma=0.3)))
    else:  # pragma: no cover - older scikit-learn
        with pytest.raises(ValueError, match=r"^X: row 4, column 2 is missing"):
            pgexact.pgi2(forest, rows, sigma=0.3)
    hist = HistGradientBoostingRegressor(max_iter=5).fit(X, y)
    np.testing.assert_allclose(pgexact.load(hist).predict(rows), hist.predict(rows), rtol=1e-12)


def test_loaded_ensemble_keeps_the_policy_through_pickle(nan_rows):
    import pickle

    X, y, rows = nan_rows
    model = GradientBoostingRegressor(n_estimators=3, max_depth=2).fit(X, y)
    ens = pickle.loads(pickle.dumps(pgexact.load(model)))
    with pytest.raises(ValueError, match=r"^X: row 4, column 2 is missing"):
        pgexact.pgi2(ens, rows, sigma=0.3)


# ------------------------------------------------------------------- 3. binary class labels
@pytest.fixture(scope="module")
def binary12():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    y = np.where(X[:, 0] + X[:, 1] > 0, 2, 1)
    return X, y


BOOSTED = {
    "lightgbm": lambda: lgb.LGBMClassifier(n_estimators=5, verbose=-1, n_jobs=NTHREAD),
    "xgboost": lambda: xgb.XGBClassifier(n_estimators=5, max_depth=3, nthread=NTHREAD),
    "gradient_boosting": lambda: GradientBoostingClassifier(n_estimators=5, max_depth=2),
    "hist_gradient_boosting": lambda: __import__("sklearn.ensemble", fromlist=["x"])
    .HistGradientBoostingClassifier(max_iter=5),
}


# XGBClassifier itself refuses labels other than 0..K-1: its label rules are in test_multiclass
@pytest.mark.parametrize("kind", [k for k in BOOSTED if k != "xgboost"])
def test_binary_boosted_classifier_takes_its_positive_label(kind, binary12):
    X, y = binary12
    model = BOOSTED[kind]().fit(X, y)
    assert list(model.classes_) == [1, 2]
    rows = X[:5]
    default = pgexact.pgi2(model, rows, sigma=0.3)
    assert np.array_equal(pgexact.pgi2(model, rows, sigma=0.3, output=2), default)
    assert np.array_equal(pgexact.pgi2(model, rows, sigma=0.3, output=pgexact.ClassLabel(2)),
                          default)
    assert np.array_equal(pgexact.pgi2(model, rows, sigma=0.3,
                                       output=pgexact.ClassPosition(0)), default)
    with pytest.raises(ValueError, match=r"^output: 1 is the negative class.*pass output=2"):
        pgexact.pgi2(model, rows, sigma=0.3, output=1)
    with pytest.raises(ValueError, match=r"^output: 0 is not a class label.*ClassPosition\(0\)"):
        pgexact.pgi2(model, rows, sigma=0.3, output=0)  # used to mean the margin of class 2
    est = pgexact.mc.pgi2(model, rows, np.arange(4), sigma=0.3, output=2, n_samples=10, seed=0)
    assert est.shape == (5,)
    with pytest.raises(ValueError, match=r"^output: 1 is the negative class"):
        pgexact.mc.pgi2(model, rows, np.arange(4), sigma=0.3, output=1, n_samples=10, seed=0)


def test_forest_labels_unchanged(binary12):
    X, y = binary12
    forest = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
    np.testing.assert_allclose(pgexact.load(forest, output=2).predict(X[:5]),
                               forest.predict_proba(X[:5])[:, 1], rtol=1e-12)
    np.testing.assert_allclose(pgexact.load(forest, output=pgexact.ClassLabel(1)).predict(X[:5]),
                               forest.predict_proba(X[:5])[:, 0], rtol=1e-12)
    with pytest.raises(ValueError, match=r"^output: 1 is both a class label"):
        pgexact.load(forest, output=1)


# ------------------------------------------------------------------- 8. DMatrix and sparse
@pytest.fixture(scope="module")
def sparse_data():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 5))
    X[rng.random(X.shape) < 0.45] = 0.0
    y = X[:, 0] + X[:, 1] * X[:, 2] + (X[:, 3] == 0)
    return X, y


def test_xgboost_reads_absent_sparse_entries_as_missing(sparse_data):
    X, y = sparse_data
    model = xgb.XGBRegressor(n_estimators=8, max_depth=4, nthread=NTHREAD).fit(sp.csr_matrix(X), y)
    rows = X[:60]
    S = sp.csr_matrix(rows)
    ref = model.predict(S, output_margin=True)
    ens = pgexact.load(model)
    np.testing.assert_allclose(ens.predict(S), ref, rtol=1e-6, atol=1e-6)
    # absent is missing, not zero: the dense zeros route differently
    assert not np.allclose(model.predict(rows, output_margin=True), ref)
    as_nan = np.where(rows == 0, np.nan, rows)
    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        assert np.array_equal(pgexact.pgi2(model, fmt(rows), sigma=0.3),
                              pgexact.pgi2(model, as_nan, sigma=0.3))
    est = pgexact.mc.pg2(model, S[:3], [0, 1], sigma=0.3, n_samples=2000, seed=0)
    np.testing.assert_allclose(est, pgexact.pg2(model, S[:3], [0, 1], sigma=0.3), rtol=0.3,
                               atol=1e-9)


def test_xgboost_dmatrix_names_and_missing_value(sparse_data):
    X, y = sparse_data
    names = ["a", "b", "c", "d", "e"]
    train = xgb.DMatrix(pd.DataFrame(X, columns=names), label=y, missing=0.0)
    booster = xgb.train({"max_depth": 3, "nthread": NTHREAD}, train, 6)
    rows = pd.DataFrame(X[:40], columns=names)
    dm = xgb.DMatrix(rows, missing=0.0)  # 0.0 is its missing value
    ref = booster.predict(dm, output_margin=True)
    np.testing.assert_allclose(pgexact.load(booster).predict(dm), ref, rtol=1e-6, atol=1e-6)
    # a DMatrix stores float32 values: the same rows rounded to float32, 0.0 missing
    stored = rows.astype(np.float32).astype(np.float64).replace(0.0, np.nan)
    assert np.array_equal(pgexact.pgi2(booster, dm, sigma=0.3),
                          pgexact.pgi2(booster, stored, sigma=0.3))
    # its feature names are matched by name
    rev = xgb.DMatrix(rows[names[::-1]], missing=0.0)
    np.testing.assert_allclose(pgexact.load(booster).predict(rev), ref, rtol=1e-6, atol=1e-6)
    ex = pgexact.Explainer(booster, sigma=0.3)(dm)
    assert ex.feature_names == names


def test_lightgbm_and_sklearn_read_absent_sparse_entries_as_zero(sparse_data):
    X, y = sparse_data
    rows = sp.csr_matrix(X[:50])
    lgbm = lgb.LGBMRegressor(n_estimators=6, verbose=-1, n_jobs=NTHREAD).fit(X, y)
    np.testing.assert_allclose(pgexact.load(lgbm).predict(rows), lgbm.predict(rows, raw_score=True),
                               rtol=1e-12)
    forest = RandomForestRegressor(n_estimators=3, max_depth=4, random_state=0).fit(X, y)
    np.testing.assert_allclose(pgexact.load(forest).predict(rows), forest.predict(rows), rtol=1e-12)
    gb = GradientBoostingRegressor(n_estimators=4, max_depth=2).fit(X, y)
    np.testing.assert_allclose(pgexact.load(gb).predict(rows), gb.predict(rows), rtol=1e-12)


def test_sparse_and_dmatrix_refused_where_the_library_refuses_them(sparse_data):
    X, y = sparse_data
    hist = HistGradientBoostingRegressor(max_iter=4).fit(X, y)
    with pytest.raises(TypeError):
        hist.predict(sp.csr_matrix(X[:3]))
    with pytest.raises(TypeError, match=r"^X: HistGradientBoostingRegressor does not read sparse"):
        pgexact.pgi2(hist, sp.csr_matrix(X[:3]), sigma=0.3)
    lgbm = lgb.LGBMRegressor(n_estimators=3, verbose=-1).fit(X, y)
    with pytest.raises(TypeError, match=r"^X: an xgboost.DMatrix is read by XGBoost models only"):
        pgexact.pgi2(lgbm, xgb.DMatrix(X[:3]), sigma=0.3)


# ------------------------------------------------------------------- the README's example
def test_readme_your_data_example_runs():
    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "README.md")
    text = open(readme, encoding="utf-8").read()
    section = text[text.index("## Your data"):]
    code = section[section.index("```python") + len("```python"):]
    code = code[:code.index("```")]
    if not os.path.isfile(HOUSING):  # pragma: no cover
        pytest.skip("shipped housing data not found")
    code = code.replace("../shared/datasets/", os.path.dirname(HOUSING) + "/")
    scope: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no sigma warning on the shipped data
        exec(compile(code, "README.md", "exec"), scope)
    model, X_test = scope["model"], scope["X_test"]
    np.testing.assert_allclose(pgexact.load(model).predict(X_test),
                               model.predict(X_test, output_margin=True), rtol=1e-6)
    assert X_test["ocean_proximity"].dtype == "category"


@pytest.mark.parametrize("kind", KINDS)
def test_exact_pg2_of_two_category_columns_equals_enumeration(kind):
    """Two category columns (text and numbers, listed in another order in the rows), both
    perturbed: PG² equals the sum over every pair of drawn categories of the library's own
    prediction on the frame holding them."""
    import itertools

    rng = np.random.default_rng(5)
    n = 1500
    colour = rng.choice(["red", "green", "blue", "grey"], n)
    size = rng.choice([2, 5, 9], n)
    X = pd.DataFrame({"x": rng.normal(size=n),
                      "colour": pd.Categorical(colour, categories=["red", "green", "blue", "grey"]),
                      "size": pd.Categorical(size, categories=[2, 5, 9])})
    y = X["x"] + 2.0 * (colour == "green") - (colour == "grey") + 0.5 * size * (colour != "red")
    model = _fit(kind, X, y)
    rows = X.iloc[:4].copy()
    rows["colour"] = rows["colour"].cat.reorder_categories(["grey", "blue", "green", "red"])
    p = {"colour": 0.5, "size": 0.3}
    cats = {"colour": ["red", "green", "blue", "grey"], "size": [2, 5, 9]}
    # the numbers each library reads: codes, or HistGradientBoosting's numeric values
    codes = {"colour": [0, 1, 2, 3], "size": [2, 5, 9] if kind == "hist_gradient_boosting" else [0, 1, 2]}
    noise = [None, categorical(p["colour"], codes["colour"]), categorical(p["size"], codes["size"])]
    exact = pgexact.pg2(model, rows, features=["colour", "size"], noise=noise, sigma=0.3)
    for i in range(len(rows)):
        row = rows.iloc[[i]]
        base = _raw(kind, model, row)[0]
        total = 0.0
        options = {c: [(row[c].iloc[0], 1 - p[c])] + [(v, p[c] / len(cats[c])) for v in cats[c]]
                   for c in ("colour", "size")}
        for (a, pa), (b, pb) in itertools.product(options["colour"], options["size"]):
            moved = row.copy()
            moved["colour"] = pd.Categorical([a], categories=row["colour"].cat.categories)
            moved["size"] = pd.Categorical([b], categories=row["size"].cat.categories)
            total += pa * pb * (_raw(kind, model, moved)[0] - base) ** 2
        rtol = 1e-5 if kind == "xgboost" else 1e-10
        np.testing.assert_allclose(exact[i], total, rtol=rtol, atol=1e-12)
    assert np.all(exact > 0)
