"""Calls of one or two rows on the walks (kernels.hpp's few_rows_on_walks).

``Kernel.pairs`` runs one-row sets and curves on one walk over the union of the row's sets
(union_walk.hpp), and greedy rankings of one or two rows (one of complete trees) on a union
walk per row and step; ``Kernel.walks`` ranks them on the shared walks; ``Kernel.leaf_pairs``
never does either. Checked here: which calls take
the walks; that their values are within the tolerance of the unpruned reference and of the
other kernels, on boosting trees, deep forests, complete (CatBoost) trees, NaN and over 64
features; that the greedy ranking is the leaf-pair kernel's; that threads share a row's work
without changing a bit; that the walks honour ``tol`` (a certified bound: a loose one changes
the bits, never by more than it allows); and that a dask block of a larger call takes that
call's kernel.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xgboost as xgb
from sklearn.ensemble import RandomForestRegressor

import pgexact
from pgexact._core import exact as core_exact
from pgexact._exact._kernels import Kernel, block_of_call
from pgexact._exact._prepare import prepare_call

D = 6
Call = core_exact.FewRowsCall


def _data(seed: int, n: int = 1500) -> tuple:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + X[:, 3:].sum(axis=1) + 0.3 * rng.normal(size=n)
    return X, y


@pytest.fixture(scope="module")
def small():
    """Boosting-sized trees: at most 32 leaves each."""
    X, y = _data(0)
    params = dict(max_depth=5, eta=0.3, nthread=1, tree_method="hist", max_bin=64, seed=0)
    return pgexact.load(xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=25)), X


@pytest.fixture(scope="module")
def deep():
    """A forest of unbounded depth: hundreds of leaves per tree."""
    X, y = _data(1, 800)
    return pgexact.load(RandomForestRegressor(3, random_state=0, n_jobs=1).fit(X, y)), X


def _over_64_features(seed: int, n: int, rounds: int, colsample: float) -> tuple:
    """An XGBoost model of depth-4 trees over 70 features, a part of them split on."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 70))
    y = X[:, :6].sum(axis=1) + X[:, 6] * X[:, 7] + 0.1 * rng.normal(size=n)
    params = dict(max_depth=4, eta=0.3, nthread=1, seed=0, colsample_bynode=colsample)
    return pgexact.load(xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=rounds)), X


def _random_model(rng, seed: int, X, y, boosting_depths: tuple, forest_depth):
    """By ``seed % 3``: a random XGBoost model (depth drawn from ``boosting_depths``), a forest of
    2-4 trees of ``forest_depth`` (None: unbounded), or a CatBoost model of complete trees."""
    kind = seed % 3
    if kind == 0:
        params = dict(max_depth=int(rng.integers(*boosting_depths)), eta=0.5, nthread=1, seed=seed,
                      tree_method="hist", max_bin=int(rng.integers(4, 64)))
        return pgexact.load(xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=int(rng.integers(3, 25))))
    if kind == 1:
        return pgexact.load(RandomForestRegressor(int(rng.integers(2, 5)), max_depth=forest_depth, random_state=seed,
                                                  n_jobs=1).fit(X, y))
    from catboost import CatBoostRegressor

    return pgexact.load(CatBoostRegressor(iterations=int(rng.integers(5, 30)), depth=int(rng.integers(2, 7)),
                                          verbose=0, thread_count=1, random_seed=seed,
                                          allow_writing_files=False).fit(X, y))


