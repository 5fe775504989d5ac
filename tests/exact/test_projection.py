"""Tree pairs projected onto the features both trees cut (cpp/src/exact/tree_projection.hpp)
against the unpruned reference (the paper's pair walk), and the projected pass's promises.

A projected tree pair sums groups of leaves (leaves whose boxes agree on the shared features)
and the pairs of groups that meet, instead of leaf pairs, in sets, curves, greedy steps and the
greedy ranking's tail. The default projects the tree pairs
where that is cheaper (CatBoost's oblivious trees); ``PGEXACT_PROJECTION=always`` projects every
tree pair it can, so these tests also run it on XGBoost and forests (and test_pair_kernel.py on
LightGBM's missing-value rules, where boxes that do not meet can both hold x), and
``PGEXACT_PROJECTION=0`` turns it off. Where both trees' groups are grids (oblivious trees),
every pass contracts the grids feature by feature instead of summing the meets
(``ProjectedGrid``); mode ``"meets"`` (``PGEXACT_PROJECTED_GRID=0``) sums the meets there too.
Sets and curves must agree with the reference within 1e-12 relative, never be negative, and give
a row the same bits in any batch, on any thread count and from every SIMD build; greedy choices
must be best candidates by the reference.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from catboost import CatBoostRegressor
from sklearn.ensemble import RandomForestRegressor

import pgexact
from pgexact._core import exact as core_exact
from pgexact._core.exact import Kernel
from _pair_checks import close_to_reference as _close
from _pair_checks import random_noise as _noise

MODES = ("default", "always", "meets")


def _use(monkeypatch, mode):
    if mode == "meets":
        monkeypatch.setenv("PGEXACT_PROJECTED_GRID", "0")
    else:
        monkeypatch.delenv("PGEXACT_PROJECTED_GRID", raising=False)
    if mode in ("default", "meets"):
        monkeypatch.delenv("PGEXACT_PROJECTION", raising=False)
    else:
        monkeypatch.setenv("PGEXACT_PROJECTION", mode)


def _data(seed, n=500, d=6, nan=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < nan] = np.nan
    Z = np.nan_to_num(X)
    y = np.sin(Z[:, 0]) + Z[:, 1 % d] * Z[:, 2 % d] + 0.5 * (Z[:, 3 % d] > 0) * Z[:, 4 % d] + 0.2 * rng.normal(size=n)
    return X, y


def _catboost(seed, depth, iterations=25, d=6):
    X, y = _data(seed, d=d)
    model = CatBoostRegressor(iterations=iterations, depth=depth, verbose=0, thread_count=1, random_seed=seed,
                              allow_writing_files=False).fit(X, y)
    return pgexact.load(model), X


def _rows_on_thresholds(ens, X, rng, n):
    """Rows of X, some with an entry moved exactly onto a split threshold or one ulp beside it,
    and some NaN."""
    rows = X[:n].copy()
    bounds = np.asarray(ens._arena.bounds) if hasattr(ens._arena, "bounds") else None
    for i in range(0, n, 3):
        j = int(rng.integers(rows.shape[1]))
        if bounds is not None and len(bounds):
            b = float(rng.choice(bounds[np.isfinite(bounds)]))
            rows[i, j] = [b, np.nextafter(b, -np.inf), np.nextafter(b, np.inf)][i % 3]
        else:
            rows[i, j] = np.nan
    rows[1, 0] = np.nan
    return rows


def _check_sets_and_curves(ens, rows, seed, threads=1, tol=1e-13):
    d = ens.n_features
    rng = np.random.default_rng(seed)
    noise = _noise(d, seed)
    for mask in (np.ones(d, np.uint8), (rng.random(d) < 0.5).astype(np.uint8), np.eye(d, dtype=np.uint8)[0]):
        _close(core_exact.pg2(ens._arena, rows, mask, noise, threads, Kernel.leaf_pairs, tol=tol),
               core_exact.pg2(ens._arena, rows, mask, noise, 1, Kernel.reference))
    R = np.array([rng.permutation(d) for _ in range(len(rows))], dtype=np.int64)
    for steps in (d, 3):
        _close(core_exact.pg2_curve(ens._arena, rows, R, steps, noise, threads, Kernel.leaf_pairs, tol=tol),
               core_exact.pg2_curve(ens._arena, rows, R, steps, noise, 1, Kernel.reference))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed,depth", [(0, 2), (1, 4), (2, 6), (3, 5)])
def test_catboost_oblivious_trees_match_the_reference(monkeypatch, mode, seed, depth):
    """Oblivious trees of every depth up to 6 (64 leaves, the most a projected tree has), rows
    with NaN and on thresholds: sets, one feature, curves of every and of the first prefixes."""
    _use(monkeypatch, mode)
    ens, X = _catboost(seed, depth)
    rows = _rows_on_thresholds(ens, X, np.random.default_rng(seed), 21)
    _check_sets_and_curves(ens, rows, seed, threads=1 + seed % 2)


@pytest.mark.parametrize("mode", MODES)
def test_catboost_deeper_than_projected_and_wide(monkeypatch, mode):
    """Trees of 128 leaves are not projected (more than one chunk); 12 features."""
    _use(monkeypatch, mode)
    ens, X = _catboost(4, 7, iterations=8, d=12)
    _check_sets_and_curves(ens, X[:17], 4)


def test_the_default_projects_catboost_and_changes_only_rounding(monkeypatch):
    """The default projects CatBoost's tree pairs: its values are not the leaf pairs' bits (a
    projection silently off would leave them so) and agree with them to rounding."""
    ens, X = _catboost(5, 6, iterations=30)
    rows = X[:40]
    d = ens.n_features
    noise = _noise(d, 5)
    R = np.array([np.random.default_rng(i).permutation(d) for i in range(len(rows))], dtype=np.int64)
    monkeypatch.setenv("PGEXACT_PROJECTION", "0")
    pairs = core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.leaf_pairs)
    monkeypatch.delenv("PGEXACT_PROJECTION")
    projected = core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.leaf_pairs)
    assert np.any(projected != pairs)
    np.testing.assert_allclose(projected, pairs, rtol=1e-13, atol=0)


def test_the_grid_contraction_changes_only_rounding(monkeypatch):
    """The default contracts CatBoost's grids of groups (its values are not the meets' bits: a
    contraction silently off would leave them so) and agrees with the meets to rounding, in
    blocks of rows and for one row (its prefixes in the lanes)."""
    ens, X = _catboost(5, 6, iterations=30)
    d = ens.n_features
    noise = _noise(d, 5)
    for rows in (X[:40], X[3:4]):
        R = np.array([np.random.default_rng(i).permutation(d) for i in range(len(rows))], dtype=np.int64)
        values = {}
        for grid in ("0", "1"):
            monkeypatch.setenv("PGEXACT_PROJECTED_GRID", grid)
            values[grid] = (core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.leaf_pairs),
                            core_exact.pg2(ens._arena, rows, np.ones(d, np.uint8), noise, 1, Kernel.leaf_pairs))
        assert np.any(values["0"][0] != values["1"][0])
        for meets, grid in zip(values["0"], values["1"]):
            np.testing.assert_allclose(grid, meets, rtol=1e-13, atol=0)


def test_the_grid_contraction_on_features_split_twice(monkeypatch):
    """Depth-6 oblivious trees on three features split a feature at several levels, so a tree's
    intervals there include empty ones (a path below x < a and x >= b, a < b) that meet no interval
    of the other tree: their cells must be zero, not left over (the contraction once read them
    from the previous pair). Blocks of rows and one row, against the reference, with nothing
    pruned too (tol=0: the leaves of empty boxes are then live, with nonzero sums)."""
    monkeypatch.delenv("PGEXACT_PROJECTED_GRID", raising=False)
    monkeypatch.delenv("PGEXACT_PROJECTION", raising=False)
    X, y = _data(9, d=3, nan=0.0)
    model = CatBoostRegressor(iterations=20, depth=6, verbose=0, thread_count=1, random_seed=9,
                              allow_writing_files=False).fit(X, y)
    ens = pgexact.load(model)
    for rows in (X[:19], X[5:6]):
        for tol in (1e-13, 0.0):
            _check_sets_and_curves(ens, rows, 9, tol=tol)

    """Every tree pair projected on XGBoost trees with NaN, a small forest, and a LightGBM
    model with a categorical feature left unperturbed (its splits route x, and narrow no box)."""
    monkeypatch.setenv("PGEXACT_PROJECTION", "always")
    X, y = _data(6)
    booster = xgb.train(dict(max_depth=4, eta=0.3, nthread=1, tree_method="hist", max_bin=16, seed=0),
                        xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=12)
    ens = pgexact.load(booster)
    _check_sets_and_curves(ens, _rows_on_thresholds(ens, X, np.random.default_rng(6), 19), 6, threads=2)
    Xf = np.nan_to_num(X)
    forest = pgexact.load(RandomForestRegressor(4, max_depth=5, random_state=0, n_jobs=1).fit(Xf, y))
    _check_sets_and_curves(forest, Xf[:15], 7)
    rng = np.random.default_rng(4)
    Xc = np.column_stack([rng.normal(size=800), rng.integers(0, 6, 800).astype(float), rng.normal(size=800)])
    yc = Xc[:, 0] * (Xc[:, 1] % 3) + Xc[:, 2] + 0.1 * rng.normal(size=800)
    cat = pgexact.load(lgb.LGBMRegressor(n_estimators=10, num_leaves=8, verbose=-1, n_jobs=1)
                       .fit(Xc, yc, categorical_feature=[1]))
    noise = _noise(3, 3)
    m = np.array([1, 0, 1], np.uint8)
    _close(core_exact.pg2(cat._arena, Xc[:12], m, noise, 1, Kernel.leaf_pairs),
           core_exact.pg2(cat._arena, Xc[:12], m, noise, 1, Kernel.reference))
    R = np.array([[2, 0, 1]] * 12, dtype=np.int64)
    _close(core_exact.pg2_curve(cat._arena, Xc[:12], R, 2, noise, 1, Kernel.leaf_pairs),
           core_exact.pg2_curve(cat._arena, Xc[:12], R, 2, noise, 1, Kernel.reference))


@pytest.mark.parametrize("seed,depth,d", [(14, 6, 6), (15, 4, 8), (16, 6, 3), (17, 5, 12)])
def test_plans_that_count_their_meets_are_the_plans_that_list_them(monkeypatch, seed, depth, d):
    """A plan on grids counts the meets and leaf pairs it decides by instead of listing them
    (tree_projection.cpp, counted_meets): the same counts, so the same plans and the same bits as
    listing them (PGEXACT_COUNT_GRID_MEETS=0), in sets, curves (blocks of rows and one row) and
    greedy rankings; trained with NaN, whose special values make some plans list their meets.
    A count off by one would move the choice between a plan and the leaf pairs, or between the
    grid and the meets, for some tree pairs: other bits."""
    monkeypatch.delenv("PGEXACT_PROJECTED_GRID", raising=False)
    monkeypatch.delenv("PGEXACT_PROJECTION", raising=False)
    ens, X = _catboost(seed, depth, iterations=40, d=d)
    rows = X[:24].copy()
    rows[2, 0] = np.nan
    noise = _noise(d, seed)
    R = np.array([np.random.default_rng(i).permutation(d) for i in range(len(rows))], dtype=np.int64)
    values = {}
    for count in ("0", "1"):
        monkeypatch.setenv("PGEXACT_COUNT_GRID_MEETS", count)
        values[count] = [
            core_exact.pg2(ens._arena, rows, np.ones(d, np.uint8), noise, 1, Kernel.leaf_pairs),
            core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.leaf_pairs),
            core_exact.pg2_curve(ens._arena, rows[5:6], R[5:6], d, noise, 1, Kernel.leaf_pairs),
            *core_exact.greedy_rank(ens._arena, rows[:9], noise, 1, Kernel.leaf_pairs),
        ]
    for listed, counted in zip(values["0"], values["1"]):
        np.testing.assert_array_equal(counted, listed)


@pytest.mark.parametrize("mode", MODES)
def test_a_rows_bits_do_not_depend_on_its_batch_or_threads(monkeypatch, mode):
    """Rows of a batch of 70 (two blocks) equal the same rows alone, bit for bit, on 1 and 2
    threads; a curve's prefix equals PG2 of that set within rounding."""
    _use(monkeypatch, mode)
    ens, X = _catboost(7, 6, iterations=20)
    rows = X[:70]
    d = ens.n_features
    noise = _noise(d, 8)
    R = np.array([np.random.default_rng(i).permutation(d) for i in range(len(rows))], dtype=np.int64)
    many = core_exact.pg2_curve(ens._arena, rows, R, d, noise, 2, Kernel.leaf_pairs)
    np.testing.assert_array_equal(many, core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.leaf_pairs))
    for i in (0, 7, 8, 63, 64, 69):
        alone = core_exact.pg2_curve(ens._arena, rows[i : i + 1], R[i : i + 1], d, noise, 1, Kernel.leaf_pairs)
        np.testing.assert_array_equal(many[i], alone[0])
    masks = np.zeros((len(rows), d), np.uint8)
    for i in range(len(rows)):
        masks[i, R[i, :3]] = 1
    sets = core_exact.pg2(ens._arena, rows, masks, noise, 1, Kernel.leaf_pairs)
    np.testing.assert_allclose(sets, many[:, 2], rtol=1e-13, atol=0)


