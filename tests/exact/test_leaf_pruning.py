"""Per-row certified leaf pruning in the leaf-pair kernel against the unpruned kernel and the
unpruned reference.

A row drops the leaves whose boxes lie far out in its noise's tails, within a budget of its
estimated result, marks them dead in its own lane, and certifies every result after the pass
(the bound of the dropped leaves alive in that set or prefix at most 1e-13 of the result), or
computes the row again without pruning. ``PGEXACT_LEAF_PRUNING=0`` turns pruning off and
``PGEXACT_LEAF_PRUNING=reckless`` spends a budget of 1e-2 of the estimate, so that certificates
fail and the recomputation runs: if the certificate did not hold, results would be off by far
more than 1e-13 there. The variable is read per call.
"""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pgexact
from pgexact._exact._kernels import Kernel, block_of_call
from pgexact._exact._prepare import prepare_call

RTOL = 1e-13


def _deep_model(seed: int, d: int = 5, n_trees: int = 12, depth: int = 8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2000, d))
    X[rng.random(X.shape) < 0.02] = np.nan
    y = (np.sin(2 * np.nan_to_num(X[:, 0])) + np.nan_to_num(X[:, 1]) * np.nan_to_num(X[:, 2 % d])
         + 0.2 * rng.normal(size=2000))
    params = dict(max_depth=depth, eta=0.3, nthread=1, tree_method="hist", max_bin=64, seed=seed)
    booster = xgb.train(params, xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=n_trees)
    return pgexact.load(booster), X


@pytest.fixture(scope="module")
def deep():
    return _deep_model(0)


@pytest.fixture(scope="module")
def deep8():
    """Eight features: a greedy ranking's last four steps take one unpruned pass (the tail,
    pair_kernel.cpp), so its pruned steps are steps 1-3 here (none at five features)."""
    return _deep_model(0, d=8)


def _calls(ens, X, ranking, sigma):
    return (pgexact.pg2(ens, X, list(range(ens.n_features)), sigma=sigma, n_jobs=1, progress=False),
            pgexact.pg2(ens, X, features=[0, 2], sigma=sigma, n_jobs=1, progress=False),
            pgexact.pg2_curve(ens, X, ranking, sigma=sigma, n_jobs=1, progress=False))


@pytest.mark.parametrize("sigma", [0.02, 0.1, 0.5])
def test_pruned_equals_unpruned(deep, monkeypatch, sigma):
    ens, X = deep
    rows = X[:40]
    ranking = np.argsort(np.random.default_rng(1).random((40, ens.n_features)), axis=1)
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", "0")
    plain = _calls(ens, rows, ranking, sigma)
    for mode in ("1", "reckless"):
        monkeypatch.setenv("PGEXACT_LEAF_PRUNING", mode)
        for got, want in zip(_calls(ens, rows, ranking, sigma), plain):
            assert np.all(got >= 0.0)
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=0)


def test_pruning_prunes(deep, monkeypatch):
    """The test above must be able to fail: with small noise on deep trees the pruned sums are
    not the unpruned ones bit for bit (leaves were dropped), and reckless pruning without the
    certificate's recomputation would be far off (checked against the reference)."""
    ens, X = deep
    rows = X[:40]
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", "0")
    every = list(range(ens.n_features))
    plain = pgexact.pg2(ens, rows, every, sigma=0.05, n_jobs=1, progress=False)
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", "1")
    pruned = pgexact.pg2(ens, rows, every, sigma=0.05, n_jobs=1, progress=False)
    assert np.any(pruned != plain)
    np.testing.assert_allclose(pruned, plain, rtol=RTOL, atol=0)


def test_pruned_against_reference(deep):
    ens, X = deep
    rows = X[40:60]
    for sigma in (0.05, 0.3):
        call = prepare_call(ens, rows, sigma=sigma)
        every = np.ones(ens.n_features, np.uint8)
        fast, ref = call.pg2(every), call.pg2(every, kernel=Kernel.reference)
        assert np.all(fast >= 0.0)
        np.testing.assert_allclose(fast, ref, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("mode", ["1", "reckless"])
def test_pruned_rows_do_not_depend_on_batch_or_threads(deep, monkeypatch, mode):
    """Pruning and its certificate are decided per row, in the row's own lane: a row alone on
    the leaf pairs (as a block of the larger call, block_of_call) gets its bits in the call.
    A one-row call as made takes the union walk (test_few_rows.py): within 2 tol of them."""
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", mode)
    ens, X = deep
    rows = X[:24]
    ranking = np.argsort(np.random.default_rng(2).random((24, ens.n_features)), axis=1)
    together = pgexact.pg2_curve(ens, rows, ranking, sigma=0.1, n_jobs=2, progress=False)
    with block_of_call(24):
        alone = np.vstack([pgexact.pg2_curve(ens, rows[i:i + 1], ranking[i:i + 1], sigma=0.1, n_jobs=1,
                                             progress=False) for i in range(24)])
    order = np.random.default_rng(3).permutation(24)
    shuffled = pgexact.pg2_curve(ens, rows[order], ranking[order], sigma=0.1, n_jobs=1, progress=False)
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_array_equal(shuffled, together[order])
    for i in range(0, 24, 6):
        walked = pgexact.pg2_curve(ens, rows[i:i + 1], ranking[i:i + 1], sigma=0.1, n_jobs=1, progress=False)
        np.testing.assert_allclose(walked[0], together[i], rtol=2e-13, atol=0)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.integers(2, 9), sigma=st.floats(0.01, 2.0),
       mode=st.sampled_from(["1", "reckless"]))
