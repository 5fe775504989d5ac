"""``tol=``: how far an exact result may be from the unpruned sum, certified.

The leaf-pair kernel drops, per row, the leaves whose boxes lie far out in that row's noise
tails while a bound on everything they could add stays below a share of the result; after the
pass it checks the bound against ``tol`` times the result and computes the row again without
dropping anything where the check fails. So every result is within ``tol`` (relative) of the
sum over all leaf pairs: a deterministic bound, not a standard error. The default is rounding
level; 0 drops nothing. The walks (over 64 features, and calls of one or two rows,
kernels.hpp's few_rows_on_walks: the union walk of a row's sets, the shared walks) skip node
pairs under the same rule: a tenth of ``tol`` spent, every result certified within ``tol`` or
computed again without skipping; there the greedy ranking's steps use the default whatever
``tol`` is (the ranking stays the exact one).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["DEFAULT_TOL", "as_tol"]

#: the tolerance of a call that gives none: rounding level (pair_kernel.hpp's kDefaultTolerance)
DEFAULT_TOL = 1e-13

def as_tol(tol: Any) -> float:
    """The validated tolerance: None -> :data:`DEFAULT_TOL`.

    Parameters
    ----------
    tol : float or None
        The user's ``tol``: a real number in [0, 1).

    Returns
    -------
    float
        The tolerance the kernels take.
    """
    if tol is None:
        return DEFAULT_TOL
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real):
        raise TypeError(f"tol: expected a number in [0, 1) or None, got {type(tol).__name__}")
    value = float(tol)
    if not (math.isfinite(value) and 0.0 <= value < 1.0):
        raise ValueError(f"tol: must be in [0, 1) (a relative error; None for rounding level), "
                         f"got {tol!r}")
    return value
