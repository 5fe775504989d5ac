"""The oracles themselves agree with XGBoost (no pgexact needed)."""

import numpy as np
import pytest

from _oracle import monte_carlo_pg2, pg2_bruteforce, round_boundary
from conftest import CASE_NAMES


def test_round_boundary_matches_float32_rounding():
    t = np.float32([0.1, -2.5, 1e-3, 3.0, -7.77])
    b = round_boundary(t)
    below = np.nextafter(b, -np.inf)
    above = np.nextafter(b, np.inf)
    assert np.all(below.astype(np.float32) < t)
    assert np.all(above.astype(np.float32) >= t)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_leaf_sum_matches_xgboost_margin(cases, name):
    c = cases(name)
    rng = np.random.default_rng(5)
    X = np.vstack([c.X, rng.normal(size=(50, c.d))])
    ref = c.oracle.xgb_margin(X, c.output, base_margin_zero=True)
    got = c.oracle.leaf_sum(X, c.output)
    np.testing.assert_allclose(got, ref, rtol=0, atol=4 * c.oracle.n_trees * 6e-8 * (1 + c.oracle.scale(c.output)))


def test_dart_weights_are_not_all_one(cases):
    w = cases("dart").oracle.weights
    assert np.any(np.abs(w - 1.0) > 1e-3), w


@pytest.mark.parametrize("name", ["reg", "multi1", "nan"])
def test_bruteforce_agrees_with_monte_carlo(cases, name):
    c = cases(name)
    rng = np.random.default_rng(7)
    for S in [(0,), (1, 2)]:
        ex = pg2_bruteforce(c.oracle, c.X[:5], S, 0.3, c.output)
        for r in range(5):
            mc, se = monte_carlo_pg2(c.oracle, c.X[r], 0.3, 20000, rng, c.output, features=S)
            assert abs(ex[r] - mc) <= 5 * se + 1e-6, (S, r, ex[r], mc, se)
