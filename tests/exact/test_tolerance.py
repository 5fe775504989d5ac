"""``tol=``: results certified within a relative tolerance of the unpruned sums.

Checked against the kernel with nothing dropped (``tol=0``) and against the unpruned reference
walk: every result within ``tol`` relative, never negative; the option must be able to fail
(with a loose tolerance, results differ from the unpruned bits, and a reckless budget whose
certificates fail still lands within ``tol`` through the recomputation); ``tol=None`` is
today's default bit for bit; arguments are checked by name.
"""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pgexact
from pgexact._exact._kernels import Kernel
from pgexact._exact._prepare import prepare_call


def _deep_model(seed: int, d: int = 5, n_trees: int = 12, depth: int = 8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2000, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2 % d] + 0.2 * rng.normal(size=2000)
    params = dict(max_depth=depth, eta=0.3, nthread=1, tree_method="hist", max_bin=64, seed=seed)
    return pgexact.load(xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=n_trees)), X


@pytest.fixture(scope="module")
def deep():
    return _deep_model(0)


def _calls(ens, rows, ranking, sigma, tol):
    every = list(range(ens.n_features))
    kw = dict(sigma=sigma, n_jobs=1, progress=False, tol=tol)
    return [pgexact.pg2(ens, rows, every, **kw), pgexact.pg2(ens, rows, [0, 2, 3], **kw),
            pgexact.pg2_curve(ens, rows, ranking, **kw), pgexact.pgi2(ens, rows, ranking, **kw),
            pgexact.pgu2(ens, rows, ranking, **kw)]


def _within(got, want, tol):
    assert np.all(got >= 0.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=0)


@pytest.mark.parametrize("tol", [1e-10, 1e-6, 1e-3, 0.2])
@pytest.mark.parametrize("sigma", [0.05, 0.3])
def test_within_tol_of_nothing_dropped(deep, tol, sigma):
    ens, X = deep
    rows = X[:30]
    ranking = np.argsort(np.random.default_rng(1).random((30, ens.n_features)), axis=1)
    exact = _calls(ens, rows, ranking, sigma, 0.0)
    for got, want in zip(_calls(ens, rows, ranking, sigma, tol), exact):
        _within(got, want, tol)


def test_within_tol_of_the_reference(deep):
    ens, X = deep
    rows = X[40:52]
    call = prepare_call(ens, rows, sigma=0.1)
    every = np.ones(ens.n_features, np.uint8)
    ref = call.pg2(every, kernel=Kernel.reference)
    for tol in (1e-6, 1e-2):
        _within(call.pg2(every, tol=tol), ref, tol)


def test_a_loose_tolerance_drops_leaves(deep):
    """The tests above must be able to fail: a loose tolerance changes the sums (leaves were
    dropped) while they stay within it."""
    ens, X = deep
    rows = X[:30]
    every = list(range(ens.n_features))
    exact = pgexact.pg2(ens, rows, every, sigma=0.05, n_jobs=1, progress=False, tol=0)
    loose = pgexact.pg2(ens, rows, every, sigma=0.05, n_jobs=1, progress=False, tol=0.1)
    assert np.max(np.abs(loose - exact) / exact) > 1e-9
    _within(loose, exact, 0.1)


def test_default_and_zero(deep, monkeypatch):
    """None is the default call bit for bit; 0 drops nothing (the bits of pruning turned off)."""
    ens, X = deep
    rows = X[:20]
    ranking = np.argsort(np.random.default_rng(2).random((20, ens.n_features)), axis=1)
    none = _calls(ens, rows, ranking, 0.1, None)
    np.testing.assert_array_equal(none[1], pgexact.pg2(ens, rows, [0, 2, 3], sigma=0.1, n_jobs=1,
                                                       progress=False))
    np.testing.assert_array_equal(none[2], pgexact.pg2_curve(ens, rows, ranking, sigma=0.1, n_jobs=1,
                                                             progress=False))
    zero = _calls(ens, rows, ranking, 0.1, 0.0)
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", "0")
    for got, want in zip(zero, _calls(ens, rows, ranking, 0.1, None)):
        np.testing.assert_array_equal(got, want)


def test_failed_certificates_are_recomputed_within_tol(deep, monkeypatch):
    """A reckless budget (1e-2 of the estimate) fails certificates at tol=1e-6: the rows are
    computed again in full, so results still land within tol."""
    ens, X = deep
    rows = X[:30]
    ranking = np.argsort(np.random.default_rng(3).random((30, ens.n_features)), axis=1)
    exact = _calls(ens, rows, ranking, 0.05, 0.0)
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", "reckless")
    for got, want in zip(_calls(ens, rows, ranking, 0.05, 1e-6), exact):
        _within(got, want, 1e-6)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.integers(2, 9), sigma=st.floats(0.01, 2.0),
       tol=st.sampled_from([1e-12, 1e-8, 1e-4, 1e-2, 0.5]))