def test_pruned_random_models(seed, depth, sigma, mode):
    import os

    ens, X = _deep_model(seed, d=4, n_trees=5, depth=depth)
    rng = np.random.default_rng(seed)
    rows = X[rng.integers(0, X.shape[0], 9)]
    ranking = np.argsort(rng.random((9, 4)), axis=1)
    old = os.environ.get("PGEXACT_LEAF_PRUNING")
    try:
        os.environ["PGEXACT_LEAF_PRUNING"] = "0"
        plain = _calls(ens, rows, ranking, sigma)
        os.environ["PGEXACT_LEAF_PRUNING"] = mode
        pruned = _calls(ens, rows, ranking, sigma)
    finally:
        if old is None:
            os.environ.pop("PGEXACT_LEAF_PRUNING", None)
        else:
            os.environ["PGEXACT_LEAF_PRUNING"] = old
    for got, want in zip(pruned, plain):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=0)


@pytest.mark.parametrize("prune", ["1", "0"])
def test_slot_masses_from_the_tables_give_the_same_bits(deep, monkeypatch, prune):
    """Models whose slot masses would pass the memory budget compute them from the tables in
    the passes (PGEXACT_TABLE_MASSES=1 forces it): the same operations, so the same bits."""
    ens, X = deep
    rows = X[:20]
    ranking = np.argsort(np.random.default_rng(4).random((20, ens.n_features)), axis=1)
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", prune)
    kept = _calls(ens, rows, ranking, 0.1) + (pgexact.rank(ens, rows[:6], sigma=0.1, progress=False),)
    monkeypatch.setenv("PGEXACT_TABLE_MASSES", "1")
    tables = _calls(ens, rows, ranking, 0.1) + (pgexact.rank(ens, rows[:6], sigma=0.1, progress=False),)
    for got, want in zip(tables, kept):
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------- greedy steps prune too
def _greedy(ens, rows, sigma, n_jobs=1):
    from pgexact._exact._api import rank_with_curve

    return rank_with_curve(ens, rows, sigma=sigma, n_jobs=n_jobs, progress=False)


@pytest.mark.parametrize("sigma", [0.02, 0.1, 0.5])
def test_greedy_pruned_equals_unpruned(deep8, monkeypatch, sigma):
    """Pruned greedy steps choose what the unpruned steps choose (a choice closer than its
    bounds is recomputed unpruned), and their curves agree within 1e-13; reckless pruning fails
    certificates and lands on the unpruned result through the recomputation."""
    ens, X = deep8
    rows = X[:40]
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", "0")
    plain_rank, plain_curve = _greedy(ens, rows, sigma)
    for mode in ("1", "reckless"):
        monkeypatch.setenv("PGEXACT_LEAF_PRUNING", mode)
        rank, curve = _greedy(ens, rows, sigma)
        np.testing.assert_array_equal(rank, plain_rank)
        assert np.all(curve >= 0.0)
        np.testing.assert_allclose(curve, plain_curve, rtol=RTOL, atol=0)


def test_greedy_pruning_prunes(deep8, monkeypatch):
    """The test above must be able to fail: with small noise on deep trees the greedy curves are
    not the unpruned bits (leaves were dropped in the steps)."""
    ens, X = deep8
    rows = X[:40]
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", "0")
    _, plain = _greedy(ens, rows, 0.05)
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", "1")
    _, pruned = _greedy(ens, rows, 0.05)
    assert np.any(pruned != plain)


def test_greedy_pruned_rows_do_not_depend_on_batch(deep8):
    """A row's pruning is its own (its lane's), whatever block and thread its vector gets: the
    call on two threads (the pruning's vectors go to both) gives each row its bits alone."""
    ens, X = deep8
    rows = X[:12]
    together = _greedy(ens, rows, 0.1, n_jobs=2)
    # alone on the batch's kernel (a greedy ranking of one row takes the shared walks by
    # default, test_few_rows.py: the same ranking, the curve within 2 tol)
    alone = [prepare_call(ens, rows[i:i + 1], sigma=0.1, n_jobs=1).greedy_rank(kernel=Kernel.leaf_pairs)
             for i in range(12)]
    np.testing.assert_array_equal(together[0], np.vstack([a[0] for a in alone]))
    np.testing.assert_array_equal(together[1], np.vstack([a[1] for a in alone]))
    walked = [_greedy(ens, rows[i:i + 1], 0.1) for i in range(12)]
    np.testing.assert_array_equal(together[0], np.vstack([a[0] for a in walked]))
    np.testing.assert_allclose(np.vstack([a[1] for a in walked]), together[1], rtol=2e-13, atol=0)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.integers(2, 9), sigma=st.floats(0.01, 2.0),
       mode=st.sampled_from(["1", "reckless"]))
def test_greedy_pruned_random_models(seed, depth, sigma, mode):
    import os

    ens, X = _deep_model(seed, d=4, n_trees=5, depth=depth)
    rows = X[np.random.default_rng(seed).integers(0, X.shape[0], 9)]
    old = os.environ.get("PGEXACT_LEAF_PRUNING")
    try:
        os.environ["PGEXACT_LEAF_PRUNING"] = "0"
        plain = _greedy(ens, rows, sigma)
        os.environ["PGEXACT_LEAF_PRUNING"] = mode
        pruned = _greedy(ens, rows, sigma)
    finally:
        if old is None:
            os.environ.pop("PGEXACT_LEAF_PRUNING", None)
        else:
            os.environ["PGEXACT_LEAF_PRUNING"] = old
    np.testing.assert_array_equal(pruned[0], plain[0])
    np.testing.assert_allclose(pruned[1], plain[1], rtol=RTOL, atol=0)
