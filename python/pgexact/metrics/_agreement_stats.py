"""The pairwise statistics of :func:`pgexact.metrics.agreement`, numpy only: verdicts, the
bootstrap, seed flips, agreement between metrics (definitions: docs/agreement.md). The
statistics over rows (similarity of explainers, hardness, ranks) are in
:mod:`._agreement_instances`.

Conventions shared by every function here:

- ``Y`` is an ``(n, k)`` array of per-row scores of k explainers, *oriented* so that higher is
  better (a lower-is-better metric enters negated); NaN marks an undefined score.
- A pair is ``(i, j)`` with ``i < j`` (:func:`pair_indices`); ``D = Y[:, i] - Y[:, j]`` is its
  column of per-row differences (:func:`pairwise_differences`), NaN where either score is.
- A verdict is the sign of a mean difference: +1 (i better), -1 (j better) or 0 (a tie).

Statistics over resamples take a ``numpy.random.Generator``; the same generator state gives
the same numbers.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence, Union, cast

import numpy as np

__all__ = ["Bootstrap", "bootstrap", "default_sizes", "error_case_rate", "mean_verdicts",
           "metric_agreement", "pair_indices", "pairwise_differences", "rows_needed",
           "seed_flip_rate", "square", "win_rates"]

#: the largest number of float64 entries of one block of resample counts (about 16 MB)
_BLOCK_ENTRIES = 2_000_000


def pair_indices(k: int) -> np.ndarray:
    """The pairs ``(i, j)``, ``i < j``, of k explainers in row-major order.

    Parameters
    ----------
    k : int
        The number of explainers.

    Returns
    -------
    numpy.ndarray of shape (k (k - 1) / 2, 2), int64
    """
    i, j = np.triu_indices(k, 1)
    return np.stack([i, j], axis=1).astype(np.int64)


def pairwise_differences(Y: np.ndarray) -> np.ndarray:
    """Per-row differences ``Y[:, i] - Y[:, j]`` of every pair ``i < j``.

    Parameters
    ----------
    Y : numpy.ndarray of shape (n, k)
        Oriented per-row scores (higher is better), NaN where undefined.

    Returns
    -------
    numpy.ndarray of shape (n, P), float64
        One column per pair of :func:`pair_indices`; NaN where either score is NaN.
    """
    p = pair_indices(Y.shape[1])
    return cast(np.ndarray, Y[:, p[:, 0]] - Y[:, p[:, 1]])


def win_rates(D: np.ndarray) -> np.ndarray:
    """The share of rows on which the first explainer of each pair wins, ties counting 1/2.

    Parameters
    ----------
    D : numpy.ndarray of shape (n, q)
        Per-row differences (:func:`pairwise_differences`); NaN rows of a column are left out.

    Returns
    -------
    numpy.ndarray of shape (q,), float64
        ``mean(1[d > 0] + 1/2 1[d = 0])`` over the column's non-NaN rows; NaN when it has none.
    """
    valid = ~np.isnan(D)
    points = np.where(D > 0, 1.0, 0.0) + np.where(D == 0, 0.5, 0.0)
    count = valid.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, (points * valid).sum(axis=0) / count, np.nan)


def mean_verdicts(D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean difference of every column and its sign, the verdict.

    Parameters
    ----------
    D : numpy.ndarray of shape (n, q)
        Per-row differences; NaN rows of a column are left out.

    Returns
    -------
    mean : numpy.ndarray of shape (q,), float64
        NaN for a column without a non-NaN row.
    verdict : numpy.ndarray of shape (q,), float64
        ``sign(mean)`` in {-1, 0, +1}, NaN where the mean is.
    """
    valid = ~np.isnan(D)
    count = valid.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, np.where(valid, D, 0.0).sum(axis=0) / count, np.nan)
    return mean, np.sign(mean)


def default_sizes(n: int, count: int = 24) -> np.ndarray:
    """The row counts at which the flip probability is evaluated: every size up to ``count``
    rows, else about ``count`` sizes spaced geometrically from 1 to n; always ends with n.

    Parameters
    ----------
    n : int
        The number of rows.
    count : int, default 24
        About how many sizes.

    Returns
    -------
    numpy.ndarray of int64, increasing
    """
    if n <= count:
        return np.arange(1, n + 1, dtype=np.int64)
    sizes = np.unique(np.round(np.geomspace(1, n, count)).astype(np.int64))
    return np.unique(np.append(sizes, n))


