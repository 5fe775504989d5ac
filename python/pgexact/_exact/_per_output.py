"""Results and arguments per output of an ``output="all"`` call.

An exact function with ``output="all"`` runs one :class:`~pgexact._exact._kernels.PreparedCall`
per output: :func:`per_output` splits a ranking or attributions argument into one per output,
:func:`stack_outputs` stacks the results on an axis of length K.
"""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np

from .._data._rows import is_dataframe
from .._models._outputs import is_all

__all__ = ["per_output", "stack_outputs"]


def stack_outputs(output: Any, results: Sequence[np.ndarray]) -> np.ndarray:
    """One result per output -> the result of ``output``: axis 1 of length K for ``"all"``.

    ``(n,)`` per output becomes ``(n, K)``, ``(n, d)`` becomes ``(n, K, d)``.
    """
    if not is_all(output):
        return results[0]
    return np.stack(list(results), axis=1)


def per_output(value: Any, n_outputs: int, output: Any, name: str,
               layout: str = "attributions") -> List[Any]:
    """A ranking or attributions argument, one per output of an ``output="all"`` call.

    With ``output="all"``: a ranking of shape ``(n, K, d)`` (what :func:`pgexact.rank` returns
    for ``"all"``), attributions of shape ``(n, d, K)`` (shap's multi-output layout, an array or
    a ``shap.Explanation``) or a list of K ``(n, d)`` arrays (older shap's layout) give one per
    output; anything else (``(d,)``, ``(n, d)``, a DataFrame) applies to every output.
    Otherwise the value is passed on unchanged (one output). ``layout`` is ``"ranking"`` or
    ``"attributions"``; ``name`` is the argument's name in error messages.
    """
    if value is None or not is_all(output):
        return [value] * (n_outputs if is_all(output) else 1)
    if layout == "attributions" and hasattr(value, "values") and hasattr(value, "base_values"):
        value = value.values  # a shap.Explanation
    if layout == "attributions" and isinstance(value, (list, tuple)):
        try:
            stacked = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: expected a numeric array, or a list of {n_outputs} (n, d) "
                            "arrays (one per output)") from None
        if stacked.ndim == 3:
            if stacked.shape[0] != n_outputs:
                raise ValueError(f"{name}: a list of {stacked.shape[0]} arrays, but the model has "
                                 f"{n_outputs} outputs; pass one (n, d) array per output")
            return [stacked[k] for k in range(n_outputs)]
        return [value] * n_outputs
    if is_dataframe(value):
        return [value] * n_outputs
    try:
        arr = np.asarray(value)
    except Exception:  # the single-output validators say what is wrong
        return [value] * n_outputs
    if arr.ndim != 3:
        return [value] * n_outputs
    if layout == "attributions":
        if arr.shape[2] != n_outputs:
            raise ValueError(f"{name}: expected shape (n, d, {n_outputs}) (one (n, d) slice per "
                             f"output, shap's multi-output layout), got {arr.shape}")
        return [arr[:, :, k] for k in range(n_outputs)]
    if arr.shape[1] != n_outputs:
        raise ValueError(f"{name}: expected shape (n, {n_outputs}, d) (one ranking per output, as "
                         f"rank(..., output='all') returns), got {arr.shape}")
    return [arr[:, k, :] for k in range(n_outputs)]
