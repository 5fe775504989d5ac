"""Exact PG2 against an independent cell-enumeration brute force (|S| <= 2)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pgexact
from _oracle import pg2_bruteforce, round_boundary
from conftest import CASE_NAMES

SETS = [(0,), (1,), (2,), (3,), (4,), (0, 1), (1, 2), (2, 4), (0, 3)]
SIGMAS = {
    "scalar": 0.3,
    "vector": np.array([0.2, 0.5, 0.05, 1.0, 0.3]),
}
RTOL = 1e-9


def assert_pg2_close(got, ref, oracle, output, what=""):
    got = np.asarray(got)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == np.float64
    atol = 1e-14 * (1.0 + oracle.scale(output)) ** 2
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=atol, err_msg=what)


@pytest.mark.parametrize("sigma_kind", list(SIGMAS))
@pytest.mark.parametrize("S", SETS, ids=lambda s: "S" + "".join(map(str, s)))
@pytest.mark.parametrize("name", CASE_NAMES)
def test_pg2_matches_bruteforce(cases, name, S, sigma_kind):
    c = cases(name)
    sigma = SIGMAS[sigma_kind]
    got = pgexact.pg2(c.pg_model(), c.X, list(S), sigma=sigma)
    ref = pg2_bruteforce(c.oracle, c.X, S, sigma, c.output)
    assert_pg2_close(got, ref, c.oracle, c.output, f"{name} S={S} sigma={sigma_kind}")


def test_pg2_order_of_features_irrelevant(cases):
    c = cases("nan")
    a = pgexact.pg2(c.pg_model(), c.X, [3, 1])
    b = pgexact.pg2(c.pg_model(), c.X, [1, 3])
    np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)


def test_pg2_numpy_int_features_and_array(cases):
    c = cases("reg")
    ref = pgexact.pg2(c.pg_model(), c.X, [0, 2])
    np.testing.assert_array_equal(pgexact.pg2(c.pg_model(), c.X, np.array([0, 2])), ref)
    np.testing.assert_array_equal(pgexact.pg2(c.pg_model(), c.X, [np.int64(0), np.int32(2)]), ref)


def test_pg2_unused_feature_is_zero(const_feature_booster):
    from _oracle import XGBModel

    o = XGBModel(const_feature_booster)
    assert len(o.thresholds(3)) == 0
    X = np.random.default_rng(0).normal(size=(10, 5))
    got = pgexact.pg2(const_feature_booster, X, [3])
    np.testing.assert_array_equal(got, np.zeros(10))
    # adding an unused feature changes nothing
    np.testing.assert_allclose(
        pgexact.pg2(const_feature_booster, X, [0, 3]),
        pgexact.pg2(const_feature_booster, X, [0]),
        rtol=1e-13, atol=0,
    )


@pytest.mark.parametrize("name", ["reg", "multi2", "nan"])
def test_pg2_boolean_mask_per_row(cases, name):
    c = cases(name)
    rng = np.random.default_rng(3)
    mask = np.zeros(c.X.shape, dtype=bool)
    sets = []
    for r in range(c.X.shape[0]):
        S = sorted(rng.choice(c.d, size=int(rng.integers(1, 3)), replace=False).tolist())
        mask[r, S] = True
        sets.append(S)
    got = pgexact.pg2(c.pg_model(), c.X, mask, sigma=0.4)
    ref = np.array([pg2_bruteforce(c.oracle, c.X[r : r + 1], S, 0.4, c.output)[0] for r, S in enumerate(sets)])
    assert_pg2_close(got, ref, c.oracle, c.output)


# ------------------------------------------------------------------ hypothesis: rows near thresholds
def _near_threshold_value(oracle, f, j, kind, k):
    t = oracle.thresholds(f)
    if len(t) == 0:
        return 0.0
    t32 = t[j % len(t)]
    b = float(round_boundary(t32))
    return {
        "t": float(t32),
        "t-ulp32": float(np.nextafter(t32, np.float32(-np.inf))),
        "t+ulp32": float(np.nextafter(t32, np.float32(np.inf))),
        "b": b,
        "b-ulp64": float(np.nextafter(b, -np.inf)),
        "b+ulp64": float(np.nextafter(b, np.inf)),
        "offset": float(t32) + k,
        "nan": np.nan,
    }[kind]


KINDS = ["t", "t-ulp32", "t+ulp32", "b", "b-ulp64", "b+ulp64", "offset", "nan"]


@pytest.mark.parametrize("name", ["reg", "nan", "dart"])
def test_pg2_bruteforce_hypothesis(cases, name):
    c = cases(name)
    pm = c.pg_model()

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
              database=None)
    @given(
        S=st.sampled_from(SETS),
        j=st.integers(0, 1000),
        kinds=st.lists(st.sampled_from(KINDS), min_size=5, max_size=5),
        k=st.floats(-3, 3),
        log_sigma=st.floats(-3, 1),
        per_feature=st.booleans(),
    )
    def check(S, j, kinds, k, log_sigma, per_feature):
        x = np.array([_near_threshold_value(c.oracle, f, j + f, kinds[f], k) for f in range(c.d)])
        sigma = 10.0 ** log_sigma
        if per_feature:
            sigma = sigma * np.array([1.0, 0.5, 2.0, 0.1, 3.0])
        got = pgexact.pg2(pm, x[None, :], list(S), sigma=sigma)
        ref = pg2_bruteforce(c.oracle, x[None, :], S, sigma, c.output)
        assert_pg2_close(got, ref, c.oracle, c.output, f"x={x!r} S={S} sigma={sigma!r}")

    check()
