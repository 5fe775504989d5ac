"""The pair cache: leaf-pair lists kept across calls on the same model.

A kept list is the list enumerated again, so every call gives the same bits with the cache on,
off, hit or missed; a model is found by content (a model parsed again is found, a different
model never is); the budget holds and drops the least recently used model; calls that perturb a
feature by category are not cached; concurrent calls on one model agree with serial ones.
Results after a hit are also checked against the unpruned reference kernel.
"""

from __future__ import annotations

import concurrent.futures

import numpy as np
import pytest
import xgboost as xgb

import pgexact
from pgexact._exact._api import rank_with_curve
from pgexact._exact._kernels import Kernel, block_of_call
from pgexact._exact._prepare import prepare_call


def _booster(seed: int, n_trees: int = 15, depth: int = 5, d: int = 6) -> tuple:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(1500, d))
    y = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + X[:, 3:].sum(axis=1) + 0.3 * rng.normal(size=1500)
    params = dict(max_depth=depth, eta=0.3, nthread=1, tree_method="hist", max_bin=64, seed=seed)
    return xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=n_trees), X


@pytest.fixture(scope="module")
def model():
    return _booster(0)


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts from an empty cache at the default limit, and leaves it so."""
    default = pgexact.set_pair_cache_limit(pgexact._core.exact.DEFAULT_PAIR_STORE_BYTES)
    pgexact.clear_pair_cache()
    yield
    pgexact.set_pair_cache_limit(default)
    pgexact.clear_pair_cache()


def _everything(m, X, ranking):
    """One call of every kind that runs the pair kernel."""
    return [pgexact.pg2(m, X, features=[0, 2, 3], n_jobs=1, progress=False),
            pgexact.pg2_curve(m, X, ranking, n_jobs=1, progress=False),
            pgexact.pgi2(m, X, ranking, n_jobs=1, progress=False),
            pgexact.pgu2(m, X, ranking, n_jobs=1, progress=False),
            *rank_with_curve(m, X, n_jobs=1, progress=False)]


def _same_bits(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_estimate_neither_reads_nor_changes_the_cache(model, monkeypatch):
    """pgexact.estimate times a call as on a model seen for the first time: its calibration runs
    with the cache paused (a cache holding part of a model's lists made the first tenths of a
    second faster than the rest), and leaves the cache as it found it; calls after it find
    their lists again."""
    m, X = model
    rows = X[:24]
    ranking = np.tile(np.arange(X.shape[1]), (len(rows), 1))
    pgexact.pgi2(m, rows, ranking, n_jobs=1, progress=False)  # stores the model's lists
    held = pgexact.pair_cache_info()
    assert held["models"] == 1 and held["bytes"] > 0
    from pgexact._exact import _estimate
    monkeypatch.setattr(_estimate, "WATCH_SECONDS", 0.0)  # stop at the first reports
    for kind in ("pg2", "pgi2", "rank"):
        pgexact.estimate(m, rows, kind, n_jobs=1)
        assert pgexact.pair_cache_info() == held  # not read (no hit counted), nothing added
    pgexact.pgi2(m, rows, ranking, n_jobs=1, progress=False)
    assert pgexact.pair_cache_info()["hits"] == held["hits"] + 1  # no longer paused


def test_hits_give_the_bits_of_the_cache_off(model):
    booster, X = model
    rows = X[:13]
    ranking = np.argsort(np.random.default_rng(1).random((13, X.shape[1])), axis=1)
    pgexact.set_pair_cache_limit(0)
    off = _everything(booster, rows, ranking)
    assert pgexact.pair_cache_info()["models"] == 0
    pgexact.set_pair_cache_limit(pgexact._core.exact.DEFAULT_PAIR_STORE_BYTES)
    first = _everything(booster, rows, ranking)  # the booster is parsed anew on every call
    info = pgexact.pair_cache_info()
    assert info["models"] == 1 and info["misses"] >= 1 and info["hits"] >= 1
    assert 0 < info["bytes"] <= info["max_bytes"]
    second = _everything(booster, rows, ranking)
    assert pgexact.pair_cache_info()["hits"] > info["hits"]
    _same_bits(first, off)
    _same_bits(second, off)
    # a row alone on the leaf pairs (a one-row call of Kernel.pairs takes the shared walks on
    # trees this small, test_few_rows.py), after the lists were kept by calls on other rows
    alone = prepare_call(booster, rows[5:6], n_jobs=1)
    _same_bits([alone.pg2_curve(alone.ranking(ranking[5:6]), kernel=Kernel.leaf_pairs)], [off[1][5:6]])


def test_hits_against_the_unpruned_reference(model):
    booster, X = model
    rows = X[100:112]
    every = np.ones(X.shape[1], np.uint8)
    call = prepare_call(booster, rows, sigma=0.4)
    call.pg2(every)  # keeps the lists
    assert pgexact.pair_cache_info()["models"] == 1
    hit = prepare_call(booster, rows, sigma=0.4).pg2(every)
    assert pgexact.pair_cache_info()["hits"] >= 1
    ref = call.pg2(every, kernel=Kernel.reference)
    assert np.all(hit >= 0.0)
    np.testing.assert_allclose(hit, ref, rtol=1e-12, atol=1e-300)


def test_a_changed_model_is_another_model(model):
    """A model of the same shapes with other splits: found by content, so never served the
    other's lists."""
    booster, X = model
    rows = X[:9]
    other_booster, _ = _booster(1)  # same shapes, other splits
    pgexact.set_pair_cache_limit(0)
    want_a = pgexact.pgi2(booster, rows, n_jobs=1, progress=False)
    want_b = pgexact.pgi2(other_booster, rows, n_jobs=1, progress=False)
    pgexact.set_pair_cache_limit(pgexact._core.exact.DEFAULT_PAIR_STORE_BYTES)
    got_a = pgexact.pgi2(booster, rows, n_jobs=1, progress=False)
    got_b = pgexact.pgi2(other_booster, rows, n_jobs=1, progress=False)
    again_a = pgexact.pgi2(booster, rows, n_jobs=1, progress=False)
    assert pgexact.pair_cache_info()["models"] == 2
    np.testing.assert_array_equal(got_a, want_a)
    np.testing.assert_array_equal(got_b, want_b)
    np.testing.assert_array_equal(again_a, want_a)
    assert not np.array_equal(want_a, want_b)


