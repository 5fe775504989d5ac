"""The exact metrics: PG², its curve over a ranking, PGI², PGU² and the greedy ranking.

Each function validates its arguments once (:func:`pgexact._exact._prepare.prepare_call`) and runs
the kernels through the resulting :class:`~pgexact._exact._kernels.PreparedCall`.
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple, cast

import numpy as np

from ._kernels import PreparedCall
from ._per_output import per_output, stack_outputs
from ._prepare import prepare_calls
from ._tolerance import DEFAULT_TOL, as_tol
from .._typing import ArrayLike, FloatArray, IntArray, ModelLike, NoiseLike, OutputLike, SigmaLike

__all__ = ["pg2", "pg2_curve", "pgi2", "pgu2", "rank", "rank_with_curve"]


def pg2(model: ModelLike, X: ArrayLike, features: ArrayLike, *, sigma: SigmaLike = 0.3,
        noise: NoiseLike = "normal", n_jobs: Optional[int] = None,
        output: OutputLike = None, progress: Optional[bool] = None,
        tol: Optional[float] = None) -> FloatArray:
    """Exact ``PG²(x, S) = E[(f(x') - f(x))²]`` for every row of X.

    Parameters
    ----------
    model : model object, path or TreeEnsemble
        An XGBoost, LightGBM, CatBoost or scikit-learn tree model, a saved model file, or a
        :class:`pgexact.TreeEnsemble` (see :func:`pgexact.load`).
    X : array_like or DataFrame, shape (n, d)
        The rows; DataFrame columns are matched to the model's feature names.
        Positions in every other argument follow X's columns as passed, names are matched by
        name, and results do not depend on X's column order (``docs/columns.md``).
    features : array_like
        The perturbed set S: positions of X's columns or names (the same for every row), or a
        boolean mask of shape (d,) or (n, d) over X's columns.
    sigma : float or array_like of shape (d,), default 0.3
        Standard deviation of the noise added to each perturbed feature: a scalar, one per
        column of X, or a pandas Series indexed by feature name.
    noise : {"normal", "uniform", "laplace"}, NoiseFamily or sequence, default "normal"
        Noise family for every feature, or one per feature (:mod:`pgexact.noise`).
    n_jobs : int, optional
        OpenMP threads over rows; None or -1 for all cores. Results do not depend on it.
    output : int, class label, ClassLabel, ClassPosition or "all", optional
        Output column of a multi-output model: a position, or a class label of an estimator
        with ``classes_`` (see :func:`pgexact.load`). ``"all"``: every output, the model parsed
        once; the results gain an axis of length K (number of outputs) after the rows, and
        each ``[:, k]`` is bit for bit the result of ``output=k`` (``docs/multiclass.md``).
    progress : bool, optional
        A progress bar on stderr (tqdm, if installed): None (default) when the call is
        projected to take more than about 2 s, True always, False never. Whatever it is, a
        call projected to take more than a minute emits one :class:`pgexact.PerformanceWarning`
        (see :func:`pgexact.estimate`); Ctrl-C stops any call within a second.
    tol : float, optional
        Relative error each result may have, certified per result: leaves far out in the
        row's noise tails are dropped while a bound on what they add stays below ``tol`` times
        the result, and a row whose bound does not hold is computed again in full. None
        (default): 1e-13, rounding level; 0: nothing is dropped. 1e-6 or 1e-3 make deep
        forests several times faster (README, "How long will it take"). Deterministic, never a
        standard error.

    Returns
    -------
    numpy.ndarray of shape (n,), float64 (``(n, K)`` for ``output="all"``)
        PG² per row, never negative.
    """
    tol_ = as_tol(tol)
    calls = prepare_calls(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                          progress=progress, desc="pg2")
    with calls[0].progress:
        return stack_outputs(output, [call.pg2(call.feature_mask(features), tol=tol_)
                                      for call in calls])


def pg2_curve(model: ModelLike, X: ArrayLike, ranking: ArrayLike, *, sigma: SigmaLike = 0.3,
              noise: NoiseLike = "normal", n_jobs: Optional[int] = None,
              output: OutputLike = None, progress: Optional[bool] = None,
              tol: Optional[float] = None) -> FloatArray:
    """``PG²`` of every prefix of a ranking.

    Parameters
    ----------
    ranking : array_like of int, shape (d,) or (n, d)
        A permutation of X's column positions, most important first. With ``output="all"``
        it applies to every output, or ``(n, K, d)`` gives one per output.
    model, X, sigma, noise, n_jobs, output, progress, tol
        As in :func:`pg2`.

    Returns
    -------
    numpy.ndarray of shape (n, d), float64 (``(n, K, d)`` for ``output="all"``)
        Column k is PG² of the top k+1 features of the ranking.
    """
    tol_ = as_tol(tol)
    calls = prepare_calls(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                          progress=progress, desc="pg2_curve")
    rankings = per_output(ranking, len(calls), output, "ranking", "ranking")
    with calls[0].progress:
        return stack_outputs(output, [call.pg2_curve(call.ranking(rk), tol=tol_)
                                      for call, rk in zip(calls, rankings)])


def _resolve_ranking(call: PreparedCall, ranking: Optional[ArrayLike],
                     attributions: Optional[ArrayLike], tol: float = DEFAULT_TOL
                     ) -> Tuple[IntArray, Optional[FloatArray]]:
    """The ranking to evaluate, and its top-k curve when the greedy search already has it."""
    if ranking is not None and attributions is not None:
        raise ValueError("ranking: give either ranking or attributions, not both")
    if ranking is not None:
        return call.ranking(ranking), None
    if attributions is not None:
        return call.attribution_ranking(attributions), None
    greedy, curve = call.greedy_rank(tol=tol)
    return greedy, curve


def _with_rankings(calls: List[PreparedCall], output: OutputLike, ranking: Optional[ArrayLike],
                   attributions: Optional[ArrayLike]
                   ) -> Iterator[Tuple[PreparedCall, Optional[ArrayLike], Optional[ArrayLike]]]:
    """Each output's call with its ranking and attributions (:func:`pgexact._exact._per_output.per_output`)."""
    rankings = per_output(ranking, len(calls), output, "ranking", "ranking")
    attributions_ = per_output(attributions, len(calls), output, "attributions")
    return zip(calls, rankings, attributions_)


def pgi2(model: ModelLike, X: ArrayLike, ranking: Optional[ArrayLike] = None, *,
         attributions: Optional[ArrayLike] = None, sigma: SigmaLike = 0.3,
         noise: NoiseLike = "normal", n_jobs: Optional[int] = None,
         output: OutputLike = None, progress: Optional[bool] = None,
         tol: Optional[float] = None) -> FloatArray:
    """``PGI²(x, π) = (1/d) Σ_k PG²(x, top-k of π)``, exactly, for every row.

    Parameters
    ----------
    model, X
        As in :func:`pg2`.
    ranking : array_like of int, shape (d,) or (n, d), optional
        A permutation of X's column positions, most important first.
    attributions : array_like of float, shape (n, d), optional
        One column per column of X (a DataFrame is matched by column name), ranked by
        descending absolute value, ties to the lower position. With neither
        ``ranking`` nor ``attributions``, the greedy PG² ranking (:func:`rank`) is used.
        With ``output="all"``, one ranking or attributions array applies to every output;
        per output, pass rankings of shape ``(n, K, d)`` or attributions of shape
        ``(n, d, K)`` (shap's multi-output layout, or a ``shap.Explanation``) or a list of K
        ``(n, d)`` arrays (older shap's layout).
    sigma, noise, n_jobs, output, progress, tol
        As in :func:`pg2`. Without a ranking, the greedy ranking is the exact one whatever
        ``tol`` (see :func:`rank`); ``tol`` bounds the curve whose mean PGI² is.

    Returns
    -------
    numpy.ndarray of shape (n,), float64 (``(n, K)`` for ``output="all"``)
        PGI² per row.
    """
    tol_ = as_tol(tol)
    calls = prepare_calls(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                          progress=progress, desc="pgi2")
    results = []
    with calls[0].progress:
        for call, r, a in _with_rankings(calls, output, ranking, attributions):
            rk, curve = _resolve_ranking(call, r, a, tol_)
            if curve is None:
                curve = call.pg2_curve(rk, tol=tol_)
            results.append(cast(FloatArray, curve.mean(axis=1)))
    return stack_outputs(output, results)


def pgu2(model: ModelLike, X: ArrayLike, ranking: Optional[ArrayLike] = None, *,
         attributions: Optional[ArrayLike] = None, sigma: SigmaLike = 0.3,
         noise: NoiseLike = "normal", n_jobs: Optional[int] = None,
         output: OutputLike = None, progress: Optional[bool] = None,
         tol: Optional[float] = None) -> FloatArray:
    """``PGU²(x, π) = (1/d) Σ_k PG²(x, bottom-k of π)``: least important first.

    Parameters
    ----------
    model, X, ranking, attributions, sigma, noise, n_jobs, output, progress, tol
        As in :func:`pgi2`: the same ranking, perturbed from its least important end.

    Returns
    -------
    numpy.ndarray of shape (n,), float64 (``(n, K)`` for ``output="all"``)
        PGU² per row.
    """
    tol_ = as_tol(tol)
    stages = 2 if ranking is None and attributions is None else 1  # greedy ranking, then curve
    calls = prepare_calls(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                          progress=progress, desc="pgu2", stages=stages)
    results = []
    with calls[0].progress:
        for call, r, a in _with_rankings(calls, output, ranking, attributions):
            rk, _ = _resolve_ranking(call, r, a, tol_)
            reverse = np.ascontiguousarray(rk[..., ::-1])
            results.append(cast(FloatArray, call.pg2_curve(reverse, tol=tol_).mean(axis=1)))
    return stack_outputs(output, results)


def rank_with_curve(model: ModelLike, X: ArrayLike, *, sigma: SigmaLike = 0.3,
                    noise: NoiseLike = "normal", n_jobs: Optional[int] = None,
                    output: OutputLike = None, progress: Optional[bool] = None,
                    tol: Optional[float] = None) -> Tuple[IntArray, FloatArray]:
    """Greedy ranking and the PG² of each of its prefixes (the search computes both).

    Parameters
    ----------
    model, X, sigma, noise, n_jobs, output, progress, tol
        As in :func:`rank`; the curve is within ``tol``.

    Returns
    -------
    ranking : numpy.ndarray of shape (n, d), int64 (``(n, K, d)`` for ``output="all"``)
        As :func:`rank`.
    curve : numpy.ndarray of shape (n, d), float64 (``(n, K, d)`` for ``output="all"``)
        Column k is PG² of the top k+1 features of the ranking.
    """
    tol_ = as_tol(tol)
    calls = prepare_calls(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                          progress=progress, desc="rank")
    rankings, curves = greedy_rankings(calls, tol_)
    return stack_outputs(output, rankings), stack_outputs(output, curves)


def greedy_rankings(calls: List[PreparedCall], tol: float = DEFAULT_TOL
                    ) -> Tuple[List[IntArray], List[FloatArray]]:
    """The greedy ranking (positions of X's columns) and its curve (within ``tol``) of each
    call, in order."""
    rankings, curves = [], []
    with calls[0].progress:
        for call in calls:
            ranking, curve = call.greedy_rank(tol=tol)
            rankings.append(call.order.ranking_out(ranking))
            curves.append(curve)
    return rankings, curves


def rank(model: ModelLike, X: ArrayLike, *, sigma: SigmaLike = 0.3, noise: NoiseLike = "normal",
         n_jobs: Optional[int] = None, output: OutputLike = None,
         progress: Optional[bool] = None, tol: Optional[float] = None) -> IntArray:
    """Greedy PG² ranking per row, most important first.

    Feature 1 maximises ``PG²(x, {i})``; feature l+1 maximises ``PG²(x, S_l ∪ {i})``; ties go
    to the lower index.

    Parameters
    ----------
    model, X
        As in :func:`pg2`.
    sigma, noise, n_jobs, output, progress
        As in :func:`pg2`.
    tol : float, optional
        As in :func:`pg2`, for the PG² values the steps compare: leaves far in a row's noise
        tails are dropped within the bound, and a step's choice is kept only where the chosen
        feature beats every other candidate by more than both their bounds (else the row is
        ranked again in full). So the ranking is the exact greedy ranking whatever ``tol``; a
        looser one can only make it faster (or, where choices are close, slower).

    Returns
    -------
    numpy.ndarray of shape (n, d), int64 (``(n, K, d)`` for ``output="all"``)
        The ranking of each row, as positions of X's columns (``[:, k]``: output k's).
    """
    return rank_with_curve(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                           progress=progress, tol=tol)[0]

