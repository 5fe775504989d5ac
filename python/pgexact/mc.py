"""Monte Carlo estimators of the perturbation metrics.

These are the baselines the exact functions in :mod:`pgexact` replace: every quantity is
estimated by drawing ``n_samples`` perturbed copies ``x' = x + delta`` of each row (only the
features in ``S`` are moved, missing values stay missing) and averaging over the model's own
predictions.

The signatures follow the exact functions, plus ``n_samples``, ``seed`` and ``return_se``:

========================  ======================================================  =========
function                  estimates                                               shape
========================  ======================================================  =========
``pg2``                   ``E[(f(x') - f(x))^2]`` for one set ``S``               ``(n,)``
``pg2_curve``             ``pg2`` for every top-k prefix of a ranking, k = 1..d   ``(n, d)``
``pgi2`` / ``pgu2``       mean of ``pg2`` over the top-k / bottom-k prefixes      ``(n,)``
``pgi`` / ``pgu``         the same with the absolute gap ``E|f(x') - f(x)|``      ``(n,)``
========================  ======================================================  =========

Predictions go through the library's own batched predict when the original model object is
given (XGBoost ``inplace_predict`` margins, LightGBM ``raw_score``, scikit-learn
``decision_function`` / ``predict`` / ``predict_proba``); a path or a
:class:`pgexact.TreeEnsemble` goes through ``TreeEnsemble.predict``.  The perturbed copies of a
batch of rows are built in one array and predicted in one call, in chunks of at most
``_MAX_ROWS_PER_CALL`` rows.

Positions and names follow ``X`` as passed, as in the exact functions (``docs/columns.md``):
``features``, ``ranking``, ``attributions`` columns and per-feature ``sigma`` refer to X's
columns, names are matched by name.

Reproducibility: the noise for row ``i`` is the ``i``-th block of ``n_samples * d`` draws of one
``numpy.random.default_rng(seed)`` stream (a second derived stream for uniform / Laplace
features, a third for features perturbed by category: :class:`pgexact.noise.Sampler`), whatever
the chunking, so the same seed gives the same numbers (also for any ``n_jobs``).  ``noise`` and
``sigma`` follow the exact API: sigma is the standard deviation of every additive family, a
feature the model splits on by category is perturbed by category
(:func:`pgexact.noise.categorical`, the same default as the exact functions), ``None`` in a
per-feature list leaves a feature alone.  All prefixes of a ranking share the same draws (common random
numbers), so ``pg2(S = top-k)`` and column ``k`` of ``pg2_curve`` agree for the same seed.
"""

from __future__ import annotations

import numbers
import time
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple, Union, cast

import numpy as np

from ._data._features import as_feature_mask, as_ranking, ranking_from_attributions
from ._data._rows import as_matrix_ordered
from ._exact._perturbation import as_noise, warn_large_sigma
from ._models._adapters import predictor
from ._data._columns import ColumnOrder
from ._models._pipeline import unwrap
from ._exact._progress import Progress, check_progress
from ._exact._api import rank
from ._models._target import Target
from ._typing import ArrayLike, FloatArray, ModelLike, NoiseLike, SigmaLike
from .noise import Sampler

__all__ = ["pg2", "pg2_curve", "pgi2", "pgu2", "pgi", "pgu"]

#: an estimate per row, or ``(estimate, standard error)`` with ``return_se=True``
Estimate = Union[FloatArray, Tuple[FloatArray, FloatArray]]

#: upper bound on the rows sent to one predict call
_MAX_ROWS_PER_CALL = 2_000_000
#: upper bound on the float64 elements of one batch of perturbed copies (~64 MB)
_MAX_ELEMENTS_PER_CALL = 8_000_000
#: rows of the first predict call, before the time of one is known
_FIRST_CALL_ROWS = 16_384
#: target seconds of one predict call (Ctrl-C is handled between calls)
_CALL_SECONDS = 0.25


