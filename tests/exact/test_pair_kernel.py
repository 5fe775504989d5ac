"""The leaf-pair kernel (the default) against the previous node-pair walks and the unpruned
reference, and its promises: the same bits from every SIMD build of its inner loops, and from
any batch of rows.

test_fast_paths.py checks the default kernel against the reference on awkward rows and random
models; here the walks it replaced keep their own check (``pairs=False``), and the cases that
are special to the pair kernel get theirs: LightGBM's missing-value rules with NaN and zeros in
the rows (pairs are kept when both leaves route the special value their way), categorical
splits on unperturbed features, and more than one block of rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb

import pgexact
from pgexact._core import exact as core_exact
from pgexact._core.exact import Kernel, Perturbation
from _pair_checks import close_to_reference as _close
from _pair_checks import random_noise as _noise



@pytest.fixture(scope="module")
def xgb_model():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * np.nan_to_num(X[:, 1]) + np.sin(np.nan_to_num(X[:, 2])) + 0.2 * rng.normal(size=400)
    model = xgb.XGBRegressor(n_estimators=12, max_depth=4, tree_method="hist", max_bin=32, nthread=1).fit(X, y)
    return pgexact.load(model), X


@pytest.mark.parametrize("pairs", [True, False])
def test_both_fast_kernels_match_the_reference(xgb_model, pairs):
    """pairs=False is the node-pair walk the pair kernel replaced; both stay exact."""
    ens, X = xgb_model
    rows = X[:20]
    d = ens.n_features
    noise = _noise(d, 1)
    rng = np.random.default_rng(5)
    for mask in (np.ones(d, np.uint8), (rng.random(d) < 0.5).astype(np.uint8)):
        _close(core_exact.pg2(ens._arena, rows, mask, noise, 1, (Kernel.pairs if pairs else Kernel.walks)),
               core_exact.pg2(ens._arena, rows, mask, noise, 1, Kernel.reference))
    R = np.array([rng.permutation(d) for _ in range(20)], dtype=np.int64)
    _close(core_exact.pg2_curve(ens._arena, rows, R, d, noise, 2, (Kernel.pairs if pairs else Kernel.walks)),
           core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.reference))
    rk, curve = core_exact.greedy_rank(ens._arena, rows, noise, 2, (Kernel.pairs if pairs else Kernel.walks))
    _close(curve, core_exact.pg2_curve(ens._arena, rows, rk, d, noise, 1, Kernel.reference))


@pytest.mark.parametrize("projection", ["default", "always"])
@pytest.mark.parametrize("zero_as_missing", [False, True])
def test_lightgbm_missing_rules_with_nan_and_zero_rows(monkeypatch, zero_as_missing, projection):
    """Rows with NaN and exact zeros on a LightGBM model with missing-value splits: special
    values route by the node's rule, not by the interval, so pairs whose intervals do not meet
    can still hold x; the kernel must keep them. With PGEXACT_PROJECTION=always every tree pair
    is projected (tree_projection.hpp): groups that hold a special value must meet even where
    their intervals do not."""
    if projection == "always":
        monkeypatch.setenv("PGEXACT_PROJECTION", "always")
    else:
        monkeypatch.delenv("PGEXACT_PROJECTION", raising=False)
    rng = np.random.default_rng(11)
    X = rng.normal(size=(600, 4))
    X[rng.random(X.shape) < 0.15] = np.nan
    X[rng.random(X.shape) < 0.15] = 0.0
    y = np.nan_to_num(X[:, 0], nan=2.0) + (X[:, 1] == 0) * 1.5 + np.nan_to_num(X[:, 2]) * 0.5 + 0.1 * rng.normal(size=600)
    model = lgb.LGBMRegressor(n_estimators=15, num_leaves=12, min_child_samples=5, zero_as_missing=zero_as_missing,
                              verbose=-1, n_jobs=1).fit(X, y)
    ens = pgexact.load(model)
    rows = np.array([[np.nan, 0.0, 0.3, -1.0], [0.0, np.nan, 0.0, 0.5], [1e-36, -0.0, np.nan, np.nan],
                     [0.2, 0.0, 1.0, 0.0], [np.nan, np.nan, np.nan, 0.1], [0.0, 0.0, 0.0, 0.0]])
    d = 4
    noise = _noise(d, 2)
    for mask in ([1, 1, 1, 1], [0, 0, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0]):
        m = np.array(mask, np.uint8)
        _close(core_exact.pg2(ens._arena, rows, m, noise, 1),
               core_exact.pg2(ens._arena, rows, m, noise, 1, Kernel.reference))
    R = np.array([[3, 1, 0, 2]] * len(rows), dtype=np.int64)
    _close(core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1),
           core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.reference))


def test_categorical_feature_left_unperturbed():
    """A categorical feature is never perturbed; its splits route x exactly."""
    rng = np.random.default_rng(4)
    n = 800
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 6, n).astype(float), rng.normal(size=n)])
    y = X[:, 0] * (X[:, 1] % 3) + X[:, 2] + 0.1 * rng.normal(size=n)
    model = lgb.LGBMRegressor(n_estimators=10, num_leaves=8, verbose=-1, n_jobs=1).fit(X, y, categorical_feature=[1])
    ens = pgexact.load(model)
    assert ens._arena is not None
    rows = X[:12]
    noise = _noise(3, 3)
    m = np.array([1, 0, 1], np.uint8)
    _close(core_exact.pg2(ens._arena, rows, m, noise, 1), core_exact.pg2(ens._arena, rows, m, noise, 1, Kernel.reference))
    R = np.array([[2, 0, 1]] * 12, dtype=np.int64)
    _close(core_exact.pg2_curve(ens._arena, rows, R, 2, noise, 1),
           core_exact.pg2_curve(ens._arena, rows, R, 2, noise, 1, Kernel.reference))


def test_more_rows_than_one_block_and_any_threads(xgb_model, monkeypatch):
    """Blocks of at most 64 rows (PGEXACT_BLOCK_ROWS; this model's tables would hold thousands
    of rows in one): the 153 rows go in three blocks of 56, 56 and 41, and rows of every block
    equal the same rows computed alone."""
    ens, X = xgb_model
    d = ens.n_features
    monkeypatch.setenv("PGEXACT_BLOCK_ROWS", "64")
    assert core_exact.pg2_block_rows(ens._arena, 153) == 56
    rows = np.vstack([X[:150], X[:3]])
    noise = _noise(d, 4)
    R = np.array([np.random.default_rng(i).permutation(d) for i in range(len(rows))], dtype=np.int64)
    many = core_exact.pg2_curve(ens._arena, rows, R, d, noise, 2)
    for i in (0, 63, 64, 100, 149, 150, 152):
        alone = core_exact.pg2_curve(ens._arena, rows[i : i + 1], R[i : i + 1], d, noise, 1, Kernel.leaf_pairs)
        np.testing.assert_array_equal(many[i], alone[0])
        # Kernel.pairs takes the shared walks for one row of trees this small (test_few_rows.py)
        walked = core_exact.pg2_curve(ens._arena, rows[i : i + 1], R[i : i + 1], d, noise, 1)
        np.testing.assert_allclose(walked[0], many[i], rtol=2e-13, atol=0)


@pytest.mark.parametrize("threads", [1, 2])
def test_rows_fill_the_lanes_in_any_order(xgb_model, monkeypatch, threads):
    """The kernel puts near rows in the same vectors of lanes (row_order.hpp) and the values
    back where the rows were: the same bits as the rows in the caller's order
    (PGEXACT_ROW_ORDER=0), for sets (one mask, a mask per row), curves (one ranking, one per
    row) and greedy rankings, over blocks of 16 rows, with NaN, a feature the noise leaves alone
    and a row count that is not a whole number of vectors. A value put back in another row's
    place, or a row computed with another row's mask or ranking, gives other numbers."""
    ens, X = xgb_model
    d = ens.n_features
    monkeypatch.setenv("PGEXACT_BLOCK_ROWS", "16")
    rng = np.random.default_rng(11)
    rows = X[rng.permutation(len(X))[:45]].copy()
    rows[[4, 30], 2] = np.nan
    base = _noise(d, 9)
    family = base.family.copy()
    family[5] = 4  # Fixed: never perturbed, its rows apart
    noise = Perturbation(base.sigma, family)
    masks = (rng.random((len(rows), d)) < 0.6).astype(np.uint8)
    R = np.array([rng.permutation(d) for _ in range(len(rows))], dtype=np.int64)
    values = {}
    for order in ("0", "1"):
        monkeypatch.setenv("PGEXACT_ROW_ORDER", order)
        values[order] = [
            core_exact.pg2(ens._arena, rows, np.ones(d, np.uint8), noise, threads, Kernel.leaf_pairs),
            core_exact.pg2(ens._arena, rows, masks, noise, threads, Kernel.leaf_pairs),
            core_exact.pg2_curve(ens._arena, rows, R, d, noise, threads, Kernel.leaf_pairs),
            core_exact.pg2_curve(ens._arena, rows, R[7], 4, noise, threads, Kernel.leaf_pairs),
            *core_exact.greedy_rank(ens._arena, rows, noise, threads, Kernel.leaf_pairs),
        ]
    for given, ordered in zip(values["0"], values["1"]):
        np.testing.assert_array_equal(ordered, given)
    # and they are right: every row against the unpruned reference
    _close(values["1"][2], core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.reference))


