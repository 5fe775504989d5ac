"""Which explainer? :func:`agreement` scores explainers with several faithfulness metrics and
says how far each verdict can be trusted (definitions: docs/agreement.md).

The scores come from the library's own functions (exact :func:`pgexact.pg2_curve`,
:func:`pgexact.pgu2`, :func:`pgexact.infidelity`; Monte Carlo :func:`pgexact.openxai.pgi`,
:func:`pgexact.mc.pgi2`; the ground-truth scores of :mod:`pgexact.metrics`); the statistics
from :mod:`._agreement_stats` (pairs) and :mod:`._agreement_instances` (rows); the result class
from :mod:`._agreement_result`.
"""

from __future__ import annotations

import numbers
import sys
import warnings
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from .. import mc, openxai
from .._data._features import as_attributions, as_ranking, ranking_from_attributions
from .._data._rows import as_matrix_ordered, is_dataframe
from .._data._scalars import as_positive_int, as_seed
from .._exact._api import pg2_curve, pgu2
from .._exact._moments import infidelity
from .._exact._progress import check_progress
from .._models._adapters import load
from .._models._outputs import refuse_all
from .._models._pipeline import unwrap
from .._optional import optional, require
from .._typing import ArrayLike, ModelLike, NoiseLike, OutputLike, SigmaLike
from . import _agreement_instances as rows, _agreement_stats as st
from ._agreement_result import AgreementResult
from ._selection_metrics import importance_r2, top_k_precision_recall

__all__ = ["AgreementResult", "agreement", "METRICS"]

#: every metric name -> (higher is better, Monte Carlo)
METRICS: Dict[str, Tuple[bool, bool]] = {
    "pgi2": (True, False), "pgu2": (False, False), "infidelity": (False, False),
    "pgi_mc": (True, True), "pgi2_mc": (True, True),
    "truth_r2": (True, False), "truth_topk": (True, False),
}
_DEFAULT_METRICS = ("pgi2", "pgu2", "infidelity", "pgi_mc", "pgi2_mc")
_TRUTH_METRICS = ("truth_r2", "truth_topk")


class _Explainer(NamedTuple):
    name: str
    ranking: np.ndarray  # (n, d) int64, positions of X's columns, most important first
    attributions: Optional[np.ndarray]  # (n, d) float64 in X's column order; None: a ranking


def _check_metrics(metrics: Any, truth_given: bool) -> Tuple[str, ...]:
    valid = ", ".join(map(repr, METRICS))
    if metrics is _DEFAULT_METRICS and truth_given:  # not chosen by the caller: add the truth
        metrics = _DEFAULT_METRICS + _TRUTH_METRICS
    if isinstance(metrics, str):
        metrics = (metrics,)
    if not isinstance(metrics, Sequence) or not all(isinstance(m, str) for m in metrics):
        raise TypeError(f"metrics: expected a sequence of metric names ({valid}), got {metrics!r}")
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"metrics: unknown {unknown}; pass names from {valid}")
    if not metrics or len(set(metrics)) != len(metrics):
        raise ValueError(f"metrics: expected at least one name, each once, got {list(metrics)}")
    if not truth_given and any(m in _TRUTH_METRICS for m in metrics):
        raise ValueError("metrics: 'truth_r2' and 'truth_topk' need ground_truth=; pass the (d,) "
                         "true importances or relevant-feature mask, or leave them out")
    return tuple(metrics)


def _one_explainer(name: Any, value: Any, n: int, d: int, order: Any) -> _Explainer:
    if not isinstance(name, str) or not name:
        raise TypeError(f"explanations: every name must be a non-empty str, got {name!r}")
    try:
        is_attr = hasattr(value, "values") and hasattr(value, "base_values") or is_dataframe(value)
        arr = None if is_attr else np.asarray(value)
        if arr is not None and arr.dtype == np.bool_:
            raise TypeError("expected float attributions or an int ranking, got booleans")
        if arr is not None and np.issubdtype(arr.dtype, np.integer):
            ranking = as_ranking(arr, d, n, "ranking")
            return _Explainer(name, np.ascontiguousarray(np.broadcast_to(ranking, (n, d))), None)
        x_order = order.in_x_order()
        attributions = as_attributions(value, d, n, x_order)
        return _Explainer(name, ranking_from_attributions(value, d, n, x_order), attributions)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"explanations: {name!r}: {exc}") from None


