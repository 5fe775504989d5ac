"""Argument checks of the evaluation metrics (:mod:`pgexact.metrics`, :class:`~pgexact.Explanation`)."""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .._data._features import as_ranking

__all__ = ["as_importance_scheme", "as_rankings", "as_same_shape_pair", "as_sigma_list"]


def as_importance_scheme(scheme: Any, d: int) -> Tuple[str, int]:
    """Global-importance scheme: ``"geom"``, ``"gain"`` or ``"top<K>"`` with 1 <= K <= d.

    Returns ``(kind, K)`` with kind ``"geom"``, ``"gain"`` or ``"top"`` (K is 0 unless "top").
    """
    expected = "'geom', 'gain', 'top1', 'top2', 'top3' (or 'top<K>' with K <= the number of features)"
    if not isinstance(scheme, str):
        raise TypeError(f"scheme: expected {expected}, got {scheme!r}")
    key = scheme.lower()
    if key in ("geom", "gain"):
        return key, 0
    if key.startswith("top") and key[3:].isdigit():
        k = int(key[3:])
        if not 1 <= k <= d:
            raise ValueError(f"scheme: {scheme!r} needs 1 <= K <= {d} (the number of features)")
        return "top", k
    raise ValueError(f"scheme: unknown scheme {scheme!r}; expected {expected}")


def as_rankings(rankings: Any, name: str = "rankings") -> np.ndarray:
    """(n, d) int64 rankings, every row a permutation of 0..d-1; a (d,) vector is one row."""
    if hasattr(rankings, "ranking") and hasattr(rankings, "curve"):
        rankings = rankings.ranking  # a pgexact.Explanation
    arr = np.asarray(rankings)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise ValueError(f"{name}: expected an (n, d) array of rankings with d >= 1, got shape {arr.shape}")
    return as_ranking(arr, arr.shape[1], arr.shape[0], name).reshape(arr.shape)


def as_sigma_list(values: Any, name: str) -> Tuple[float, ...]:
    """One or more positive finite scalar noise levels, as a tuple of floats."""
    if isinstance(values, (str, bytes, bool, np.bool_)) or values is None:
        raise TypeError(f"{name}: expected a positive float or a sequence of them, got {values!r}")
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a positive float or a sequence of them") from None
    if np.asarray(values).dtype == np.bool_:
        raise TypeError(f"{name}: expected positive floats, got booleans")
    if arr.ndim > 1:
        raise ValueError(f"{name}: expected a scalar or a 1-D sequence of scalars")
    arr = arr.reshape(-1)
    if arr.size == 0:
        raise ValueError(f"{name}: expected at least one value")
    if not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError(f"{name}: every value must be positive and finite, got {arr.tolist()}")
    return tuple(float(v) for v in arr)


def as_same_shape_pair(a: Any, b: Any, names: Tuple[str, str]) -> Tuple[np.ndarray, np.ndarray]:
    """Two finite float64 arrays of the same shape (``names`` label them in errors)."""
    out = []
    for value, name in zip((a, b), names):
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: expected a numeric array") from None
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: values must be finite (no NaN or inf)")
        out.append(arr)
    if out[0].shape != out[1].shape:
        raise ValueError(f"{names[1]}: expected the shape of {names[0]} {out[0].shape}, got {out[1].shape}")
    return out[0], out[1]
