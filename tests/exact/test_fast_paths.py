"""Every fast path of the exact kernels against the unpruned reference (the paper's pair walk).

The fast kernels prune (reachability, independent trees, conditionally independent subtrees,
certified skipping of node pairs below 1e-12 relative), sweep one perturbed feature, share one
walk across the prefixes of a ranking, and reuse it in the greedy ranking. The reference walks
every leaf pair of every tree pair with none of that. Both must agree to 1e-12 relative on
random models, random feature sets, random rankings, and rows that sit exactly on split
thresholds, on float32 rounding boundaries, one ulp beside them, or carry NaN.

These are not restated formulas: the reference shares only the pass-1 probabilities with the
fast kernels, and both are checked against brute force elsewhere (test_pg2_bruteforce.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pgexact
from pgexact._core import exact as core_exact
from pgexact._core import model as core_model
from pgexact._core.exact import Kernel, Perturbation

RTOL = 1e-12


def _xgb_model(seed, d, n_trees, depth, **extra):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, d))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.sin(np.nan_to_num(X[:, 0])) + np.nan_to_num(X[:, 1 % d]) * np.nan_to_num(X[:, 2 % d]) + 0.3 * rng.normal(size=300)
    params = dict(max_depth=depth, eta=0.3, nthread=2, tree_method="hist", max_bin=32, seed=seed, **extra)
    return xgb.train(params, xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=n_trees), X


def _awkward_rows(m, X, rng, n_random=3):
    """Random rows, rows with NaN, rows exactly on thresholds, on float32 rounding boundaries
    of thresholds and one ulp to either side of those."""
    d = X.shape[1]
    rows = [rng.normal(size=d) for _ in range(n_random)]
    r = rng.normal(size=d)
    r[rng.integers(d)] = np.nan
    rows.append(r)
    thr = _thresholds(m, d)
    for kind in ("at", "below", "above", "boundary"):
        r = rng.normal(size=d)
        for f in range(d):
            if not len(thr[f]):
                continue
            t = float(rng.choice(thr[f]))
            if kind == "boundary":
                t = float(np.nextafter(np.float32(t), np.float32(-np.inf))) / 2 + t / 2  # midpoint
            elif kind == "below":
                t = float(np.nextafter(t, -np.inf))
            elif kind == "above":
                t = float(np.nextafter(t, np.inf))
            r[f] = t
        rows.append(r)
    return np.array(rows)


def _thresholds(m, d):
    df = m.booster_dataframe
    out = []
    for f in range(d):
        name = f"f{f}"
        out.append(df.loc[df.Feature == name, "Split"].to_numpy(dtype=np.float64))
    return out


class _Model:
    """An XGBoost booster with its arena and a dataframe of splits (for awkward rows)."""

    def __init__(self, booster):
        self.booster = booster
        self.ens = pgexact.load(booster)
        self.booster_dataframe = booster.trees_to_dataframe()
        self.arena = self.ens._arena
        self.d = self.ens.n_features


def _noise(d, rng, families=(0, 1, 2)):
    sigma = rng.uniform(0.05, 1.5, size=d)
    family = rng.choice(np.array(families, dtype=np.uint8), size=d)
    return Perturbation(sigma, family)


def _assert_close(fast, ref):
    fast = np.asarray(fast)
    ref = np.asarray(ref)
    assert np.all(fast >= 0.0)
    np.testing.assert_allclose(fast, ref, rtol=RTOL, atol=1e-300)


MODELS = {
    "shallow": dict(seed=1, d=5, n_trees=12, depth=3),
    "deeper": dict(seed=2, d=6, n_trees=10, depth=5),
    "wide": dict(seed=3, d=9, n_trees=14, depth=4, colsample_bynode=0.6),
    "lossguide": dict(seed=4, d=5, n_trees=8, depth=0, grow_policy="lossguide", max_leaves=12),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request):
    booster, X = _xgb_model(**MODELS[request.param])
    m = _Model(booster)
    m.X = X
    return m


def _rows(m, seed):
    return _awkward_rows(m, m.X, np.random.default_rng(seed))


def test_pg2_fast_equals_reference_random_sets(model):
    rng = np.random.default_rng(10)
    X = _rows(model, 11)
    d = model.d
    for _ in range(6):
        noise = _noise(d, rng)
        masks = (rng.random((X.shape[0], d)) < rng.uniform(0.2, 1.0)).astype(np.uint8)
        fast = core_exact.pg2(model.arena, X, masks, noise, 1)
        separate = core_exact.pg2(model.arena, X, masks, noise, 1, Kernel.separate_walks)
        ref = core_exact.pg2(model.arena, X, masks, noise, 1, Kernel.reference)
        _assert_close(fast, ref)
        _assert_close(separate, ref)


def test_pg2_fast_equals_reference_every_single_feature(model):
    """|S| = 1 takes the sweep, not the pair recursion."""
    X = _rows(model, 12)
    d = model.d
    noise = _noise(d, np.random.default_rng(13))
    for j in range(d):
        mask = np.zeros(d, dtype=np.uint8)
        mask[j] = 1
        _assert_close(core_exact.pg2(model.arena, X, mask, noise, 1),
                      core_exact.pg2(model.arena, X, mask, noise, 1, Kernel.reference))


def test_pg2_fast_equals_reference_every_pair_of_features(model):
    """|S| = 2 takes the sum over the two features' grid of cells (two_feature_grid.cpp), in
    every noise family, on rows on and beside thresholds and with NaN (one of the two features
    then stays put: the sweep of the other)."""
    X = _rows(model, 22)
    d = model.d
    rng = np.random.default_rng(23)
    for families in ((0,), (1,), (2,), (0, 1, 2)):
        noise = _noise(d, rng, families)
        for j in range(d):
            for i in range(j + 1, d):
                mask = np.zeros(d, dtype=np.uint8)
                mask[[j, i]] = 1
                fast = core_exact.pg2(model.arena, X, mask, noise, 1)
                _assert_close(fast, core_exact.pg2(model.arena, X, mask, noise, 1, Kernel.reference))
                # A call of one row takes the grid too (not its union walk): the same bits.
                for r in (0, 3, len(X) - 1):
                    assert core_exact.pg2(model.arena, X[r:r + 1], mask, noise, 1)[0] == fast[r]


@pytest.mark.parametrize("gridded", ["0", "1"])
def test_greedy_second_step_on_grids_equals_reference(model, monkeypatch, gridded):
    """The greedy ranking's step 1 on the two-feature grids (PGEXACT_GRIDDED_STEP=1) and as a
    pass (=0): the same curve within 1e-12 of the reference, the same choices but near-ties."""
    monkeypatch.setenv("PGEXACT_GRIDDED_STEP", gridded)
    X = _rows(model, 24)
    d = model.d
    noise = _noise(d, np.random.default_rng(25))
    r_ref, c_ref = core_exact.greedy_rank(model.arena, X, noise, 1, Kernel.reference)
    r_fast, c_fast = core_exact.greedy_rank(model.arena, X, noise, 2, Kernel.pairs)
    _assert_close(c_fast, c_ref)
    for i in range(X.shape[0]):
        for k in range(d):
            if r_fast[i, k] != r_ref[i, k]:
                assert abs(c_fast[i, k] - c_ref[i, k]) <= 1e-10 * max(c_ref[i, k], 1e-300)
                break


def test_greedy_second_step_on_grids_changes_only_rounding(model, monkeypatch):
    """Grids against the pass for step 1: the same rankings, curves within 1e-13; and, where
    step 1 is not one of the last four steps (those are one pass over every set they can ask
    for), the grids were taken: the curve's first column is then pg2 of the first choice bit
    for bit, the sweep's value, where the pass gave its own rounding of it."""
    X = np.vstack([_rows(model, 26), model.X[:30]])
    d = model.d
    noise = _noise(d, np.random.default_rng(27))
    got = {}
    for gridded in ("0", "1"):
        monkeypatch.setenv("PGEXACT_GRIDDED_STEP", gridded)
        got[gridded] = core_exact.greedy_rank(model.arena, X, noise, 1, Kernel.pairs)
    np.testing.assert_array_equal(got["0"][0], got["1"][0])
    np.testing.assert_allclose(got["1"][1], got["0"][1], rtol=1e-13, atol=1e-300)
    ranking, curve = got["1"]
    masks = np.zeros((X.shape[0], d), dtype=np.uint8)
    masks[np.arange(X.shape[0]), ranking[:, 0]] = 1
    first = core_exact.pg2(model.arena, X, masks, noise, 1)
    if d - 4 > 1:
        np.testing.assert_array_equal(curve[:, 0], first)
        assert np.any(got["0"][1][:, 0] != first)  # the pass's own rounding: the switch switched