def _explainers(explanations: Any, n: int, d: int, order: Any) -> List[_Explainer]:
    if not isinstance(explanations, Mapping):
        raise TypeError("explanations: expected a dict {name: (n, d) attributions or rankings}, "
                        f"got {type(explanations).__name__}")
    if len(explanations) < 2:
        raise ValueError(f"explanations: needs at least two explainers to compare, got "
                         f"{len(explanations)}; add another, e.g. {{'shap': phi, 'greedy': "
                         "pgexact.rank(model, X)}")
    return [_one_explainer(name, value, n, d, order) for name, value in explanations.items()]


def _ground_truth(ground_truth: Any, d: int, metrics: Tuple[str, ...]) -> Optional[np.ndarray]:
    """Non-negative (d,) truth weights (a boolean mask as 0/1), or None."""
    if ground_truth is None:
        return None
    g = np.asarray(ground_truth)
    if g.shape != (d,):
        raise ValueError(f"ground_truth: expected shape ({d},) (one entry per column of X), got {g.shape}")
    if g.dtype != np.bool_ and not np.issubdtype(g.dtype, np.number):
        raise TypeError(f"ground_truth: expected (d,) importances or a boolean mask, got dtype {g.dtype}")
    w = g.astype(np.float64)
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise ValueError("ground_truth: expected finite non-negative importances, not all zero "
                         "(or a boolean mask of the relevant features with at least one True)")
    if "truth_r2" in metrics and np.all(w == w[0]):
        raise ValueError("ground_truth: every feature has the same importance, so R² is "
                         "undefined; pass metrics without 'truth_r2'")
    return w


def _truth_scores(ex: _Explainer, truth: np.ndarray, metric: str) -> np.ndarray:
    """Per-row ground-truth scores of one explainer (:mod:`._selection_metrics`)."""
    n, d = ex.ranking.shape
    if metric == "truth_r2":
        if ex.attributions is None:  # a ranking has no magnitudes to normalise
            return np.full(n, np.nan)
        out = np.full(n, np.nan)
        for r, a in enumerate(np.abs(ex.attributions)):
            if a.sum() > 0:
                out[r] = importance_r2(a, truth)
        return out
    relevant = truth > 0
    # precision among the |relevant| highest: attributions by magnitude, rankings by position
    score = np.abs(ex.attributions) if ex.attributions is not None else _pseudo(ex.ranking)
    return np.array([top_k_precision_recall(s, relevant, int(relevant.sum()))[0] for s in score])


def _pseudo(ranking: np.ndarray) -> np.ndarray:
    """Attributions ``d - position`` that rank exactly as ``ranking`` (for attribution-only APIs)."""
    n, d = ranking.shape
    out = np.empty((n, d))
    np.put_along_axis(out, ranking, np.arange(d, 0, -1, dtype=np.float64)[None, :], axis=1)
    return out


def _infidelity(ens: Any, X: Any, ex: _Explainer, exact: Dict[str, Any],
                progress: Optional[bool], notes: List[str]) -> np.ndarray:
    """Exact infidelity per row, or NaN with a note where it is undefined."""
    n = ex.ranking.shape[0]
    if ex.attributions is None:
        notes.append(f"infidelity of {ex.name!r} is NaN: a ranking has no attribution values")
        return np.full(n, np.nan)
    try:
        return infidelity(ens, X, ex.attributions, progress=progress, **exact)
    except ValueError as exc:
        # categorical or unperturbed features: undefined for this model, not a wrong call
        # (the other metrics still apply)
        if not str(exc).startswith("noise:"):
            raise
        notes.append(f"infidelity of {ex.name!r} is NaN: {exc}")
        return np.full(n, np.nan)


def _repeat_rows(X: Any, Xa: np.ndarray, order: Any, runs: int) -> Any:
    """X's rows ``runs`` times over, as X is (a DataFrame stays one, with its column names)."""
    if runs == 1:
        return X
    if is_dataframe(X):
        pd = require("pandas", "agreement() with a DataFrame")
        return pd.concat([X] * runs, ignore_index=True)
    if isinstance(X, np.ndarray):
        return np.tile(X, (runs, 1))
    # a DMatrix or sparse matrix: its rows as the library reads them, in X's column order
    return np.tile(order.columns_out(Xa), (runs, 1))


