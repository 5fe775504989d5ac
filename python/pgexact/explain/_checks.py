"""Argument checks of :class:`~pgexact.Explanation`: which rows ``ex[index]`` selects."""

from __future__ import annotations

import numbers
from typing import Any, Union

import numpy as np

__all__ = ["as_row_index"]


def as_row_index(index: Any, n_rows: int) -> Union[int, slice, np.ndarray]:
    """Rows to select: an integer, a slice, integer positions or a boolean mask of length n_rows.

    An integer is returned as a non-negative int (out of range: ``IndexError``); positions and
    masks as an int64 array; slices unchanged.
    """
    if isinstance(index, tuple):
        raise TypeError("index: only rows can be selected (ex[i], ex[a:b], ex[[i, j]] or a boolean mask); "
                        "select features with the returned arrays or with to_shap()")
    if isinstance(index, slice):
        return index
    if isinstance(index, (bool, np.bool_)):
        raise TypeError(f"index: expected an integer, a slice, positions or a boolean mask, got {index!r}")
    if isinstance(index, numbers.Integral):
        i = int(index)
        if not -n_rows <= i < n_rows:
            raise IndexError(f"index: row {i} is out of range for {n_rows} rows")
        return i % n_rows
    if isinstance(index, (str, bytes)) or index is None:
        raise TypeError(f"index: expected an integer, a slice, positions or a boolean mask, got {index!r}")
    try:
        arr = np.asarray(index)
    except Exception:
        raise TypeError(f"index: expected an integer, a slice, positions or a boolean mask, got "
                        f"{type(index).__name__}") from None
    if arr.ndim == 0:
        raise TypeError(f"index: expected an integer, a slice, positions or a boolean mask, got {index!r}")
    if arr.ndim != 1:
        raise ValueError(f"index: expected a 1-D array of positions or a boolean mask, got {arr.ndim}-D")
    if arr.dtype == np.bool_:
        if arr.shape != (n_rows,):
            raise ValueError(f"index: a boolean mask must have length {n_rows}, got {arr.shape[0]}")
        return np.flatnonzero(arr)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"index: expected integer positions or a boolean mask, got dtype {arr.dtype}")
    if np.any((arr < -n_rows) | (arr >= n_rows)):
        bad = int(arr[(arr < -n_rows) | (arr >= n_rows)][0])
        raise IndexError(f"index: row {bad} is out of range for {n_rows} rows")
    return np.ascontiguousarray(arr % n_rows, dtype=np.int64) if n_rows else arr.astype(np.int64)