def test_curve_fast_equals_reference(model):
    """pg2_curve shares work across prefixes; every column must still match the reference."""
    rng = np.random.default_rng(14)
    X = _rows(model, 15)
    d = model.d
    for n_steps in (d, max(1, d - 2), 2):
        noise = _noise(d, rng)
        R = np.array([rng.permutation(d) for _ in range(X.shape[0])], dtype=np.int64)
        fast = core_exact.pg2_curve(model.arena, X, R, n_steps, noise, 2)
        separate = core_exact.pg2_curve(model.arena, X, R, n_steps, noise, 2, Kernel.separate_walks)
        ref = core_exact.pg2_curve(model.arena, X, R, n_steps, noise, 1, Kernel.reference)
        assert fast.shape == (X.shape[0], n_steps)
        _assert_close(fast, ref)
        _assert_close(separate, ref)
        # ... and every column the same as the stand-alone pg2 of that prefix.
        for k in range(n_steps):
            masks = np.zeros((X.shape[0], d), dtype=np.uint8)
            for i in range(X.shape[0]):
                masks[i, R[i, : k + 1]] = 1
            _assert_close(fast[:, k], core_exact.pg2(model.arena, X, masks, noise, 1))


def test_greedy_rank_fast_equals_reference(model):
    X = _rows(model, 16)[:5]
    d = model.d
    noise = _noise(d, np.random.default_rng(17))
    r_ref, c_ref = core_exact.greedy_rank(model.arena, X, noise, 1, Kernel.reference)
    for shared in (True, False):
        r_fast, c_fast = core_exact.greedy_rank(model.arena, X, noise, 2, (Kernel.pairs if shared else Kernel.separate_walks))
        _assert_close(c_fast, c_ref)
        for i in range(X.shape[0]):
            # Rankings agree wherever the choice was not a near-tie (within 1e-10) of PG2 values.
            for k in range(d):
                if r_fast[i, k] != r_ref[i, k]:
                    gap = abs(c_fast[i, k] - c_ref[i, k])
                    assert gap <= 1e-10 * max(c_ref[i, k], 1e-300)
                    break


