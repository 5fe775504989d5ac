"""Bad input raises ValueError naming the argument (never a crash)."""

import numpy as np
import pytest

import pgexact


@pytest.fixture(scope="module")
def setup(reg_model):
    X = np.random.default_rng(0).normal(size=(4, 5))
    return reg_model, X


API = {
    "pg2": lambda m, X, **kw: pgexact.pg2(m, X, [0, 1], **kw),
    "pg2_curve": lambda m, X, **kw: pgexact.pg2_curve(m, X, np.arange(5), **kw),
    "pgi2": lambda m, X, **kw: pgexact.pgi2(m, X, np.arange(5), **kw),
    "pgu2": lambda m, X, **kw: pgexact.pgu2(m, X, np.arange(5), **kw),
    "rank": lambda m, X, **kw: pgexact.rank(m, X, **kw),
}


@pytest.mark.parametrize("fn", list(API))
@pytest.mark.parametrize("ncols", [4, 6])
def test_wrong_column_count(setup, fn, ncols):
    model, _ = setup
    X = np.zeros((3, ncols))
    with pytest.raises(ValueError, match=r"\bX\b"):
        API[fn](model, X)


def test_wrong_column_count_predict(setup):
    model, _ = setup
    with pytest.raises(ValueError, match=r"\bX\b"):
        pgexact.load(model).predict(np.zeros((3, 4)))


@pytest.mark.parametrize("fn", list(API))
@pytest.mark.parametrize(
    "sigma",
    [0.0, -0.3, float("nan"), np.array([0.3, 0.3, 0.3, 0.3]), np.array([0.3, 0.3, 0.0, 0.3, 0.3]),
     np.array([0.3, np.nan, 0.3, 0.3, 0.3]), np.full(6, 0.3)],
    ids=["zero", "negative", "nan", "short", "vec_zero", "vec_nan", "long"],
)
def test_bad_sigma(setup, fn, sigma):
    model, X = setup
    with pytest.raises(ValueError, match="sigma"):
        API[fn](model, X, sigma=sigma)


@pytest.mark.parametrize("features", [[5], [0, 7], ["nope"], [0, "age"]], ids=["idx5", "idx7", "name", "mixed"])
def test_unknown_feature(setup, features):
    model, X = setup
    with pytest.raises(ValueError, match="feature"):
        pgexact.pg2(model, X, features)


def test_unknown_feature_name_named_model(named_model):
    import pandas as pd

    from conftest import FEATURE_NAMES

    df = pd.DataFrame(np.zeros((2, 5)), columns=FEATURE_NAMES)
    with pytest.raises(ValueError, match="feature"):
        pgexact.pg2(named_model, df, ["age", "height"])


@pytest.mark.parametrize("fn", ["pg2_curve", "pgi2", "pgu2"])
@pytest.mark.parametrize(
    "ranking",
    [[0, 0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3, 5], [0, 1, 2, 3, 4, 0], [-1, 1, 2, 3, 4],
     [[0, 1, 2, 3, 4]] * 3 + [[0, 1, 2, 3, 3]]],
    ids=["dup", "short", "out_of_range", "long", "negative", "bad_row"],
)
def test_ranking_not_a_permutation(setup, fn, ranking):
    model, X = setup
    f = getattr(pgexact, fn)
    with pytest.raises(ValueError, match="ranking"):
        f(model, X, np.array(ranking))


@pytest.mark.parametrize("fn", ["pgi2", "pgu2"])
def test_bad_attributions_shape(setup, fn):
    model, X = setup
    with pytest.raises(ValueError, match="attributions"):
        getattr(pgexact, fn)(model, X, attributions=np.zeros((4, 3)))


def test_multiclass_requires_output(multi_model):
    X = np.zeros((2, 5))
    with pytest.raises(ValueError, match="output"):
        pgexact.load(multi_model)
    with pytest.raises(ValueError, match="output"):
        pgexact.load(multi_model.get_booster())
    with pytest.raises(ValueError, match="output"):
        pgexact.pg2(multi_model, X, [0])
    with pytest.raises(ValueError, match="output"):
        pgexact.load(multi_model, output=3)