@pytest.mark.parametrize("table_masses", ["0", "1"])
@pytest.mark.parametrize("block", [None, "24"])
@pytest.mark.parametrize("threads", [1, 2])
def test_two_vectors_per_walk_give_the_same_bits(xgb_model, monkeypatch, table_masses, block, threads):
    """With AVX-512 a curve and a set walk each tree pair's leaf pairs once for two vectors of
    rows (PairPasses::curve_pair, set_pair): the same bits as one vector at a time
    (PGEXACT_CURVE_PAIRS=0), for per-row rankings and masks (the two vectors' rows need
    different pairs), two vectors whose rows perturb different features, one ranking or mask
    for all, a short ranking, NaN, a feature the noise leaves alone, blocks of three vectors (a
    pair of vectors, then one alone) and of six, slot masses kept or read from the tables. Where
    the CPU has no AVX-512 both take one vector at a time (the levels are compared in
    test_every_simd_build_gives_the_same_bits). Mutants that skip a pair, a leaf or a feature
    live in the second vector alone fail it."""
    ens, X = xgb_model
    d = ens.n_features
    monkeypatch.setenv("PGEXACT_TABLE_MASSES", table_masses)
    if block is not None:
        monkeypatch.setenv("PGEXACT_BLOCK_ROWS", block)
    rng = np.random.default_rng(23)
    rows = X[rng.permutation(len(X))[:45]].copy()
    rows[[3, 40], 1] = np.nan
    base = _noise(d, 17)
    family = base.family.copy()
    family[4] = 4  # Fixed: never perturbed
    noise = Perturbation(base.sigma, family)
    R = np.array([rng.permutation(d) for _ in range(len(rows))], dtype=np.int64)
    masks = (rng.random((len(rows), d)) < 0.6).astype(np.uint8)
    # Vectors whose rows perturb different features: in the caller's order (PGEXACT_ROW_ORDER=0)
    # a vector is eight rows in a row; alternate vectors take features {0, 3, 5} and {1, 2, 3}
    # (the model splits on 0, 1 and 2 most), their rankings those first. The rows without NaN:
    # a row whose NaN leaves it two features goes to their grid, and the rows left would
    # no longer keep to their vectors.
    clean = np.nan_to_num(rows)
    vector = (np.arange(len(rows)) // 8 % 2)[:, None]
    apart_masks = np.where(vector == 0, np.isin(np.arange(d), [0, 3, 5]),
                           np.isin(np.arange(d), [1, 2, 3])).astype(np.uint8)
    apart_R = np.where(vector == 0, [0, 3, 4, 1, 2, 5], [1, 2, 5, 0, 3, 4]).astype(np.int64)
    values = {}
    for paired in ("0", "1"):
        monkeypatch.setenv("PGEXACT_CURVE_PAIRS", paired)
        monkeypatch.delenv("PGEXACT_ROW_ORDER", raising=False)
        values[paired] = [
            core_exact.pg2_curve(ens._arena, rows, R, d, noise, threads, Kernel.leaf_pairs),
            core_exact.pg2_curve(ens._arena, rows, R[5], d, noise, threads, Kernel.leaf_pairs),
            core_exact.pg2_curve(ens._arena, rows, R, 3, noise, threads, Kernel.leaf_pairs),
            core_exact.pg2(ens._arena, rows, np.ones(d, np.uint8), noise, threads, Kernel.leaf_pairs),
            core_exact.pg2(ens._arena, rows, masks, noise, threads, Kernel.leaf_pairs),
        ]
        monkeypatch.setenv("PGEXACT_ROW_ORDER", "0")
        values[paired] += [
            core_exact.pg2(ens._arena, clean, apart_masks, noise, threads, Kernel.leaf_pairs),
            core_exact.pg2_curve(ens._arena, clean, apart_R, 3, noise, threads, Kernel.leaf_pairs),
        ]
    for one_at_a_time, two in zip(values["0"], values["1"]):
        np.testing.assert_array_equal(two, one_at_a_time)
    _close(values["1"][5], core_exact.pg2(ens._arena, clean, apart_masks, noise, 1, Kernel.reference))
    _close(values["1"][0], core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.reference))
    _close(values["1"][4], core_exact.pg2(ens._arena, rows, masks, noise, 1, Kernel.reference))


