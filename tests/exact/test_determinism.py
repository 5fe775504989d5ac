"""n_jobs does not change results; PG2 is never negative."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pgexact


@pytest.fixture(scope="module")
def many_rows():
    rng = np.random.default_rng(77)
    X = rng.normal(size=(64, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


@pytest.mark.parametrize("name", ["dart", "multi1", "nan"])
def test_n_jobs_bitwise_identical(cases, name, many_rows):
    c = cases(name)
    pm = c.pg_model()
    X = many_rows
    R = np.array([np.random.default_rng(i).permutation(5) for i in range(X.shape[0])])
    sig = np.array([0.2, 0.5, 0.05, 1.0, 0.3])
    calls = [
        lambda nj: pgexact.pg2(pm, X, [0, 2], sigma=0.3, n_jobs=nj),
        lambda nj: pgexact.pg2(pm, X, list(range(5)), sigma=sig, n_jobs=nj),
        lambda nj: pgexact.pg2_curve(pm, X, R, sigma=0.3, n_jobs=nj),
        lambda nj: pgexact.pgi2(pm, X, R, sigma=sig, n_jobs=nj),
        lambda nj: pgexact.pgu2(pm, X, R, sigma=0.3, n_jobs=nj),
        lambda nj: pgexact.rank(pm, X[:16], sigma=0.3, n_jobs=nj),
        lambda nj: pgexact.pgi2(pm, X[:16], sigma=0.3, n_jobs=nj),
    ]
    for i, call in enumerate(calls):
        a, b, n = call(1), call(2), call(None)
        assert np.array_equal(a, b), f"call {i}: n_jobs=1 vs 2 differ"
        assert np.array_equal(a, n), f"call {i}: n_jobs=1 vs None differ"


def test_zero_when_nothing_can_change(cases):
    c = cases("nan")
    pm = c.pg_model()
    X = np.full((3, 5), np.nan)  # every feature missing: perturbation keeps it missing
    for S in ([0], [1, 3], list(range(5))):
        got = pgexact.pg2(pm, X, S)
        np.testing.assert_array_equal(got, np.zeros(3))
    assert np.array_equal(pgexact.pg2_curve(pm, X, np.arange(5)), np.zeros((3, 5)))
    assert np.array_equal(pgexact.pgi2(pm, X, np.arange(5)), np.zeros(3))


@pytest.mark.parametrize("name", ["reg", "binary", "multi0", "dart", "nan", "lossguide"])
@pytest.mark.parametrize("sigma", [1e-12, 1e-6, 1e-3, 100.0])
def test_never_negative_extreme_sigma(cases, name, sigma, many_rows):
    c = cases(name)
    pm = c.pg_model()
    X = np.vstack([many_rows, c.X, np.full((1, 5), 1e6), np.full((1, 5), -1e6)])
    for S in ([0], [1, 4], list(range(5))):
        got = pgexact.pg2(pm, X, S, sigma=sigma)
        assert np.all(np.isfinite(got)) and np.all(got >= 0), (S, got.min())
    curve = pgexact.pg2_curve(pm, X, np.arange(5), sigma=sigma)
    assert np.all(np.isfinite(curve)) and np.all(curve >= 0)
    if sigma <= 1e-6:
        # rows far from thresholds change with (numerically) zero probability
        far = pgexact.pg2(pm, X[-2:], list(range(5)), sigma=sigma)
        assert np.all(far <= 1e-300)


def test_never_negative_hypothesis(cases):
    c = cases("dart")
    pm = c.pg_model()

    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(
        x=st.lists(st.one_of(st.floats(-4, 4), st.just(float("nan"))), min_size=5, max_size=5),
        mask=st.lists(st.booleans(), min_size=5, max_size=5).filter(any),
        log_sigma=st.floats(-12, 2),
    )
    def check(x, mask, log_sigma):
        S = [i for i in range(5) if mask[i]]
        v = pgexact.pg2(pm, np.array([x]), S, sigma=10.0 ** log_sigma)
        assert np.isfinite(v[0]) and v[0] >= 0

    check()
