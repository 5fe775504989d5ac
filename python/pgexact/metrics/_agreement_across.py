"""Verdicts across datasets: the dataset x explainer rank table and how often a verdict drawn
from a random subset of datasets and metrics differs from the verdict on all of them.

Pure numpy. The input is a table of mean scores ``scores[d, m, k]`` of explainer k under metric
m on dataset d (NaN where the metric is undefined there: a ground-truth metric on real data,
infidelity of a rankings-only explainer). Everything below works on the per-cell ranks of that
table (:func:`cell_ranks`), so metrics on different scales and with opposite orientations can
be pooled.

A *cell* is one (dataset, metric). A *verdict* between explainers i and j on a set of cells is
+1 (i better), -1 (j better) or 0 (tie), by one of two rules:

``"mean_rank"``
    the sign of the mean of ``rank_j - rank_i`` over the cells where both have a score;
``"majority"``
    the sign of (cells i wins) - (cells j wins) over the same cells (a tied cell counts for
    neither): i wins the majority of the decided cells.

Both are pairwise-complete: a cell where either explainer has no score is left out of that
pair's verdict, and a pair with no common cell has no verdict (NaN).
"""

from __future__ import annotations

from itertools import combinations
from math import comb
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

__all__ = ["RULES", "cell_ranks", "dataset_ranks", "kendall_w", "pair_verdicts",
           "subset_flip_probability"]

