"""The statistics of :func:`pgexact.metrics.agreement` over rows, numpy only: the similarity
of explainers (do they fail on the same rows), each row's hardness, and ranks of means
(definitions: docs/agreement.md). ``Y`` is an ``(n, k)`` array of per-row scores as in
:mod:`._agreement_stats`: oriented so that higher is better, NaN where undefined.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["average_ranks", "hardest_rows", "hardness", "median_split_agreement",
           "rank_correlation"]


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..len(x) of a 1-D array, ties averaged."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    # runs of equal values share the mean of their positions
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], xs.size]
    mid = (starts + ends + 1) / 2.0
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(mid, ends - starts)
    return ranks


def average_ranks(means: np.ndarray) -> np.ndarray:
    """Ranks of oriented mean scores, 1 = best (highest), ties averaged; NaN stays NaN.

    Parameters
    ----------
    means : numpy.ndarray of shape (k,)
        Oriented means (higher is better).

    Returns
    -------
    numpy.ndarray of shape (k,), float64
    """
    out = np.full(means.shape, np.nan)
    ok = ~np.isnan(means)
    out[ok] = _ranks(-means[ok])
    return out


def rank_correlation(Y: np.ndarray) -> np.ndarray:
    """Spearman's rank correlation of the per-row scores of every pair of explainers.

    Pearson's correlation of the ranks (ties averaged) over the rows where both scores are
    defined; NaN when fewer than two such rows or a constant column.

    Parameters
    ----------
    Y : numpy.ndarray of shape (n, k)
        Per-row scores (the orientation does not matter).

    Returns
    -------
    numpy.ndarray of shape (k, k), float64
    """
    k = Y.shape[1]
    out = np.full((k, k), np.nan)
    for i in range(k):
        for j in range(i, k):
            ok = ~np.isnan(Y[:, i]) & ~np.isnan(Y[:, j])
            if ok.sum() < 2:
                continue
            a, b = _ranks(Y[ok, i]), _ranks(Y[ok, j])
            a, b = a - a.mean(), b - b.mean()
            denom = np.sqrt((a * a).sum() * (b * b).sum())
            if denom > 0:
                out[i, j] = out[j, i] = float((a * b).sum() / denom)
    return out


def median_split_agreement(Y: np.ndarray) -> np.ndarray:
    """The share of rows on which two explainers agree whether they did well.

    Explainer i does well on row r when its oriented score is at least its own median over
    the rows (``Y[r, i] >= median(Y[:, i])``), badly otherwise; two explainers agree on a row
    when both do well or both badly. Independent explainers agree on about half the rows,
    explainers that fail on the same rows on all of them.

    Parameters
    ----------
    Y : numpy.ndarray of shape (n, k)
        The rows' scores, higher is better (a lower-is-better metric negated); NaN: undefined.

    Returns
    -------
    numpy.ndarray of shape (k, k), float64
        The share over the rows where both are defined; NaN when there is none.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column has no median
        well = Y >= np.nanmedian(Y, axis=0, keepdims=True)  # NaN compares False
    ok = ~np.isnan(Y)
    both = ok.T.astype(np.float64) @ ok.astype(np.float64)
    same = ((well & ok).T.astype(np.float64) @ (well & ok).astype(np.float64)
            + (~well & ok).T.astype(np.float64) @ (~well & ok).astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(both > 0, same / both, np.nan)


def hardness(areas: np.ndarray, total: np.ndarray) -> np.ndarray:
    """How badly the best explainer does on each row: ``1 - max_i areas[r, i] / total[r]``.

    With ``areas`` the explainers' PGI² (the mean of the PG² curve over the top-k prefixes)
    and ``total`` the row's PG² with every feature perturbed, 0 means some explainer's top
    feature already moves the prediction as much as all of them; about 1 that no explainer's
    prefixes move it until the last ones.

    Parameters
    ----------
    areas : numpy.ndarray of shape (n, k)
        Each explainer's area under its PG² curve (NaN: left out).
    total : numpy.ndarray of shape (n,)
        The row's all-features PG².

    Returns
    -------
    numpy.ndarray of shape (n,), float64
        NaN where ``total`` is 0 (nothing moves the prediction) or every area is NaN.
    """
    best = np.full(total.shape, np.nan)
    some = ~np.all(np.isnan(areas), axis=1)
    best[some] = np.nanmax(areas[some], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 1.0 - best / total, np.nan)


def hardest_rows(h: np.ndarray, count: int = 10) -> np.ndarray:
    """The rows of the ``count`` largest hardness values, hardest first (ties: lower row first).

    Parameters
    ----------
    h : numpy.ndarray of shape (n,)
        Hardness per row (:func:`hardness`); NaN rows are never listed.
    count : int, default 10
        How many rows at most.

    Returns
    -------
    numpy.ndarray of int64
    """
    rows = np.flatnonzero(~np.isnan(h))
    order = rows[np.argsort(-h[rows], kind="stable")]
    return order[:count].astype(np.int64)