@pytest.mark.parametrize("mode", MODES)
def test_group_sums_kept_across_tree_pairs_change_no_bit(monkeypatch, mode):
    """A sweep keeps each tree's group sums for its other pairs with the same shared features
    (PGEXACT_KEEP_GROUP_SUMS=0: summed per tree pair): the same bits, for curves (every prefix
    and the first three), sets and the greedy ranking (its steps and its tail), over several
    vectors of rows and two threads; and all against the reference."""
    _use(monkeypatch, mode)
    ens, X = _catboost(9, 6, iterations=40, d=7)
    rows = _rows_on_thresholds(ens, X, np.random.default_rng(9), 29)
    d = ens.n_features
    noise = _noise(d, 9)
    R = np.array([np.random.default_rng(i).permutation(d) for i in range(len(rows))], dtype=np.int64)
    masks = (np.random.default_rng(1).random((len(rows), d)) < 0.6).astype(np.uint8)
    calls = [lambda threads, s=s: core_exact.pg2_curve(ens._arena, rows, R, s, noise, threads, Kernel.leaf_pairs)
             for s in (d, 3)]
    calls.append(lambda threads: core_exact.pg2(ens._arena, rows, masks, noise, threads, Kernel.leaf_pairs))
    # The greedy ranking: its steps (d = 7: three before the tail) and its tail.
    calls.append(lambda threads: np.column_stack(core_exact.greedy_rank(ens._arena, rows, noise, threads,
                                                                        Kernel.leaf_pairs)))
    kept = [call(2) for call in calls]
    monkeypatch.setenv("PGEXACT_KEEP_GROUP_SUMS", "0")
    for call, value in zip(calls, kept):
        np.testing.assert_array_equal(call(2), value)
        np.testing.assert_array_equal(call(1), value)
    _close(kept[0], core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.reference))
    _close(kept[2], core_exact.pg2(ens._arena, rows, masks, noise, 1, Kernel.reference))
    rk = kept[3][:, :d].astype(np.int64)
    _close(kept[3][:, d:], core_exact.pg2_curve(ens._arena, rows, rk, d, noise, 1, Kernel.reference))


