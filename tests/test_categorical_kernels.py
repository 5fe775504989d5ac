"""Categorical perturbation in the exact kernels, against the unpruned reference and cell enumeration.

Random ensembles with categorical and numeric splits (several features mixing both) are built
straight from arrays, so every shape of category set appears: the leaf-pair kernel (cells and
category sets, ``category_cells.hpp``) must give the reference's values (every leaf pair, each
feature's probability read off the two paths split by split, ``reference_kernel.hpp``), and,
where only categorical features move, the value of an explicit enumeration of every category
combination through ``TreeEnsemble.predict`` (the library's routing rule, the arena's own).
Oracles through the libraries' own predict are in ``test_categorical.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pgexact
from pgexact import _core
from pgexact._exact._prepare import prepare_call

D = 4  # features 0, 1: category codes (1 also split numerically); 2, 3: numeric
N_CODES = 8


def _tree(rng: np.random.Generator, depth: int, n_codes: int = N_CODES) -> dict:
    n = 2 ** (depth + 1) - 1
    left = np.full(n, -1)
    right = np.full(n, -1)
    feature = np.zeros(n, dtype=np.int64)
    threshold = np.zeros(n)
    cat_nodes, cat_bitsets = [], []
    for i in range(2 ** depth - 1):
        left[i], right[i] = 2 * i + 1, 2 * i + 2
        j = int(rng.integers(0, D))
        feature[i] = j
        if j == 0 or (j == 1 and rng.random() < 0.6):
            members = rng.random(n_codes) < rng.uniform(0.2, 0.8)
            words = [int(np.sum(members[w:w + 32].astype(np.int64) << np.arange(members[w:w + 32].size)))
                     for w in range(0, n_codes, 32)]
            cat_nodes.append(i)
            cat_bitsets.append(np.array(words, dtype=np.uint32))
        else:
            threshold[i] = rng.uniform(0, n_codes) if j == 1 else rng.normal()
    return dict(children_left=left, children_right=right, feature=feature, threshold=threshold,
                value=np.where(left < 0, rng.normal(size=n), 0.0),
                missing_go_to_left=rng.integers(0, 2, n), cat_nodes=np.array(cat_nodes, dtype=np.int64),
                cat_bitsets=cat_bitsets)


def _model(seed: int, n_trees: int, depth: int, n_codes: int = N_CODES) -> pgexact.TreeEnsemble:
    rng = np.random.default_rng(seed)
    trees = [_tree(rng, depth, n_codes) for _ in range(n_trees)]
    return pgexact.TreeEnsemble(_core.build_arena_from_arrays(trees, np.array([0.3]), D, "<=", False, "lightgbm"))


def _rows(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1000)
    X = np.column_stack([rng.integers(0, N_CODES + 2, n), rng.integers(0, N_CODES, n),
                         rng.normal(size=n), rng.normal(size=n)]).astype(float)
    X[rng.random(n) < 0.1, 0] = np.nan        # missing stays missing
    X[rng.random(n) < 0.1, 1] = -1.0          # an invalid code: LightGBM sends it right
    X[rng.random(n) < 0.1, 0] = 2.5           # a fraction: int(x) = 2
    return X


def _noise(rng: np.random.Generator, fixed: bool) -> list:
    k = int(rng.integers(2, N_CODES + 1))
    cats = rng.choice(N_CODES + 2, size=k, replace=False)
    w = rng.random(k) + 0.05
    return [pgexact.noise.categorical(float(rng.uniform(0.1, 1.0)), cats, w),
            None if fixed else pgexact.noise.categorical(float(rng.uniform(0.1, 1.0)), np.arange(N_CODES)),
            "normal", None if fixed else pgexact.noise.Uniform(sigma=0.7)]


def _close(fast: np.ndarray, ref: np.ndarray, rtol: float = 1e-12) -> None:
    scale = max(float(np.max(np.abs(ref))), 1e-300)
    assert np.all(fast >= 0.0)
    assert np.max(np.abs(fast - ref)) <= rtol * scale, (fast, ref)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_trees=st.integers(1, 6), depth=st.integers(1, 4), fixed=st.booleans())
def test_pair_kernel_matches_reference(seed: int, n_trees: int, depth: int, fixed: bool) -> None:
    model = _model(seed, n_trees, depth)
    X = _rows(seed, 19)  # more than two lane vectors
    rng = np.random.default_rng(seed)
    noise = _noise(rng, fixed)
    call = prepare_call(model, X, sigma=0.4, noise=noise)
    masks = (rng.random((X.shape[0], D)) < 0.6).astype(np.uint8)
    fast = call.pg2(masks)
    _close(fast, call.pg2(masks, reference=True))
    # one mask for every row, and each row alone: the same bits
    mask = np.array([1, 1, 0, 1], np.uint8)
    together = call.pg2(mask)
    alone = np.array([call.rows(i, i + 1).pg2(mask)[0] for i in range(X.shape[0])])
    assert np.array_equal(together, alone)
    np.testing.assert_allclose(call.expected(mask), np.array([
        _core.expected(model._arena, X[i:i + 1], mask, call.noise.sigma, call.noise.family,
                       categorical=call.noise.categorical)[0] for i in range(X.shape[0])]), rtol=0, atol=0)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n_trees=st.integers(1, 5), depth=st.integers(1, 4))
def test_curve_and_greedy_with_categories(seed: int, n_trees: int, depth: int) -> None:
    model = _model(seed, n_trees, depth)
    X = _rows(seed, 11)
    rng = np.random.default_rng(seed)
    noise = _noise(rng, False)
    call = prepare_call(model, X, sigma=0.4, noise=noise)
    ranking = np.argsort(rng.random((X.shape[0], D)), axis=1).astype(np.int64)
    curve = call.pg2_curve(ranking)
    for k in range(D):  # a curve column is pg2 of the prefix (within 1e-13: leaf pruning)
        masks = np.zeros((X.shape[0], D), np.uint8)
        np.put_along_axis(masks, ranking[:, :k + 1], 1, axis=1)
        np.testing.assert_allclose(curve[:, k], call.pg2(masks), rtol=1e-13, atol=0)
    _close(curve, _core.pg2_curve(model._arena, X, ranking, D, call.noise.sigma, call.noise.family, 1, True,
                                  categorical=call.noise.categorical))
    order, gains = call.greedy_rank()
    for i in range(X.shape[0]):
        chosen = np.zeros(D, np.uint8)
        for k in range(D):
            # the step's choice is the best candidate (ties within rounding allowed)
            values = []
            for j in range(D):
                if chosen[j]:
                    continue
                m = chosen.copy()
                m[j] = 1
                values.append(call.rows(i, i + 1).pg2(m)[0])
            chosen[order[i, k]] = 1
            assert gains[i, k] == pytest.approx(call.rows(i, i + 1).pg2(chosen)[0], rel=1e-13, abs=0)
            assert gains[i, k] >= max(values) * (1 - 1e-12)
    ref_order, ref_gains = _core.greedy_rank(model._arena, X, call.noise.sigma, call.noise.family, 1, True,
                                             categorical=call.noise.categorical)
    _close(np.sort(gains[:, -1]), np.sort(ref_gains[:, -1]))


def _enumerated(model: pgexact.TreeEnsemble, call, x: np.ndarray, features: list) -> tuple:
    """E[(f(x') - f(x))^2] and E f(x') over every combination of drawn categories."""
    kn = call.noise
    options = []
    for j in range(D):
        if j in features and kn.family[j] == 3 and not np.isnan(x[j]):
            b, e = kn.cat_begin[j], kn.cat_begin[j + 1]
            p = kn.change[j]
            options.append([(x[j], 1 - p)] + [(c, p * w) for c, w in zip(kn.cat_value[b:e], kn.cat_weight[b:e])])
        else:
            options.append([(x[j], 1.0)])
    rows = np.array([[c[0] for c in combo] for combo in itertools.product(*options)])
    probs = np.array([np.prod([c[1] for c in combo]) for combo in itertools.product(*options)])
    f = model.predict(rows)
    f0 = model.predict(x[None, :])[0]
    return float(probs @ (f - f0) ** 2), float(probs @ f)


@pytest.mark.parametrize("seed", range(6))
def test_categories_against_enumeration(seed: int) -> None:
    model = _model(seed, 5, 3)
    X = _rows(seed, 9)
    noise = _noise(np.random.default_rng(seed), False)
    for features in ([0], [1], [0, 1]):
        call = prepare_call(model, X, sigma=0.4, noise=noise)
        got = pgexact.pg2(model, X, features=features, sigma=0.4, noise=noise)
        got_e = pgexact.expected(model, X, features=features, sigma=0.4, noise=noise)
        want = np.array([_enumerated(model, call, x, features) for x in X])
        np.testing.assert_allclose(got, want[:, 0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got_e, want[:, 1], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", range(3))
def test_more_cells_than_a_word(seed: int) -> None:
    """Over 64 cells: sets span several words and their weights are summed cell by cell."""
    n_codes = 150
    model = _model(seed, 6, 4, n_codes)
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, n_codes + 5, 13), rng.integers(0, n_codes, 13),
                         rng.normal(size=13), rng.normal(size=13)]).astype(float)
    noise = [pgexact.noise.categorical(0.6, np.arange(n_codes), rng.random(n_codes)),
             pgexact.noise.categorical(0.3, np.arange(0, n_codes, 3)), "normal", None]
    call = prepare_call(model, X, sigma=0.4, noise=noise)
    masks = (rng.random((13, D)) < 0.7).astype(np.uint8)
    _close(call.pg2(masks), call.pg2(masks, reference=True))
    ranking = np.argsort(rng.random((13, D)), axis=1).astype(np.int64)
    _close(call.pg2_curve(ranking), _core.pg2_curve(model._arena, X, ranking, D, call.noise.sigma,
                                                    call.noise.family, 1, True, categorical=call.noise.categorical))


def test_none_leaves_a_feature_unperturbed() -> None:
    model = _model(3, 6, 3)
    X = _rows(3, 17)
    base = [pgexact.noise.categorical(0.5), pgexact.noise.categorical(0.5, range(N_CODES)), "normal", "laplace"]
    for j in range(D):
        noise = list(base)
        noise[j] = None
        others = [k for k in range(D) if k != j]
        a = pgexact.pg2(model, X, features=list(range(D)), sigma=0.3, noise=noise)
        b = pgexact.pg2(model, X, features=others, sigma=0.3, noise=noise)
        assert np.array_equal(a, b)
        ranking = pgexact.rank(model, X, sigma=0.3, noise=noise)
        assert np.all(ranking[:, -1] == j)  # never moves: ranked last


def test_threads_and_batches_give_the_same_bits() -> None:
    model = _model(11, 12, 4)
    X = _rows(11, 70)
    noise = _noise(np.random.default_rng(11), False)
    one = pgexact.pgi2(model, X, sigma=0.4, noise=noise, n_jobs=1)
    two = pgexact.pgi2(model, X, sigma=0.4, noise=noise, n_jobs=2)
    assert np.array_equal(one, two)
    parts = np.concatenate([pgexact.pgi2(model, X[:33], sigma=0.4, noise=noise, n_jobs=2),
                            pgexact.pgi2(model, X[33:], sigma=0.4, noise=noise, n_jobs=2)])
    # rows of another call add cells of their own, which must not change a row's value
    assert np.array_equal(parts, one)


def test_categorical_noise_refused_where_the_walks_run() -> None:
    model = _model(5, 3, 2)
    X = _rows(5, 4)
    call = prepare_call(model, X, sigma=0.4, noise=_noise(np.random.default_rng(5), False))
    n = call.noise
    with pytest.raises(ValueError, match="^noise: categorical perturbation"):
        _core.pg2(model._arena, X, np.ones(D, np.uint8), n.sigma, n.family, 1, False, pairs=False,
                  categorical=n.categorical)
    with pytest.raises(ValueError, match="^noise: first moments"):
        _core.first_moments(model._arena, X, n.sigma, n.family, categorical=n.categorical)


def test_categorical_noise_beyond_the_pair_kernel_is_refused_by_name() -> None:
    d = 70  # more features than the leaf-pair kernel takes
    tree = dict(children_left=np.array([1, -1, 3, -1, -1]), children_right=np.array([2, -1, 4, -1, -1]),
                feature=np.array([0, 0, 69, 0, 0]), threshold=np.array([0.0, 0.0, 0.5, 0.0, 0.0]),
                value=np.array([0.0, 1.0, 0.0, -1.0, 2.0]), cat_nodes=np.array([0]),
                cat_bitsets=[np.array([0b1010], dtype=np.uint32)])
    model = pgexact.TreeEnsemble(_core.build_arena_from_arrays([tree], np.zeros(1), d, "<=", False, "lightgbm"))
    X = np.zeros((2, d))
    X[1, 0] = 3.0
    with pytest.raises(ValueError, match=r"^noise: exact categorical perturbation needs .* feature\(s\) #0"):
        pgexact.pg2(model, X, features=[0], sigma=0.3)
    fixed: list = ["normal"] * d
    fixed[0] = None  # the way out the message names
    out = pgexact.pg2(model, X, features=[0, 69], sigma=0.3, noise=fixed)
    assert out[0] > 0.0 and out[1] == 0.0  # row 1's category 3 is in the set: the left leaf, fixed


def test_leaf_values_that_would_overflow_are_refused() -> None:
    """Found by the arena fuzzer: a leaf value of 1e161 squared is infinite, and an infinite
    weight times a zero probability gave NaN, which the final clamp turned into 0.0."""
    tree = dict(children_left=np.array([1, -1, -1]), children_right=np.array([2, -1, -1]),
                feature=np.array([0, 0, 0]), threshold=np.array([0.0, 0.0, 0.0]),
                value=np.array([0.0, 1e161, 0.5]))
    model = pgexact.TreeEnsemble(_core.build_arena_from_arrays([tree], np.zeros(1), 1, "<=", False, "none"))
    X = np.zeros((2, 1))
    for call in (lambda: pgexact.pg2(model, X, features=[0]), lambda: pgexact.pgi2(model, X),
                 lambda: pgexact.rank(model, X), lambda: pgexact.expected(model, X, features=[0])):
        with pytest.raises(ValueError, match=r"^model: a leaf value of 1e\+161 is beyond 1e100"):
            call()
    tree["value"] = np.array([0.0, 1e99, 0.5])
    small = pgexact.TreeEnsemble(_core.build_arena_from_arrays([tree], np.zeros(1), 1, "<=", False, "none"))
    assert np.all(np.isfinite(pgexact.pg2(small, X, features=[0])))
