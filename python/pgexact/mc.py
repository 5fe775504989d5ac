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

Reproducibility: the noise for row ``i`` is the ``i``-th block of ``n_samples * d`` draws of one
``numpy.random.default_rng(seed)`` stream (a second derived stream for uniform / Laplace
features), whatever the chunking, so the same seed gives the same numbers (also for any
``n_jobs``).  ``noise`` and ``sigma`` follow the exact API: sigma is the standard deviation of
every family.  All prefixes of a ranking share the same draws (common random
numbers), so ``pg2(S = top-k)`` and column ``k`` of ``pg2_curve`` agree for the same seed.
"""

from __future__ import annotations

import copy
import inspect
import json
import numbers
import os
import warnings

import numpy as np

from . import _validation as _v

__all__ = ["pg2", "pg2_curve", "pgi2", "pgu2", "pgi", "pgu"]

#: upper bound on the rows sent to one predict call
_MAX_ROWS_PER_CALL = 2_000_000
#: upper bound on the float64 elements of one batch of perturbed copies (~64 MB)
_MAX_ELEMENTS_PER_CALL = 8_000_000


# --------------------------------------------------------------------------------------------
# model -> batched raw-output callable
# --------------------------------------------------------------------------------------------


class _Target:
    """What the estimators need from a model: a batched raw predict and its input layout."""

    __slots__ = ("predict", "n_features", "feature_names", "exact_model", "dtype")

    def __init__(self, predict, n_features, feature_names, exact_model, dtype=np.float64):
        self.predict = predict
        self.n_features = n_features
        self.feature_names = feature_names
        self.exact_model = exact_model
        #: dtype of the perturbed copies: float32 when the library casts to it anyway
        self.dtype = dtype


def _module_root(obj) -> str:
    return type(obj).__module__.split(".", 1)[0]


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _n_threads(n_jobs) -> int:
    """Threads for the library: None or -1 -> all cores, k > 0 -> k (as the exact API)."""
    threads = _v.as_n_jobs(n_jobs)
    return threads if threads > 0 else _cpu_count()


def _select_output(out, output, what):
    """Pick one output column from a (m,) or (m, K) prediction."""
    out = np.asarray(out, dtype=np.float64)
    if out.ndim == 1:
        out = out[:, None]
    elif out.ndim != 2:
        raise ValueError(f"{what} returned an array of shape {out.shape}; expected (m,) or (m, K)")
    k = _v.as_output(output, out.shape[1], "model")
    return np.ascontiguousarray(out[:, k])


def _xgboost_target(model, output, n_jobs):
    import xgboost as xgb

    if isinstance(model, xgb.Booster):
        booster = model
        iteration_range = (0, 0)  # Booster.predict uses every tree
    else:
        booster = model.get_booster()
        # the scikit-learn wrapper predicts with the best iteration when early stopping set one
        best = booster.attr("best_iteration")
        iteration_range = (0, int(best) + 1) if best is not None else (0, 0)
    threads = _n_threads(n_jobs)
    try:
        config = json.loads(booster.save_config())["learner"]["generic_param"]
        current = int(config.get("nthread", 0))
    except (KeyError, ValueError, TypeError):  # pragma: no cover - unexpected config layout
        current = -1
    names = booster.feature_names

    def predict(X):
        # Our thread count for this call only: the user's booster is left as it was (cheaper
        # than copying the booster, which serialises every tree).
        if current != threads:
            booster.set_param({"nthread": threads})
        try:
            out = booster.inplace_predict(
                X, predict_type="margin", iteration_range=iteration_range, missing=np.nan
            )
        finally:
            if current != threads and current >= 0:
                booster.set_param({"nthread": current})
        return _select_output(out, output, "XGBoost inplace_predict")

    # XGBoost reads its input as float32: building the copies in float32 gives the same
    # predictions (x + delta is rounded once, from double) with half the memory traffic
    return _Target(predict, booster.num_features(), list(names) if names else None, model,
                   np.float32)


def _lightgbm_target(model, output, n_jobs):
    import lightgbm as lgb

    booster = model if isinstance(model, lgb.Booster) else model.booster_
    kwargs = {"raw_score": True, "num_threads": _n_threads(n_jobs)}
    names = list(booster.feature_name())
    if names == [f"Column_{i}" for i in range(len(names))]:
        names = None  # LightGBM's automatic names: the model was trained without names

    def predict(X):
        return _select_output(booster.predict(X, **kwargs), output, "LightGBM predict")

    return _Target(predict, booster.num_feature(), names, model)


def _sklearn_target(model, output, n_jobs):
    name = type(model).__name__
    threads = _n_threads(n_jobs)
    if hasattr(model, "n_jobs"):
        model_ = copy.copy(model)  # shallow: fitted trees are shared, n_jobs is ours
        model_.n_jobs = threads
    else:
        model_ = model

    if name.startswith("HistGradientBoosting"):
        def raw(X):
            return model_._raw_predict(X, n_threads=threads)
    elif name.startswith("GradientBoosting") and hasattr(model_, "decision_function"):
        raw = model_.decision_function
    elif hasattr(model_, "predict_proba") and hasattr(model_, "classes_"):
        classes = model_.classes_
        if isinstance(classes, list):
            raise ValueError(f"model: multi-output classifiers ({name}) are not supported")
        if output is None and len(classes) == 2:
            output = 1  # binary: the probability of class 1 (as pgexact.load)
        _v.as_output(output, len(classes), f"{name} (output k = probability of class k)")
        raw = model_.predict_proba
    elif hasattr(model_, "predict"):
        raw = model_.predict
    else:  # pragma: no cover - not a fitted estimator
        raise TypeError(f"model: unsupported scikit-learn object {name}")

    def predict(X):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*feature names.*", category=UserWarning)
            out = raw(X)
        return _select_output(out, output, f"{name} prediction")

    names = getattr(model, "feature_names_in_", None)
    return _Target(
        predict,
        getattr(model, "n_features_in_", None),
        [str(c) for c in names] if names is not None else None,
        model,
    )


def _ensemble_target(model, output, n_jobs):
    from ._adapters import load

    te = load(model, output=output)  # a TreeEnsemble is returned as is
    kwargs = {}
    try:
        if "n_jobs" in inspect.signature(te.predict).parameters:
            kwargs["n_jobs"] = n_jobs
    except (TypeError, ValueError):  # pragma: no cover - builtin without a signature
        pass

    def predict(X):
        return np.ascontiguousarray(np.asarray(te.predict(X, **kwargs), dtype=np.float64))

    names = te.feature_names
    return _Target(predict, int(te.n_features), list(names) if names else None, te)


def _resolve(model, output=None, n_jobs=None) -> _Target:
    root = _module_root(model)
    if root == "xgboost" and (
        type(model).__name__ == "Booster" or hasattr(model, "get_booster")
    ):
        return _xgboost_target(model, output, n_jobs)
    if root == "lightgbm" and (type(model).__name__ == "Booster" or hasattr(model, "booster_")):
        return _lightgbm_target(model, output, n_jobs)
    if root == "sklearn":
        return _sklearn_target(model, output, n_jobs)
    # a path, a TreeEnsemble, or anything else pgexact.load understands
    return _ensemble_target(model, output, n_jobs)


def _raw_predictor(model, output=None, *, n_jobs=None):
    """Return ``predict(X) -> (m,) float64``, the raw output column ``output`` of ``model``.

    Uses the library's own batched predict for XGBoost / LightGBM / scikit-learn objects
    (margins for boosted models, class probabilities for forest-style classifiers) and
    ``TreeEnsemble.predict`` for paths and :class:`pgexact.TreeEnsemble`.  ``X`` must be a
    C-contiguous float64 (or float32) array in the model's feature order.  ``n_jobs`` is the
    library's thread count (None or -1: all cores); the user's object is left unchanged.
    """
    return _resolve(model, output, n_jobs).predict


# --------------------------------------------------------------------------------------------
# input validation (the exact API's checkers, so both give the same errors)
# --------------------------------------------------------------------------------------------


def _check_n_samples(n_samples) -> int:
    if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, numbers.Integral):
        raise TypeError(f"n_samples: expected a positive integer, got {n_samples!r}")
    if n_samples < 1:
        raise ValueError(f"n_samples: expected a positive integer, got {n_samples}")
    return int(n_samples)


def _as_ranking(ranking, attributions, n, d) -> np.ndarray | None:
    """(n, d) or (1, d) int64 ranking, or None when neither argument is given."""
    if ranking is not None and attributions is not None:
        raise ValueError("ranking: give either ranking or attributions, not both")
    if attributions is not None:
        return _v.ranking_from_attributions(attributions, d, n).reshape(-1, d)
    if ranking is None:
        return None
    return _v.as_ranking(ranking, d, n).reshape(-1, d)


def _prefix_masks(ranking, bottom) -> np.ndarray:
    """(n, d, d) bool: masks[i, k-1] = top-k (or bottom-k) features of ranking[i]."""
    m, d = ranking.shape
    pos = np.empty_like(ranking)
    np.put_along_axis(pos, ranking, np.arange(d)[None, :], axis=1)  # pos[i, j] = rank of j
    k = np.arange(1, d + 1)[:, None]  # (d, 1)
    if bottom:
        return pos[:, None, :] >= (d - k)[None]
    return pos[:, None, :] < k[None]


# --------------------------------------------------------------------------------------------
# the simulation
# --------------------------------------------------------------------------------------------


class _Moments:
    """Running count / mean / M2 (Chan et al.) over the sample axis."""

    def __init__(self, shape):
        self.mean = np.zeros(shape)
        self.m2 = np.zeros(shape)

    def add(self, sl, values, na):
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

    def se(self, n):
        if n < 2:
            return np.full(self.mean.shape, np.nan)
        return np.sqrt(self.m2 / (n - 1) / n)


_SQRT3 = float(np.sqrt(3.0))
_SQRT_HALF = float(np.sqrt(0.5))


class _Noise:
    """Unit-variance draws per feature family (sigma scales them): the exact API's families,
    ``normal``, ``uniform`` on ``[-sqrt(3), sqrt(3)]`` and ``laplace`` with scale ``1/sqrt(2)``.

    Gaussian features read one ``standard_normal`` stream; uniform and Laplace features read
    a second stream of uniforms (inverse CDF), so every stream is consumed in row-major
    (row, sample, feature) order and the draws do not depend on the chunking.
    """

    def __init__(self, codes: np.ndarray, seed):
        self.rng = np.random.default_rng(seed)
        self.uniform = codes == _v.NOISE_FAMILIES["uniform"]
        self.laplace = codes == _v.NOISE_FAMILIES["laplace"]
        self.other = bool(self.uniform.any() or self.laplace.any())
        self.aux = np.random.default_rng(self.rng.integers(2**63)) if self.other else None

    def draw(self, shape):
        z = self.rng.standard_normal(shape)
        if self.other:
            u = self.aux.random(shape)
            if self.uniform.any():
                z[..., self.uniform] = _SQRT3 * (2.0 * u[..., self.uniform] - 1.0)
            if self.laplace.any():
                v = u[..., self.laplace] - 0.5  # in [-0.5, 0.5)
                tail = np.maximum(1.0 - 2.0 * np.abs(v), np.finfo(np.float64).tiny)
                z[..., self.laplace] = -_SQRT_HALF * np.sign(v) * np.log(tail)
        return z


def _simulate(target, X, masks, sigma, noise, n_samples):
    """Monte Carlo moments of the prediction gap.

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
    if P * K <= per_call:
        rows_per_batch, k_chunk = max(1, per_call // (P * K)), K
    else:
        rows_per_batch, k_chunk = 1, max(1, per_call // P)

    m_sq, m_ab = _Moments(out_shape), _Moments(out_shape)
    a_sq, a_ab = _Moments((n,)), _Moments((n,))
    for r0 in range(0, n, rows_per_batch):
        rows = slice(r0, min(n, r0 + rows_per_batch))
        nb = rows.stop - rows.start
        xr = X[rows]
        mr = masks[rows] if masks.shape[0] == n else np.broadcast_to(masks, (nb, P, d))
        done = 0
        for s0 in range(0, K, k_chunk):
            kk = min(k_chunk, K - s0)
            # x + delta for every (row, sample); NaN stays NaN
            xs = xr[:, None, :] + noise.draw((nb, kk, d)) * sigma  # (nb, kk, d)
            xp = np.empty((nb, P, kk, d), dtype=target.dtype)
            xp[...] = xr[:, None, None, :]
            np.copyto(xp, xs[:, None, :, :], where=mr[:, :, None, :])
            y = predict(xp.reshape(-1, d)).reshape(nb, P, kk)
            del xp, xs
            gap = y - f0[rows, None, None]
            sq, ab = gap * gap, np.abs(gap)
            m_sq.add(rows, sq, done)
            m_ab.add(rows, ab, done)
            a_sq.add(rows, sq.mean(axis=1), done)
            a_ab.add(rows, ab.mean(axis=1), done)
            done += kk
    return dict(
        sq=m_sq.mean, sq_se=m_sq.se(K), ab=m_ab.mean, ab_se=m_ab.se(K),
        sq_avg=a_sq.mean, sq_avg_se=a_sq.se(K), ab_avg=a_ab.mean, ab_avg_se=a_ab.se(K),
    )


def _setup(model, X, sigma, noise, n_samples, seed, output, n_jobs):
    target = _resolve(model, output, n_jobs)
    A = _v.as_matrix(X, target)
    d = A.shape[1]
    sig, codes = _v.as_noise(noise, sigma, d)  # per-feature std and family codes
    K = _check_n_samples(n_samples)
    return target, A, sig, _Noise(codes, seed), K


def _ranking_for(target, A, ranking, attributions, sigma, noise, output, n_jobs):
    n, d = A.shape
    r = _as_ranking(ranking, attributions, n, d)
    if r is None:  # the greedy exact ranking, as in pgexact.pgi2
        from ._api import rank

        r = np.asarray(rank(target.exact_model, A, sigma=sigma, noise=noise, n_jobs=n_jobs,
                            output=output), dtype=np.int64).reshape(n, d)
    return r


def _ret(value, se, return_se):
    return (value, se) if return_se else value


# --------------------------------------------------------------------------------------------
# public estimators
# --------------------------------------------------------------------------------------------


def pg2(model, X, features, *, sigma=0.3, noise="normal", output=None, n_samples=1000, seed=0,
        return_se=False, n_jobs=None):
    """Monte Carlo estimate of ``PG2(x, S) = E[(f(x') - f(x))^2]`` for each row of ``X``.

    ``features``: indices or names (the same ``S`` for every row), or a boolean mask of shape
    ``(n, d)`` / ``(d,)``.  Returns ``(n,)`` float64, or ``(value, standard_error)`` with
    ``return_se=True``.
    """
    target, A, s, rng, K = _setup(model, X, sigma, noise, n_samples, seed, output, n_jobs)
    n, d = A.shape
    mask = _v.as_feature_mask(features, target, n).astype(bool)
    r = _simulate(target, A, mask.reshape(-1, 1, d), s, rng, K)
    return _ret(r["sq"][:, 0], r["sq_se"][:, 0], return_se)


def _curve_stats(model, X, ranking, attributions, sigma, noise, output, n_samples, seed, n_jobs,
                 bottom):
    target, A, s, rng, K = _setup(model, X, sigma, noise, n_samples, seed, output, n_jobs)
    r = _ranking_for(target, A, ranking, attributions, sigma, noise, output, n_jobs)
    return _simulate(target, A, _prefix_masks(r, bottom), s, rng, K)


def pg2_curve(model, X, ranking, *, sigma=0.3, noise="normal", output=None, n_samples=1000,
              seed=0, return_se=False, n_jobs=None):
    """Monte Carlo ``PG2`` of every top-k prefix of ``ranking``: ``(n, d)``, column ``k-1``
    is ``S = ranking[:k]``.  ``ranking`` is a ``(d,)`` or ``(n, d)`` permutation."""
    if ranking is None:
        raise TypeError("ranking: required (a (d,) or (n, d) permutation)")
    r = _curve_stats(model, X, ranking, None, sigma, noise, output, n_samples, seed, n_jobs,
                     bottom=False)
    return _ret(r["sq"], r["sq_se"], return_se)


def _averaged(model, X, ranking, attributions, sigma, noise, output, n_samples, seed, return_se,
              n_jobs, bottom, key):
    r = _curve_stats(model, X, ranking, attributions, sigma, noise, output, n_samples, seed,
                     n_jobs, bottom)
    return _ret(r[key], r[key + "_se"], return_se)


def pgi2(model, X, ranking=None, *, attributions=None, sigma=0.3, noise="normal", output=None,
         n_samples=1000, seed=0, return_se=False, n_jobs=None):
    """Monte Carlo ``PGI2``: the mean of ``PG2`` over the top-k prefixes, k = 1..d.

    The ranking is ``ranking`` (``(d,)`` or ``(n, d)``), or ``argsort(-|attributions|)``
    (stable), or, when neither is given, the exact greedy ranking ``pgexact.rank``.
    """
    return _averaged(model, X, ranking, attributions, sigma, noise, output, n_samples, seed,
                     return_se, n_jobs, False, "sq_avg")


def pgu2(model, X, ranking=None, *, attributions=None, sigma=0.3, noise="normal", output=None,
         n_samples=1000, seed=0, return_se=False, n_jobs=None):
    """Monte Carlo ``PGU2``: the mean of ``PG2`` over the bottom-k sets, k = 1..d."""
    return _averaged(model, X, ranking, attributions, sigma, noise, output, n_samples, seed,
                     return_se, n_jobs, True, "sq_avg")


def pgi(model, X, ranking=None, *, attributions=None, sigma=0.3, noise="normal", output=None,
        n_samples=1000, seed=0, return_se=False, n_jobs=None):
    """Monte Carlo ``PGI``: the mean over the top-k prefixes of ``E|f(x') - f(x)|``."""
    return _averaged(model, X, ranking, attributions, sigma, noise, output, n_samples, seed,
                     return_se, n_jobs, False, "ab_avg")


def pgu(model, X, ranking=None, *, attributions=None, sigma=0.3, noise="normal", output=None,
        n_samples=1000, seed=0, return_se=False, n_jobs=None):
    """Monte Carlo ``PGU``: the mean over the bottom-k sets of ``E|f(x') - f(x)|``."""
    return _averaged(model, X, ranking, attributions, sigma, noise, output, n_samples, seed,
                     return_se, n_jobs, True, "ab_avg")