# --------------------------------------------------------------------------------------------
# model -> batched raw-output callable (the model registry, pgexact._models._adapters)
# --------------------------------------------------------------------------------------------


def _resolve(model: ModelLike, output: Optional[int] = None,
             n_jobs: Optional[int] = None) -> Target:
    """The model's :class:`~pgexact._models._target.Target` (see :func:`pgexact._models._adapters.predictor`)."""
    return predictor(model, output, n_jobs)


def _structure(model: ModelLike, output: Any, n_features: int) -> Any:
    """The parsed model, for its categorical features and their categories (``as_noise``): the
    same perturbation as the exact functions, never additive noise on category codes.

    A model whose library cannot have split it by category is not parsed: ``as_noise`` takes
    its feature count (parsing a 1000-tree CatBoost model took 105 of the 118 ms of a Monte
    Carlo call: the baseline must be as fast as it can be for a comparison to be honest).
    """
    from ._models._adapters import load, may_split_by_category

    if not may_split_by_category(model):
        return n_features
    return load(model, output=output)


def _raw_predictor(model: ModelLike, output: Optional[int] = None, *,
                   n_jobs: Optional[int] = None) -> Callable[[np.ndarray], np.ndarray]:
    """Return ``predict(X) -> (m,) float64``, the raw output column ``output`` of ``model``.

    Uses the library's own batched predict for XGBoost / LightGBM / scikit-learn objects
    (margins for boosted models, class probabilities for forest-style classifiers) and
    ``TreeEnsemble.predict`` for paths and :class:`pgexact.TreeEnsemble`.  ``X`` must be a
    C-contiguous float64 (or float32) array in the model's feature order.  ``n_jobs`` is the
    library's thread count (None or -1: all cores); the user's object is left unchanged.
    """
    return predictor(model, output, n_jobs).predict


# --------------------------------------------------------------------------------------------
# input validation (the exact API's checkers, so both give the same errors)
# --------------------------------------------------------------------------------------------


def _check_n_samples(n_samples: Any) -> int:
    if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, numbers.Integral):
        raise TypeError(f"n_samples: expected a positive integer, got {n_samples!r}")
    if n_samples < 1:
        raise ValueError(f"n_samples: expected a positive integer, got {n_samples}")
    return int(n_samples)