class _Bar:
    """One tqdm bar on stderr over the evaluations when ``progress=True`` (the calls then run
    without their own bars); otherwise ``progress`` goes on to every call."""

    def __init__(self, progress: Optional[bool], total: int) -> None:
        tqdm = optional("tqdm.auto") if progress else None
        self.bar = tqdm.tqdm(total=total, desc="agreement", file=sys.stderr) if tqdm else None
        self.inner: Optional[bool] = False if progress else progress

    def step(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _as_level(level: Any) -> float:
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, numbers.Real) \
            or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level: expected the interval's coverage in (0, 1), e.g. 0.95, got {level!r}")
    return float(level)


def agreement(model: ModelLike, X: ArrayLike, explanations: Mapping[str, ArrayLike], *,
              metrics: Sequence[str] = _DEFAULT_METRICS,
              ground_truth: Optional[ArrayLike] = None, sigma: SigmaLike = 0.3,
              noise: NoiseLike = "normal", n_samples: int = 100, n_seeds: int = 20,
              n_bootstraps: int = 1000, level: float = 0.95, seed: Optional[int] = 0,
              output: OutputLike = None, n_jobs: Optional[int] = None,
              progress: Optional[bool] = None, top_k: Union[float, int] = 0.25,
              n_hardest: int = 10) -> AgreementResult:
    """Score explainers with several faithfulness metrics and say how far each verdict holds.

    Every explainer is scored on every row by every metric; then, for every pair of explainers
    and metric: the win rate over rows, the verdict on the mean with a bootstrap interval, the
    probability that the verdict flips when the rows are resampled and how many rows it takes
    to fall below 5 %, and (Monte Carlo metrics) how often the verdict flips from seed to seed;
    across metrics: how often they agree and how often each is outvoted; across rows: which
    explainers fail on the same rows and which rows are hard. Definitions: docs/agreement.md.

    Parameters
    ----------
    model : model object, path or TreeEnsemble
        As in :func:`pgexact.pg2`.
    X : array_like or DataFrame, shape (n, d)
        The rows, as in :func:`pgexact.pg2`.
    explanations : dict of str to array_like
        At least two explainers, by name: ``(n, d)`` float attributions (ranked by descending
        ``|value|``, ties to the lower position; a shap or pgexact Explanation's ``values``), an
        ``(n, d)`` int ranking (positions of X's columns, most important first), or a ``(d,)``
        global importance or ranking for every row. The dtype decides: integers are rankings.
    metrics : sequence of str, default ("pgi2", "pgu2", "infidelity", "pgi_mc", "pgi2_mc")
        Exact ``"pgi2"`` (higher is better), ``"pgu2"`` (lower), ``"infidelity"`` (lower; NaN
        for a ranking, which has no magnitudes); Monte Carlo ``"pgi_mc"`` (OpenXAI's PGI,
        :func:`pgexact.openxai.pgi` with ``k=top_k``, higher) and ``"pgi2_mc"``
        (:func:`pgexact.mc.pgi2`, higher); with ground_truth ``"truth_r2"`` (fseval's R² of
        the row's ``|attributions|``, higher) and ``"truth_topk"`` (precision among the
        ``|relevant|`` highest, higher), added to the default automatically.
    ground_truth : array_like of shape (d,), optional
        True importances (non-negative) or a boolean mask of the relevant features.
    sigma, noise : optional
        The perturbation, as in :func:`pgexact.pg2` (additive for ``"infidelity"``).
    n_samples : int, default 100
        Monte Carlo draws per row and prefix of the Monte Carlo metrics.
    n_seeds : int, default 20
        Independent Monte Carlo runs for the seed-flip rate (1: not computed). Run s uses
        the draws of rows ``s n .. (s + 1) n - 1`` of ``seed``'s stream (X repeated in one
        call), so run 0 is the Monte Carlo function's own result with ``seed``.
    n_bootstraps : int, default 1000
        Resamples of the rows per subsample size.
    level : float, default 0.95
        Coverage of the bootstrap intervals.
    seed : int or None, default 0
        Seeds the resamples and the Monte Carlo metrics (None: drawn once, kept in settings).
    output, n_jobs : optional
        The output column (one at a time) and the threads of the library calls, as in
        :func:`pgexact.pg2`.
    progress : bool, optional
        True: one bar over the evaluations; None or False: passed on to every call.
    top_k : float or int, default 0.25
        OpenXAI's ``k`` of ``"pgi_mc"``: a fraction of the features or a count.
    n_hardest : int, default 10
        How many of the hardest rows to list.

    Returns
    -------
    AgreementResult
        Per-row scores and every statistic (its attributes and methods).
    """
    refuse_all(output, "agreement")
    progress = check_progress(progress)
    metrics_ = _check_metrics(metrics, ground_truth is not None)
    n_samples = int(as_positive_int(n_samples, "n_samples") or 1)
    n_seeds = int(as_positive_int(n_seeds, "n_seeds") or 1)
    n_bootstraps = int(as_positive_int(n_bootstraps, "n_bootstraps") or 1)
    n_hardest = int(as_positive_int(n_hardest, "n_hardest") or 1)
    level = _as_level(level)
    seed = as_seed(seed)
    if seed is None:
        seed = int(np.random.default_rng().integers(0, 2**31 - 1))
    model, X = unwrap(model, X)
    ens = load(model, output=output)
    Xa, order = as_matrix_ordered(X, ens)
    n, d = Xa.shape
    if n < 1:
        raise ValueError("X: has no rows; agreement needs at least one row")
    explainers = _explainers(explanations, n, d, order)
    truth = _ground_truth(ground_truth, d, metrics_)

    exact: Dict[str, Any] = dict(sigma=sigma, noise=noise, n_jobs=n_jobs)
    mc_metrics = [m for m in metrics_ if METRICS[m][1]]
    runs = n_seeds
    bar = _Bar(progress, len(explainers) * (1 + ("pgu2" in metrics_) + ("infidelity" in metrics_)
                                           + len(mc_metrics)))
    k = len(explainers)
    scores = np.full((len(metrics_), n, k), np.nan)
    seed_scores = {m: np.full((runs, n, k), np.nan) for m in mc_metrics}
    areas, total = np.full((n, k), np.nan), np.zeros(n)
    notes: List[str] = []

    # Monte Carlo runs: X repeated `runs` times in one call; run s reads the draws of rows
    # s n .. (s + 1) n - 1 of the seed's stream (independent of the other runs), so run 0 is
    # what mc.pgi2 / openxai.pgi return on X with this seed, and every explainer's run s uses
    # the same draws (common random numbers, as two calls with one seed do)
    X_runs = _repeat_rows(X, Xa, order, runs) if mc_metrics else X

    def monte_carlo(metric: str, ex: _Explainer) -> np.ndarray:
        out: Any
        if metric == "pgi_mc":
            a = ex.attributions if ex.attributions is not None else _pseudo(ex.ranking)
            out = openxai.pgi(model, X_runs, np.tile(a, (runs, 1)), k=top_k, sigma=sigma,
                              noise=noise, output=output, n_samples=n_samples, seed=seed,
                              n_jobs=n_jobs, progress=bar.inner)
        else:
            out = mc.pgi2(model, X_runs, np.tile(ex.ranking, (runs, 1)), sigma=sigma, noise=noise, output=output,
                          n_samples=n_samples, seed=seed, n_jobs=n_jobs, progress=bar.inner)
        return np.asarray(out).reshape(runs, n)

    try:
        for e, ex in enumerate(explainers):
            # one exact curve per explainer: its mean is PGI², its last column PG²(all)
            curve = pg2_curve(ens, X, ex.ranking, progress=bar.inner, **exact)
            bar.step()
            areas[:, e], total = curve.mean(axis=1), curve[:, -1]
            for a, metric in enumerate(metrics_):
                if metric == "pgi2":
                    scores[a, :, e] = areas[:, e]
                elif metric == "pgu2":
                    scores[a, :, e] = pgu2(ens, X, ex.ranking, progress=bar.inner, **exact)
                    bar.step()
                elif metric == "infidelity":
                    scores[a, :, e] = _infidelity(ens, X, ex, exact, bar.inner, notes)
                    bar.step()
                elif metric in mc_metrics:
                    seed_scores[metric][:, :, e] = monte_carlo(metric, ex)
                    scores[a, :, e] = seed_scores[metric][0, :, e]
                    bar.step()
                else:
                    assert truth is not None  # _check_metrics refuses truth metrics without it
                    scores[a, :, e] = _truth_scores(ex, truth, metric)
    finally:
        bar.close()
    if "truth_r2" in metrics_ and any(ex.attributions is None for ex in explainers):
        notes.append("truth_r2 is NaN for rankings: they have no attribution values")

    settings = dict(sigma=sigma if sigma is None or np.ndim(sigma) == 0 else np.asarray(sigma).tolist(),
                    noise=noise if isinstance(noise, str) else repr(noise), n_samples=n_samples,
                    n_seeds=n_seeds, n_bootstraps=n_bootstraps, level=level, seed=seed,
                    top_k=top_k,
                    output=output if isinstance(output, (int, str, type(None))) else repr(output))
    return _statistics(tuple(ex.name for ex in explainers), metrics_, scores, seed_scores,
                       areas, total, settings, notes, n_hardest)