def test_many_features_hashed_bits():
    """More than 64 features: subtree feature masks share bits; pruning must stay conservative."""
    booster, X = _xgb_model(seed=5, d=80, n_trees=10, depth=4, colsample_bynode=0.9)
    m = _Model(booster)
    rng = np.random.default_rng(18)
    rows = _awkward_rows(m, X, rng)[:5]
    noise = _noise(m.d, rng)
    used = np.flatnonzero([len(t) > 0 for t in _thresholds(m, m.d)])
    for _ in range(3):
        mask = np.zeros(m.d, dtype=np.uint8)
        mask[rng.choice(used, size=min(len(used), 12), replace=False)] = 1
        fast = core_exact.pg2(m.arena, rows, mask, noise, 2)
        _assert_close(fast, core_exact.pg2(m.arena, rows, mask, noise, 1, Kernel.reference))
        _assert_close(core_exact.pg2(m.arena, rows, mask, noise, 1, Kernel.separate_walks), fast)
        alone = [core_exact.pg2(m.arena, rows[i : i + 1], mask, noise, 1)[0] for i in range(len(rows))]
        np.testing.assert_array_equal(fast, alone)
    R = np.array([np.concatenate([rng.permutation(used), np.setdiff1d(np.arange(m.d), used)])
                  for _ in range(rows.shape[0])], dtype=np.int64)
    n_steps = min(len(used), 10)
    _assert_close(core_exact.pg2_curve(m.arena, rows, R, n_steps, noise, 1),
                  core_exact.pg2_curve(m.arena, rows, R, n_steps, noise, 1, Kernel.reference))