def _close(got, want, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert np.all(np.abs(got - want) <= rtol * np.abs(want) + 1e-300), np.max(np.abs(got - want) / np.abs(want))


def test_which_calls_take_the_walks(small, deep):
    ens, X = small
    call = prepare_call(ens, X[:1], n_jobs=1)
    walks = [core_exact.few_rows_on_walks(ens._arena, call.perturbation, n, c)
             for c in (Call.set, Call.curve, Call.greedy) for n in (1, 2, 3)]
    assert walks == [True, False, False, True, False, False, True, True, False]
    forest, _ = deep
    assert forest.n_leaves / forest.n_trees > 128
    # one row's sets and curves whatever the trees; greedy rankings of one or two rows
    assert [core_exact.few_rows_on_walks(forest._arena, call.perturbation, n, c)
            for c in (Call.set, Call.curve, Call.greedy) for n in (1, 2, 3)] == walks
    assert not core_exact.few_rows_on_walks(forest._arena, call.perturbation, 0, Call.greedy)
    assert not core_exact.few_rows_on_walks(forest._arena, call.perturbation, 0, Call.curve)
    # complete trees (CatBoost's oblivious trees) too
    from catboost import CatBoostRegressor

    cat = pgexact.load(CatBoostRegressor(iterations=20, depth=4, verbose=0, thread_count=1, random_seed=0,
                                         allow_writing_files=False).fit(X[:300], X[:300, 0]))
    assert cat.n_leaves == cat.n_trees * 2 ** 4
    c = prepare_call(cat, X[:1], n_jobs=1)
    assert [core_exact.few_rows_on_walks(cat._arena, c.perturbation, 1, k)
            for k in (Call.set, Call.curve, Call.greedy)] == [True, True, True]
    # their greedy rankings take the walks for one row only: from two rows on, their tree pairs
    # projected onto shared features (tree_projection.hpp) make the leaf pairs' side faster
    assert [core_exact.few_rows_on_walks(cat._arena, c.perturbation, n, Call.greedy)
            for n in (2, 4, 8, 9)] == [False, False, False, False]
    # complete trees too deep to be projected (over 64 leaves) rank like any others: one or two
    # rows on the walks
    cat8 = pgexact.load(CatBoostRegressor(iterations=3, depth=8, verbose=0, thread_count=1, random_seed=0,
                                          allow_writing_files=False).fit(X[:300], X[:300, 0]))
    assert cat8.n_leaves == cat8.n_trees * 2 ** 8
    c8 = prepare_call(cat8, X[:1], n_jobs=1)
    assert [core_exact.few_rows_on_walks(cat8._arena, c8.perturbation, n, Call.greedy)
            for n in (1, 2, 3)] == [True, True, False]
    # a curve or a greedy ranking of one row of complete trees of 32 or 64 leaves (CatBoost's
    # depth 5 and its default 6, the deepest projected) takes the projected pairs: the bits of
    # that row in a larger call
    cat5 = pgexact.load(CatBoostRegressor(iterations=4, depth=5, verbose=0, thread_count=1, random_seed=0,
                                          allow_writing_files=False).fit(X[:300], X[:300, 0]))
    assert cat5.n_leaves == cat5.n_trees * 32
    c5 = prepare_call(cat5, X[:1], n_jobs=1)
    assert [core_exact.few_rows_on_walks(cat5._arena, c5.perturbation, n, k)
            for n in (1, 2) for k in (Call.set, Call.curve, Call.greedy)] == [True, False, False] + [False] * 3
    cat6 = pgexact.load(CatBoostRegressor(iterations=12, depth=6, verbose=0, thread_count=1, random_seed=0,
                                          allow_writing_files=False).fit(X[:300], X[:300, 0] * X[:300, 1]))
    assert cat6.n_leaves == cat6.n_trees * 64
    c6 = prepare_call(cat6, X[:1], n_jobs=1)
    assert [core_exact.few_rows_on_walks(cat6._arena, c6.perturbation, 1, k)
            for k in (Call.set, Call.curve, Call.greedy)] == [True, False, False]
    rk = np.array([np.random.default_rng(i).permutation(X.shape[1]) for i in range(5)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        five = prepare_call(cat6, X[:5], n_jobs=2).pg2_curve(rk)
        for i in range(5):
            one = prepare_call(cat6, X[i:i + 1], n_jobs=1).pg2_curve(rk[i:i + 1])
            np.testing.assert_array_equal(one[0], five[i])
            walked = prepare_call(cat6, X[i:i + 1], n_jobs=1).pg2_curve(rk[i:i + 1], kernel=Kernel.walks)
            _close(one[0], walked[0], 2e-13)
        # PG² of every feature of one row likewise (a smaller set stays on the union walk)
        every = np.ones(X.shape[1], dtype=np.uint8)
        five_sets = prepare_call(cat6, X[:5], n_jobs=2).pg2(every)
        for i in range(5):
            np.testing.assert_array_equal(prepare_call(cat6, X[i:i + 1], n_jobs=1).pg2(every), five_sets[i:i + 1])
        # A one-row greedy ranking compares each step's sets side by side in the lanes
        # (pair_kernel.hpp, one_row_in_lanes): the larger call's ranking, its curve within the
        # one-row tolerance of that call's, and each curve entry from the third on the bits of an
        # unpruned leaf-pair PG2 of that prefix (a set pass); on the leaf pairs as a block of a larger call
        # (Kernel.leaf_pairs, as pgexact.dask's blocks run), the bits of the larger call.
        five_ranked = prepare_call(cat6, X[:5], n_jobs=2).greedy_rank()
        in_lanes = False
        for i in range(5):
            call = prepare_call(cat6, X[i:i + 1], n_jobs=1)
            one = call.greedy_rank()
            np.testing.assert_array_equal(one[0][0], five_ranked[0][i])
            _close(one[1][0], five_ranked[1][i], 2e-13)
            in_lanes = in_lanes or not np.array_equal(one[1][0], five_ranked[1][i])
            masks = np.tril(np.ones((X.shape[1], X.shape[1]), np.uint8))[:, np.argsort(one[0][0])]
            for k, mask in list(enumerate(masks))[2:]:  # (sets of one or two features: the sweep, the grid)
                np.testing.assert_array_equal(
                    one[1][0][k], core_exact.pg2(cat6._arena, X[i:i + 1], mask, call.perturbation, 1,
                                                 Kernel.leaf_pairs, tol=0.0)[0])
            block = call.greedy_rank(kernel=Kernel.leaf_pairs)
            np.testing.assert_array_equal(block[0][0], five_ranked[0][i])
            np.testing.assert_array_equal(block[1][0], five_ranked[1][i])
            walked = call.greedy_rank(kernel=Kernel.walks)
            np.testing.assert_array_equal(one[0], walked[0])
            _close(one[1], walked[1], 2e-13)
        assert in_lanes  # some curve is not the larger call's bits: the lanes' route ran
    rows = X[:8]
    with warnings.catch_warnings():  # σ against the spread of eight rows: not the point here
        warnings.simplefilter("ignore", UserWarning)
        eight = prepare_call(cat, rows, n_jobs=2).greedy_rank()
    pairs = prepare_call(cat, rows, n_jobs=1).greedy_rank(kernel=Kernel.leaf_pairs)
    np.testing.assert_array_equal(eight[0], pairs[0])
    np.testing.assert_array_equal(eight[1], pairs[1])  # the same kernel, on 1 and 2 threads
    for i in range(8):
        alone = prepare_call(cat, rows[i:i + 1], n_jobs=1).greedy_rank()  # on the walks
        np.testing.assert_array_equal(alone[0][0], eight[0][i])
        _close(alone[1][0], eight[1][i], 2e-13)


def test_one_row_calls_take_the_union_walk(small, deep):
    """One-row sets, curves and greedy rankings: within the tolerance of the shared walks and the
    leaf pairs, and not the bits of either somewhere (so the route is exercised); the same bits
    with 1, 2 and 3 threads; the greedy ranking is the shared walks' and the leaf pairs'."""
    for ens, X in (small, deep):
        rows = X[10:22]
        ranking = np.argsort(-np.abs(rows), axis=1)
        differs = {"walks": False, "pairs": False}
        for i in range(len(rows)):
            call = prepare_call(ens, rows[i:i + 1], n_jobs=1)
            rk = call.ranking(ranking[i])
            mask = np.ones(D, np.uint8)
            mask[i % D] = 0
            got = [call.pg2(mask), call.pg2_curve(rk), *call.greedy_rank()]
            walks = [call.pg2(mask, kernel=Kernel.walks), call.pg2_curve(rk, kernel=Kernel.walks),
                     *call.greedy_rank(kernel=Kernel.walks)]
            pairs = [call.pg2(mask, kernel=Kernel.leaf_pairs), call.pg2_curve(rk, kernel=Kernel.leaf_pairs),
                     *call.greedy_rank(kernel=Kernel.leaf_pairs)]
            for threads in (2, 3):
                other = prepare_call(ens, rows[i:i + 1], n_jobs=threads)
                np.testing.assert_array_equal(other.pg2(mask), got[0])
                np.testing.assert_array_equal(other.pg2_curve(rk), got[1])
                for a, b in zip(other.greedy_rank(), got[2:]):
                    np.testing.assert_array_equal(a, b)
            # Values: the set, the curve, the greedy ranking's curve.
            for g, w, p in zip(got[:2] + got[3:], walks[:2] + walks[3:], pairs[:2] + pairs[3:]):
                _close(g, w, 2e-13)  # all within tol = 1e-13 of the exact value
                _close(g, p, 2e-13)
                differs["walks"] = differs["walks"] or not np.array_equal(g, w)
                differs["pairs"] = differs["pairs"] or not np.array_equal(g, p)
            np.testing.assert_array_equal(got[2], walks[2])  # the same greedy ranking
            np.testing.assert_array_equal(got[2], pairs[2])
        assert all(differs.values()), f"some kernel gave every bit of the route: {differs}"


@pytest.mark.parametrize("seed", range(6))
def test_union_walk_against_the_reference(seed):
    """One-row sets and curves of random boosted models, forests of unbounded depth and
    complete trees (sigma from tight to wide, a NaN, random sets and rankings) against the
    unpruned reference, and at tol=0 (nothing skipped) too."""
    rng = np.random.default_rng(300 + seed)
    X, y = _data(400 + seed, 500)
    ens = _random_model(rng, seed, X, y, boosting_depths=(2, 8), forest_depth=None)
    for i in range(4):
        row = X[rng.integers(len(X))][None, :].copy()
        if i == 3:
            row[0, int(rng.integers(D))] = np.nan  # never perturbed, routed as the library routes it
        call = prepare_call(ens, row, sigma=float(10 ** rng.uniform(-1.5, 0.3)), n_jobs=int(rng.integers(1, 3)))
        mask = (rng.random(D) < 0.6).astype(np.uint8)
        mask[rng.integers(D)] = 1
        ref = call.pg2(mask, kernel=Kernel.reference)
        _close(call.pg2(mask), ref, 1e-12)
        _close(call.pg2(mask, tol=0.0), ref, 1e-12)
        rk = call.ranking(rng.permutation(D))
        ref_curve = core_exact.pg2_curve(ens._arena, row, rk, D, call.perturbation, 1, Kernel.reference)
        curve = call.pg2_curve(rk)
        _close(curve, ref_curve, 1e-12)
        _close(call.pg2_curve(rk, tol=0.0), ref_curve, 1e-12)
        assert np.all(curve >= 0)


def test_union_walk_honours_tol(deep):
    """A one-row curve on the union walk: a loose tol skips more (other bits), never further
    from tol=0 than tol allows."""
    ens, X = deep
    changed = False
    for i in range(4):
        call = prepare_call(ens, X[i:i + 1], sigma=0.8, n_jobs=1)
        rk = call.ranking(np.argsort(-np.abs(X[i])))
        exact = call.pg2_curve(rk, tol=0.0)
        got = {tol: call.pg2_curve(rk, tol=tol) for tol in (1e-13, 1e-6, 1e-2)}
        for tol, value in got.items():
            _close(value, exact, tol)
        changed = changed or not np.array_equal(got[1e-2], got[1e-13])
    assert changed, "the union walk's bits do not follow tol"


@pytest.mark.parametrize("seed", range(4))
def test_walk_route_against_the_reference(seed):
    """Random small models, sets, curves and rankings of one row against the unpruned reference."""
    rng = np.random.default_rng(100 + seed)
    X, y = _data(200 + seed, 600)
    params = dict(max_depth=int(rng.integers(2, 7)), eta=0.5, nthread=1, seed=seed,
                  tree_method="hist", max_bin=int(rng.integers(4, 64)))
    ens = pgexact.load(xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=int(rng.integers(3, 30))))
    for i in range(4):
        row = X[rng.integers(len(X))][None, :].copy()
        if i == 3:
            row[0, 1] = np.nan  # a missing value: never perturbed, routed as the library routes it
        call = prepare_call(ens, row, sigma=float(rng.uniform(0.1, 1.5)), n_jobs=1)
        mask = (rng.random(D) < 0.6).astype(np.uint8)
        mask[rng.integers(D)] = 1
        _close(call.pg2(mask), call.pg2(mask, kernel=Kernel.reference), 1e-12)
        rk = call.ranking(rng.permutation(D))
        _close(call.pg2_curve(rk), core_exact.pg2_curve(ens._arena, row, rk, D, call.perturbation, 1,
                                                         Kernel.reference), 1e-12)
        order, curve = call.greedy_rank()
        ref_order, ref_curve = core_exact.greedy_rank(ens._arena, row, call.perturbation, 1, Kernel.reference)
        np.testing.assert_array_equal(order, ref_order)
        _close(curve, ref_curve, 1e-12)
        assert np.all(curve >= 0)


@pytest.mark.parametrize("seed", range(6))
def test_greedy_tail_against_the_reference(seed):
    """The last four steps of a greedy ranking on the union walk read one walk of every set they
    can ask for (greedy_tail.hpp). Random boosted models, forests of unbounded depth and
    complete trees, one and two rows (complete trees: two on the leaf pairs), a feature the noise does not move (so fewer candidates),
    a NaN, and a model over three features (the tail is the whole ranking, its single features
    swept): the ranking is the unpruned reference's and the shared walks' (which take no tail),
    the curve within 1e-12 of the reference's, and the same bits with 1 and 2 threads."""
    rng = np.random.default_rng(700 + seed)
    X, y = _data(800 + seed, 500)
    d = 3 if seed == 5 else D
    X = X[:, :d]
    ens = _random_model(rng, seed, X, y, boosting_depths=(2, 7), forest_depth=8)
    rows = X[rng.integers(len(X), size=2)].copy()
    if seed in (1, 2):
        rows[1, int(rng.integers(d))] = np.nan
    sigma = float(10 ** rng.uniform(-1, 0))
    noise = ["normal"] * d
    if seed in (0, 3):
        noise[int(rng.integers(d))] = None  # never perturbed: not a candidate
    for n in (1, 2):
        with warnings.catch_warnings():  # σ against the spread of two rows: not the point here
            warnings.simplefilter("ignore", UserWarning)
            call = prepare_call(ens, rows[:n], sigma=sigma, noise=noise, n_jobs=1)
        # complete trees (CatBoost's, and boosted trees that happen to be complete) of fewer than
        # 32 leaves take the walks for one row only, of 32 or 64 leaves never (their projected
        # tree pairs are faster: few_rows.cpp); deeper ones like any others
        leaves = 2 ** ens._arena.max_depth
        complete = ens.n_leaves == ens.n_trees * leaves
        on_walks = (n == 1 and leaves < 32) if complete and leaves <= 64 else True
        assert core_exact.few_rows_on_walks(ens._arena, call.perturbation, n, Call.greedy) == on_walks
        order, curve = call.greedy_rank()
        ref_order, ref_curve = core_exact.greedy_rank(ens._arena, rows[:n], call.perturbation, 1, Kernel.reference)
        np.testing.assert_array_equal(order, ref_order)
        _close(curve, ref_curve, 1e-12)
        assert np.all(curve >= 0)
        np.testing.assert_array_equal(call.greedy_rank(kernel=Kernel.walks)[0], order)
        for a, b in zip(prepare_call(ens, rows[:n], sigma=sigma, noise=noise, n_jobs=2).greedy_rank(), (order, curve)):
            np.testing.assert_array_equal(a, b)


def test_two_row_rankings_and_threads(small, deep):
    """Threads share one row's candidates: the same bits with 1 and 2 threads; two-row rankings
    are each row's own."""
    for ens, X in (small, deep):
        rows = X[40:42]
        one = prepare_call(ens, rows, n_jobs=1).greedy_rank()
        two = prepare_call(ens, rows, n_jobs=2).greedy_rank()
        for a, b in zip(one, two):
            np.testing.assert_array_equal(a, b)
        for i in range(2):
            alone = prepare_call(ens, rows[i:i + 1], n_jobs=2).greedy_rank()
            np.testing.assert_array_equal(alone[0][0], one[0][i])
            np.testing.assert_array_equal(alone[1][0], one[1][i])
        pairs = prepare_call(ens, rows, n_jobs=1).greedy_rank(kernel=Kernel.leaf_pairs)
        np.testing.assert_array_equal(one[0], pairs[0])
        _close(one[1], pairs[1], 2e-13)
    ens, X = small
    rk = np.argsort(-np.abs(X[50]))
    c1 = prepare_call(ens, X[50:51], n_jobs=1)
    c2 = prepare_call(ens, X[50:51], n_jobs=2)
    np.testing.assert_array_equal(c1.pg2_curve(c1.ranking(rk)), c2.pg2_curve(c2.ranking(rk)))


def test_walks_honour_tol(deep):
    """The walks skip node pairs within tol: a loose tol changes the bits, within tol of tol=0."""
    ens, X = deep
    rows = X[:6]
    call = prepare_call(ens, rows, sigma=0.8, n_jobs=1)
    mask = np.ones(D, np.uint8)
    exact = call.pg2(mask, kernel=Kernel.walks, tol=0.0)
    _close(exact, call.pg2(mask, kernel=Kernel.reference), 1e-12)
    got = {}
    for tol in (1e-13, 1e-6, 1e-2):
        got[tol] = call.pg2(mask, kernel=Kernel.walks, tol=tol)
        _close(got[tol], exact, tol)
    assert not np.array_equal(got[1e-2], got[1e-6]), "the walks' bits do not follow tol"


def test_a_block_takes_the_kernel_of_its_whole_call(small):
    """Inside block_of_call(n) a one-row call takes the kernel of the call on n rows."""
    ens, X = small
    rows = X[60:70]
    ranking = np.argsort(-np.abs(rows), axis=1)
    whole = pgexact.pg2_curve(ens, rows, ranking, n_jobs=1, progress=False)
    whole_rank = pgexact.rank(ens, rows, n_jobs=1, progress=False)
    for i in range(len(rows)):
        with block_of_call(len(rows)):
            np.testing.assert_array_equal(
                pgexact.pg2_curve(ens, rows[i:i + 1], ranking[i:i + 1], n_jobs=1, progress=False)[0], whole[i])
            np.testing.assert_array_equal(pgexact.rank(ens, rows[i:i + 1], n_jobs=1, progress=False)[0],
                                          whole_rank[i])
        with block_of_call(None):  # rows unknown: the leaf pairs
            np.testing.assert_array_equal(
                pgexact.pg2_curve(ens, rows[i:i + 1], ranking[i:i + 1], n_jobs=1, progress=False)[0], whole[i])
        with block_of_call(1):  # a whole call of one row: the walks, as outside
            np.testing.assert_array_equal(
                pgexact.pg2_curve(ens, rows[i:i + 1], ranking[i:i + 1], n_jobs=1, progress=False),
                pgexact.pg2_curve(ens, rows[i:i + 1], ranking[i:i + 1], n_jobs=1, progress=False))


def test_a_block_over_64_features_gets_the_bits_of_its_whole_call():
    """Over 64 features the leaf pairs do not apply: a call of any rows and pgexact.dask's blocks
    of it (block_of_call) walk each row on its own union walk, so a block of one or two rows
    gets the whole call's bits, curves and greedy rankings alike."""
    d = 70
    ens, X = _over_64_features(seed=11, n=500, rounds=12, colsample=0.6)
    rows = X[:4]
    ranking = np.argsort(-np.abs(rows), axis=1)
    whole = pgexact.pg2_curve(ens, rows, ranking, n_jobs=1, progress=False)
    whole_rank = pgexact.rank(ens, rows, n_jobs=2, progress=False)
    for lo, hi in ((0, 1), (1, 3), (3, 4)):
        with block_of_call(len(rows)):
            np.testing.assert_array_equal(
                pgexact.pg2_curve(ens, rows[lo:hi], ranking[lo:hi], n_jobs=2, progress=False), whole[lo:hi])
            np.testing.assert_array_equal(pgexact.rank(ens, rows[lo:hi], n_jobs=1, progress=False), whole_rank[lo:hi])
    # (The shared walks, which took these blocks before, give other bits here.)
    call = prepare_call(ens, rows[2:3], n_jobs=1)
    assert not np.array_equal(call.pg2_curve(call.ranking(ranking[2]), kernel=Kernel.walks), whole[2:3])
    _close(whole[2:3], core_exact.pg2_curve(ens._arena, rows[2:3], call.ranking(ranking[2:3]), d, call.perturbation, 1,
                                            Kernel.reference), 1e-12)


def test_categorical_noise_stays_on_the_leaf_pairs(small):
    ens, X = small
    call = prepare_call(ens, X[:1], noise=["normal"] * (D - 1) + [pgexact.noise.Categorical(0.5, categories=[0, 1, 2])],
                        n_jobs=1)
    for c in (Call.set, Call.curve, Call.greedy):
        assert not core_exact.few_rows_on_walks(ens._arena, call.perturbation, 1, c)


@pytest.mark.parametrize("seed", range(3))
def test_category_splits_routed_as_the_library_routes_them(seed):
    """A model splitting by category (LightGBM's rules; codes out of range, fractions and NaN in
    the rows), those features unperturbed: one-row calls on the walks against the leaf pairs and
    the reference."""
    from test_categorical_kernels import _model, _rows

    ens = _model(seed, n_trees=6, depth=4)
    rows = _rows(seed, 8)
    noise = [None, None, "normal", "normal"]
    for i in range(len(rows)):
        call = prepare_call(ens, rows[i:i + 1], noise=noise, sigma=0.8, n_jobs=1)
        assert all(core_exact.few_rows_on_walks(ens._arena, call.perturbation, 1, c)
                   for c in (Call.set, Call.curve, Call.greedy))
        mask = np.array([0, 0, 1, 1], np.uint8)
        walked = call.pg2(mask, kernel=Kernel.walks)
        _close(walked, call.pg2(mask, kernel=Kernel.leaf_pairs), 2e-13)
        _close(walked, call.pg2(mask, kernel=Kernel.reference), 1e-12)
        _close(call.pg2(mask), walked, 2e-13)  # the union walk
        rk = call.ranking(np.array([3, 2, 0, 1]))
        _close(call.pg2_curve(rk, kernel=Kernel.walks), call.pg2_curve(rk, kernel=Kernel.leaf_pairs), 2e-13)
        _close(call.pg2_curve(rk), call.pg2_curve(rk, kernel=Kernel.leaf_pairs), 2e-13)
        order, curve = call.greedy_rank()
        ref_order, ref_curve = call.greedy_rank(kernel=Kernel.reference)
        np.testing.assert_array_equal(order, ref_order)
        _close(curve, ref_curve, 1e-12)


def _greedy_walk_units(candidates, trees):
    """Units of a one-row greedy ranking's walks after step 0 on the union walk, each walk in one
    group: step k's walk weighs k + 1 per tree pair, the tail walk of the last four steps (every
    set they can ask for, greedy_tail.hpp) twice the candidates per tree pair."""
    pairs = trees * (trees - 1) // 2
    tail = min(4, candidates)
    return sum(k + 1 for k in range(1, candidates - tail)) * pairs + 2 * candidates * pairs


def test_progress_counts_the_steps_of_a_row(small):
    """A one-row greedy ranking on the union walk reports a unit per single-feature set of step 0
    and k + 1 per tree pair walked at step k, twice the candidates per tree pair of the walk of
    the last four steps (the bar moves within the row, not only when the row is done, and later
    steps, whose walks perturb more, weigh more), all planned before it starts."""
    ens, X = small
    call = prepare_call(ens, X[:1], n_jobs=1)
    trees = ens._arena.n_trees
    # Every feature is split on (so no candidate set stands for another) and fits one group.
    assert list(ens._arena.used_features) == [1] * D
    units = D + _greedy_walk_units(D, trees)
    for threads in (1, 2):
        reports = []
        core_exact.greedy_rank(ens._arena, X[:1], call.perturbation, threads, Kernel.pairs,
                               progress=lambda done, total: reports.append((done, total)))
        assert reports[-1] == (units, units)
        assert all(0 <= done <= total == units for done, total in reports)


def test_greedy_walks_each_distinct_set_once(small):
    """Candidates the model never splits on give S itself: the union walk walks one set for them
    all, so a step costs what its used candidates do (counted in the progress units); the
    ranking is the reference's, the unused columns in index order among themselves."""
    ens, X = small
    # A model over D + 3 columns, the last three constant in training (never split on).
    row = np.concatenate([X[:1], np.array([[0.3, -1.2, 2.0]])], axis=1)
    wide = pgexact.load(xgb.train(dict(max_depth=5, eta=0.3, nthread=1, tree_method="hist", max_bin=64, seed=0),
                                  xgb.DMatrix(np.concatenate([X, np.zeros((len(X), 3))], axis=1),
                                              label=X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + X[:, 3:].sum(axis=1)),
                                  num_boost_round=10))
    assert list(wide._arena.used_features) == [1] * D + [0] * 3
    call = prepare_call(wide, row, n_jobs=1)
    order, curve = call.greedy_rank()
    ref_order, ref_curve = core_exact.greedy_rank(wide._arena, row, call.perturbation, 1, Kernel.reference)
    np.testing.assert_array_equal(order, ref_order)
    _close(curve, ref_curve, 1e-12)
    # The unused columns tie (each gives S itself): lower index first.
    assert [f for f in order[0] if f >= D] == [D, D + 1, D + 2]
    trees = wide._arena.n_trees
    reports = []
    core_exact.greedy_rank(wide._arena, row, call.perturbation, 1, Kernel.pairs,
                           progress=lambda done, total: reports.append((done, total)))
    # Step 0: the D used single features and one set for the three unused; then a walk a step,
    # step k's tree pairs weighing k + 1, and the tail walk of the last four steps.
    assert reports[-1][0] == reports[-1][1] == (D + 1) + _greedy_walk_units(D + 3, trees)


def test_walks_sum_tree_pairs_compensated():
    """400 trees in twins that nearly cancel (values v and -0.9 v): the covariances of 80,000
    tree pairs sum to a result a hundredth of their size. The walks sum the pairs compensated,
    as the leaf-pair kernel does, and agree with it within 1e-12 (plain sums were 1.8e-11 off)."""
    from pgexact._core import model as core_model

    def tree(rng, depth=3, d=3):
        n = 2 ** (depth + 1) - 1
        left, right = np.full(n, -1), np.full(n, -1)
        for i in range(2 ** depth - 1):
            left[i], right[i] = 2 * i + 1, 2 * i + 2
        return dict(children_left=left, children_right=right, feature=np.where(left >= 0, rng.integers(0, d, n), 0),
                    threshold=np.where(left >= 0, rng.normal(size=n), 0.0),
                    value=np.where(left < 0, rng.normal(size=n), 0.0))

    rng = np.random.default_rng(0)
    base = [tree(rng) for _ in range(200)]
    twins = [dict(t, value=-0.9 * t["value"]) for t in base]
    arena = core_model.build_arena_from_arrays(base + twins, np.array([0.0]), 3, "<=", False, "none")
    X = rng.normal(size=(2, 3))
    noise = core_exact.Perturbation(np.full(3, 0.7), np.zeros(3, np.uint8))
    mask = np.ones(3, np.uint8)
    walks = core_exact.pg2(arena, X, mask, noise, 1, Kernel.walks)
    pairs = core_exact.pg2(arena, X, mask, noise, 1, Kernel.leaf_pairs)
    _close(walks, pairs, 1e-12)


def test_over_64_features_one_row_shares_its_work_among_threads():
    """Over 64 features the walks run whatever the rows, each row's curve and greedy ranking on
    its own union walk (its tree pairs shared among the threads): the same bits with 1 and 2
    threads, alone and in a call of three rows; within 1e-12 of the reference."""
    d = 70
    ens, X = _over_64_features(seed=7, n=600, rounds=8, colsample=0.5)
    rows = X[:3]
    rk = np.argsort(-np.abs(rows), axis=1)
    three = prepare_call(ens, rows, n_jobs=1)
    curve3 = three.pg2_curve(three.ranking(rk))
    order3, gains3 = three.greedy_rank()
    alone, ranked = [], []
    for threads in (1, 2):
        one = prepare_call(ens, rows[:1], n_jobs=threads)
        alone.append(one.pg2_curve(one.ranking(rk[:1])))  # the union walk: its tree pairs shared out
        np.testing.assert_array_equal(alone[-1], curve3[:1])
        order, gains = one.greedy_rank()
        np.testing.assert_array_equal(order, order3[:1])
        np.testing.assert_array_equal(gains, gains3[:1])
        _close(gains, core_exact.pg2_curve(ens._arena, rows[:1], order, d, one.perturbation, 1, Kernel.reference),
               1e-12)
        ranked.append((order, gains))
    np.testing.assert_array_equal(alone[0], alone[1])
    for a, b in zip(ranked[0], ranked[1]):
        np.testing.assert_array_equal(a, b)
    one = prepare_call(ens, rows[:1], n_jobs=2)
    ref = core_exact.pg2_curve(ens._arena, rows[:1], one.ranking(rk[:1]), d, one.perturbation, 1, Kernel.reference)
    _close(curve3[:1], ref, 1e-12)
    _close(alone[0], ref, 1e-12)
