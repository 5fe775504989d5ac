"""The union walk's lane classes (union_walk.cpp): lanes whose sets agree on the features two
trees reach walk the pair once, and the others copy its covariance.

A class is only sound if its lanes agree on both trees' reachable perturbed features, and,
over 64 features (where a mask's bit stands for features j and j + 64), on each feature that
shares its bit with another feature of the tree. The models here make those cases common:
trees that split on different subsets of many features (so two prefixes of a ranking often
differ on a feature only one tree of a pair splits on), and trees that split on both j and
j + 64. One-row curves, sets and greedy rankings against the unpruned reference.
"""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb

import pgexact
from pgexact._core import exact as core_exact
from pgexact._exact._kernels import Kernel
from pgexact._exact._prepare import prepare_call

from _pair_checks import close_to_reference


def _model(d: int, pairs: list, seed: int):
    """Depth-3 XGBoost trees, each seeing a quarter of the d features, fitted to products of
    the feature pairs `pairs` (over 64 features: j and j + 64, so trees split on both)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(800, d))
    y = sum(X[:, a] * X[:, b] for a, b in pairs) + 0.1 * rng.normal(size=len(X))
    params = dict(max_depth=3, eta=0.3, nthread=1, seed=seed, colsample_bytree=0.25, tree_method="hist", max_bin=32)
    return pgexact.load(xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=24)), X


@pytest.mark.parametrize("d, seed", [(16, 0), (16, 1), (70, 2), (70, 3)])
def test_one_row_curves_and_rankings_against_the_reference(d, seed):
    pairs = [(j, j + 64) for j in range(6)] if d > 64 else [(2 * j, 2 * j + 1) for j in range(d // 2)]
    ens, X = _model(d, pairs, seed)
    rng = np.random.default_rng(seed)
    for i in range(3):
        row = X[600 + i][None, :]
        call = prepare_call(ens, row, sigma=0.5, n_jobs=1)
        # Rankings that put a feature and its partner far apart, and random ones.
        rankings = [rng.permutation(d), np.argsort(-np.abs(row[0]))]
        for order in rankings:
            rk = call.ranking(order)
            ref = core_exact.pg2_curve(ens._arena, row, rk, d, call.perturbation, 1, Kernel.reference)
            close_to_reference(call.pg2_curve(rk), ref)
        mask = (rng.random(d) < 0.5).astype(np.uint8)
        close_to_reference(call.pg2(mask), call.pg2(mask, kernel=Kernel.reference))
        order, gains = call.greedy_rank()
        close_to_reference(gains, core_exact.pg2_curve(ens._arena, row, order, d, call.perturbation, 1, Kernel.reference))
        if d <= 64:
            np.testing.assert_array_equal(order, call.greedy_rank(kernel=Kernel.leaf_pairs)[0])
