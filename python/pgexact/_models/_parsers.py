"""The model seam: the C++ parsers, their metadata and the node arena (:mod:`pgexact._core.model`).

Every call into the extension's model side (parsing a library's serialised model, building an
arena from scikit-learn's arrays) is here, so that a change in the extension's signatures is a
change in this file only. Each parser returns the multi-output :class:`Arena` and what it read
besides the trees, as a bound class (:class:`XGBoostModelInfo`, :class:`LightGBMModelInfo`,
:class:`CatBoostModelInfo`; ``as_dict()`` gives the dict a :class:`~pgexact.TreeEnsemble`
keeps). The kernels' seam is :mod:`pgexact._exact._kernels`.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

import numpy as np

from .. import _core

__all__ = [
    "Arena",
    "CatBoostModelInfo",
    "LightGBMModelInfo",
    "ModelError",
    "XGBoostModelInfo",
    "build_arena_from_arrays",
    "parse_catboost_json",
    "parse_lightgbm_text",
    "parse_xgboost_json",
]

#: the immutable node arena (the parsers' output, the kernels' input)
Arena = _core.model.Arena
#: raised by the C++ parsers for a model they cannot represent exactly
ModelError = _core.model.ModelError
#: what each parser read besides the trees
XGBoostModelInfo = _core.model.XGBoostModelInfo
LightGBMModelInfo = _core.model.LightGBMModelInfo
CatBoostModelInfo = _core.model.CatBoostModelInfo


def parse_xgboost_json(raw: bytes, n_iterations: int = -1) -> Tuple[Arena, XGBoostModelInfo]:
    """XGBoost JSON / UBJSON bytes -> (multi-output arena, metadata); ``-1``: every iteration."""
    return _core.model.parse_xgboost_json(raw, n_iterations)


def parse_lightgbm_text(text: Any, n_iterations: int = -1) -> Tuple[Arena, LightGBMModelInfo]:
    """LightGBM model text -> (multi-output arena, metadata); ``-1``: every iteration."""
    return _core.model.parse_lightgbm_text(text, n_iterations)


def parse_catboost_json(text: Any, n_trees: int = -1) -> Tuple[Arena, CatBoostModelInfo]:
    """CatBoost JSON model text -> (multi-output arena, metadata); ``-1``: every tree."""
    return _core.model.parse_catboost_json(text, n_trees)


def build_arena_from_arrays(trees: Sequence[Dict[str, Any]], base_score: np.ndarray,
                            n_features: int, op: str, input_float32: bool,
                            category_rule: str) -> Arena:
    """An arena from per-tree numpy arrays (scikit-learn's fitted trees)."""
    try:
        return _core.model.build_arena_from_arrays(trees, base_score, n_features, op, input_float32,
                                                   category_rule)
    except ModelError:
        raise
    except ValueError as exc:  # an array the conversion refuses (a corrupted model): about the model
        raise ModelError(str(exc)) from None