#: the verdict rules of :func:`pair_verdicts` and :func:`subset_flip_probability`
RULES = ("mean_rank", "majority")
#: mean ranks closer than this are tied (they are means of at most a few hundred halves)
_TIE = 1e-9


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n of a 1-d array, smallest first, ties averaged (NaN stays NaN, unranked)."""
    out = np.full(values.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(values))
    if ok.size == 0:
        return out
    v = values[ok]
    order = np.argsort(v, kind="stable")
    sorted_v = v[order]
    # one block per run of equal values; each member gets the block's mean position
    starts = np.flatnonzero(np.r_[True, sorted_v[1:] != sorted_v[:-1]])
    ends = np.r_[starts[1:], sorted_v.size]
    ranks = np.empty(v.size)
    for s, e in zip(starts, ends):
        ranks[order[s:e]] = (s + 1 + e) / 2.0
    out[ok] = ranks
    return out


def cell_ranks(scores: np.ndarray, higher_is_better: Sequence[bool]) -> np.ndarray:
    """Rank the explainers within every (dataset, metric) cell.

    Parameters
    ----------
    scores : array_like, shape (D, M, K)
        Mean score of explainer k under metric m on dataset d; NaN where undefined.
    higher_is_better : sequence of M bool
        Each metric's orientation.

    Returns
    -------
    numpy.ndarray, shape (D, M, K)
        1 = best in the cell, ties averaged, ranked among the explainers that have a score
        there; NaN where the score is NaN.
    """
    S = np.asarray(scores, dtype=np.float64)
    if S.ndim != 3:
        raise ValueError(f"scores: expected shape (datasets, metrics, explainers), got {S.shape}")
    hib = np.asarray(higher_is_better, dtype=bool)
    if hib.shape != (S.shape[1],):
        raise ValueError(f"higher_is_better: expected {S.shape[1]} values, got {hib.size}")
    oriented = np.where(hib[None, :, None], -S, S)  # smaller = better in every cell
    out = np.full(S.shape, np.nan)
    for d in range(S.shape[0]):
        for m in range(S.shape[1]):
            out[d, m] = _average_ranks(oriented[d, m])
    return out


def dataset_ranks(ranks: np.ndarray) -> np.ndarray:
    """The heat map: each explainer's rank on each dataset, over all of its metrics.

    The explainers are ranked by their mean cell rank over the dataset's metrics where they
    have a score (1 = best, ties averaged).

    Parameters
    ----------
    ranks : array_like, shape (D, M, K)
        Cell ranks from :func:`cell_ranks`.

    Returns
    -------
    numpy.ndarray, shape (D, K)
        NaN for an explainer with no score on the dataset.
    """
    R = np.asarray(ranks, dtype=np.float64)
    n = np.sum(~np.isnan(R), axis=1)
    mean = np.where(n > 0, np.nansum(R, axis=1) / np.maximum(n, 1), np.nan)
    # mean ranks are rounded before ranking again, so float noise in a mean is no tie-breaker
    return np.stack([_average_ranks(np.round(row, 9)) for row in mean])


def kendall_w(table: np.ndarray) -> float:
    """Kendall's coefficient of concordance W of the rows' rankings of the columns.

    Rows are the judges (datasets), columns the objects ranked (explainers); each row is
    re-ranked (ties averaged) and W is computed with the tie correction,
    ``W = 12 S / (m² (n³ - n) - m Σ T)``, ``S`` the sum of squared deviations of the column rank
    sums from their mean, ``T = Σ (t³ - t)`` over each row's tie groups. W = 1: every dataset
    ranks the explainers alike (vertical stripes in the heat map); W = 0: no agreement.
    Rows with a NaN are dropped.

    Parameters
    ----------
    table : array_like, shape (m, n)
        Scores or ranks, smaller = better in each row.

    Returns
    -------
    float
        W in [0, 1]; NaN with fewer than two complete rows or fewer than two columns.
    """
    T = np.asarray(table, dtype=np.float64)
    T = T[~np.isnan(T).any(axis=1)]
    m, n = T.shape
    if m < 2 or n < 2:
        return float("nan")
    R = np.stack([_average_ranks(row) for row in T])
    col = R.sum(axis=0)
    s = float(np.sum((col - col.mean()) ** 2))
    ties = 0.0
    for row in R:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts ** 3 - counts))
    denom = m * m * (n ** 3 - n) - m * ties
    return float(12.0 * s / denom) if denom > 0 else float("nan")


def _pair_tables(ranks: np.ndarray, rule: str) -> Tuple[np.ndarray, np.ndarray]:
    """``(delta, both)``, each (K, K, D, M): the cell's vote for i over j under ``rule`` (0
    where undefined) and whether both have a score there."""
    if rule not in RULES:
        raise ValueError(f"rule: unknown rule {rule!r} (choose from {', '.join(RULES)})")
    R = np.asarray(ranks, dtype=np.float64)
    if R.ndim != 3:
        raise ValueError(f"ranks: expected shape (datasets, metrics, explainers), got {R.shape}")
    Rk = np.moveaxis(R, 2, 0)  # (K, D, M)
    diff = Rk[None, :, :, :] - Rk[:, None, :, :]  # [i, j] = rank_j - rank_i: > 0 means i better
    both = ~np.isnan(diff)
    diff = np.where(both, diff, 0.0)
    return (np.sign(diff) if rule == "majority" else diff), both.astype(np.float64)


def pair_verdicts(ranks: np.ndarray, *, rule: str = "mean_rank",
                  datasets: Optional[Sequence[int]] = None,
                  metrics: Optional[Sequence[int]] = None) -> np.ndarray:
    """The verdict between every pair of explainers on a set of cells.

    Parameters
    ----------
    ranks : array_like, shape (D, M, K)
        Cell ranks from :func:`cell_ranks`.
    rule : {"mean_rank", "majority"}
        See the module docstring.
    datasets, metrics : sequence of int, optional
        The cells are these datasets x these metrics (default: all).

    Returns
    -------
    numpy.ndarray, shape (K, K)
        ``[i, j]`` = +1 if i is better, -1 if j is, 0 for a tie, NaN without a common cell.
    """
    delta, both = _pair_tables(ranks, rule)
    D, M = delta.shape[2:]
    a = np.zeros(D)
    a[list(range(D)) if datasets is None else list(datasets)] = 1.0
    b = np.zeros(M)
    b[list(range(M)) if metrics is None else list(metrics)] = 1.0
    s = np.einsum("ijdm,d,m->ij", delta, a, b)
    c = np.einsum("ijdm,d,m->ij", both, a, b)
    return np.where(c > 0, np.where(np.abs(s) > _TIE, np.sign(s), 0.0), np.nan)


def _subsets(n: int, size: int, count: Optional[int], rng: np.random.Generator) -> np.ndarray:
    """Indicator rows (count or all, n) of subsets of ``range(n)`` with ``size`` members."""
    if count is None:
        rows = list(combinations(range(n), size))
    else:
        rows = [tuple(rng.choice(n, size, replace=False)) for _ in range(count)]
    out = np.zeros((len(rows), n))
    for r, members in enumerate(rows):
        out[r, list(members)] = 1.0
    return out


def _winner_flips(ranks: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Per draw (paired rows of A and B): does the set of explainers with the lowest mean rank
    on the subset differ from that on all cells?"""
    R = np.asarray(ranks, dtype=np.float64)
    have = (~np.isnan(R)).astype(np.float64)
    Rz = np.nan_to_num(R)

    def best(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.inf)
        out: np.ndarray = mean <= mean.min(axis=-1, keepdims=True) + _TIE
        return out

    full = best(Rz.sum(axis=(0, 1)), have.sum(axis=(0, 1)))
    sub = best(np.einsum("sd,dmk,sm->sk", A, Rz, B), np.einsum("sd,dmk,sm->sk", A, have, B))
    out: np.ndarray = np.any(sub != full[None, :], axis=1)
    return out


