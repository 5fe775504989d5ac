"""The typed seam to the extension: ``_core.model`` and ``_core.exact``, one stub each.

A perturbation is validated once when it is bound (``Perturbation``), the kernel is chosen by
``Kernel``, the parsers return their metadata as bound classes, and each Python seam module
touches only its own submodule.
"""

from __future__ import annotations

import ast
import os
import pickle

import numpy as np
import pytest

import pgexact
from pgexact import noise as pg_noise
from pgexact._core import exact as core_exact
from pgexact._core import model as core_model
from pgexact._core.exact import Kernel, Perturbation
from pgexact._exact._kernels import PreparedCall, bind
from pgexact._exact._perturbation import NOISE_FAMILIES, as_noise

PACKAGE_DIR = os.path.dirname(os.path.abspath(pgexact.__file__))


def _stump(d=2):
    tree = dict(children_left=np.array([1, -1, -1]), children_right=np.array([2, -1, -1]),
                feature=np.array([0, -2, -2]), threshold=np.array([0.0, 0.0, 0.0]),
                value=np.array([0.0, -1.0, 1.0]))
    return core_model.build_arena_from_arrays([tree], np.zeros(1), d, "<=", False, "none")


def test_perturbation_is_validated_once_when_bound():
    p = Perturbation(np.array([0.5, 1.0]), np.array([0, 2], np.uint8))
    assert p.n_features == 2 and p.sigma.tolist() == [0.5, 1.0] and p.family.tolist() == [0, 2]
    assert p.change.size == 0 and p.cat_begin.size == 0
    with pytest.raises(ValueError, match="^noise: expected a 1-D array of length 2"):
        Perturbation(np.ones(2), np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="^noise: unknown family code"):
        Perturbation(np.ones(2), np.array([0, 9], np.uint8))
    with pytest.raises(ValueError, match="^noise: categorical noise needs"):
        Perturbation(np.ones(2), np.zeros(2, np.uint8), change=np.zeros(2))
    with pytest.raises(ValueError, match="sigma"):
        Perturbation(np.array([1.0, -1.0]), np.zeros(2, np.uint8))  # Noise::validate
    with pytest.raises(ValueError, match="categorical change probability"):
        Perturbation(np.ones(2), np.array([3, 0], np.uint8), np.zeros(2), np.array([0, 1, 1]),
                     np.array([1.0]), np.array([1.0]))


def test_kernels_take_the_bound_perturbation_and_the_kernel_enum():
    arena = _stump()
    X = np.array([[0.1, 0.0], [-0.3, 2.0]])
    noise = Perturbation(np.full(2, 0.5), np.zeros(2, np.uint8))
    mask = np.ones(2, np.uint8)
    fast = core_exact.pg2(arena, X, mask, noise)
    kernels = (Kernel.pairs, Kernel.leaf_pairs, Kernel.walks, Kernel.separate_walks, Kernel.reference)
    for kernel in kernels:
        np.testing.assert_allclose(core_exact.pg2(arena, X, mask, noise, 1, kernel), fast, rtol=1e-12)
    assert {k.name for k in kernels} == {"pairs", "leaf_pairs", "walks", "separate_walks", "reference"}
    with pytest.raises(ValueError, match="^sigma: expected a 1-D array of length 2"):
        core_exact.pg2(arena, X, mask, Perturbation(np.ones(3), np.zeros(3, np.uint8)))
    with pytest.raises(TypeError):
        core_exact.pg2(arena, X, mask, np.ones(2))  # loose arrays are not a perturbation


def test_prepared_call_binds_its_perturbation_once_and_shares_it_with_row_slices():
    ens = pgexact.TreeEnsemble(_stump())
    X = np.array([[0.1, 0.0], [-0.3, 2.0], [0.2, 1.0]])
    call = PreparedCall(ens, X, as_noise("normal", 0.5, ens), 1)
    assert isinstance(call.perturbation, Perturbation)
    assert call.rows(1, 3).perturbation is call.perturbation
    np.testing.assert_array_equal(call.perturbation.sigma, call.noise.sigma)
    np.testing.assert_array_equal(bind(call.noise).family, call.noise.family)
    mask = np.ones(2, np.uint8)
    np.testing.assert_allclose(call.pg2(mask, kernel=Kernel.reference), call.pg2(mask), rtol=1e-12)


def test_the_noise_codes_are_the_cpp_enum():
    assert {n.name: int(n) for n in (core_exact.NoiseFamily.normal, core_exact.NoiseFamily.uniform,
                                     core_exact.NoiseFamily.laplace, core_exact.NoiseFamily.categorical,
                                     core_exact.NoiseFamily.fixed)} == core_exact.NOISE_FAMILIES
    for name, code in NOISE_FAMILIES.items():
        assert core_exact.NOISE_FAMILIES[name] == code
    assert core_exact.NOISE_FAMILIES["categorical"] == pg_noise.CATEGORICAL_CODE
    assert core_exact.NOISE_FAMILIES["fixed"] == pg_noise.FIXED_CODE


def test_parser_metadata_are_bound_classes(tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    booster = xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, X[:, 0], feature_names=["a", "b", "c"]), 3)
    arena, info = core_model.parse_xgboost_json(bytes(booster.save_raw(raw_format="json")), -1)
    assert isinstance(info, core_model.XGBoostModelInfo)
    assert info.feature_names == ["a", "b", "c"] and info.n_iterations == 3 and info.n_outputs == 1
    assert info.as_dict() == {k: getattr(info, k) for k in info.as_dict()}
    kept = pgexact.load(booster)._meta  # what a TreeEnsemble keeps (and pickles)
    assert {k: kept[k] for k in info.as_dict()} == info.as_dict()


def test_the_arena_pickles_through_its_submodule():
    arena = _stump()
    assert type(arena).__module__ == "pgexact._core.model"
    again = pickle.loads(pickle.dumps(arena))
    assert again.to_bytes() == arena.to_bytes()


def _core_submodules(path):
    """The ``_core`` submodules a module reads (``_core.<sub>.x``)."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    subs = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "_core"):
            subs.add(node.attr)
    return subs


def test_each_seam_reads_only_its_own_submodule():
    assert _core_submodules(os.path.join(PACKAGE_DIR, "_models", "_parsers.py")) == {"model"}
    assert _core_submodules(os.path.join(PACKAGE_DIR, "_exact", "_kernels.py")) == {"exact"}
