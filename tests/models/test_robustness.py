"""Hostile inputs: bad arguments, malformed and mutated model files, deep trees, threads.

* A table of bad arguments for every public function, each with the exception type and a
  message that names the argument.
* Hand-made hostile model files (cycles, shared children, ids and features out of range,
  non-finite values, duplicated keys, deep nesting, memory bombs) each refused with ValueError.
* Seeded random mutations of real XGBoost JSON / UBJSON, LightGBM text and serialised arenas,
  loaded in a subprocess (tests/_mutation_driver.py) so that a crash fails the test instead of
  killing pytest: every mutant loads or raises ValueError.
* Deep trees: scikit-learn trees of depth 57 and 1099, and synthetic chains up to the depth
  limit, predict like scikit-learn and give the reference kernel's PG2.
* Threads: concurrent calls on one TreeEnsemble agree; results are bit-identical for any n_jobs.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import pgexact
from pgexact._core import exact as core_exact
from pgexact._core import model as core_model
from pgexact._core.exact import Kernel, Perturbation

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/, with the helpers
D = 5


# ----------------------------------------------------------------------------- models
@pytest.fixture(scope="module")
def xgb_reg():
    import xgboost as xgb

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, D))
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=300)
    return xgb.XGBRegressor(n_estimators=6, max_depth=3, nthread=1, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def xgb_named():
    import pandas as pd
    import xgboost as xgb

    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(200, D)), columns=["a", "b", "c", "d", "e"])
    return xgb.XGBRegressor(n_estimators=3, max_depth=2, nthread=1, random_state=0).fit(X, X["a"] - X["b"])


@pytest.fixture(scope="module")
def xgb_multi():
    import xgboost as xgb

    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, D))
    return xgb.XGBClassifier(n_estimators=2, max_depth=2, nthread=1, random_state=0).fit(X, np.digitize(X[:, 0], [-0.5, 0.5]))


@pytest.fixture(scope="module")
def lgb_categorical():
    import lightgbm as lgb

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, D))
    X[:, 2] = rng.integers(0, 6, size=400)
    y = X[:, 0] + (X[:, 2] % 3)
    return lgb.train(dict(num_leaves=6, min_data_in_leaf=5, verbose=-1, num_threads=1, min_data_per_group=5),
                     lgb.Dataset(X, y, categorical_feature=[2]), num_boost_round=4)


X4 = np.random.default_rng(7).normal(size=(4, D))
X4[1, 3] = np.nan


# ----------------------------------------------------------------------------- argument table
def _df(columns):
    import pandas as pd

    return pd.DataFrame(X4, columns=columns)


# (id, model fixture, call, expected exception, match): `call(model)` must raise.
BAD_ARGUMENTS = [
    # X
    ("X_1d", "xgb_reg", lambda m: pgexact.pg2(m, X4[0], [0]), ValueError, r"\bX\b.*2-D.*X\[None, :\]"),
    ("X_3d", "xgb_reg", lambda m: pgexact.pg2(m, X4[None], [0]), ValueError, r"\bX\b.*2-D"),
    ("X_scalar", "xgb_reg", lambda m: pgexact.rank(m, 1.0), ValueError, r"\bX\b"),
    ("X_none", "xgb_reg", lambda m: pgexact.pg2(m, None, [0]), ValueError, r"\bX\b"),
    ("X_columns", "xgb_reg", lambda m: pgexact.pg2(m, np.zeros((2, D + 1)), [0]), ValueError, r"\bX\b.*5 columns"),
    ("X_strings", "xgb_reg", lambda m: pgexact.pg2(m, np.full((2, D), "a"), [0]), TypeError, r"\bX\b.*numeric"),
    ("X_inf", "xgb_reg", lambda m: pgexact.expected(m, np.where(np.arange(D) == 2, np.inf, X4), [0]), ValueError,
     r"\bX\b.*infinite.*row 0, column 2"),
    ("X_neg_inf_predict", "xgb_reg", lambda m: pgexact.load(m).predict(np.full((1, D), -np.inf)), ValueError,
     r"\bX\b.*infinite"),
    ("X_complex", "xgb_reg", lambda m: pgexact.pg2(m, X4 + 1j, [0]), TypeError, r"\bX\b.*complex"),
    ("X_dict", "xgb_reg", lambda m: pgexact.pg2(m, {"a": 1}, [0]), TypeError, r"\bX\b"),
    ("X_ragged", "xgb_reg", lambda m: pgexact.pg2(m, [[1.0, 2.0], [3.0]], [0]), TypeError, r"\bX\b"),
    # issue 29: sparse rows are read as the library reads them; a wrong shape is still refused
    ("X_sparse", "xgb_reg", lambda m: pgexact.pg2(m, __import__("scipy.sparse").sparse.csr_matrix(X4[:, :3]), [0]),
     ValueError, r"\bX\b.*columns"),
    ("X_df_names", "xgb_named", lambda m: pgexact.pg2(m, _df(["a", "b", "c", "d", "zz"]), [0]), ValueError,
     r"\bX\b.*feature names.*zz|\bX\b.*'e'"),
    ("X_df_text", "xgb_reg", lambda m: pgexact.pg2(m, _df(list("abcde")).astype(str).assign(a="x"), [0]),
     TypeError, r"\bX\b.*numeric"),
    ("X_predict", "xgb_reg", lambda m: pgexact.load(m).predict(np.zeros((2, 3))), ValueError, r"\bX\b"),
    ("X_apply", "xgb_reg", lambda m: pgexact.load(m).apply("abc"), TypeError, r"\bX\b"),
    ("X_explainer", "xgb_reg", lambda m: pgexact.Explainer(m)(np.zeros((2, 3))), ValueError, r"\bX\b"),
    # sigma
    ("sigma_zero", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], sigma=0.0), ValueError, "sigma"),
    ("sigma_negative", "xgb_reg", lambda m: pgexact.pgi2(m, X4, sigma=-1.0), ValueError, "sigma"),
    ("sigma_nan", "xgb_reg", lambda m: pgexact.rank(m, X4, sigma=np.nan), ValueError, "sigma"),
    ("sigma_inf", "xgb_reg", lambda m: pgexact.expected(m, X4, [0], sigma=np.inf), ValueError, "sigma"),
    ("sigma_short", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], sigma=[0.3, 0.3]), ValueError, r"sigma.*\(5,\)"),
    ("sigma_2d", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], sigma=np.ones((D, 1))), ValueError, "sigma"),
    ("sigma_vec_nan", "xgb_reg", lambda m: pgexact.pg2_curve(m, X4, np.arange(D), sigma=[0.3, np.nan, 0.3, 0.3, 0.3]),
     ValueError, "sigma"),
    ("sigma_str", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], sigma="0.3"), TypeError, "sigma"),
    ("sigma_none", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], sigma=None), TypeError, "sigma"),
    ("sigma_bool", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], sigma=True), TypeError, "sigma"),
    ("sigma_complex", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], sigma=1j), TypeError, "sigma"),
    ("sigma_explainer", "xgb_reg", lambda m: pgexact.Explainer(m, sigma=-1), ValueError, "sigma"),
    ("sigma_infidelity", "xgb_reg", lambda m: pgexact.infidelity(m, X4, np.ones((4, D)), sigma=0), ValueError, "sigma"),
    # noise
    ("noise_unknown", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], noise="cauchy"), ValueError, r"noise.*cauchy"),
    ("noise_int", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], noise=3), TypeError, "noise"),
    ("noise_none", "xgb_reg", lambda m: pgexact.pgu2(m, X4, noise=None), TypeError, "noise"),
    ("noise_callable", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], noise=lambda x: x), TypeError, "noise"),
    ("noise_list_short", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], noise=["normal"]), ValueError, "noise"),
    ("noise_list_item", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], noise=["normal"] * 4 + ["x"]), ValueError,
     r"noise\[4\]"),
    ("noise_explainer", "xgb_reg", lambda m: pgexact.Explainer(m, noise="x"), ValueError, "noise"),
    # features
    ("features_duplicate", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0, 0]), ValueError, r"features.*twice"),
    # issue 16: negative positions are refused, not read as counting from the end
    ("features_duplicate_negative", "xgb_reg", lambda m: pgexact.pg2(m, X4, [4, -1]), ValueError,
     r"features: feature index -1 is out of range.*negative"),
    ("features_out_of_range", "xgb_reg", lambda m: pgexact.pg2(m, X4, [5]), ValueError, r"features.*out of range"),
    ("features_negative", "xgb_reg", lambda m: pgexact.expected(m, X4, [-6]), ValueError, r"features.*out of range"),
    ("features_huge", "xgb_reg", lambda m: pgexact.pg2(m, X4, [2**70]), ValueError, r"features.*out of range"),
    ("features_unknown_name", "xgb_named", lambda m: pgexact.pg2(m, X4, ["a", "zz"]), ValueError,
     r"features.*unknown.*'zz'"),
    ("features_name_no_names", "xgb_reg", lambda m: pgexact.pg2(m, X4, ["a"]), ValueError,
     r"features.*no feature names"),
    ("features_duplicate_name", "xgb_named", lambda m: pgexact.pg2(m, X4, ["a", "b", "a"]), ValueError,
     r"features.*twice"),
    ("features_name_and_index", "xgb_named", lambda m: pgexact.pg2(m, X4, ["a", 0]), ValueError, r"features.*twice"),
    ("features_float", "xgb_reg", lambda m: pgexact.pg2(m, X4, [1.0]), TypeError, "features"),
    ("features_none", "xgb_reg", lambda m: pgexact.pg2(m, X4, None), TypeError, "features"),
    ("features_bool", "xgb_reg", lambda m: pgexact.pg2(m, X4, [True]), ValueError, r"features.*boolean mask"),
    ("features_bool_scalar", "xgb_reg", lambda m: pgexact.pg2(m, X4, np.True_), ValueError, "features"),
    ("features_mask_shape", "xgb_reg", lambda m: pgexact.pg2(m, X4, np.ones(4, bool)), ValueError, "features"),
    ("features_mask_rows", "xgb_reg", lambda m: pgexact.pg2(m, X4, np.ones((3, D), bool)), ValueError, "features"),
    ("features_nested", "xgb_reg", lambda m: pgexact.pg2(m, X4, [[0, 1]]), ValueError, "features"),
    ("noise_additive_on_categorical", "lgb_categorical",
     lambda m: pgexact.pg2(m, X4, [2], noise=["normal"] * D), ValueError, r"^noise\[2\]: .*by category"),
    # ranking
    ("ranking_duplicate", "xgb_reg", lambda m: pgexact.pg2_curve(m, X4, [0, 0, 1, 2, 3]), ValueError,
     r"ranking.*permutation"),
    ("ranking_out_of_range", "xgb_reg", lambda m: pgexact.pgi2(m, X4, [0, 1, 2, 3, 5]), ValueError,
     r"ranking.*permutation"),
    ("ranking_negative", "xgb_reg", lambda m: pgexact.pgu2(m, X4, [-1, 1, 2, 3, 4]), ValueError,
     r"ranking.*permutation"),
    ("ranking_short", "xgb_reg", lambda m: pgexact.pgi2(m, X4, [0, 1, 2, 3]), ValueError, r"ranking.*shape"),
    ("ranking_long", "xgb_reg", lambda m: pgexact.pg2_curve(m, X4, np.arange(6)), ValueError, r"ranking.*shape"),
    ("ranking_rows", "xgb_reg", lambda m: pgexact.pg2_curve(m, X4, np.tile(np.arange(D), (3, 1))), ValueError,
     r"ranking.*shape"),
    ("ranking_3d", "xgb_reg", lambda m: pgexact.pg2_curve(m, X4, np.zeros((1, 4, D), int)), ValueError,
     r"ranking.*shape"),
    ("ranking_bad_row", "xgb_reg", lambda m: pgexact.pgi2(m, X4, np.vstack([np.arange(D)] * 3 + [[0, 1, 2, 3, 3]])),
     ValueError, r"ranking.*row 3"),
    ("ranking_float", "xgb_reg", lambda m: pgexact.pg2_curve(m, X4, np.arange(D) + 0.5), TypeError, "ranking"),
    ("ranking_str", "xgb_reg", lambda m: pgexact.pg2_curve(m, X4, list("abcde")), TypeError, "ranking"),
    ("ranking_uint64_huge", "xgb_reg", lambda m: pgexact.pg2_curve(m, X4, np.array([2**64 - 1, 1, 2, 3, 4], np.uint64)),
     ValueError, "ranking"),
    ("ranking_and_attributions", "xgb_reg", lambda m: pgexact.pgi2(m, X4, np.arange(D), attributions=np.ones((4, D))),
     ValueError, "ranking.*attributions"),
    # attributions
    ("attributions_nan", "xgb_reg", lambda m: pgexact.pgi2(m, X4, attributions=np.full((4, D), np.nan)), ValueError,
     r"attributions.*finite"),
    ("attributions_inf", "xgb_reg", lambda m: pgexact.pgu2(m, X4, attributions=np.full((4, D), np.inf)), ValueError,
     r"attributions.*finite"),
    ("attributions_shape", "xgb_reg", lambda m: pgexact.pgi2(m, X4, attributions=np.ones((4, 3))), ValueError,
     r"attributions.*shape"),
    ("attributions_rows", "xgb_reg", lambda m: pgexact.infidelity(m, X4, np.ones((3, D))), ValueError,
     r"attributions.*shape"),
    ("attributions_3d", "xgb_reg", lambda m: pgexact.pgu2(m, X4, attributions=np.ones((1, 4, D))), ValueError,
     r"attributions.*shape"),
    ("attributions_str", "xgb_reg", lambda m: pgexact.pgi2(m, X4, attributions="big"), TypeError, "attributions"),
    ("attributions_infidelity_nan", "xgb_reg", lambda m: pgexact.infidelity(m, X4, np.full((4, D), np.nan)),
     ValueError, "attributions"),
    # n_jobs
    ("n_jobs_zero", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], n_jobs=0), ValueError, "n_jobs"),
    ("n_jobs_minus_two", "xgb_reg", lambda m: pgexact.rank(m, X4, n_jobs=-2), ValueError, "n_jobs"),
    ("n_jobs_float", "xgb_reg", lambda m: pgexact.pgi2(m, X4, n_jobs=1.5), TypeError, "n_jobs"),
    ("n_jobs_str", "xgb_reg", lambda m: pgexact.pg2_curve(m, X4, np.arange(D), n_jobs="a"), TypeError, "n_jobs"),
    ("n_jobs_bool", "xgb_reg", lambda m: pgexact.expected(m, X4, [0], n_jobs=True), TypeError, "n_jobs"),
    ("n_jobs_explainer", "xgb_reg", lambda m: pgexact.Explainer(m, n_jobs=0), ValueError, "n_jobs"),
    ("n_jobs_infidelity", "xgb_reg", lambda m: pgexact.infidelity(m, X4, np.ones((4, D)), n_jobs=-3), ValueError,
     "n_jobs"),
    # output
    ("output_out_of_range", "xgb_reg", lambda m: pgexact.pg2(m, X4, [0], output=1), ValueError, r"output.*range"),
    ("output_negative", "xgb_multi", lambda m: pgexact.load(m, output=-1), ValueError, r"output.*range"),
    ("output_too_big", "xgb_multi", lambda m: pgexact.load(m, output=3), ValueError, r"output.*range"),
    ("output_required", "xgb_multi", lambda m: pgexact.load(m), ValueError, r"output.*3 outputs"),
    ("output_bool", "xgb_multi", lambda m: pgexact.load(m, output=True), TypeError, "output"),
    ("output_float", "xgb_multi", lambda m: pgexact.pg2(m, X4, [0], output=1.0), TypeError, "output"),
    ("output_str", "xgb_multi", lambda m: pgexact.rank(m, X4, output="1"), TypeError, "output"),
    ("output_other_ensemble", "xgb_multi", lambda m: pgexact.load(pgexact.load(m, output=0), output=2), ValueError,
     "output"),
    ("output_ensemble_str", "xgb_reg", lambda m: pgexact.load(pgexact.load(m), output="a"), TypeError, "output"),
    ("output_ensemble_bool", "xgb_reg", lambda m: pgexact.load(pgexact.load(m), output=True), TypeError, "output"),
    # model
    ("model_int", "xgb_reg", lambda m: pgexact.pg2(3, X4, [0]), TypeError, r"model: unsupported type.*expected xgboost"),
    ("model_none", "xgb_reg", lambda m: pgexact.load(None), TypeError, r"model.*NoneType.*lightgbm.*scikit-learn"),
    ("model_bytes", "xgb_reg", lambda m: pgexact.load(b"{}"), TypeError, r"model.*bytes.*TreeEnsemble"),
    ("model_linear", "xgb_reg", lambda m: pgexact.load(__import__("sklearn.linear_model").linear_model.LinearRegression()),
     TypeError, r"model.*LinearRegression.*HistGradientBoosting"),
    ("model_missing_file", "xgb_reg", lambda m: pgexact.load("/nonexistent/model.json"), ValueError,
     r"model.*not found"),
    ("model_directory", "xgb_reg", lambda m: pgexact.load(TESTS), ValueError, r"model.*directory"),
    ("model_unfitted_xgb", "xgb_reg", lambda m: pgexact.load(type(m)()), ValueError, r"model.*not fitted"),
    ("model_unfitted_sklearn", "xgb_reg", lambda m: pgexact.load(__import__("sklearn.tree").tree.DecisionTreeRegressor()),
     ValueError, r"model.*not fitted"),
    ("model_explainer", "xgb_reg", lambda m: pgexact.Explainer(object()), TypeError, r"model.*unsupported"),
]


@pytest.mark.parametrize("case", BAD_ARGUMENTS, ids=[c[0] for c in BAD_ARGUMENTS])
def test_bad_argument(case, request):
    _, fixture, call, exc, match = case
    model = request.getfixturevalue(fixture)
    with pytest.raises(exc, match=match):
        call(model)


def test_bad_argument_table_covers_every_public_function():
    import inspect

    source = inspect.getsource(sys.modules[__name__])
    for name in ("pg2", "pg2_curve", "pgi2", "pgu2", "rank", "expected", "infidelity", "load", "Explainer"):
        assert f"pgexact.{name}(" in source, name


def test_huge_n_jobs_is_capped_not_a_crash(xgb_reg):
    # n_jobs=100000 made OpenMP fail to create threads and crash the interpreter; the core now
    # starts at most one thread per row and four per core. Results do not change.
    ref = pgexact.pg2(xgb_reg, X4, [0, 1], n_jobs=1)
    assert np.array_equal(pgexact.pg2(xgb_reg, X4, [0, 1], n_jobs=100_000), ref)
    assert np.array_equal(pgexact.pg2(xgb_reg, X4, [0, 1], n_jobs=2**40), ref)


def _unaligned(a):
    """A C-contiguous but misaligned copy of `a` (as dask or pickle protocol 5 can hand out)."""
    a = np.ascontiguousarray(a)
    buf = bytearray(a.nbytes + 1)
    out = np.frombuffer(buf, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned and out.flags.c_contiguous
    return out


def test_unaligned_arrays(xgb_reg):
    # Reading a misaligned int64 / float64 through a typed pointer is undefined behaviour (UBSan
    # flagged pg2_curve on dask-deserialised rankings); the bindings now get aligned copies.
    ens = pgexact.load(xgb_reg)
    rk = np.tile(np.arange(D)[::-1], (4, 1))
    ref = pgexact.pg2_curve(ens, X4, rk, sigma=np.full(D, 0.4))
    got = pgexact.pg2_curve(ens, _unaligned(X4), _unaligned(rk), sigma=_unaligned(np.full(D, 0.4)))
    assert np.array_equal(got, ref)
    assert np.array_equal(ens.predict(_unaligned(X4)), ens.predict(X4))
    mask = np.ones(D, np.uint8)
    assert np.array_equal(core_exact.pg2(ens._arena, _unaligned(X4), mask, Perturbation(_unaligned(np.full(D, 0.4)), np.zeros(D, np.uint8)), 1),
                          pgexact.pg2(ens, X4, np.ones(D, bool), sigma=0.4))


def test_accepted_edge_arguments(xgb_reg):
    """Inputs that look odd but are valid give sensible results rather than errors."""
    assert pgexact.pg2(xgb_reg, np.zeros((0, D)), [0]).shape == (0,)
    assert np.all(pgexact.pg2(xgb_reg, X4, []) == 0.0)  # nothing perturbed
    np.testing.assert_array_equal(pgexact.pg2(xgb_reg, X4, {0, 1}), pgexact.pg2(xgb_reg, X4, [1, 0]))
    with pytest.raises(ValueError, match=r"^features: .*negative"):  # issue 16: refused, not "last"
        pgexact.pg2(xgb_reg, X4, [-1])
    # None in an object array is a missing value.
    obj = X4.astype(object)
    obj[0, 0] = None
    expect = X4.copy()
    expect[0, 0] = np.nan
    np.testing.assert_array_equal(pgexact.load(xgb_reg).predict(obj), pgexact.load(xgb_reg).predict(expect))


# ----------------------------------------------------------------------------- hand-made hostile files
def _tree(left, right, cond, index, default=None, **extra):
    n = len(left)
    tree = {
        "tree_param": {"num_nodes": str(n), "size_leaf_vector": "1", "num_feature": "2", "num_deleted": "0"},
        "left_children": left, "right_children": right, "split_conditions": cond, "split_indices": index,
        "default_left": default if default is not None else [0] * n, "split_type": [0] * n,
        "categories": [], "categories_nodes": [], "categories_segments": [], "categories_sizes": [],
        "base_weights": [0.0] * n, "loss_changes": [0.0] * n, "sum_hessian": [0.0] * n, "parents": [0] * n, "id": 0,
    }
    tree.update(extra)
    return tree


def _xgb_doc(trees, num_feature=2, base_score="5E-1", objective="reg:squarederror"):
    return {
        "version": [2, 1, 0],
        "learner": {
            "attributes": {}, "feature_names": [], "feature_types": [],
            "learner_model_param": {"base_score": base_score, "boost_from_average": "1", "num_class": "0",
                                    "num_feature": str(num_feature), "num_target": "1"},
            "objective": {"name": objective},
            "gradient_booster": {"name": "gbtree", "model": {
                "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(len(trees))},
                "iteration_indptr": list(range(len(trees) + 1)),
                "tree_info": [0] * len(trees), "trees": trees}},
        },
    }


GOOD_TREE = dict(left=[1, -1, -1], right=[2, -1, -1], cond=[0.5, -1.0, 2.0], index=[0, 0, 0])


def _load_xgb(doc_or_text, tmp_path, name="m.json"):
    text = doc_or_text
    if not isinstance(text, (str, bytes)):  # infinities as overflowing numbers, not "Infinity"
        text = json.dumps(doc_or_text).replace("Infinity", "1e999")
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return pgexact.load(str(p))


def test_handmade_xgboost_baseline_loads(tmp_path):
    ens = _load_xgb(_xgb_doc([_tree(**GOOD_TREE)]), tmp_path)
    np.testing.assert_array_equal(ens.predict(np.array([[0.0, 0.0], [1.0, 0.0]])), [-0.5, 2.5])


HOSTILE_XGB = [
    ("cycle", dict(left=[1, 0, -1], right=[2, -1, -1]), r"invalid children|reached twice"),
    ("cycle_deep", dict(left=[1, 3, -1, 0, -1], right=[2, 4, -1, -1, -1], cond=[0.0] * 5, index=[0] * 5),
     r"invalid children|reached twice"),
    ("shared_child", dict(left=[1, 3, -1, -1], right=[2, 3, -1, -1], cond=[0.0] * 4, index=[0] * 4),
     r"invalid children|reached twice"),
    ("shared_subtree", dict(left=[1, 3, 3, -1, -1], right=[2, 4, 4, -1, -1], cond=[0.0] * 5, index=[0] * 5),
     r"reached twice"),
    ("self_loop", dict(left=[0, -1, -1]), r"invalid children"),
    ("child_out_of_range", dict(left=[7, -1, -1]), r"invalid left child"),
    ("child_negative", dict(right=[-5, -1, -1]), r"invalid right child"),
    ("child_fraction", dict(left=[1.5, -1, -1]), r"invalid left child"),
    ("half_leaf", dict(left=[1, -1, -1], right=[-1, -1, -1]), r"invalid children"),
    ("feature_out_of_range", dict(index=[2, 0, 0]), r"feature outside"),
    ("feature_negative", dict(index=[-1, 0, 0]), r"feature outside"),
    ("leaf_inf", dict(cond=[0.5, 1e999, 2.0]), r"leaf value is not finite"),
    ("leaf_float32_overflow", dict(cond=[0.5, 3.5e38, 2.0]), r"outside float32"),
    ("threshold_float32_overflow", dict(cond=[-3.5e38, 1.0, 2.0]), r"outside float32"),
    ("short_array", dict(cond=[0.5, 1.0]), r"split_conditions has 2 entries, expected 3"),
    ("not_numeric", dict(index=["a", 0, 0]), r"split_indices is not a numeric array"),
]


@pytest.mark.parametrize("name,change,match", HOSTILE_XGB, ids=[h[0] for h in HOSTILE_XGB])
def test_hostile_xgboost_tree(tmp_path, name, change, match):
    spec = dict(GOOD_TREE)
    spec.update(change)
    n = len(spec["left"])
    for key in ("right", "cond", "index"):
        if len(spec[key]) < n and key not in change:
            spec[key] = spec[key] + [-1 if key == "right" else 0] * (n - len(spec[key]))
    with pytest.raises(ValueError, match=match):
        _load_xgb(_xgb_doc([_tree(**spec)]), tmp_path)


def test_xgboost_nan_and_inf_tokens(tmp_path):
    text = json.dumps(_xgb_doc([_tree(**GOOD_TREE)])).replace("[0.5, -1.0, 2.0]", "[NaN, -1.0, 2.0]")
    with pytest.raises(ValueError, match="malformed model file"):
        _load_xgb(text, tmp_path)
    # An infinite split value is a legitimate comparison (scikit-learn writes +inf thresholds).
    ens = _load_xgb(_xgb_doc([_tree(**dict(GOOD_TREE, cond=[1e999, -1.0, 2.0]))]), tmp_path)
    np.testing.assert_array_equal(ens.predict(np.array([[1e30, 0.0]])), [-0.5])


def test_xgboost_tiny_number_underflows_to_zero(tmp_path):
    # from_chars reports 1e-400 as out of range; it used to be read as +inf.
    ens = _load_xgb(json.dumps(_xgb_doc([_tree(**GOOD_TREE)])).replace("0.5,", "1e-400,", 1), tmp_path)
    np.testing.assert_array_equal(ens.predict(np.array([[-1e-30, 0.0], [1e-30, 0.0]])), [-0.5, 2.5])


@pytest.mark.parametrize("version", ["[3, 2, 1e999]", "[3, -1, 0]", "[3, 2.5, 0]", "[1e300]"])
def test_xgboost_bad_version(tmp_path, version):
    # Found by fuzz_xgboost_json under UBSan: a version of 1e999 (inf) was converted to int64.
    text = json.dumps(_xgb_doc([_tree(**GOOD_TREE)])).replace("[2, 1, 0]", version, 1)
    with pytest.raises(ValueError, match="version"):
        _load_xgb(text, tmp_path)


def test_xgboost_unreachable_nodes_are_dropped(tmp_path):
    ens = _load_xgb(_xgb_doc([_tree(left=[1, -1, -1, -1], right=[2, -1, -1, -1], cond=[0.5, -1.0, 2.0, 9.0],
                                    index=[0, 0, 0, 0])]), tmp_path)
    assert ens.n_nodes == 3


def test_xgboost_duplicated_key(tmp_path):
    text = json.dumps(_xgb_doc([_tree(**GOOD_TREE)]))
    text = text.replace('"left_children":', '"left_children": [1, -1, -1], "left_children":', 1)
    with pytest.raises(ValueError, match="appears twice"):
        _load_xgb(text, tmp_path)


def test_xgboost_duplicated_feature_names(tmp_path):
    doc = _xgb_doc([_tree(**GOOD_TREE)])
    doc["learner"]["feature_names"] = ["x", "x"]
    with pytest.raises(ValueError, match="feature_names lists 'x' twice"):
        _load_xgb(doc, tmp_path)


def test_feature_names_utf8(tmp_path):
    doc = _xgb_doc([_tree(**GOOD_TREE)])
    doc["learner"]["feature_names"] = ["\U0001F600 smile", "caf\u00e9"]
    ens = _load_xgb(json.dumps(doc), tmp_path)  # json.dumps escapes: a surrogate pair and \u00e9
    assert ens.feature_names == ["\U0001F600 smile", "caf\u00e9"]
    doc["learner"]["feature_names"] = ["\ud800", "b"]  # a lone surrogate reads as U+FFFD
    assert _load_xgb(json.dumps(doc), tmp_path).feature_names == ["\ufffd", "b"]
    raw = json.dumps(_xgb_doc([_tree(**GOOD_TREE)])).replace('"feature_names": []', '"feature_names": ["\xff", "b"]')
    with pytest.raises(ValueError, match="not valid UTF-8"):
        _load_xgb(raw.encode("latin-1"), tmp_path)
    with pytest.raises(ValueError, match="not valid UTF-8"):
        _load_lgb(_lgb_text(LGB_GOOD).replace("feature_names=a b", "feature_names=\xff b").encode("latin-1"), tmp_path)


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_json_nesting_bomb(tmp_path, opening):
    with pytest.raises(ValueError, match="nesting deeper than 128"):
        _load_xgb("{\"learner\":" + opening * 100_000, tmp_path)


def test_ubjson_hostile_counts(tmp_path):
    # A typed array claiming 2^31 elements in a 20-byte file, and a string longer than the file.
    for blob in (b"{L" + struct.pack(">q", 1) + b"a[$d#l" + struct.pack(">i", 2**31 - 1) + b"}",
                 b"{L" + struct.pack(">q", 1) + b"aSL" + struct.pack(">q", 2**40) + b"}",
                 b"{L" + struct.pack(">q", -1) + b"}", b"{" * 1000):
        with pytest.raises(ValueError, match="malformed model file|nesting"):
            _load_xgb(blob, tmp_path, "m.ubj")


def test_xgboost_category_memory_bomb(tmp_path):
    # 200 categorical nodes, each splitting on category 2^24 - 1: 2 MiB of bitset per node from a
    # few bytes of JSON. Refused by the model-wide budget before anything is allocated.
    depth = 200
    n = 2 * depth + 1
    # A caterpillar: inner node 2k has a leaf 2k+1 on the left and node 2k+2 on the right.
    left = [-1] * n
    right = [-1] * n
    inner = [0] + [2 * k + 2 for k in range(depth - 1)]
    for k, v in enumerate(inner):
        left[v] = 2 * k + 1
        right[v] = 2 * k + 2
    types = [1 if i in set(inner) else 0 for i in range(n)]
    tree = _tree(left, right, [0.0] * n, [0] * n, split_type=types, categories=[2**24 - 1] * depth,
                 categories_nodes=inner, categories_segments=list(range(depth)), categories_sizes=[1] * depth)
    doc = _xgb_doc([tree])
    doc["learner"]["feature_types"] = ["c", "q"]
    with pytest.raises(ValueError, match="256 MiB"):
        _load_xgb(doc, tmp_path)
    # A handful of such nodes is a legitimate (if wasteful) model.
    few = inner[:3]
    tree["split_type"] = [1 if i in set(few) else 0 for i in range(n)]
    tree["categories_nodes"], tree["categories_segments"], tree["categories_sizes"] = few, [0, 1, 2], [1, 1, 1]
    ens = _load_xgb(doc, tmp_path)
    assert ens.n_trees == 1


def _lgb_text(tree_lines, header_extra=""):
    return (
        "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx=1\n"
        f"objective=regression\nfeature_names=a b\nfeature_infos=none none\n{header_extra}\nTree=0\n"
        + "\n".join(tree_lines) + "\nshrinkage=1\n\n\nend of trees\n"
    )


LGB_GOOD = ["num_leaves=3", "num_cat=0", "split_feature=0 1", "split_gain=1 1", "threshold=0.5 1.5",
            "decision_type=2 2", "left_child=1 -1", "right_child=-2 -3", "leaf_value=1 2 3",
            "leaf_weight=1 1 1", "leaf_count=1 1 1", "internal_value=0 0", "internal_weight=0 0",
            "internal_count=2 2"]


def _lgb_with(**changes):
    lines = []
    for line in LGB_GOOD:
        key = line.split("=")[0]
        lines.append(f"{key}={changes[key]}" if key in changes else line)
    return lines


def _load_lgb(text, tmp_path):
    p = tmp_path / "m.txt"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return pgexact.load(str(p))


def test_handmade_lightgbm_baseline_loads(tmp_path):
    ens = _load_lgb(_lgb_text(LGB_GOOD), tmp_path)
    np.testing.assert_array_equal(ens.predict(np.array([[0.0, 0.0], [0.0, 2.0], [1.0, 0.0]])), [1.0, 3.0, 2.0])


HOSTILE_LGB = [
    ("cycle", dict(left_child="1 0"), r"reached twice|invalid children"),
    ("self_loop", dict(left_child="0 -1"), r"invalid children"),
    ("shared_leaf", dict(left_child="1 -2"), r"reached twice"),
    ("child_out_of_range", dict(left_child="5 -1"), r"child id out of range"),
    ("leaf_out_of_range", dict(right_child="-9 -3"), r"leaf id out of range"),
    ("feature_out_of_range", dict(split_feature="0 2"), r"feature 2, outside \[0, 2\)"),
    ("feature_negative", dict(split_feature="-1 0"), r"feature -1"),
    ("nan_threshold", dict(threshold="nan 1"), r"NaN threshold"),
    ("leaf_inf", dict(leaf_value="1 inf 3"), r"leaf value is not finite"),
    ("leaf_huge", dict(leaf_value="1 1e999 3"), r"not a number|not finite"),
    ("leaf_count", dict(leaf_value="1 2"), r"leaf_value has 2 entries, expected 3"),
    ("num_leaves_huge", dict(num_leaves="1073741824"), r"num_leaves|leaf_value has"),
    ("num_leaves_overflow", dict(num_leaves="99999999999999999999"), r"num_leaves is not an integer"),
    ("decision_type", dict(decision_type="2 99"), r"decision_type"),
    ("missing_type", dict(decision_type="2 12"), r"missing type"),
    ("categorical_without_sets", dict(decision_type="1 2"), r"num_cat=0"),
]


@pytest.mark.parametrize("name,change,match", HOSTILE_LGB, ids=[h[0] for h in HOSTILE_LGB])
def test_hostile_lightgbm_tree(tmp_path, name, change, match):
    with pytest.raises(ValueError, match=match):
        _load_lgb(_lgb_text(_lgb_with(**change)), tmp_path)


def test_lightgbm_duplicated_key(tmp_path):
    with pytest.raises(ValueError, match="'threshold' appears twice"):
        _load_lgb(_lgb_text(LGB_GOOD + ["threshold=0 0"]), tmp_path)
    with pytest.raises(ValueError, match="'max_feature_idx' appears twice"):
        _load_lgb(_lgb_text(LGB_GOOD, header_extra="max_feature_idx=1"), tmp_path)


def test_huge_declared_feature_count_is_refused_quickly(tmp_path):
    # A few hundred bytes must not be able to claim gigabytes of per-feature layout.
    import time

    text = _lgb_text(LGB_GOOD).replace("max_feature_idx=1", "max_feature_idx=16777215")
    start = time.perf_counter()
    with pytest.raises(ValueError, match="max_feature_idx"):
        _load_lgb(text, tmp_path)
    assert time.perf_counter() - start < 1.0


def test_lightgbm_category_memory_bomb(tmp_path):
    # 255 categorical nodes all pointing at one set of 2^19 words (category 2^24 - 1): the text
    # is ~4 MiB, the bitsets would be 510 MiB. Refused by the budget.
    n_inner = 255
    words = 2**19
    lines = [f"num_leaves={n_inner + 1}", "num_cat=1", "split_feature=" + " ".join(["0"] * n_inner),
             "threshold=" + " ".join(["0"] * n_inner), "decision_type=" + " ".join(["1"] * n_inner),
             "left_child=" + " ".join(str(-(i + 1)) for i in range(n_inner)),
             "right_child=" + " ".join(str(i + 1) for i in range(n_inner - 1)) + f" {-(n_inner + 1)}",
             "leaf_value=" + " ".join(["1"] * (n_inner + 1)), f"cat_boundaries=0 {words}",
             "cat_threshold=" + " ".join(["0"] * (words - 1)) + " 2147483648"]
    with pytest.raises(ValueError, match="256 MiB"):
        _load_lgb(_lgb_text(lines), tmp_path)


def test_arena_bytes_category_memory_bomb():
    # Serialised arenas may also point many nodes at one large set.
    arena, _ = core_model.parse_lightgbm_text(_lgb_text(LGB_GOOD), -1)
    good = arena.to_bytes()
    assert core_model.Arena.from_bytes(good).to_bytes() == good
    n_inner = 200
    words = 2**19
    le = lambda fmt, *v: struct.pack("<" + fmt, *v)  # noqa: E731

    def arr(fmt, values):
        return le("Q", len(values)) + b"".join(le(fmt, v) for v in values)

    n = 2 * n_inner + 1
    feature, left, right = [], [], []
    for i in range(n_inner):  # inner node 2i: left leaf 2i+1, right node 2i+2
        feature += [0, -1]
        left += [2 * i + 1, -1]
        right += [2 * i + 2, -1]
    feature.append(-1)
    left.append(-1)
    right.append(-1)
    flags = [4 if f >= 0 else 0 for f in feature]  # categorical
    blob = (b"PGXARENA" + le("I", 1) + le("I", 0x01020304) + le("i", 2) + le("B", 2) + le("B", 0)
            + arr("d", [0.0]) + arr("i", [0]) + arr("i", [0]) + arr("i", feature) + arr("i", left)
            + arr("i", right) + arr("d", [0.0] * n) + arr("d", [1.0] * n) + arr("B", flags)
            + arr("i", [0] * n) + arr("i", [words if f >= 0 else 0 for f in feature]) + arr("I", [1] * words))
    with pytest.raises(ValueError, match="256 MiB"):
        core_model.Arena.from_bytes(blob)


def test_tree_depth_limit():
    depth = (1 << 20) + 1  # one level past kMaxDepth
    n = 2 * depth + 1
    idx = np.arange(n, dtype=np.int64)
    inner = idx < 2 * depth
    left = np.where(inner & (idx % 2 == 0), idx + 1, -1)
    right = np.where(inner & (idx % 2 == 0), idx + 2, -1)
    tree = dict(children_left=left, children_right=right, feature=np.zeros(n, np.int64),
                threshold=np.zeros(n), value=np.zeros(n))
    with pytest.raises(ValueError, match="deeper than 1048576 levels"):
        core_model.build_arena_from_arrays([tree], np.zeros(1), 1)


# ----------------------------------------------------------------------------- mutated files (subprocess)
def test_mutated_model_files_never_crash(tmp_path):
    """Seeded mutations of real model files: each loads or raises ValueError; no crash."""
    sys.path.insert(0, os.path.join(TESTS, "fuzz"))
    try:
        from make_corpus import write_corpus
    finally:
        sys.path.pop(0)
    write_corpus(str(tmp_path), small=False)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, os.path.join(TESTS, "_mutation_driver.py"), str(tmp_path), "120", "20240"],
                          capture_output=True, text=True, timeout=300, env=env)
    if proc.returncode < 0:
        pytest.fail(f"mutation driver killed by signal {signal.Signals(-proc.returncode).name}:\n{proc.stderr[-4000:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    tally = json.loads(proc.stdout.strip().splitlines()[-1])
    assert tally["failed"] == 0
    assert tally["loaded"] > 300 and tally["refused"] > 1500, tally


# ----------------------------------------------------------------------------- deep trees
def _reference_check(ens, X, masks):
    arena = ens._arena
    d = ens.n_features
    sigma = np.full(d, 0.7)
    family = np.zeros(d, dtype=np.uint8)
    for mask in masks:
        m = np.asarray(mask, dtype=np.uint8)
        fast = core_exact.pg2(arena, X, m, Perturbation(sigma, family), 1)
        ref = core_exact.pg2(arena, X, m, Perturbation(sigma, family), 1, Kernel.reference)
        np.testing.assert_allclose(fast, ref, rtol=1e-11, atol=1e-300)
        np.testing.assert_array_equal(pgexact.pg2(ens, X, m.astype(bool), sigma=sigma, n_jobs=1), fast)
        assert np.all(fast >= 0.0)
    return fast


def test_sklearn_tree_depth_57():
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 3))
    model = DecisionTreeRegressor(random_state=0).fit(X, rng.normal(size=5000))
    assert model.get_depth() >= 40
    ens = pgexact.load(model)
    assert ens.max_depth == model.get_depth()
    Xt = np.vstack([X[:200], rng.normal(size=(50, 3))])
    np.testing.assert_array_equal(ens.predict(Xt), model.predict(Xt))
    out = _reference_check(ens, Xt[:3], [[1, 0, 0], [0, 1, 1], [1, 1, 1]])
    assert np.all(out > 0)


def test_sklearn_tree_depth_1099_adversarial_1d():
    """Alternating labels on a line: every split peels one sample, a chain 1099 levels deep."""
    from sklearn.tree import DecisionTreeRegressor

    n = 1100
    X = np.arange(n, dtype=np.float64)[:, None]
    model = DecisionTreeRegressor(random_state=0).fit(X, (np.arange(n) % 2).astype(float))
    assert model.get_depth() == n - 1
    ens = pgexact.load(model)
    assert ens.max_depth == n - 1 and ens.n_leaves == n
    grid = np.concatenate([X[:, 0], X[:, 0] + 0.5, X[:, 0] - 0.25, [-1e9, 1e9, np.nan]])[:, None]
    np.testing.assert_array_equal(ens.predict(grid), model.predict(grid))
    rows = np.array([[0.0], [549.0], [1099.0], [550.5]])
    out = _reference_check(ens, rows, [[1]])
    # Near the middle the prediction flips at every unit step: PG2 is close to its maximum 1/2.
    assert 0.3 < out[1] < 0.7
    # The public API on the deep tree: ranking, curves, expectation.
    assert pgexact.rank(ens, rows).shape == (4, 1)
    np.testing.assert_allclose(pgexact.expected(ens, rows, [0], sigma=1e-9), ens.predict(rows), atol=1e-12)


def test_synthetic_chain_200k_deep():
    """A 200 000-level chain (far beyond any call stack) predicts and runs the kernels."""
    depth = 200_000
    n = 2 * depth + 1
    idx = np.arange(n, dtype=np.int64)
    inner = (idx < 2 * depth) & (idx % 2 == 0)
    left = np.where(inner, idx + 1, -1)
    right = np.where(inner, idx + 2, -1)
    # Inner node 2k splits x < k + 0.5 (left leaf value k % 2); the last leaf is `depth % 2`.
    threshold = np.where(inner, idx // 2 + 0.5, 0.0)
    value = np.where(inner, 0.0, ((idx - 1) // 2) % 2).astype(float)
    value[-1] = depth % 2
    tree = dict(children_left=left, children_right=right, feature=np.zeros(n, np.int64), threshold=threshold,
                value=value)
    arena = core_model.build_arena_from_arrays([tree], np.zeros(1), 1, op="<=")
    assert arena.max_depth == depth
    ens = pgexact.TreeEnsemble(arena)
    x = np.array([[0.0], [10.0], [199_999.0], [250_000.0]])
    np.testing.assert_array_equal(ens.predict(x), [0, 0, 1, 0])
    out = pgexact.pg2(ens, x, [0], sigma=2.0, n_jobs=1)
    assert np.all(out[:3] > 0.2) and out[3] < 1e-12  # the last row is 25 sigma past every split
    assert pickle.loads(pickle.dumps(ens)).max_depth == depth


# ----------------------------------------------------------------------------- threads
def test_concurrent_calls_on_one_ensemble(xgb_reg):
    ens = pgexact.load(xgb_reg)
    X = np.random.default_rng(11).normal(size=(40, D))
    jobs = [
        ("pg2", lambda: pgexact.pg2(ens, X, [0, 2], n_jobs=2)),
        ("pgi2", lambda: pgexact.pgi2(ens, X, np.arange(D), n_jobs=1)),
        ("rank", lambda: pgexact.rank(ens, X, n_jobs=2)),
        ("expected", lambda: pgexact.expected(ens, X, [1], n_jobs=1)),
        ("predict", lambda: ens.predict(X)),
        ("pickle", lambda: pickle.loads(pickle.dumps(ens)).predict(X)),
    ]
    serial = {name: fn() for name, fn in jobs}
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [(name, pool.submit(fn)) for _ in range(6) for name, fn in jobs]
        for name, fut in futures:
            assert np.array_equal(fut.result(), serial[name]), name


def test_results_bit_identical_for_any_n_jobs(xgb_reg, lgb_categorical):
    X = np.random.default_rng(12).normal(size=(31, D))
    X[::7, 1] = np.nan
    for model in (xgb_reg, lgb_categorical):
        ens = pgexact.load(model)
        cats = set(ens._arena.categorical_features)
        feats = [j for j in range(D) if j not in cats]
        Xm = X.copy()
        if cats:
            Xm[:, sorted(cats)] = np.abs(np.round(Xm[:, sorted(cats)] * 2))
        calls = [
            lambda n: pgexact.pg2(ens, Xm, feats[:2], n_jobs=n),
            lambda n: pgexact.expected(ens, Xm, feats, n_jobs=n),
        ]
        if not cats:  # curves, ranks and infidelity perturb every feature
            calls += [lambda n: pgexact.pg2_curve(ens, Xm, np.arange(D)[::-1], n_jobs=n),
                      lambda n: pgexact.pgu2(ens, Xm, n_jobs=n),
                      lambda n: pgexact.rank(ens, Xm, n_jobs=n),
                      lambda n: pgexact.infidelity(ens, Xm, np.ones((31, D)), n_jobs=n)]
        for call in calls:
            ref = call(1)
            for n in (2, 3, None):
                assert np.array_equal(call(n), ref, equal_nan=True)