@pytest.mark.slow
def test_tiles_of_many_first_trees_change_no_bit(monkeypatch):
    """A sweep takes its first trees in tiles of up to 64 (pair_sweep.hpp, first_tree_tile: at
    least eight tiles a thread), whose group sums it keeps for the tile; the models above have
    tiles of a few trees. 520 trees: tiles of 64 on one thread, of 32 on two. Curves and the
    greedy ranking (its steps and tail) have the same bits on both, and with no sums kept; the
    curve agrees with the leaf pairs unprojected (tested against the reference above)."""
    _use(monkeypatch, "default")
    ens, X = _catboost(33, 6, iterations=520)
    rows = _rows_on_thresholds(ens, X, np.random.default_rng(33), 9)
    d = ens.n_features
    noise = _noise(d, 33)
    R = np.array([np.random.default_rng(70 + i).permutation(d) for i in range(len(rows))], dtype=np.int64)
    calls = [lambda threads: core_exact.pg2_curve(ens._arena, rows, R, d, noise, threads, Kernel.leaf_pairs),
             lambda threads: np.column_stack(core_exact.greedy_rank(ens._arena, rows, noise, threads,
                                                                    Kernel.leaf_pairs))]
    kept = [call(1) for call in calls]
    for call, value in zip(calls, kept):
        np.testing.assert_array_equal(call(2), value)
    monkeypatch.setenv("PGEXACT_KEEP_GROUP_SUMS", "0")
    for call, value in zip(calls, kept):
        np.testing.assert_array_equal(call(1), value)
    monkeypatch.setenv("PGEXACT_PROJECTION", "0")
    _close(kept[0], calls[0](2))
    rk = kept[1][:, :d].astype(np.int64)
    _close(kept[1][:, d:], core_exact.pg2_curve(ens._arena, rows, rk, d, noise, 2, Kernel.leaf_pairs))


