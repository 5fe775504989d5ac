"""pandas DataFrame input: columns matched by name; features by name."""

import numpy as np
import pandas as pd
import pytest

import pgexact
from conftest import FEATURE_NAMES


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(12, 5))
    X[3, 1] = np.nan
    df = pd.DataFrame(X, columns=FEATURE_NAMES)
    perm = ["s1", "age", "s2", "bp", "bmi"]
    return X, df, df[perm]


def test_feature_names(named_model):
    m = pgexact.load(named_model)
    assert list(m.feature_names) == FEATURE_NAMES
    assert m.n_features == 5


def test_predict_dataframe_and_permuted(named_model, frames):
    X, df, dfp = frames
    m = pgexact.load(named_model)
    ref = named_model.predict(df, output_margin=True)
    np.testing.assert_allclose(m.predict(df), ref, rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(m.predict(dfp), m.predict(df))
    np.testing.assert_array_equal(m.predict(X), m.predict(df))  # numpy: positional


def test_pg2_dataframe_permuted_and_names(named_model, frames):
    X, df, dfp = frames
    ref = pgexact.pg2(named_model, X, [0, 2])
    np.testing.assert_array_equal(pgexact.pg2(named_model, df, [0, 2]), ref)
    # positions follow X as passed: dfp's columns are s1, age, s2, bp, bmi
    np.testing.assert_array_equal(pgexact.pg2(named_model, dfp, [1, 3]), ref)
    np.testing.assert_array_equal(pgexact.pg2(named_model, df, ["age", "bp"]), ref)
    np.testing.assert_array_equal(pgexact.pg2(named_model, dfp, ["bp", "age"]), ref)


def test_curves_and_rank_dataframe_permuted(named_model, frames):
    X, df, dfp = frames
    to_model = np.array([FEATURE_NAMES.index(c) for c in dfp.columns])  # dfp position -> model
    R = np.array([4, 1, 0, 3, 2])  # positions of dfp's columns
    sig = np.array([0.2, 0.5, 0.05, 1.0, 0.3])  # one per column of dfp
    sig_model = np.empty(5)
    sig_model[to_model] = sig
    np.testing.assert_array_equal(pgexact.pg2_curve(named_model, dfp, R, sigma=sig),
                                  pgexact.pg2_curve(named_model, X, to_model[R], sigma=sig_model))
    np.testing.assert_array_equal(pgexact.pgi2(named_model, dfp, R),
                                  pgexact.pgi2(named_model, X, to_model[R]))
    np.testing.assert_array_equal(pgexact.pgu2(named_model, dfp, R),
                                  pgexact.pgu2(named_model, X, to_model[R]))
    np.testing.assert_array_equal(to_model[pgexact.rank(named_model, dfp)], pgexact.rank(named_model, X))


def test_dataframe_missing_column_is_error(named_model, frames):
    _, df, _ = frames
    bad = df.rename(columns={"bmi": "weight"})
    with pytest.raises(ValueError, match=r"\bX\b|bmi"):
        pgexact.pg2(named_model, bad, [0])