def _statistics(explainers: Tuple[str, ...], metrics: Tuple[str, ...], scores: np.ndarray,
                seed_scores: Dict[str, np.ndarray], areas: np.ndarray, total: np.ndarray,
                settings: Dict[str, Any], notes: List[str], n_hardest: int) -> AgreementResult:
    """Every statistic of :class:`AgreementResult` from the per-row scores (m, n, k)."""
    m, n, k = scores.shape
    sign = np.array([1.0 if METRICS[a][0] else -1.0 for a in metrics])
    oriented = scores * sign[:, None, None]
    P = k * (k - 1) // 2
    # every metric's pairs side by side, so that all share the same resamples
    D = np.concatenate([st.pairwise_differences(oriented[a]) for a in range(m)], axis=1)
    win = st.win_rates(D)
    mean_diff, verdict = st.mean_verdicts(D)
    sizes = st.default_sizes(n)
    boot = st.bootstrap(D, sizes, int(settings["n_bootstraps"]), float(settings["level"]),
                        np.random.default_rng(int(settings["seed"])))
    needed = st.rows_needed(sizes, boot.flip_curve)

    def per_metric(values: np.ndarray, kind: str) -> np.ndarray:
        return np.stack([st.square(values[a * P:(a + 1) * P], k, kind) for a in range(m)])

    seed_flip = np.zeros((m, k, k))
    for a, metric in enumerate(metrics):
        if metric in seed_scores:
            runs = seed_scores[metric] * sign[a]
            v = np.stack([st.mean_verdicts(st.pairwise_differences(r))[1] for r in runs])
            seed_flip[a] = st.square(st.seed_flip_rate(v), k, "symmetric")
    seed_flip[:, np.arange(k), np.arange(k)] = np.nan
    V = verdict.reshape(m, P)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column has a NaN mean
        mean_scores = np.nanmean(scores, axis=1)
    h = rows.hardness(areas, total)
    return AgreementResult(
        explainers=explainers, metrics=metrics,
        higher_is_better={a: METRICS[a][0] for a in metrics},
        monte_carlo={a: METRICS[a][1] for a in metrics}, n_rows=n, scores=scores,
        mean_scores=mean_scores,
        ranks=np.stack([rows.average_ranks(mean_scores[a] * sign[a]) for a in range(m)]),
        win_rate=per_metric(win, "complement"), verdict=per_metric(verdict, "antisymmetric"),
        mean_difference=per_metric(mean_diff, "antisymmetric"),
        interval=per_metric(boot.interval, "interval"),
        flip_probability=per_metric(boot.flip_probability, "symmetric"),
        rows_needed=per_metric(needed, "symmetric"),
        flip_curve={"sizes": sizes, "probability": per_metric(boot.flip_curve, "symmetric")},
        seed_flip_rate=seed_flip, metric_agreement=st.metric_agreement(V),
        error_case_rate=st.error_case_rate(V),
        similarity_correlation=np.stack([rows.rank_correlation(oriented[a]) for a in range(m)]),
        verdict_agreement=np.stack([rows.median_split_agreement(oriented[a]) for a in range(m)]),
        hardness=h, hardest_rows=rows.hardest_rows(h, n_hardest), settings=settings, notes=notes)