@pytest.mark.parametrize("cap", [None, 8, 24, 64, 200])
def test_a_long_call_goes_in_equal_blocks(xgb_model, monkeypatch, cap):
    """A call past one block's budget goes in as few blocks as the budget allows, of equal size
    to a lane vector of 8 rows: no more blocks than blocks of the budget's size would take, and
    no smaller size gives that many (a short last block paid a whole enumeration for a few rows
    while the others held more than they needed)."""
    ens, _ = xgb_model
    if cap is not None:
        monkeypatch.setenv("PGEXACT_BLOCK_ROWS", str(cap))
    budget = core_exact.pg2_block_rows(ens._arena, 1)
    assert budget % 8 == 0 and budget >= 8
    if cap is not None:
        assert budget == max(8, cap // 8 * 8)
    for n in sorted({1, 7, budget - 1, budget, budget + 1, 2 * budget - 3, 2 * budget + 1, 5 * budget + 3}):
        block = core_exact.pg2_block_rows(ens._arena, n)
        assert block % 8 == 0 and 8 <= block <= budget, (n, block)
        blocks = -(-n // block)
        assert blocks == -(-n // budget), (n, block)
        if n > budget:
            assert (block - 8) * blocks < n, (n, block)
        else:
            assert block == budget


@pytest.mark.parametrize("store", [False, True])
@pytest.mark.parametrize("budget", ["0", "30000"])
def test_lists_past_the_call_budget(xgb_model, monkeypatch, budget, store):
    """Once a list does not fit the call's budget (PGEXACT_CALL_LIST_BYTES caps it: none fits,
    or a few), nothing more is kept, and a pass whose lists nobody keeps enumerates only the
    pairs of its live leaves, however many are live (pair_sweep.hpp). Greedy rankings (a pass a
    step), curves over several blocks of rows and sets give the bits of the uncapped call, and
    are right against the unpruned reference; with the pair cache off, and on but empty (its
    lists would have served the calls)."""
    limit = pgexact.set_pair_cache_limit(0)  # the uncapped calls keep nothing for later ones
    ens, X = xgb_model
    d = ens.n_features
    rows = X[30:70]
    noise = _noise(d, 6)
    rng = np.random.default_rng(8)
    R = np.array([rng.permutation(d) for _ in range(len(rows))], dtype=np.int64)
    mask = (rng.random((len(rows), d)) < 0.7).astype(np.uint8)

    def calls():
        monkeypatch.setenv("PGEXACT_BLOCK_ROWS", "16")  # curves and sets of three blocks
        rk, curve = core_exact.greedy_rank(ens._arena, rows, noise, 2, Kernel.leaf_pairs)
        return [rk, curve, core_exact.pg2_curve(ens._arena, rows, R, d, noise, 2, Kernel.leaf_pairs),
                core_exact.pg2(ens._arena, rows, mask, noise, 1, Kernel.leaf_pairs)]

    try:
        want = calls()
        if store:
            pgexact.set_pair_cache_limit(limit)
            pgexact.clear_pair_cache()
        monkeypatch.setenv("PGEXACT_CALL_LIST_BYTES", budget)
        got = calls()
    finally:
        pgexact.set_pair_cache_limit(limit)
        pgexact.clear_pair_cache()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    _close(got[1], core_exact.pg2_curve(ens._arena, rows, got[0], d, noise, 1, Kernel.reference))
    _close(got[2], core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1, Kernel.reference))
    _close(got[3], core_exact.pg2(ens._arena, rows, mask, noise, 1, Kernel.reference))


def test_a_calibration_run_still_sums_every_tree_pair_once(xgb_model):
    """pgexact.estimate's runs (calibration=True) take each tile's second trees from halfway and
    wrap around (RunControl::calibration): run to the end, they sum every tree pair once, so a
    set and a curve equal the ordinary call's within rounding (a pair skipped or summed twice
    would be far off). A greedy ranking's calibration sweeps the first step of one vector of
    rows and gives the others copies of those rows' values: that vector ranks as the ordinary
    call does, and every row's later curve entries are PG2 of its own ranking's prefixes."""
    ens, X = xgb_model
    rows = X[:20]
    d = ens.n_features
    noise = _noise(d, 5)
    R = np.array([np.random.default_rng(i).permutation(d) for i in range(len(rows))], dtype=np.int64)
    mask = np.ones(d, np.uint8)
    for threads in (1, 2):
        _close(core_exact.pg2(ens._arena, rows, mask, noise, threads, Kernel.leaf_pairs, calibration=True),
               core_exact.pg2(ens._arena, rows, mask, noise, threads, Kernel.leaf_pairs))
        _close(core_exact.pg2_curve(ens._arena, rows, R, d, noise, threads, Kernel.leaf_pairs, calibration=True),
               core_exact.pg2_curve(ens._arena, rows, R, d, noise, threads, Kernel.leaf_pairs))
        rk, curve = core_exact.greedy_rank(ens._arena, rows, noise, threads, Kernel.leaf_pairs, calibration=True)
        ref_rk, ref_curve = core_exact.greedy_rank(ens._arena, rows, noise, threads, Kernel.leaf_pairs)
        same = (rk == ref_rk).all(axis=1)
        assert same.sum() >= 8, same
        _close(curve[same], ref_curve[same])
        own = core_exact.pg2_curve(ens._arena, rows, rk, d, noise, threads, Kernel.leaf_pairs)
        _close(curve[:, 1:], own[:, 1:])


def test_every_simd_build_gives_the_same_bits(tmp_path, xgb_model):
    """The inner loops are built per x86-64 level and picked at run time; each must do the same
    IEEE operations in the same order. PGEXACT_PASSES caps the level in a fresh process."""
    ens, X = xgb_model
    path = tmp_path / "model.bin"
    import pickle

    path.write_bytes(pickle.dumps((ens, X[:40])))
    script = textwrap.dedent(f"""
        import pickle, sys, numpy as np
        from pgexact._core import exact as core_exact
        from pgexact._core.exact import Kernel, Perturbation
        ens, rows = pickle.loads(open({str(path)!r}, "rb").read())
        d = ens.n_features
        noise = Perturbation(np.linspace(0.2, 1.0, d), np.zeros(d, np.uint8))
        R = np.array([np.random.default_rng(i).permutation(d) for i in range(len(rows))], dtype=np.int64)
        out = [core_exact.pg2(ens._arena, rows, np.ones(d, np.uint8), noise, 1),
               core_exact.pg2_curve(ens._arena, rows, R, d, noise, 1),
               *core_exact.greedy_rank(ens._arena, rows, noise, 1)]
        sys.stdout.buffer.write(pickle.dumps(out))
    """)
    results = {}
    for level in ("base", "v3", "best"):
        env = dict(os.environ)
        env.pop("PGEXACT_PASSES", None)
        if level != "best":
            env["PGEXACT_PASSES"] = level
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, check=True,
                              timeout=600)
        results[level] = pickle.loads(done.stdout)
    for level in ("base", "v3"):
        for a, b in zip(results[level], results["best"]):
            np.testing.assert_array_equal(a, b)


def test_trees_with_more_leaves_than_one_chunk():
    """Trees with hundreds of leaves are enumerated 64 leaves of the first tree at a time."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(3000, 5))
    y = np.sin(3 * X[:, 0]) * X[:, 1] + X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=3000)
    model = xgb.XGBRegressor(n_estimators=3, max_depth=9, tree_method="hist", max_bin=64, nthread=1).fit(X, y)
    ens = pgexact.load(model)
    leaves = model.get_booster().trees_to_dataframe().query("Feature == 'Leaf'").groupby("Tree").size()
    assert leaves.max() > 64
    rows = X[:10]
    noise = _noise(5, 6)
    R = np.array([np.random.default_rng(i).permutation(5) for i in range(10)], dtype=np.int64)
    _close(core_exact.pg2_curve(ens._arena, rows, R, 5, noise, 2),
           core_exact.pg2_curve(ens._arena, rows, R, 5, noise, 1, Kernel.reference))
    rk, curve = core_exact.greedy_rank(ens._arena, rows, noise, 2)
    _close(curve, core_exact.pg2_curve(ens._arena, rows, rk, 5, noise, 1, Kernel.reference))


@pytest.mark.parametrize("d", [2, 3, 5, 7, 9])
def test_greedy_tail_on_the_leaf_pairs(d):
    """A greedy ranking's last (up to four) steps take one pass over every set S + A they can ask
    for (pair_kernel.cpp's tail). Random models over d features (two to nine: the tail is the
    whole ranking up to four candidates), rows with NaN, a feature the noise never moves, mixed
    noise families: the ranking is the unpruned reference's and its curve within 1e-12, with 1
    and 2 threads the same bits, and each curve entry within 1e-12 of the reference's PG2 of
    that prefix."""
    rng = np.random.default_rng(40 + d)
    X = rng.normal(size=(500, d))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * np.nan_to_num(X[:, 1 % d]) + np.sin(2 * np.nan_to_num(X[:, -1])) + 0.2 * rng.normal(size=500)
    model = xgb.XGBRegressor(n_estimators=10, max_depth=5, tree_method="hist", max_bin=32, nthread=1).fit(X, y)
    ens = pgexact.load(model)
    rows = np.ascontiguousarray(X[rng.integers(len(X), size=11)])
    sigma = rng.uniform(0.1, 1.0, size=d)
    family = rng.choice(np.array([0, 1, 2], np.uint8), size=d)
    if d >= 5:
        family[int(rng.integers(d))] = 4  # never perturbed: ranked last, not a candidate
    noise = Perturbation(sigma, family)
    rk, curve = core_exact.greedy_rank(ens._arena, rows, noise, 1, Kernel.leaf_pairs)
    ref_rk, ref_curve = core_exact.greedy_rank(ens._arena, rows, noise, 1, Kernel.reference)
    np.testing.assert_array_equal(rk, ref_rk)
    _close(curve, ref_curve)
    two = core_exact.greedy_rank(ens._arena, rows, noise, 2, Kernel.leaf_pairs)
    np.testing.assert_array_equal(two[0], rk)
    np.testing.assert_array_equal(two[1], curve)
    _close(curve, core_exact.pg2_curve(ens._arena, rows, rk, d, noise, 1, Kernel.reference))