def _check_seed(seed: Any) -> Optional[int]:
    """None or a non-negative integer, as ``numpy.random.default_rng`` takes it."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed: expected None or a non-negative integer, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed: expected None or a non-negative integer, got {seed}; pass e.g. seed=0, "
                         "or seed=None for fresh draws")
    return int(seed)


def _as_ranking(ranking: Optional[ArrayLike], attributions: Optional[ArrayLike], n: int,
                d: int, order: ColumnOrder) -> Optional[np.ndarray]:
    """(n, d) or (1, d) int64 ranking of the model's indices, or None when neither is given.

    Positions and attribution columns follow X's columns (see :mod:`pgexact._data._columns`).
    """
    if ranking is not None and attributions is not None:
        raise ValueError("ranking: give either ranking or attributions, not both")
    if attributions is not None:
        return ranking_from_attributions(attributions, d, n, order).reshape(-1, d)
    if ranking is None:
        return None
    return order.ranking(as_ranking(ranking, d, n)).reshape(-1, d)


def _prefix_masks(ranking: np.ndarray, bottom: bool) -> np.ndarray:
    """(n, d, d) bool: masks[i, k-1] = top-k (or bottom-k) features of ranking[i]."""
    m, d = ranking.shape
    pos = np.empty_like(ranking)
    np.put_along_axis(pos, ranking, np.arange(d)[None, :], axis=1)  # pos[i, j] = rank of j
    k = np.arange(1, d + 1)[:, None]  # (d, 1)
    if bottom:
        return cast(np.ndarray, pos[:, None, :] >= (d - k)[None])
    return cast(np.ndarray, pos[:, None, :] < k[None])


# --------------------------------------------------------------------------------------------
# the simulation
# --------------------------------------------------------------------------------------------


class _Moments:
    """Running count / mean / M2 (Chan et al.) over the sample axis."""

    def __init__(self, shape: Tuple[int, ...]) -> None:
        self.mean = np.zeros(shape)
        self.m2 = np.zeros(shape)

    def add(self, sl: slice, values: np.ndarray, na: int) -> None:
        """Merge ``values`` (shape ``mean[sl].shape + (k,)``) into cells that hold ``na``."""
        k = values.shape[-1]
        mb = values.mean(axis=-1)
        m2b = ((values - mb[..., None]) ** 2).sum(axis=-1)
        if na == 0:
            self.mean[sl], self.m2[sl] = mb, m2b
        else:
            tot = na + k
            delta = mb - self.mean[sl]
            self.mean[sl] += delta * (k / tot)
            self.m2[sl] += m2b + delta**2 * (na * k / tot)

    def se(self, n: int) -> np.ndarray:
        if n < 2:
            return np.full(self.mean.shape, np.nan)
        return np.sqrt(self.m2 / (n - 1) / n)


def _simulate(target: Target, X: np.ndarray, masks: np.ndarray, sigma: np.ndarray,
              noise: Sampler, n_samples: int, progress: Optional[bool] = False,
              desc: str = "mc") -> Dict[str, np.ndarray]:
    """Monte Carlo moments of the prediction gap, with a bar per ``progress`` (pgexact._exact._progress).

    masks: (n or 1, P, d) bool.  Returns a dict of (n, P) arrays ``sq``/``sq_se``/``ab``/
    ``ab_se`` (per set) and (n,) arrays ``sq_avg``/``ab_avg`` with their ``_se`` (the mean over
    the P sets, with the standard error of that mean under the shared draws).
    """
    predict = target.predict
    n, d = X.shape
    P = masks.shape[1]
    K = n_samples
    out_shape = (n, P)
    if n == 0:
        z = np.zeros(out_shape)
        return dict(sq=z, sq_se=z, ab=z, ab_se=z, sq_avg=z[:, 0], sq_avg_se=z[:, 0],
                    ab_avg=z[:, 0], ab_avg_se=z[:, 0])
    f0 = predict(X)
    if f0.shape != (n,):
        raise ValueError(f"predict returned shape {f0.shape} for {n} rows")

    per_call = max(1, min(_MAX_ROWS_PER_CALL, _MAX_ELEMENTS_PER_CALL // max(d, 1)))
    # Predict calls are sized to take about _CALL_SECONDS (measured as they go, starting small)
    # so that Ctrl-C, which Python handles between calls, stops the loop within a second. The
    # draws do not depend on the chunking (see the module's docstring).
    seconds_per_row: Optional[float] = None

    def call_rows() -> int:
        if seconds_per_row is None:
            return int(min(per_call, _FIRST_CALL_ROWS))
        return int(max(1, min(per_call, int(_CALL_SECONDS / seconds_per_row))))

    m_sq, m_ab = _Moments(out_shape), _Moments(out_shape)
    a_sq, a_ab = _Moments((n,)), _Moments((n,))
    r0 = 0
    with Progress(progress, n, desc, warn=False) as bar:
        while r0 < n:
            limit = call_rows()
            rows_per_batch = max(1, limit // (P * K))
            rows = slice(r0, min(n, r0 + rows_per_batch))
            nb = rows.stop - rows.start
            xr = X[rows]
            mr = masks[rows] if masks.shape[0] == n else np.broadcast_to(masks, (nb, P, d))
            done = 0
            while done < K:
                # Several rows: all their samples at once (the draws are row after row);
                # one row: its samples in chunks.
                kk = K - done if nb > 1 else min(K - done, max(1, call_rows() // P))
                # x + delta for every (row, sample); NaN stays NaN
                xs = noise.perturb(xr, kk, sigma)  # (nb, kk, d)
                xp = np.empty((nb, P, kk, d), dtype=target.dtype)
                xp[...] = xr[:, None, None, :]
                np.copyto(xp, xs[:, None, :, :], where=mr[:, :, None, :])
                started = time.perf_counter()
                y = predict(xp.reshape(-1, d)).reshape(nb, P, kk)
                seconds_per_row = (time.perf_counter() - started) / (nb * P * kk)
                del xp, xs
                gap = y - f0[rows, None, None]
                sq, ab = gap * gap, np.abs(gap)
                m_sq.add(rows, sq, done)
                m_ab.add(rows, ab, done)
                a_sq.add(rows, sq.mean(axis=1), done)
                a_ab.add(rows, ab.mean(axis=1), done)
                done += kk
                bar.advance(r0 * K + nb * done, n * K)
            r0 = rows.stop
    return dict(
        sq=m_sq.mean, sq_se=m_sq.se(K), ab=m_ab.mean, ab_se=m_ab.se(K),
        sq_avg=a_sq.mean, sq_avg_se=a_sq.se(K), ab_avg=a_ab.mean, ab_avg_se=a_ab.se(K),
    )


class _Setup(NamedTuple):
    target: Target
    A: np.ndarray  # rows in the model's feature order
    sigma: np.ndarray  # per-feature std, model order
    sampler: Sampler
    K: int
    order: ColumnOrder  # X's columns -> the model's
    X: Any  # the rows as the model sees them (a Pipeline's transformed rows)
    progress: Optional[bool]  # the user's progress= (pgexact._exact._progress)


def _setup(model: ModelLike, X: ArrayLike, sigma: SigmaLike, noise: NoiseLike, n_samples: int,
           seed: Optional[int], output: Optional[int], n_jobs: Optional[int],
           progress: Optional[bool] = None) -> _Setup:
    seed = _check_seed(seed)
    model, X = unwrap(model, X)  # a Pipeline: its final model on the transformed rows
    target = _resolve(model, output, n_jobs)
    A, order = as_matrix_ordered(X, target)
    d = A.shape[1]
    # the perturbation of every feature, as the exact functions resolve it (the model's
    # categorical features and their categories come from its parsed trees)
    kn = as_noise(noise, sigma, _structure(model, output, d), order)
    warn_large_sigma(A, kn, order)
    K = _check_n_samples(n_samples)
    return _Setup(target, A, kn.sigma, Sampler(kn.family, seed, kn.categorical), K, order, X,
                  check_progress(progress))


def _ranking_for(st: _Setup, ranking: Optional[ArrayLike],
                 attributions: Optional[ArrayLike], sigma: SigmaLike, noise: NoiseLike,
                 output: Optional[int], n_jobs: Optional[int]) -> np.ndarray:
    n, d = st.A.shape
    r = _as_ranking(ranking, attributions, n, d, st.order)
    if r is None:  # the greedy exact ranking, as in pgexact.pgi2 (on X as passed)
        greedy = rank(st.target.exact_model, st.X, sigma=sigma, noise=noise, n_jobs=n_jobs,
                      output=output, progress=st.progress)
        r = st.order.ranking(np.asarray(greedy, dtype=np.int64)).reshape(n, d)
    return r


def _ret(value: np.ndarray, se: np.ndarray, return_se: bool) -> Estimate:
    return (value, se) if return_se else value


# --------------------------------------------------------------------------------------------
# public estimators
# --------------------------------------------------------------------------------------------


def pg2(model: ModelLike, X: ArrayLike, features: ArrayLike, *, sigma: SigmaLike = 0.3,
        noise: NoiseLike = "normal", output: Optional[int] = None, n_samples: int = 1000,
        seed: Optional[int] = 0, return_se: bool = False, n_jobs: Optional[int] = None,
        progress: Optional[bool] = None) -> Estimate:
    """Monte Carlo estimate of ``PG2(x, S) = E[(f(x') - f(x))^2]`` for each row of ``X``.

    Parameters
    ----------
    model : model object, path or TreeEnsemble
        A library's own model is predicted with the library's batched predict; a path or a
        TreeEnsemble with ``TreeEnsemble.predict``.
    X : array_like or DataFrame, shape (n, d)
        The rows.
    features : array_like
        The perturbed set S: indices or names (the same for every row), or a boolean mask of
        shape ``(n, d)`` / ``(d,)``.
    sigma, noise, output, n_jobs
        As in :func:`pgexact.pg2` (``n_jobs``: the library's threads).
    n_samples : int, default 1000
        Perturbed copies per row.
    seed : int or None, default 0
        Seed of the noise stream; None for fresh draws.
    return_se : bool, default False
        Also return the standard error of each estimate.
    progress : bool, optional
        A bar on stderr (tqdm): None when the call is projected to take more than about 2 s,
        True always, False never (as in :func:`pgexact.pg2`). Ctrl-C stops it within a second.

    Returns
    -------
    numpy.ndarray of shape (n,), float64, or a pair of them
        The estimates, or ``(estimates, standard errors)`` with ``return_se=True``.
    """
    st = _setup(model, X, sigma, noise, n_samples, seed, output, n_jobs, progress)
    n, d = st.A.shape
    mask = as_feature_mask(features, st.target, n, st.order).astype(bool)
    r = _simulate(st.target, st.A, mask.reshape(-1, 1, d), st.sigma, st.sampler, st.K,
                  st.progress, "mc.pg2")
    return _ret(r["sq"][:, 0], r["sq_se"][:, 0], return_se)


def _curve_stats(model: ModelLike, X: ArrayLike, ranking: Optional[ArrayLike],
                 attributions: Optional[ArrayLike], sigma: SigmaLike, noise: NoiseLike,
                 output: Optional[int], n_samples: int, seed: Optional[int],
                 n_jobs: Optional[int], bottom: bool, progress: Optional[bool], desc: str
                 ) -> Dict[str, np.ndarray]:
    st = _setup(model, X, sigma, noise, n_samples, seed, output, n_jobs, progress)
    r = _ranking_for(st, ranking, attributions, sigma, noise, output, n_jobs)
    return _simulate(st.target, st.A, _prefix_masks(r, bottom), st.sigma, st.sampler, st.K,
                     st.progress, desc)


def pg2_curve(model: ModelLike, X: ArrayLike, ranking: ArrayLike, *, sigma: SigmaLike = 0.3,
              noise: NoiseLike = "normal", output: Optional[int] = None,
              n_samples: int = 1000, seed: Optional[int] = 0, return_se: bool = False,
              n_jobs: Optional[int] = None, progress: Optional[bool] = None) -> Estimate:
    """Monte Carlo ``PG2`` of every top-k prefix of ``ranking``.

    Parameters
    ----------
    ranking : array_like of int, shape (d,) or (n, d)
        Positions of the columns of X (a permutation), most important first; see
        docs/columns.md.
    model, X, sigma, noise, output, n_samples, seed, return_se, n_jobs, progress
        As in :func:`pg2`.

    Returns
    -------
    numpy.ndarray of shape (n, d), float64, or a pair of them
        Column ``k-1`` estimates PG2 of ``S = ranking[:k]``; with ``return_se=True`` also the
        standard errors. All prefixes share the same draws.
    """
    if ranking is None:
        raise TypeError("ranking: required (a (d,) or (n, d) permutation)")
    r = _curve_stats(model, X, ranking, None, sigma, noise, output, n_samples, seed, n_jobs,
                     False, progress, "mc.pg2_curve")
    return _ret(r["sq"], r["sq_se"], return_se)


def _averaged(model: ModelLike, X: ArrayLike, ranking: Optional[ArrayLike],
              attributions: Optional[ArrayLike], sigma: SigmaLike, noise: NoiseLike,
              output: Optional[int], n_samples: int, seed: Optional[int], return_se: bool,
              n_jobs: Optional[int], bottom: bool, key: str, progress: Optional[bool],
              desc: str) -> Estimate:
    r = _curve_stats(model, X, ranking, attributions, sigma, noise, output, n_samples, seed,
                     n_jobs, bottom, progress, desc)
    return _ret(r[key], r[key + "_se"], return_se)


def pgi2(model: ModelLike, X: ArrayLike, ranking: Optional[ArrayLike] = None, *,
         attributions: Optional[ArrayLike] = None, sigma: SigmaLike = 0.3,
         noise: NoiseLike = "normal", output: Optional[int] = None, n_samples: int = 1000,
         seed: Optional[int] = 0, return_se: bool = False, n_jobs: Optional[int] = None,
         progress: Optional[bool] = None) -> Estimate:
    """Monte Carlo ``PGI2``: the mean of ``PG2`` over the top-k prefixes, k = 1..d.

    Parameters
    ----------
    ranking : array_like of int, shape (d,) or (n, d), optional
        Positions of the columns of X (a permutation), most important first; see
        docs/columns.md.
    attributions : array_like of float, shape (n, d), optional
        Ranked by ``argsort(-|attributions|)`` (stable). With neither, the exact greedy
        ranking :func:`pgexact.rank`.
    model, X, sigma, noise, output, n_samples, seed, return_se, n_jobs, progress
        As in :func:`pg2`.

    Returns
    -------
    numpy.ndarray of shape (n,), float64, or a pair of them
        The estimates, or ``(estimates, standard errors)`` with ``return_se=True``.
    """
    return _averaged(model, X, ranking, attributions, sigma, noise, output, n_samples, seed,
                     return_se, n_jobs, False, "sq_avg", progress, "mc.pgi2")


def pgu2(model: ModelLike, X: ArrayLike, ranking: Optional[ArrayLike] = None, *,
         attributions: Optional[ArrayLike] = None, sigma: SigmaLike = 0.3,
         noise: NoiseLike = "normal", output: Optional[int] = None, n_samples: int = 1000,
         seed: Optional[int] = 0, return_se: bool = False, n_jobs: Optional[int] = None,
         progress: Optional[bool] = None) -> Estimate:
    """Monte Carlo ``PGU2``: the mean of ``PG2`` over the bottom-k sets, k = 1..d.

    Parameters and Returns as :func:`pgi2`.
    """
    return _averaged(model, X, ranking, attributions, sigma, noise, output, n_samples, seed,
                     return_se, n_jobs, True, "sq_avg", progress, "mc.pgu2")


def pgi(model: ModelLike, X: ArrayLike, ranking: Optional[ArrayLike] = None, *,
        attributions: Optional[ArrayLike] = None, sigma: SigmaLike = 0.3,
        noise: NoiseLike = "normal", output: Optional[int] = None, n_samples: int = 1000,
        seed: Optional[int] = 0, return_se: bool = False, n_jobs: Optional[int] = None,
        progress: Optional[bool] = None) -> Estimate:
    """Monte Carlo ``PGI``: the mean over the top-k prefixes of ``E|f(x') - f(x)|``.

    Parameters and Returns as :func:`pgi2`.
    """
    return _averaged(model, X, ranking, attributions, sigma, noise, output, n_samples, seed,
                     return_se, n_jobs, False, "ab_avg", progress, "mc.pgi")


def pgu(model: ModelLike, X: ArrayLike, ranking: Optional[ArrayLike] = None, *,
        attributions: Optional[ArrayLike] = None, sigma: SigmaLike = 0.3,
        noise: NoiseLike = "normal", output: Optional[int] = None, n_samples: int = 1000,
        seed: Optional[int] = 0, return_se: bool = False, n_jobs: Optional[int] = None,
        progress: Optional[bool] = None) -> Estimate:
    """Monte Carlo ``PGU``: the mean over the bottom-k sets of ``E|f(x') - f(x)|``.

    Parameters and Returns as :func:`pgi2`.
    """
    return _averaged(model, X, ranking, attributions, sigma, noise, output, n_samples, seed,
                     return_se, n_jobs, True, "ab_avg", progress, "mc.pgu")
