"""The model seam: the C++ parsers and the node arena of :mod:`pgexact._core`.

Every call into the extension's model side (parsing a library's serialised model, building an
arena from scikit-learn's arrays) is here, so that a change in the extension's signatures is a
change in this file only. The kernels' seam is :mod:`pgexact._exact._kernels`.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

import numpy as np

from .. import _core

__all__ = [
    "Arena",
    "ModelError",
    "build_arena_from_arrays",
    "parse_catboost_json",
    "parse_lightgbm_text",
    "parse_xgboost_json",
]

#: the immutable node arena (the parsers' output, the kernels' input)
Arena = _core.Arena
#: raised by the C++ parsers for a model they cannot represent exactly
ModelError = _core.ModelError


def parse_xgboost_json(raw: bytes, n_iterations: int = -1) -> Tuple["_core.Arena", Dict[str, Any]]:
    """XGBoost JSON / UBJSON bytes -> (multi-output arena, metadata); ``-1``: every iteration."""
    return _core.parse_xgboost_json(raw, n_iterations)


def parse_lightgbm_text(text: Any, n_iterations: int = -1
                        ) -> Tuple["_core.Arena", Dict[str, Any]]:
    """LightGBM model text -> (multi-output arena, metadata); ``-1``: every iteration."""
    return _core.parse_lightgbm_text(text, n_iterations)


def parse_catboost_json(text: Any, n_trees: int = -1) -> Tuple["_core.Arena", Dict[str, Any]]:
    """CatBoost JSON model text -> (multi-output arena, metadata); ``-1``: every tree."""
    return _core.parse_catboost_json(text, n_trees)


def build_arena_from_arrays(trees: Sequence[Dict[str, Any]], base_score: np.ndarray,
                            n_features: int, op: str, input_float32: bool,
                            category_rule: str) -> "_core.Arena":
    """An arena from per-tree numpy arrays (scikit-learn's fitted trees)."""
    return _core.build_arena_from_arrays(trees, base_score, n_features, op, input_float32,
                                         category_rule)
