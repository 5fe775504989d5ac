"""The user's feature arguments: positions in ``X``, names, masks, rankings and attributions.

Positional arguments follow ``X``'s columns; with a :class:`~pgexact._data._columns.ColumnOrder`
the results are in the model's order (see :mod:`pgexact._data._columns`).
"""

from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

from ._columns import ColumnOrder
from ._rows import Columns, is_dataframe

__all__ = ["as_attributions", "as_feature_mask", "as_ranking", "ranking_from_attributions"]


def _feature_index(f: Any, ensemble: "Columns", name: str, order: Optional[ColumnOrder] = None) -> int:
    """The model's index of one feature: a position in ``X`` or a name."""
    d = ensemble.n_features
    if isinstance(f, (bool, np.bool_)):
        raise TypeError(f"{name}: expected feature indices or names, got a boolean {f!r}")
    if isinstance(f, numbers.Integral):
        j = int(f)
        if not 0 <= j < d:
            raise ValueError(f"{name}: feature index {j} is out of range; pass positions 0..{d - 1} of X's "
                             "columns (negative positions are not accepted) or feature names")
        return j if order is None else int(order.ranking(np.array([j]))[0])
    if isinstance(f, str):
        names = ensemble.feature_names
        if names is not None and f in names:
            return names.index(f)
        p = None if order is None else order.position(f)  # X's own name (LightGBM's spaces)
        if order is not None and p is not None:
            return int(order.ranking(np.array([p]))[0])
        if names is None:
            raise ValueError(f"{name}: feature name {f!r} given but the model has no feature names; "
                             "pass positions of X's columns")
        raise ValueError(f"{name}: unknown feature name {f!r}; the model's features are {names[:8]}"
                         f"{'...' if len(names) > 8 else ''}")
    raise TypeError(f"{name}: expected feature indices or names, got {type(f).__name__}")


def as_feature_mask(features: Any, ensemble: "Columns", n_rows: int,
                    order: Optional[ColumnOrder] = None) -> np.ndarray:
    """A (d,) or (n, d) uint8 mask in the model's order from positions in ``X``, names or a
    boolean mask over ``X``'s columns (see :mod:`pgexact._data._columns`)."""
    d = ensemble.n_features
    if features is None:
        raise TypeError("features: expected feature indices, names or a boolean mask, got None")
    if isinstance(features, (str, numbers.Integral)) and not isinstance(features, (bool, np.bool_)):
        features = [features]
    arr = np.asarray(features) if not isinstance(features, (set, frozenset)) else None
    if arr is not None and arr.dtype == np.bool_:
        if arr.shape == (d,) or arr.shape == (n_rows, d):
            mask = np.ascontiguousarray(arr, dtype=np.uint8)
            return mask if order is None else order.columns(mask)
        raise ValueError(f"features: a boolean mask must have shape ({d},) or ({n_rows}, {d}), got {arr.shape}")
    items = list(features) if arr is None or arr.ndim == 1 else None
    if items is None:
        raise ValueError("features: expected a list of indices or names, or a boolean mask")
    mask = np.zeros(d, dtype=np.uint8)
    for f in items:
        j = _feature_index(f, ensemble, "features", order)
        if mask[j]:
            raise ValueError(f"features: feature {f!r} is listed twice")
        mask[j] = 1
    return mask


def as_ranking(ranking: Any, d: int, n_rows: int, name: str = "ranking") -> np.ndarray:
    """A (d,) or (n, d) int64 array whose every row is a permutation of 0..d-1."""
    try:
        arr = np.asarray(ranking)
    except Exception:
        raise TypeError(f"{name}: expected an integer array") from None
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise TypeError(f"{name}: expected integer positions of X's columns, got dtype {arr.dtype}; "
                        "pass an integer array (attributions go in attributions=)")
    if arr.shape not in ((d,), (n_rows, d)):
        raise ValueError(f"{name}: expected shape ({d},) or ({n_rows}, {d}), got {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    rows = arr.reshape(-1, d)
    if rows.size and not np.array_equal(np.sort(rows, axis=1), np.broadcast_to(np.arange(d), rows.shape)):
        bad = int(np.nonzero(np.any(np.sort(rows, axis=1) != np.arange(d), axis=1))[0][0])
        raise ValueError(f"{name}: row {bad} is not a permutation of 0..{d - 1}")
    return arr


def as_attributions(attributions: Any, d: int, n_rows: int,
                    order: Optional[ColumnOrder] = None) -> np.ndarray:
    """Finite (n, d) float64 attributions; a (d,) vector applies to every row.

    Columns follow ``X``'s (a DataFrame is matched by column name); with ``order`` the result
    is in the model's order (see :mod:`pgexact._data._columns`).
    """
    if hasattr(attributions, "values") and hasattr(attributions, "base_values"):
        attributions = attributions.values  # a shap.Explanation
    if order is not None:
        attributions = order.by_name(attributions, "attributions")
    elif is_dataframe(attributions):
        attributions = attributions.to_numpy()
    try:
        arr = np.asarray(attributions, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("attributions: expected a numeric array") from None
    if arr.shape == (d,):
        arr = np.broadcast_to(arr, (n_rows, d))
    if arr.shape != (n_rows, d):
        raise ValueError(f"attributions: expected shape ({n_rows}, {d}), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("attributions: values must be finite (no NaN or inf)")
    arr = np.ascontiguousarray(arr)
    return arr if order is None else order.columns(arr)


def _x_order_ranking(attributions: Any, d: int, n_rows: int,
                     order: Optional[ColumnOrder]) -> np.ndarray:
    arr = as_attributions(attributions, d, n_rows, None if order is None else order.in_x_order())
    # A stable sort of -|a| keeps equal magnitudes in index order.
    return np.ascontiguousarray(np.argsort(-np.abs(arr), axis=1, kind="stable"), dtype=np.int64)


def ranking_from_attributions(attributions: Any, d: int, n_rows: int,
                              order: Optional[ColumnOrder] = None) -> np.ndarray:
    """Most important first: descending |attribution|, ties to the lower position in ``X``.

    With ``order``, the columns follow ``X`` and the ranking holds the model's indices.
    """
    ranking = _x_order_ranking(attributions, d, n_rows, order)
    return ranking if order is None else order.ranking(ranking)