def test_budget_and_least_recently_used(model):
    booster, X = model
    other, _ = _booster(2)
    rows = X[:30]
    pgexact.pgi2(booster, rows, n_jobs=1, progress=False)
    one_model = pgexact.pair_cache_info()["bytes"]
    assert one_model > 0
    # room for one model only: the second drops the first
    pgexact.set_pair_cache_limit(int(one_model * 1.5))
    pgexact.pgi2(other, rows, n_jobs=1, progress=False)
    info = pgexact.pair_cache_info()
    assert info["models"] == 1 and info["bytes"] <= info["max_bytes"]
    before = info["misses"]
    pgexact.pgi2(booster, rows, n_jobs=1, progress=False)
    assert pgexact.pair_cache_info()["misses"] == before + 1  # it had been dropped
    # a budget too small for any model: nothing kept, results unchanged
    pgexact.set_pair_cache_limit(1000)
    assert pgexact.pair_cache_info()["bytes"] <= 1000
    small = pgexact.pgi2(booster, rows, n_jobs=1, progress=False)
    assert pgexact.pair_cache_info()["models"] == 0
    pgexact.set_pair_cache_limit(0)
    np.testing.assert_array_equal(small, pgexact.pgi2(booster, rows, n_jobs=1, progress=False))
    assert pgexact.pair_cache_info()["bytes"] == 0


def test_categorical_noise_is_not_cached(model):
    booster, X = model
    d = X.shape[1]
    rows = X[:30].copy()
    rows[:, 0] = np.clip(np.round(rows[:, 0]) + 1, 0, 2)
    noise = [pgexact.noise.categorical(0.3, categories=[0, 1, 2])] + ["normal"] * (d - 1)
    first = pgexact.pg2(booster, rows, features=[0, 1], noise=noise, n_jobs=1, progress=False)
    assert pgexact.pair_cache_info() == {**pgexact.pair_cache_info(), "models": 0, "bytes": 0,
                                          "misses": 0}
    pgexact.set_pair_cache_limit(0)
    np.testing.assert_array_equal(
        first, pgexact.pg2(booster, rows, features=[0, 1], noise=noise, n_jobs=1, progress=False))


def test_concurrent_calls_agree_with_serial_ones(model):
    booster, X = model
    ens = pgexact.load(booster)
    blocks = [X[i * 5:(i + 1) * 5] for i in range(8)]
    pgexact.set_pair_cache_limit(0)
    want = [pgexact.pgi2(ens, b, n_jobs=1, progress=False) for b in blocks]
    pgexact.set_pair_cache_limit(pgexact._core.exact.DEFAULT_PAIR_STORE_BYTES)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda b: pgexact.pgi2(ens, b, n_jobs=1, progress=False), blocks))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert pgexact.pair_cache_info()["models"] == 1


@pytest.mark.parametrize("bad, error, start", [(-1, ValueError, "max_bytes: must be >= 0"),
                                                (1.5, TypeError, "max_bytes: expected an integer"),
                                                (True, TypeError, "max_bytes: expected an integer")])
def test_limit_is_checked(bad, error, start):
    with pytest.raises(error) as info:
        pgexact.set_pair_cache_limit(bad)
    assert str(info.value).startswith(start)


def test_one_row_calls_keep_lists_from_the_second_call():
    """A one-row call on the leaf pairs (a block of one row of a larger call, as pgexact.dask
    makes them) enumerates only its live pairs (nothing to keep); the second call on the model
    enumerates and keeps the full lists, which the calls after it read: same bits all along.
    (sigma = 0.5, so that a row keeps over 15 % of these depth-9 trees' leaves live: sparser
    passes enumerate afresh and keep nothing either.) One-row calls as made take the union walk
    (test_few_rows.py), which keeps nothing."""
    booster, X = _booster(0, n_trees=10, depth=9)
    ens = pgexact.load(booster)
    rows = X[200:206]
    ranking = np.argsort(-np.abs(rows), axis=1)
    pgexact.set_pair_cache_limit(pgexact._core.exact.DEFAULT_PAIR_STORE_BYTES)
    pgexact.clear_pair_cache()
    for i in range(3):
        pgexact.pgi2(ens, rows[i:i + 1], ranking[i:i + 1], sigma=0.5, n_jobs=1, progress=False)
    assert pgexact.pair_cache_info()["models"] == 0
    pgexact.set_pair_cache_limit(0)
    with block_of_call(len(rows)):
        want = [pgexact.pgi2(ens, rows[i:i + 1], ranking[i:i + 1], sigma=0.5, n_jobs=1, progress=False)
                for i in range(6)]
    pgexact.set_pair_cache_limit(pgexact._core.exact.DEFAULT_PAIR_STORE_BYTES)
    got, models = [], []
    with block_of_call(len(rows)):
        for i in range(6):
            got.append(pgexact.pgi2(ens, rows[i:i + 1], ranking[i:i + 1], sigma=0.5, n_jobs=1,
                                    progress=False))
            models.append(pgexact.pair_cache_info()["models"])
    assert models[1:] == [1] * 5 and pgexact.pair_cache_info()["hits"] >= 4
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