def test_lightgbm_and_forest_fast_equals_reference():
    lgb = pytest.importorskip("lightgbm")
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(19)
    X = rng.normal(size=(400, 6))
    y = X[:, 0] * X[:, 1] + np.sin(3 * X[:, 2]) + 0.1 * rng.normal(size=400)
    models = [
        lgb.LGBMRegressor(n_estimators=15, num_leaves=12, random_state=0, verbose=-1, n_jobs=1).fit(X, y),
        RandomForestRegressor(n_estimators=5, max_depth=5, random_state=0, n_jobs=1).fit(X, y),
    ]
    rows = np.vstack([rng.normal(size=(4, 6)), X[:2]])
    rows[4, 3] = np.nan
    for model in models:
        ens = pgexact.load(model)
        noise = _noise(6, rng)
        R = np.array([rng.permutation(6) for _ in range(rows.shape[0])], dtype=np.int64)
        _assert_close(core_exact.pg2_curve(ens._arena, rows, R, 6, noise, 1),
                      core_exact.pg2_curve(ens._arena, rows, R, 6, noise, 1, Kernel.reference))
        # Sets of two features on their grids (LightGBM's zero routing and missing values, a
        # forest's thresholds).
        for j, i in ((0, 1), (2, 3), (3, 5)):
            mask = np.zeros(6, dtype=np.uint8)
            mask[[j, i]] = 1
            _assert_close(core_exact.pg2(ens._arena, rows, mask, noise, 1),
                          core_exact.pg2(ens._arena, rows, mask, noise, 1, Kernel.reference))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    depth=st.integers(1, 5),
    n_trees=st.integers(1, 12),
    d=st.integers(2, 7),
    data=st.data(),
)
def test_hypothesis_random_models_sets_rows(seed, depth, n_trees, d, data):
    booster, X = _xgb_model(seed=seed, d=d, n_trees=n_trees, depth=depth)
    m = _Model(booster)
    rng = np.random.default_rng(seed + 1)
    rows = _awkward_rows(m, X, rng, n_random=1)
    sigma = np.array(data.draw(st.lists(st.floats(1e-3, 3.0), min_size=d, max_size=d)))
    family = np.array(data.draw(st.lists(st.integers(0, 2), min_size=d, max_size=d)), dtype=np.uint8)
    noise = Perturbation(sigma, family)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=d, max_size=d)), dtype=np.uint8)
    _assert_close(core_exact.pg2(m.arena, rows, mask, noise, 1),
                  core_exact.pg2(m.arena, rows, mask, noise, 1, Kernel.reference))
    ranking = np.array(data.draw(st.permutations(range(d))), dtype=np.int64)
    n_steps = data.draw(st.integers(1, d))
    _assert_close(core_exact.pg2_curve(m.arena, rows, ranking, n_steps, noise, 1),
                  core_exact.pg2_curve(m.arena, rows, ranking, n_steps, noise, 1, Kernel.reference))