class Bootstrap(NamedTuple):
    """What :func:`bootstrap` returns (q columns, s sizes)."""

    #: (q, 2) percentile interval of the mean difference, from resamples of all n rows
    interval: np.ndarray
    #: (q, s) probability that a resample of ``sizes[t]`` rows gives another verdict than D
    flip_curve: np.ndarray
    #: (q,) the flip probability at n rows (the last column of ``flip_curve``)
    flip_probability: np.ndarray


def _resample_means(D0: np.ndarray, V: np.ndarray, size: int, count: int,
                    rng: np.random.Generator) -> np.ndarray:
    """(count, q) means of D's columns over ``count`` resamples of ``size`` rows drawn with
    replacement (each column over its non-NaN drawn rows; ``D0`` is D with NaN set to 0)."""
    n, q = D0.shape
    # a few drawn rows: gather them; many: count how often each row was drawn, a (b, n)
    # matrix, so that the sums over the drawn rows of every column are one matrix product
    gather = size * q <= n
    block = max(1, _BLOCK_ENTRIES // max(size * q if gather else n, 1))
    out = np.empty((count, q))
    for start in range(0, count, block):
        b = min(block, count - start)
        idx = rng.integers(0, n, size=(b, size))
        if gather:
            sums, drawn = D0[idx].sum(axis=1), V[idx].sum(axis=1)
        else:
            counts = np.bincount((idx + n * np.arange(b)[:, None]).ravel(), minlength=b * n)
            C = counts.reshape(b, n).astype(np.float64)
            sums, drawn = C @ D0, C @ V
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:start + b] = sums / drawn
    return out


def bootstrap(D: np.ndarray, sizes: Union[Sequence[int], np.ndarray], n_bootstraps: int, level: float,
              rng: np.random.Generator) -> Bootstrap:
    """Percentile interval of the mean difference and the probability that the verdict flips
    when the rows are resampled, at every size of ``sizes``.

    For each size m, ``n_bootstraps`` resamples of m rows are drawn with replacement (the
    m-out-of-n bootstrap; m = n is the ordinary bootstrap). The flip probability at m is the
    share of resamples whose verdict ``sign(mean)`` differs from the verdict on all rows (a
    resample tie counts as a flip of a non-tie verdict). The interval is the ``(1 - level)/2``
    and ``(1 + level)/2`` quantiles of the resampled means at m = n.

    Parameters
    ----------
    D : numpy.ndarray of shape (n, q)
        Per-row differences, NaN where undefined (left out of each resample's mean).
    sizes : sequence of int
        Increasing row counts in 1..n; the last must be n.
    n_bootstraps : int
        Resamples per size.
    level : float
        Coverage of the interval, in (0, 1).
    rng : numpy.random.Generator
        The source of the resamples.

    Returns
    -------
    Bootstrap
        ``interval`` (q, 2), ``flip_curve`` (q, s) and ``flip_probability`` (q,).
    """
    n, q = D.shape
    sizes = [int(s) for s in sizes]
    if not sizes or sizes[-1] != n:
        raise ValueError(f"sizes: must end with the number of rows {n}, got {sizes}")
    V = (~np.isnan(D)).astype(np.float64)
    D0 = np.where(np.isnan(D), 0.0, D)
    _, verdict = mean_verdicts(D)
    curve = np.full((q, len(sizes)), np.nan)
    interval = np.full((q, 2), np.nan)
    for t, size in enumerate(sizes):
        means = _resample_means(D0, V, size, n_bootstraps, rng)
        flips = np.where(np.isnan(means), np.nan, (np.sign(means) != verdict).astype(np.float64))
        defined = ~np.all(np.isnan(flips), axis=0) & ~np.isnan(verdict)
        curve[defined, t] = np.nanmean(flips[:, defined], axis=0)
        if size == n and defined.any():
            lo, hi = (1.0 - level) / 2.0, (1.0 + level) / 2.0
            interval[defined] = np.nanquantile(means[:, defined], [lo, hi], axis=0).T
    return Bootstrap(interval, curve, curve[:, -1].copy())


