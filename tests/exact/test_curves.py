"""pg2_curve, pgi2, pgu2 and attribution rankings."""

import numpy as np
import pytest

import pgexact
from _oracle import ranking_from_attributions

RANKING = np.array([3, 0, 4, 1, 2])
NAMES = ["reg", "multi1", "nan", "dart"]


def _row_rankings(n, d, seed=0):
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(d) for _ in range(n)], dtype=np.int64)


@pytest.mark.parametrize("name", NAMES)
def test_curve_columns_are_topk_pg2(cases, name):
    c = cases(name)
    pm = c.pg_model()
    curve = pgexact.pg2_curve(pm, c.X, RANKING, sigma=0.3)
    assert curve.shape == (c.X.shape[0], c.d)
    assert curve.dtype == np.float64
    for k in range(1, c.d + 1):
        np.testing.assert_allclose(
            curve[:, k - 1], pgexact.pg2(pm, c.X, RANKING[:k].tolist(), sigma=0.3), rtol=1e-10, atol=1e-300
        )


@pytest.mark.parametrize("name", NAMES)
def test_curve_per_row_ranking(cases, name):
    c = cases(name)
    pm = pgexact.load(c.model, output=c.output)
    R = _row_rankings(c.X.shape[0], c.d, seed=1)
    sigma = np.array([0.2, 0.5, 0.05, 1.0, 0.3])
    curve = pgexact.pg2_curve(pm, c.X, R, sigma=sigma)
    for r in range(c.X.shape[0]):
        for k in range(1, c.d + 1):
            ref = pgexact.pg2(pm, c.X[r : r + 1], R[r, :k].tolist(), sigma=sigma)[0]
            np.testing.assert_allclose(curve[r, k - 1], ref, rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("ranking_kind", ["shared", "per_row"])
@pytest.mark.parametrize("name", NAMES)
def test_pgi2_pgu2_are_curve_means(cases, name, ranking_kind):
    c = cases(name)
    pm = c.pg_model()
    R = RANKING if ranking_kind == "shared" else _row_rankings(c.X.shape[0], c.d, seed=2)
    curve = pgexact.pg2_curve(pm, c.X, R, sigma=0.3)
    rev = R[::-1] if R.ndim == 1 else R[:, ::-1]
    curve_rev = pgexact.pg2_curve(pm, c.X, np.ascontiguousarray(rev), sigma=0.3)
    pgi = pgexact.pgi2(pm, c.X, R, sigma=0.3)
    pgu = pgexact.pgu2(pm, c.X, R, sigma=0.3)
    assert pgi.shape == pgu.shape == (c.X.shape[0],)
    np.testing.assert_allclose(pgi, curve.mean(axis=1), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(pgu, curve_rev.mean(axis=1), rtol=1e-12, atol=1e-300)
    # keyword form
    np.testing.assert_array_equal(pgexact.pgi2(pm, c.X, ranking=R, sigma=0.3), pgi)


def test_pgu2_bottom_k_definition(cases):
    """pgu2 uses bottom-k: the last k features of the ranking."""
    c = cases("reg")
    pm = c.pg_model()
    d = c.d
    ref = np.mean([pgexact.pg2(pm, c.X, RANKING[d - k :].tolist()) for k in range(1, d + 1)], axis=0)
    np.testing.assert_allclose(pgexact.pgu2(pm, c.X, RANKING), ref, rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("name", ["reg", "multi0"])
def test_attributions_rank_by_abs_with_ties_to_lower_index(cases, name):
    c = cases(name)
    pm = c.pg_model()
    n = c.X.shape[0]
    rng = np.random.default_rng(4)
    A = rng.normal(size=(n, c.d))
    # explicit ties: |a0| == |a1| (opposite signs), and a2 == a4 in some rows
    A[:, 1] = -A[:, 0]
    A[::2, 4] = A[::2, 2]
    A[0] = [0.5, -0.5, 0.1, -0.5, 0.0]
    A[1] = [0.0, 0.0, 0.0, 0.0, 0.0]  # all tied: identity ranking
    R = ranking_from_attributions(A)
    assert R[0].tolist() == [0, 1, 3, 2, 4]
    assert R[1].tolist() == [0, 1, 2, 3, 4]
    for fn in (pgexact.pgi2, pgexact.pgu2):
        got = fn(pm, c.X, attributions=A, sigma=0.3)
        np.testing.assert_array_equal(got, fn(pm, c.X, R, sigma=0.3))
    # the tie rule matters: ranking 1 before 0 gives a different PGI2 on row 0
    R_swapped = R.copy()
    R_swapped[0] = [1, 0, 3, 2, 4]
    a = pgexact.pgi2(pm, c.X[:1], R[:1], sigma=0.3)
    b = pgexact.pgi2(pm, c.X[:1], R_swapped[:1], sigma=0.3)
    assert a[0] != b[0]


def test_default_ranking_is_greedy(cases):
    c = cases("reg")
    pm = c.pg_model()
    R = pgexact.rank(pm, c.X, sigma=0.3)
    # the greedy search may produce its curve by another route: equal up to rounding
    np.testing.assert_allclose(pgexact.pgi2(pm, c.X, sigma=0.3), pgexact.pgi2(pm, c.X, R, sigma=0.3),
                               rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(pgexact.pgu2(pm, c.X, sigma=0.3), pgexact.pgu2(pm, c.X, R, sigma=0.3),
                               rtol=1e-10, atol=1e-300)


def test_full_curve_endpoint_equals_all_features(cases):
    c = cases("binary")
    pm = c.pg_model()
    curve = pgexact.pg2_curve(pm, c.X, RANKING)
    np.testing.assert_allclose(curve[:, -1], pgexact.pg2(pm, c.X, list(range(c.d))), rtol=1e-10, atol=1e-300)