def test_value_of_a_row_does_not_depend_on_its_batch(model):
    """Rows, prefixes and greedy candidates share walks; each value is computed with the same
    operations in the same order whatever shares the walk, so it is bit-for-bit the value the
    row gets alone, in another order, with other rows, or as a curve column."""
    rng = np.random.default_rng(20)
    X = np.vstack([_rows(model, 21), model.X[:40]])
    d = model.d
    noise = _noise(d, rng)
    for mask in (np.ones(d, dtype=np.uint8), (rng.random(d) < 0.6).astype(np.uint8)):
        together = core_exact.pg2(model.arena, X, mask, noise, 2)
        # alone on the batch's kernel: the same bits (Kernel.pairs takes the shared walks for a
        # row alone where they are faster: within 2 tol = 2e-13 of the batch, test_few_rows.py)
        alone = np.array([core_exact.pg2(model.arena, X[i : i + 1], mask, noise, 1, Kernel.leaf_pairs)[0]
                          for i in range(X.shape[0])])
        by_default = np.array([core_exact.pg2(model.arena, X[i : i + 1], mask, noise, 1)[0]
                               for i in range(X.shape[0])])
        order = rng.permutation(X.shape[0])
        shuffled = core_exact.pg2(model.arena, X[order], mask, noise, 3)
        np.testing.assert_array_equal(together, alone)
        np.testing.assert_allclose(by_default, together, rtol=2e-13, atol=0)
        np.testing.assert_array_equal(shuffled, together[order])
    R = np.array([rng.permutation(d) for _ in range(X.shape[0])], dtype=np.int64)
    curve = core_exact.pg2_curve(model.arena, X, R, d, noise, 2)
    for k in range(d):
        masks = np.zeros((X.shape[0], d), dtype=np.uint8)
        for i in range(X.shape[0]):
            masks[i, R[i, : k + 1]] = 1
        # within 1e-13, not bit for bit: per-row leaf pruning spends its budget per prefix of
        # the curve and per set of pg2 (docs: "How it is fast")
        np.testing.assert_allclose(curve[:, k], core_exact.pg2(model.arena, X, masks, noise, 1),
                                   rtol=1e-13, atol=0)
    rows = X[:6]
    ranking, gains = core_exact.greedy_rank(model.arena, rows, noise, 2)
    np.testing.assert_allclose(gains, core_exact.pg2_curve(model.arena, rows, ranking, d, noise, 1),
                               rtol=1e-13, atol=0)


def test_skipping_falls_back_when_covariances_cancel_the_diagonal():
    """Two trees with leaf values v and -(1 - eps) v: f = eps * tree, PG2 = eps^2 Var, while the
    diagonal terms the skip budget is a share of are ~2 Var. Skipped node pairs could then be a
    large part of the result; the kernel must notice (certified bound) and walk again without
    skipping, leaving only rounding. Without the fall-back the error here is 1e-13 Var."""
    rng = np.random.default_rng(0)
    depth = 8
    n = 2 ** (depth + 1) - 1
    left = np.full(n, -1)
    right = np.full(n, -1)
    for i in range(2**depth - 1):
        left[i], right[i] = 2 * i + 1, 2 * i + 2
    tree = dict(children_left=left, children_right=right,
                feature=np.where(left >= 0, rng.integers(0, 3, n), 0),
                threshold=np.where(left >= 0, rng.uniform(-2.5, 2.5, n), 0.0),
                value=np.where(left < 0, rng.normal(size=n), 0.0))
    eps = 1e-6

    def ensemble(*scales):
        trees = [dict(tree, value=s * tree["value"]) for s in scales]
        return pgexact.TreeEnsemble(core_model.build_arena_from_arrays(trees, np.zeros(1), 3, op="<="))

    X = rng.normal(size=(20, 3)) * 0.5
    for sigma in (0.05, 0.2):
        var = pgexact.pg2(ensemble(1.0), X, [0, 1, 2], sigma=sigma)
        exact = pgexact.pg2(ensemble(eps), X, [0, 1, 2], sigma=sigma)  # one tree: no cancellation
        np.testing.assert_allclose(exact / var, eps**2, rtol=1e-9)
        for shared in (True, False):
            got = core_exact.pg2(ensemble(1.0, -(1.0 - eps))._arena, X, np.ones(3, np.uint8), Perturbation(np.full(3, sigma), np.zeros(3, np.uint8)), 2, (Kernel.pairs if shared else Kernel.separate_walks))
            assert np.all(got >= 0.0)
            assert np.max(np.abs(got - exact) / var) < 1e-14


