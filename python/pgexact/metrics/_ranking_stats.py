"""Ranking statistics and estimation error: numpy only.

The paper's aggregate scores of a set of rankings, their conciseness (entropy), the rank
counts behind both, and the NMAE of an estimate against the exact value.  Public through
:mod:`pgexact.metrics`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import as_importance_scheme, as_rankings, as_same_shape_pair

__all__ = ["conciseness", "global_scores", "nmae", "rank_counts"]


# ------------------------------------------------------------------------------ estimation error
def nmae(exact: Any, approx: Any) -> float:
    """Normalised mean absolute error ``sum |y - y_hat| / sum |y|`` (the paper's NMAE).

    Parameters
    ----------
    exact, approx : array_like
        ``y`` and ``y_hat``, of the same shape; summed over every element.

    Returns
    -------
    float
        The NMAE; when ``sum |y| == 0``, 0.0 if the arrays are equal, else ``inf``.
    """
    y, y_hat = as_same_shape_pair(exact, approx, ("exact", "approx"))
    num = float(np.abs(y - y_hat).sum())
    den = float(np.abs(y).sum())
    if den == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return num / den


# --------------------------------------------------------------------------- global scores
def rank_counts(rankings: Any) -> np.ndarray:
    """How often each feature sits at each rank.

    Parameters
    ----------
    rankings : array_like of int, shape (n, d) or (d,), or an Explanation
        Rankings, most important first.

    Returns
    -------
    numpy.ndarray of shape (d, d), int64
        ``counts[i, k]`` = number of rows in which feature i has rank k+1.
    """
    R = as_rankings(rankings)
    d = R.shape[1]
    counts = np.zeros((d, d), dtype=np.int64)
    np.add.at(counts, (R, np.broadcast_to(np.arange(d), R.shape)), 1)
    return counts


def global_scores(rankings: Any, scheme: str = "geom") -> np.ndarray:
    """The paper's aggregate score ``R_i`` of every feature, (d,) float64, in column order.

    ``rankings`` is (n, d) (most important first; a (d,) vector is one row; a
    ``pgexact.Explanation`` gives its ranking). With ``k_r(i)`` the 1-based rank of feature i in
    row r:

    - ``"geom"``: ``R_i = sum_r 2 ** -k_r(i)`` (a sum over rows; the total over features is
      ``n * (1 - 2 ** -d)``);
    - ``"top1"``, ``"top2"``, ``"top3"`` (any ``"top<K>"``, K <= d):
      ``R_i = #{r : k_r(i) <= K} / n``, the fraction of rows with feature i in the top K
      (NaN for zero rows).

    Parameters
    ----------
    rankings : array_like of int, shape (n, d) or (d,), or an Explanation
        Rankings, most important first.
    scheme : str, default "geom"
        ``"geom"`` or ``"top<K>"``.

    Returns
    -------
    numpy.ndarray of shape (d,), float64
        ``R_i`` in column order.
    """
    R = as_rankings(rankings)
    n, d = R.shape
    kind, K = as_importance_scheme(scheme, d)
    if kind == "gain":
        raise ValueError("scheme: 'gain' needs attribution values, not rankings; use "
                         "Explanation.global_importance('gain')")
    counts = rank_counts(R).astype(np.float64)
    if kind == "geom":
        return counts @ np.exp2(-np.arange(1, d + 1, dtype=np.float64))
    return counts[:, :K].sum(axis=1) / n if n else np.full(d, np.nan)


def conciseness(rankings: Any, scheme: str = "geom") -> float:
    """Entropy in bits of the normalised aggregate scores ``p_i = R_i / sum_j R_j``.

    ``-sum_i p_i log2 p_i`` (``0 log 0 = 0``), with ``R_i`` from :func:`global_scores`. Lower
    is more concise: 0 when one feature takes all the mass (only possible for ``top1``),
    ``log2(d)`` at most. NaN for zero rows.

    Parameters
    ----------
    rankings, scheme
        As in :func:`global_scores`.

    Returns
    -------
    float
        The entropy in bits.
    """
    R = global_scores(rankings, scheme)
    total = float(R.sum()) if R.size and np.all(np.isfinite(R)) else 0.0
    if total <= 0.0:
        return float("nan")
    p = R / total
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum()) + 0.0  # + 0.0: no -0.0