def test_random_models(seed, depth, sigma, tol):
    ens, X = _deep_model(seed, d=4, n_trees=5, depth=depth)
    rng = np.random.default_rng(seed)
    rows = X[rng.integers(0, X.shape[0], 9)]
    ranking = np.argsort(rng.random((9, 4)), axis=1)
    for got, want in zip(_calls(ens, rows, ranking, sigma, tol),
                         _calls(ens, rows, ranking, sigma, 0.0)):
        _within(got, want, tol)


@pytest.mark.parametrize("bad, error, start", [
    (-1e-3, ValueError, "tol: must be in [0, 1)"), (1.0, ValueError, "tol: must be in [0, 1)"),
    (float("nan"), ValueError, "tol: must be in [0, 1)"), ("1e-6", TypeError, "tol: expected a number"),
    (True, TypeError, "tol: expected a number")])
@pytest.mark.parametrize("fn", ["pg2", "pg2_curve", "pgi2", "pgu2", "rank"])
def test_tol_is_checked(deep, bad, error, start, fn):
    ens, X = deep
    args = {"pg2": ([0, 1],), "pg2_curve": (np.arange(ens.n_features),),
            "pgi2": (np.arange(ens.n_features),), "pgu2": (np.arange(ens.n_features),),
            "rank": ()}[fn]
    with pytest.raises(error) as info:
        getattr(pgexact, fn)(ens, X[:3], *args, progress=False, tol=bad)
    assert str(info.value).startswith(start)


@pytest.mark.parametrize("tol", [1e-8, 1e-3, 0.3])
def test_greedy_ranking_is_exact_whatever_tol(deep, tol, monkeypatch):
    """rank(tol=) drops leaves in its steps but keeps a choice only where it is certain, so the
    ranking is the unpruned one; its curve (and pgi2 / pgu2 without a ranking) within tol."""
    from pgexact._exact._api import rank_with_curve

    ens, X = deep
    rows = X[:30]
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", "0")
    exact_rank, exact_curve = rank_with_curve(ens, rows, sigma=0.05, n_jobs=1, progress=False)
    monkeypatch.delenv("PGEXACT_LEAF_PRUNING")
    ranking, curve = rank_with_curve(ens, rows, sigma=0.05, n_jobs=1, progress=False, tol=tol)
    np.testing.assert_array_equal(ranking, exact_rank)
    _within(curve, exact_curve, tol)
    np.testing.assert_array_equal(pgexact.rank(ens, rows, sigma=0.05, progress=False, tol=tol),
                                  exact_rank)
    _within(pgexact.pgi2(ens, rows, sigma=0.05, progress=False, tol=tol), exact_curve.mean(axis=1),
            tol)
    _within(pgexact.pgu2(ens, rows, sigma=0.05, progress=False, tol=tol),
            pgexact.pgu2(ens, rows, exact_rank, sigma=0.05, progress=False, tol=0.0), tol)


def test_a_loose_tolerance_drops_leaves_in_the_greedy_steps():
    """Over eight features: a greedy ranking's last four steps take one unpruned pass (the tail,
    pair_kernel.cpp), so the pruned steps are steps 1-3 (none at five features)."""
    from pgexact._exact._api import rank_with_curve

    ens, X = _deep_model(0, d=8)
    rows = X[:30]
    _, exact = rank_with_curve(ens, rows, sigma=0.05, n_jobs=1, progress=False, tol=0.0)
    _, loose = rank_with_curve(ens, rows, sigma=0.05, n_jobs=1, progress=False, tol=0.2)
    assert np.max(np.abs(loose - exact) / exact) > 1e-9


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.integers(2, 9), sigma=st.floats(0.01, 2.0),
       tol=st.sampled_from([1e-8, 1e-3, 0.5]))
def test_greedy_random_models(seed, depth, sigma, tol):
    from pgexact._exact._api import rank_with_curve

    ens, X = _deep_model(seed, d=4, n_trees=5, depth=depth)
    rows = X[np.random.default_rng(seed).integers(0, X.shape[0], 9)]
    exact = rank_with_curve(ens, rows, sigma=sigma, n_jobs=1, progress=False, tol=0.0)
    got = rank_with_curve(ens, rows, sigma=sigma, n_jobs=1, progress=False, tol=tol)
    np.testing.assert_array_equal(got[0], exact[0])
    _within(got[1], exact[1], tol)



def test_explainer_takes_tol(deep):
    """Explainer(tol=): the same greedy ranking as the exact call, gains within tol of the
    row's PG² of each prefix; tol checked when the explainer is built."""
    ens, X = deep
    rows = X[:10]
    exact = pgexact.Explainer(ens, sigma=0.05, tol=0.0)(rows, progress=False)
    loose = pgexact.Explainer(ens, sigma=0.05, tol=1e-3)(rows, progress=False)
    np.testing.assert_array_equal(loose.ranking, exact.ranking)
    _within(loose.curve, exact.curve, 1e-3)
    np.testing.assert_allclose(loose.values.sum(axis=1), exact.values.sum(axis=1), rtol=1e-3, atol=0)
    with pytest.raises(ValueError, match="^tol: must be in"):
        pgexact.Explainer(ens, tol=2.0)