@pytest.mark.parametrize("mode", MODES)
def test_one_row_curves_of_more_than_eight_prefixes(monkeypatch, mode):
    """A one-row curve puts the row's prefixes in the lanes, eight at a time: where the sweep
    keeps the trees' group sums, every prefix (two vectors of them at d = 12), else the pair's
    summed ones. Each row alone has its bits in a batch, with the sums kept or not, and every
    prefix and the first five agree with the reference."""
    _use(monkeypatch, mode)
    ens, X = _catboost(23, 5, iterations=30, d=12)
    rows = _rows_on_thresholds(ens, X, np.random.default_rng(23), 9)
    d = ens.n_features
    noise = _noise(d, 23)
    R = np.array([np.random.default_rng(50 + i).permutation(d) for i in range(len(rows))], dtype=np.int64)
    for steps in (d, 5):
        batch = core_exact.pg2_curve(ens._arena, rows, R, steps, noise, 1, Kernel.leaf_pairs)
        _close(batch, core_exact.pg2_curve(ens._arena, rows, R, steps, noise, 1, Kernel.reference))
        monkeypatch.delenv("PGEXACT_KEEP_GROUP_SUMS", raising=False)
        for i in range(len(rows)):
            alone = core_exact.pg2_curve(ens._arena, rows[i : i + 1], R[i : i + 1], steps, noise, 1, Kernel.leaf_pairs)
            np.testing.assert_array_equal(alone[0], batch[i])
        monkeypatch.setenv("PGEXACT_KEEP_GROUP_SUMS", "0")
        for i in (0, 4, 8):
            alone = core_exact.pg2_curve(ens._arena, rows[i : i + 1], R[i : i + 1], steps, noise, 1, Kernel.leaf_pairs)
            np.testing.assert_array_equal(alone[0], batch[i])
        monkeypatch.delenv("PGEXACT_KEEP_GROUP_SUMS")


