"""Greedy PG2 ranking against a brute-force greedy built on pgexact.pg2."""

import numpy as np
import pytest

import pgexact
from _oracle import XGBModel, greedy_rank_bruteforce


def _check_rank(pm, X, sigma, d):
    R = pgexact.rank(pm, X, sigma=sigma)
    pm = pgexact.load(pm)  # parse once for the many brute-force calls below
    assert R.dtype == np.int64
    assert R.shape == (X.shape[0], d)
    for r in range(X.shape[0]):
        assert sorted(R[r].tolist()) == list(range(d))
        row = X[r : r + 1]
        ref = greedy_rank_bruteforce(lambda S: float(pgexact.pg2(pm, row, S, sigma=sigma)[0]), d)
        assert R[r].tolist() == ref.tolist(), (r, R[r], ref)
    return R


@pytest.mark.parametrize("name", ["reg", "multi2", "nan"])
def test_rank_equals_bruteforce_greedy(cases, name):
    c = cases(name)
    _check_rank(c.pg_model(), c.X, 0.3, c.d)


def test_rank_per_feature_sigma(cases):
    c = cases("dart")
    _check_rank(c.pg_model(), c.X[:4], np.array([0.2, 0.5, 0.05, 1.0, 0.3]), c.d)


def test_rank_ties_go_to_lower_index(const_feature_booster):
    """Feature 3 is unused: it ties with every zero-gain choice and comes after used ones;
    a row whose features are all NaN is all ties -> identity ranking."""
    assert len(XGBModel(const_feature_booster).thresholds(3)) == 0
    rng = np.random.default_rng(9)
    X = rng.normal(size=(5, 5))
    X[1, 0] = np.nan  # feature 0 NaN: zero gain, ties with feature 3
    X[2, :] = np.nan
    R = _check_rank(const_feature_booster, X, 0.3, 5)
    assert R[2].tolist() == [0, 1, 2, 3, 4]
    # NaN feature 0 and unused feature 3 tie at every step: 0 must come first
    assert R[1].tolist().index(0) < R[1].tolist().index(3)