def test_one_feature_the_model_does_not_move_within_reach_is_exactly_zero():
    """PG2 of one feature is a sweep over its boundaries. Where no boundary lies within the
    uniform noise's support around x_j, f(x') = f(x) for every x' and PG2 is exactly 0, as the
    library's own predict confirms on a grid of the support; the sweep once reached x's piece
    through the rounding of every jump to its left and gave (1 ulp)^2 (4.8e-35 here)."""
    from catboost import CatBoostRegressor

    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    y = np.sin(Z[:, 0]) + Z[:, 1] * Z[:, 2] + 0.5 * (Z[:, 3] > 0) * Z[:, 4] + 0.2 * rng.normal(size=500)
    model = CatBoostRegressor(iterations=25, depth=5, verbose=0, thread_count=1, random_seed=3,
                              allow_writing_files=False).fit(X, y)
    ens = pgexact.load(model)
    row = np.array([[2.04, 0.3, 0.1, 0.0, 0.3, -0.2]])
    sigma = 0.19
    half = sigma * np.sqrt(3.0)
    grid = np.repeat(row, 4001, axis=0)
    grid[:, 0] = np.linspace(row[0, 0] - half, row[0, 0] + half, 4001)
    assert np.ptp(model.predict(grid)) == 0.0  # the model is flat in x_0 over the support
    noise = Perturbation(np.full(6, sigma), np.ones(6, np.uint8))  # uniform
    mask = np.eye(6, dtype=np.uint8)[0]
    for kernel in (Kernel.pairs, Kernel.walks, Kernel.reference):
        assert core_exact.pg2(ens._arena, row, mask, noise, 1, kernel)[0] == 0.0
    assert pgexact.pg2(model, row, [0], sigma=sigma, noise="uniform")[0] == 0.0


def test_two_features_the_model_does_not_move_within_reach_are_exactly_zero():
    """PG2 of two features is a sum over their grid's cells, whose values are prefix sums of
    every leaf's change: where the model is flat over the noise's support (the library's own
    predict on a grid of it) the sums' residues must not leave a (1 ulp)^2, and PG2 is exactly
    0; with one boundary within reach it is positive and agrees with the reference."""
    from catboost import CatBoostRegressor

    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 4))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * (X[:, 3] > 0) + 0.2 * rng.normal(size=500)
    model = CatBoostRegressor(iterations=30, depth=4, verbose=0, thread_count=1, random_seed=5,
                              allow_writing_files=False).fit(X, y)
    ens = pgexact.load(model)
    row = rng.normal(size=(1, 4))
    # x_0 and x_1 midway in the widest gap between CatBoost's borders (its splits' thresholds
    # are among them), the support narrower than the gaps: the model cannot move there.
    half = np.inf
    for j in (0, 1):
        b = np.sort(np.asarray(model.get_borders()[j], dtype=np.float64))
        k = int(np.argmax(np.diff(b)))
        row[0, j] = (b[k] + b[k + 1]) / 2
        half = min(half, (b[k + 1] - b[k]) / 4)
    sigma = half / np.sqrt(3.0)
    grid = np.repeat(row, 201 * 201, axis=0)
    g0, g1 = np.meshgrid(np.linspace(-half, half, 201), np.linspace(-half, half, 201))
    grid[:, 0] += g0.ravel()
    grid[:, 1] += g1.ravel()
    assert np.ptp(model.predict(grid)) == 0.0
    noise = Perturbation(np.full(4, sigma), np.ones(4, np.uint8))  # uniform
    mask = np.array([1, 1, 0, 0], dtype=np.uint8)
    for kernel in (Kernel.pairs, Kernel.walks, Kernel.reference):
        assert core_exact.pg2(ens._arena, row, mask, noise, 1, kernel)[0] == 0.0
    assert pgexact.pg2(model, np.repeat(row, 3, axis=0), [0, 1], sigma=sigma, noise="uniform").tolist() == [0.0] * 3
    wide = Perturbation(np.full(4, 4 * sigma), np.ones(4, np.uint8))
    got = core_exact.pg2(ens._arena, np.repeat(row, 3, axis=0), mask, wide, 1)
    ref = core_exact.pg2(ens._arena, np.repeat(row, 3, axis=0), mask, wide, 1, Kernel.reference)
    assert np.all(got > 0.0)
    _assert_close(got, ref)