def _check_greedy_against_the_reference(ens, rows, noise, threads=1, kernel=Kernel.leaf_pairs, fixed=()):
    """The greedy ranking's curve is the reference's PG2 of its prefixes, and every choice is a
    best candidate: PG2 of the chosen S + {j}, by the reference, is at least every other
    candidate's less 1e-12 relative (`fixed`: features the noise does not move, no candidates:
    ranked last)."""
    d = ens.n_features
    rk, curve = core_exact.greedy_rank(ens._arena, rows, noise, threads, kernel)
    _close(curve, core_exact.pg2_curve(ens._arena, rows, rk, d, noise, 1, Kernel.reference))
    for i in range(len(rows)):
        for k in range(d - 1):
            chosen = rk[i, :k]
            masks = np.zeros((d, d), np.uint8)
            masks[:, chosen] = 1
            masks[np.arange(d), np.arange(d)] = 1
            values = core_exact.pg2(ens._arena, np.repeat(rows[i : i + 1], d, axis=0), masks, noise, 1, Kernel.reference)
            others = np.setdiff1d(np.arange(d), np.concatenate([chosen, np.asarray(fixed, dtype=chosen.dtype)]))
            assert values[rk[i, k]] >= values[others].max() * (1 - 1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed,depth,d", [(10, 6, 6), (11, 4, 3), (12, 5, 9)])
def test_greedy_ranking_on_projected_pairs(monkeypatch, mode, seed, depth, d):
    """The greedy steps and the last four steps' tail sum projected tree pairs too: their choices
    and curves against the reference, NaN in the rows, on 1 and 2 threads (d = 3: the tail
    alone; d = 9: steps before it)."""
    _use(monkeypatch, mode)
    ens, X = _catboost(seed, depth, iterations=20, d=d)
    rows = X[:10].copy()
    rows[3, 1] = np.nan
    _check_greedy_against_the_reference(ens, rows, _noise(d, seed), threads=1 + seed % 2)


@pytest.mark.parametrize("seed,d", [(20, 12), (21, 3), (22, 7)])
def test_one_row_greedy_ranking_with_its_sets_in_the_lanes(monkeypatch, seed, d):
    """A call of one row ranks on the projected pairs with each step's sets side by side in the
    lanes (one candidate a lane, and S; the tail's subsets; pair_kernel.hpp, one_row_in_lanes):
    its choices and curve against the reference, on 1 and 2 threads, with more candidates than
    lanes (d = 12: two vectors), the tail alone (d = 3), NaN in a row and a feature the noise
    leaves alone (never chosen before the others)."""
    _use(monkeypatch, "default")
    ens, X = _catboost(seed, 6, iterations=20, d=d)
    rng = np.random.default_rng(seed)
    family = rng.choice(np.array([0, 1, 2], np.uint8), size=d)
    fixed = [d // 2] if d > 3 else []
    family[fixed] = core_exact.NOISE_FAMILIES["fixed"]
    noise = core_exact.Perturbation(rng.uniform(0.1, 1.2, size=d), family)
    rows = X[:3].copy()
    rows[1, 0] = np.nan
    for i in range(len(rows)):
        _check_greedy_against_the_reference(ens, rows[i:i + 1], noise, threads=1 + i % 2, kernel=Kernel.pairs,
                                            fixed=fixed)
        assert all(core_exact.greedy_rank(ens._arena, rows[i:i + 1], noise, 1, Kernel.pairs)[0][0, d - len(fixed):] == fixed)


@pytest.mark.parametrize("pruning", ["1", "reckless"])
def test_greedy_with_pruning_falls_back_on_projected_pairs(monkeypatch, pruning):
    """Per-row pruning marks leaves dead in their lanes; the projected passes must drop the same
    leaves, or the certificates would vouch for sums that kept them (reckless: most rows fail
    their certificates and are ranked again unpruned)."""
    monkeypatch.setenv("PGEXACT_LEAF_PRUNING", pruning)
    ens, X = _catboost(13, 6, iterations=30, d=6)
    _check_greedy_against_the_reference(ens, X[:12], _noise(6, 13))
    R = np.array([np.random.default_rng(i).permutation(6) for i in range(12)], dtype=np.int64)
    _close(core_exact.pg2_curve(ens._arena, X[:12], R, 6, _noise(6, 13), 1, Kernel.leaf_pairs),
           core_exact.pg2_curve(ens._arena, X[:12], R, 6, _noise(6, 13), 1, Kernel.reference))


def test_every_simd_build_gives_the_same_bits(tmp_path):
    """The projected pass is built per x86-64 level like the other passes; every level must give
    the same bits (PGEXACT_PASSES caps the level in a fresh process)."""
    ens, X = _catboost(9, 6, iterations=15)
    path = tmp_path / "model.bin"
    path.write_bytes(pickle.dumps((ens, X[:24])))
    script = textwrap.dedent(f"""
        import pickle, signal, sys, numpy as np
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        from pgexact._core import exact as core_exact
        from pgexact._core.exact import Kernel, Perturbation
        ens, rows = pickle.loads(open({str(path)!r}, "rb").read())
        d = ens.n_features
        noise = Perturbation(np.linspace(0.2, 1.0, d), np.zeros(d, np.uint8))
        R = np.array([np.random.default_rng(i).permutation(d) for i in range(len(rows))], dtype=np.int64)
        out = [core_exact.pg2(ens._arena, rows, np.ones(d, np.uint8), noise, 1, Kernel.leaf_pairs),
               core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.leaf_pairs),
               *core_exact.greedy_rank(ens._arena, rows, noise, 1, Kernel.leaf_pairs)]
        sys.stdout.buffer.write(pickle.dumps(out))
    """)
    results = {}
    for level in ("base", "v3", "best"):
        env = dict(os.environ)
        env.pop("PGEXACT_PASSES", None)
        env["PGEXACT_PROJECTION"] = "always"
        if level != "best":
            env["PGEXACT_PASSES"] = level
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, check=True, timeout=600)
        results[level] = pickle.loads(done.stdout)
    for level in ("base", "v3"):
        for a, b in zip(results[level], results["best"]):
            np.testing.assert_array_equal(a, b)