def subset_flip_probability(ranks: np.ndarray, *, rule: str = "mean_rank",
                            max_exact: int = 20000, n_draws: int = 2000,
                            seed: int = 0) -> Dict[str, np.ndarray]:
    """How often a verdict on a random subset of datasets and metrics differs from the verdict
    on all of them, by the subset's size.

    For every size (a datasets, b metrics), a subset is a uniformly random set of a of the D
    datasets and, independently, of b of the M metrics; its cells are their product. For each
    pair (i, j), the probability that the verdict on the subset (:func:`pair_verdicts`) differs
    from the verdict on all cells, over the subsets where the pair has a common cell. Computed
    exactly by enumerating all ``C(D, a) C(M, b)`` subsets when there are at most
    ``max_exact`` of them, else estimated from ``n_draws`` random subsets.

    Parameters
    ----------
    ranks : array_like, shape (D, M, K)
        Cell ranks from :func:`cell_ranks`.
    rule : {"mean_rank", "majority"}
        The verdict rule.
    max_exact : int
        Largest number of subsets of one size enumerated.
    n_draws : int
        Random subsets per size where enumeration would exceed ``max_exact``.
    seed : int
        Seed of the random subsets.

    Returns
    -------
    dict
        ``pair``: (K, K, D, M) probability for pair (i, j) at sizes (a, b) = index + 1 (NaN
        where the pair never has a verdict); ``mean``: (D, M) the mean of ``pair`` over the
        pairs i < j; ``winner``: (D, M) the probability that the set of explainers with the
        best mean rank (pairwise-complete cells are not used here: each explainer's mean over
        its own cells) differs from the full table's; ``exact``: (D, M) bool, enumerated or
        sampled; ``n_subsets``: (D, M) how many subsets the numbers rest on.
    """
    delta, both = _pair_tables(ranks, rule)
    K, _, D, M = delta.shape
    if max_exact < 1 or n_draws < 1:
        raise ValueError("max_exact, n_draws: must be positive")
    full = pair_verdicts(ranks, rule=rule)
    rng = np.random.default_rng(seed)
    pair = np.full((K, K, D, M), np.nan)
    winner = np.full((D, M), np.nan)
    exact = np.zeros((D, M), dtype=bool)
    n_subsets = np.zeros((D, M), dtype=np.int64)
    for a in range(1, D + 1):
        for b in range(1, M + 1):
            total = comb(D, a) * comb(M, b)
            if total <= max_exact:  # every (dataset set, metric set) combination once
                A0, B0 = _subsets(D, a, None, rng), _subsets(M, b, None, rng)
                A, B = np.repeat(A0, len(B0), axis=0), np.tile(B0, (len(A0), 1))
            else:  # independent uniform draws of both sets
                A, B = _subsets(D, a, n_draws, rng), _subsets(M, b, n_draws, rng)
            s = np.einsum("sd,ijdm,sm->ijs", A, delta, B, optimize=True)
            c = np.einsum("sd,ijdm,sm->ijs", A, both, B, optimize=True)
            verdict = np.where(np.abs(s) > _TIE, np.sign(s), 0.0)
            ok = c > 0
            flips = ok & (verdict != full[:, :, None])
            n_ok = ok.sum(axis=2)
            pair[:, :, a - 1, b - 1] = np.where(n_ok > 0, flips.sum(axis=2) / np.maximum(n_ok, 1),
                                                np.nan)
            winner[a - 1, b - 1] = float(np.mean(_winner_flips(ranks, A, B)))
            exact[a - 1, b - 1] = total <= max_exact
            n_subsets[a - 1, b - 1] = A.shape[0]
    iu = np.triu_indices(K, 1)
    upper = pair[iu[0], iu[1]]  # (pairs, D, M)
    with np.errstate(invalid="ignore"):
        counts = np.sum(~np.isnan(upper), axis=0)
        mean = np.where(counts > 0, np.nansum(upper, axis=0) / np.maximum(counts, 1), np.nan)
    return dict(pair=pair, mean=mean, winner=winner, exact=exact, n_subsets=n_subsets)

