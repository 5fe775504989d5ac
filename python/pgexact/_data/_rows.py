"""The user's rows: ``X`` checked and laid out in the model's feature order.

Each checker returns the canonical form the C++ core expects (a C-contiguous float64 array)
or raises ``ValueError`` / ``TypeError`` naming the argument and what was expected.
"""

from __future__ import annotations

from typing import Any, List, Optional, Protocol, Tuple

import numpy as np

from ._columns import ColumnOrder, identity_order, match_frame, uses_lightgbm_names

__all__ = ["Columns", "as_matrix", "as_matrix_ordered", "is_dataframe"]


class Columns(Protocol):
    """What the checkers need of a model: its column count and names.

    A :class:`~pgexact.TreeEnsemble` for the exact functions, a Monte Carlo
    :class:`~pgexact._models._target.Target` for the estimators.
    """

    @property
    def n_features(self) -> Any: ...

    @property
    def feature_names(self) -> Optional[List[str]]: ...


def is_dataframe(X: Any) -> bool:
    """A pandas DataFrame (or anything that looks like one)."""
    return hasattr(X, "columns") and hasattr(X, "to_numpy") and hasattr(X, "iloc")


def _refuse_strings(arr: np.ndarray, name: str) -> None:
    """Text is never read as numbers, not even numeric strings such as "1.5"."""
    if arr.dtype.kind in "US" or (arr.dtype == object and any(isinstance(v, (str, bytes))
                                                              for v in arr.ravel())):
        raise TypeError(f"{name}: contains text (dtype {arr.dtype}); pass a numeric array: strings are "
                        "not read as numbers (use X.astype(float) if the text is numeric)")


def as_matrix(X: Any, ensemble: "Columns", name: str = "X") -> np.ndarray:
    """Rows as a C-contiguous float64 (n, d) array, DataFrame columns matched by name."""
    return as_matrix_ordered(X, ensemble, name)[0]


def as_matrix_ordered(X: Any, ensemble: "Columns", name: str = "X") -> Tuple[np.ndarray, ColumnOrder]:
    """Rows in the model's feature order, and how ``X``'s own column order maps to it.

    The :class:`~pgexact._data._columns.ColumnOrder` translates the user's positional arguments
    (which follow ``X``'s columns) into the model's order and the results back.
    """
    d = ensemble.n_features
    order = identity_order(ensemble.feature_names)
    if is_dataframe(X):
        columns = [str(c) for c in X.columns]
        pos, order = match_frame(columns, ensemble.feature_names, d, uses_lightgbm_names(ensemble), name)
        if pos is not None:
            X = X.iloc[:, pos]
        if any(dt == object or str(dt).startswith("str") for dt in X.dtypes):
            _refuse_strings(X.to_numpy(), name)
        try:
            X = X.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name}: DataFrame columns must be numeric ({exc})") from None
    elif hasattr(X, "toarray") and hasattr(X, "nnz"):
        raise TypeError(f"{name}: sparse matrices are not supported; pass a dense array")
    try:
        arr = np.asarray(X)
    except Exception as exc:  # pragma: no cover - exotic array-likes
        raise TypeError(f"{name}: expected a 2-D numeric array, got {type(X).__name__}") from exc
    _refuse_strings(arr, name)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}") from None
    if np.iscomplexobj(arr):
        raise TypeError(f"{name}: complex values are not supported")
    if arr.ndim != 2:
        raise ValueError(
            f"{name}: expected a 2-D array of shape (n_rows, {d}), got {arr.ndim}-D"
            + ("; for a single row use X[None, :]" if arr.ndim == 1 else "")
        )
    if arr.shape[1] != d:
        raise ValueError(f"{name}: expected {d} columns (the model's features), got {arr.shape[1]}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    # x + delta is meaningless at +-inf (and the kernels' CDF differences would be inf - inf).
    infinite = np.isinf(arr)
    if infinite.any():
        i, j = (int(v[0]) for v in np.nonzero(infinite))
        j = int(order.ranking_out(np.array([j]))[0])
        raise ValueError(
            f"{name}: contains infinite values (first at row {i}, column {j}); pgexact needs finite "
            "inputs, with NaN for a missing value"
        )
    return arr, order