def rows_needed(sizes: Union[Sequence[int], np.ndarray], curve: np.ndarray, threshold: float = 0.05) -> np.ndarray:
    """The smallest size from which on the flip probability stays below ``threshold``.

    Parameters
    ----------
    sizes : sequence of int, length s
        The sizes of the columns of ``curve``, increasing.
    curve : numpy.ndarray of shape (q, s)
        Flip probabilities (:func:`bootstrap`).
    threshold : float, default 0.05
        The tolerated flip probability.

    Returns
    -------
    numpy.ndarray of shape (q,), float64
        ``sizes[t]`` for the smallest t with ``curve[:, u] < threshold`` for every ``u >= t``;
        inf when the probability at the largest size is not below it; NaN for an undefined
        (all-NaN) curve.
    """
    below = curve < threshold  # NaN compares False
    # below from t on to the end: a reversed cumulative "and"
    tail = np.flip(np.logical_and.accumulate(np.flip(below, axis=1), axis=1), axis=1)
    first = np.argmax(tail, axis=1)
    out = np.where(tail.any(axis=1), np.asarray(sizes, dtype=np.float64)[first], np.inf)
    return np.where(np.all(np.isnan(curve), axis=1), np.nan, out)


def seed_flip_rate(verdicts: np.ndarray) -> np.ndarray:
    """The probability that two runs with different seeds give different verdicts.

    Estimated without bias by the share of the ``S (S - 1) / 2`` pairs of runs that disagree:
    ``1 - sum_v c_v (c_v - 1) / (S (S - 1))`` with ``c_v`` the number of runs giving verdict v.

    Parameters
    ----------
    verdicts : numpy.ndarray of shape (S, q)
        The verdict of each of S seeds on each of q comparisons; NaN runs are left out.

    Returns
    -------
    numpy.ndarray of shape (q,), float64
        NaN for a comparison with fewer than two defined runs.
    """
    S = (~np.isnan(verdicts)).sum(axis=0).astype(np.float64)
    same = sum(c * (c - 1.0) for c in ((verdicts == v).sum(axis=0) for v in (-1.0, 0.0, 1.0)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(S >= 2, 1.0 - same / (S * (S - 1.0)), np.nan)


def metric_agreement(V: np.ndarray) -> np.ndarray:
    """For every pair of metrics, the share of comparisons on which their verdicts agree.

    Parameters
    ----------
    V : numpy.ndarray of shape (m, q)
        The verdict of each of m metrics on each of q explainer comparisons (NaN: undefined).

    Returns
    -------
    numpy.ndarray of shape (m, m), float64
        Over the comparisons both metrics decide; NaN when there is none (diagonal: 1 where
        the metric decides any).
    """
    defined = ~np.isnan(V)
    both = defined[:, None, :] & defined[None, :, :]
    equal = (V[:, None, :] == V[None, :, :]) & both
    count = both.sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, equal.sum(axis=2) / count, np.nan)


def error_case_rate(V: np.ndarray) -> np.ndarray:
    """Each metric's share of comparisons on which a majority of the other metrics contradicts it.

    A comparison is an error case of metric a when more than half of the other metrics that
    decide it give a verdict different from a's.

    Parameters
    ----------
    V : numpy.ndarray of shape (m, q)
        Verdicts as in :func:`metric_agreement`.

    Returns
    -------
    numpy.ndarray of shape (m,), float64
        Over the comparisons that metric a and at least one other metric decide; NaN when
        there is none.
    """
    defined = ~np.isnan(V)
    others = defined.sum(axis=0)[None, :] - defined  # other metrics deciding each comparison
    differ = ((V[:, None, :] != V[None, :, :]) & defined[:, None, :] & defined[None, :, :]).sum(axis=1)
    counted = defined & (others > 0)
    error = counted & (2 * differ > others)
    n = counted.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, error.sum(axis=1) / n, np.nan)


def square(values: np.ndarray, k: int, kind: str) -> np.ndarray:
    """A ``(k, k)`` matrix from the values of the pairs ``i < j`` (leading axis), completed by
    ``kind``: ``"symmetric"`` (``x[j, i] = x[i, j]``), ``"antisymmetric"`` (``-x[i, j]``),
    ``"complement"`` (``1 - x[i, j]``) or ``"interval"`` (``[-hi, -lo]`` of a trailing pair).

    Parameters
    ----------
    values : numpy.ndarray of shape (P,) or (P, ...)
        One entry per pair of :func:`pair_indices` (k).
    k : int
        The number of explainers.
    kind : str
        How the lower triangle follows from the upper one.

    Returns
    -------
    numpy.ndarray of shape (k, k) + values.shape[1:], float64
        The diagonal is NaN (an explainer is not compared with itself).
    """
    p = pair_indices(k)
    out = np.full((k, k) + values.shape[1:], np.nan)
    out[p[:, 0], p[:, 1]] = values
    mirror = {"symmetric": values, "antisymmetric": -values, "complement": 1.0 - values}
    if kind == "interval":
        out[p[:, 1], p[:, 0]] = -values[..., ::-1]
    else:
        out[p[:, 1], p[:, 0]] = mirror[kind]
    return out
