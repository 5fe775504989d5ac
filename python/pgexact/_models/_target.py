"""What Monte Carlo needs from a model: a batched raw predict and its input layout.

Each model family in :mod:`pgexact._models._adapters` builds a :class:`Target` from the library's own
batched predict (XGBoost ``inplace_predict`` margins, LightGBM ``raw_score``, CatBoost
``RawFormulaVal``, scikit-learn ``decision_function`` / ``predict`` / ``predict_proba``); the
helpers here are shared by them.
"""

from __future__ import annotations

import os
from typing import Any, Callable, List, Optional

import numpy as np

from .._data._scalars import as_n_jobs
from ._outputs import as_output

__all__ = ["Target", "n_threads", "select_output"]


class Target:
    """A model as the Monte Carlo estimators see it.

    Parameters
    ----------
    predict : callable
        ``predict(X) -> (m,) float64``, the raw output column for C-contiguous rows ``X``.
    n_features : int or None
        Number of input columns.
    feature_names : list of str or None
        Column names, to match DataFrame columns.
    exact_model : object
        What the exact functions accept for the same model (for the greedy ranking).
    dtype : numpy dtype
        dtype of the perturbed copies: float32 when the library casts to it anyway.
    """

    __slots__ = ("predict", "n_features", "feature_names", "exact_model", "dtype")

    def __init__(self, predict: Callable[[np.ndarray], np.ndarray], n_features: Optional[int],
                 feature_names: Optional[List[str]], exact_model: Any,
                 dtype: Any = np.float64) -> None:
        self.predict = predict
        self.n_features = n_features
        self.feature_names = feature_names
        self.exact_model = exact_model
        self.dtype = dtype


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def n_threads(n_jobs: Optional[int]) -> int:
    """Threads for the library: None or -1 -> all cores, k > 0 -> k (as the exact API)."""
    threads = as_n_jobs(n_jobs)
    return threads if threads > 0 else _cpu_count()


def select_output(out: Any, output: Optional[int], what: str) -> np.ndarray:
    """Pick one output column from a (m,) or (m, K) prediction, as C-contiguous float64."""
    out = np.asarray(out, dtype=np.float64)
    if out.ndim == 1:
        out = out[:, None]
    elif out.ndim != 2:
        raise ValueError(f"{what} returned an array of shape {out.shape}; expected (m,) or (m, K)")
    k = as_output(output, out.shape[1], "model")
    return np.ascontiguousarray(out[:, k])
