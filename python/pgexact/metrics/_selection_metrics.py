"""Feature-selection benchmark metrics: ground-truth scores, top-k recovery, stability and the
validation curve (the way fseval judges feature rankers). numpy only at import.

Public through :mod:`pgexact.metrics`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "curve_area", "holdout_scorer", "importance_log_loss", "importance_r2", "importance_variance",
    "normalize_importances", "stability", "stability_interval", "top_k_mask",
    "top_k_precision_recall",
    "validation_curve",
]

#: sklearn's log_loss clips probabilities to [eps, 1 - eps] with float64's machine epsilon
_LOG_LOSS_EPS = float(np.finfo(np.float64).eps)


def _vector(name: str, values: Any) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array of per-feature values, got "
                         f"shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return v


def normalize_importances(importances: Any, *, name: str = "importances") -> np.ndarray:
    """Importances divided by their sum, so they add up to 1 (fseval's normalisation).

    Parameters
    ----------
    importances : array_like of float, shape (d,)
        Non-negative per-feature importances, not all zero.
    name : str, default "importances"
        The argument's name, for error messages.

    Returns
    -------
    numpy.ndarray of shape (d,), float64
    """
    v = _vector(name, importances)
    if np.any(v < 0):
        raise ValueError(f"{name}: importances must be non-negative (take absolute values or "
                         "clip at 0 first)")
    total = v.sum()
    if total <= 0:
        raise ValueError(f"{name}: all importances are zero; nothing to normalise")
    out: np.ndarray = v / total
    return out


def _paired(importances: Any, truth: Any) -> Tuple[np.ndarray, np.ndarray]:
    est = normalize_importances(importances)
    gt = _vector("truth", truth)
    if gt.shape != est.shape:
        raise ValueError(f"truth: has {gt.size} features but importances has {est.size}")
    return est, gt


def importance_r2(importances: Any, truth: Any) -> float:
    """R² of the normalised importances against the normalised ground truth (fseval).

    ``1 - Σ (t_j - e_j)² / Σ (t_j - mean t)²`` with ``t = truth / Σ truth`` and
    ``e = importances / Σ importances``. 1 is perfect; 0 is as good as predicting the mean
    importance 1/d for every feature; it can be negative.

    Parameters
    ----------
    importances : array_like of float, shape (d,)
        The estimated importances (non-negative).
    truth : array_like of float, shape (d,)
        The ground-truth importances (non-negative, not all equal).

    Returns
    -------
    float
    """
    est, gt = _paired(importances, truth)
    t = normalize_importances(gt, name="truth")
    ss_tot = float(np.sum((t - t.mean()) ** 2))
    if ss_tot == 0:
        raise ValueError("truth: all ground-truth importances are equal; R² is undefined")
    return 1.0 - float(np.sum((t - est) ** 2)) / ss_tot


def importance_log_loss(importances: Any, truth: Any) -> float:
    """Log loss (natural log) of the normalised importances as probabilities that a feature is
    relevant, against ``truth > 0`` as the label (fseval).

    ``-(1/d) Σ [y_j log e_j + (1 - y_j) log(1 - e_j)]`` with ``y = truth > 0``,
    ``e = importances / Σ importances`` clipped to ``[eps, 1 - eps]`` (float64's machine
    epsilon) as scikit-learn's ``log_loss`` does. Lower is better. Because the normalised
    importances add up to 1, a ranker cannot reach 0 when more than one feature is relevant.

    Parameters
    ----------
    importances : array_like of float, shape (d,)
        The estimated importances (non-negative).
    truth : array_like of float, shape (d,)
        Ground-truth importances or a 0/1 relevance vector; only ``truth > 0`` is used.

    Returns
    -------
    float
    """
    est, gt = _paired(importances, truth)
    y = (gt > 0).astype(np.float64)
    p = np.clip(est, _LOG_LOSS_EPS, 1.0 - _LOG_LOSS_EPS)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log1p(-p)))


def _relevant_mask(relevant: Any, d: int) -> np.ndarray:
    r = np.asarray(relevant)
    if r.dtype == bool:
        if r.shape != (d,):
            raise ValueError(f"relevant: a boolean mask needs {d} entries, got shape {r.shape}")
        mask = r.copy()
    else:
        idx = np.asarray(r, dtype=np.int64).ravel()
        if idx.size and (idx.min() < 0 or idx.max() >= d):
            raise ValueError(f"relevant: feature positions must be in 0..{d - 1}")
        mask = np.zeros(d, dtype=bool)
        mask[idx] = True
    if not mask.any():
        raise ValueError("relevant: the relevant set is empty")
    return mask


def _check_k(k: int, d: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= d:
        raise ValueError(f"k: must be an integer in 1..{d}, got {k!r}")
    return int(k)


def top_k_mask(scores: Any, k: int) -> np.ndarray:
    """0/1 matrix of the ``k`` highest-scoring features of each row (ties to the lower position).

    Parameters
    ----------
    scores : array_like of float, shape (d,) or (B, d)
        Importances, one row per bootstrap (or a single vector).
    k : int
        How many features to select, 1..d.

    Returns
    -------
    numpy.ndarray of shape (B, d), int64
        ``Z[b, j] = 1`` when feature j is in row b's top k; a vector gives one row.
    """
    S = np.asarray(scores, dtype=np.float64)
    if S.ndim == 1:
        S = S[None, :]
    if S.ndim != 2 or S.shape[1] == 0:
        raise ValueError(f"scores: expected shape (d,) or (B, d), got {np.shape(scores)}")
    if not np.all(np.isfinite(S)):
        raise ValueError("scores: contains NaN or infinite values")
    k = _check_k(k, S.shape[1])
    order = np.argsort(-S, axis=1, kind="stable")[:, :k]
    Z = np.zeros(S.shape, dtype=np.int64)
    np.put_along_axis(Z, order, 1, axis=1)
    return Z


def top_k_precision_recall(scores: Any, relevant: Any, k: int) -> Tuple[float, float]:
    """Precision and recall of the relevant features among the ``k`` highest scores.

    Features tied with the k-th score share the remaining places: the tie group contributes
    its expected number of relevant features under a random order of the ties, so an
    importance vector with ties (zeros for unused features) is not credited or penalised for
    where the relevant features happen to stand among the columns.

    Parameters
    ----------
    scores : array_like of float, shape (d,)
        Importances (higher = more important).
    relevant : array_like of int positions, or boolean mask of shape (d,)
        The truly relevant features.
    k : int
        Size of the selected set, 1..d.

    Returns
    -------
    (precision, recall) : tuple of float
        ``|top k ∩ relevant| / k`` and ``|top k ∩ relevant| / |relevant|``.
    """
    s = _vector("scores", scores)
    mask = _relevant_mask(relevant, s.size)
    k = _check_k(k, s.size)
    cut = np.sort(s)[::-1][k - 1]
    above, tied = s > cut, s == cut
    hits = float(np.sum(above & mask))
    hits += (k - int(above.sum())) * float(np.sum(tied & mask)) / int(tied.sum())
    return hits / k, hits / int(mask.sum())


def _selections(Z: Any) -> Tuple[np.ndarray, np.ndarray, float, float]:
    """Z as float (B, d), the selection frequencies p_f, k̄ and ``(k̄/d)(1 - k̄/d)``."""
    A = np.asarray(Z)
    if A.ndim != 2:
        raise ValueError(f"Z: expected a (B, d) 0/1 matrix, one row per resample, got shape "
                         f"{A.shape}")
    B, d = A.shape
    if B < 2:
        raise ValueError(f"Z: needs at least 2 rows (resamples), got {B}")
    if d < 1:
        raise ValueError("Z: has no feature columns")
    if A.dtype != bool and not np.all((A == 0) | (A == 1)):
        raise ValueError("Z: entries must be 0 or 1 (selected or not)")
    A = A.astype(np.float64)
    k_bar = float(A.sum(axis=1).mean())
    denom = (k_bar / d) * (1.0 - k_bar / d)
    if denom <= 0:
        raise ValueError("Z: every row selects no feature or every feature; stability is "
                         "undefined (select between 1 and d-1 features)")
    return A, A.mean(axis=0), k_bar, denom


def stability(Z: Any) -> float:
    """Nogueira, Sechidis and Brown's (2018) stability of feature selection over resamples.

    ``Φ(Z) = 1 - mean_f s_f² / ((k̄/d) (1 - k̄/d))`` where ``s_f² = B/(B-1) p_f (1 - p_f)``
    is the unbiased variance of feature f's selection indicator over the B rows, ``p_f`` the
    fraction of rows selecting f, and ``k̄`` the mean number of selected features per row.
    1 when every row selects the same subset; about 0 for independent random subsets of the
    sizes observed; the lower bound is ``-1/(B-1)``.

    Parameters
    ----------
    Z : array_like of 0/1, shape (B, d)
        ``Z[b, f] = 1`` when the selection on resample b includes feature f (booleans are
        accepted); B >= 2.

    Returns
    -------
    float

    References
    ----------
    S. Nogueira, K. Sechidis, G. Brown. On the stability of feature selection algorithms.
    JMLR 18(174):1-54, 2018.
    """
    A, p, _, denom = _selections(Z)
    B = A.shape[0]
    s2 = B / (B - 1) * p * (1.0 - p)
    return float(1.0 - float(s2.mean()) / denom)


def stability_interval(Z: Any, level: float = 0.95) -> Tuple[float, float, float]:
    """:func:`stability` with its asymptotic normal confidence interval (Nogueira et al. 2018).

    The variance is the paper's estimate ``(4/B²) Σ_b (φ_b - φ̄)²`` with, for resample b
    selecting ``k_b`` features,
    ``φ_b = [ (1/d) Σ_f Z_bf p_f - k_b k̄/d² + (Φ/2)(2 k_b k̄/d² - k_b/d - k̄/d + 1) ] / ((k̄/d)(1 - k̄/d))``;
    the interval is ``Φ ± z sqrt(variance)``. It is asymptotic: with few resamples (B < 30)
    read it as a rough guide. All resamples selecting the same subset give a zero-width
    interval at 1.

    Parameters
    ----------
    Z : array_like of 0/1, shape (B, d)
        As in :func:`stability`.
    level : float, default 0.95
        Coverage of the two-sided interval, in (0, 1).

    Returns
    -------
    (stability, lower, upper) : tuple of float
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level: must be between 0 and 1 (exclusive), got {level!r}")
    from statistics import NormalDist

    A, p, k_bar, denom = _selections(Z)
    B, d = A.shape
    phi_hat = stability(A)
    k = A.sum(axis=1)
    phi = ((A @ p) / d - k * k_bar / d ** 2
           + phi_hat / 2 * (2 * k * k_bar / d ** 2 - k / d - k_bar / d + 1)) / denom
    variance = 4.0 / B ** 2 * float(np.sum((phi - phi.mean()) ** 2))
    half = NormalDist().inv_cdf(0.5 + level / 2) * variance ** 0.5
    return phi_hat, phi_hat - half, phi_hat + half


def importance_variance(importances: Any) -> float:
    """Variance over resamples of the normalised importances, summed over features.

    Each row is normalised to add up to 1 (:func:`normalize_importances`), then the unbiased
    variance of each feature's share over the rows is taken and the d variances are added.
    0 when every resample gives the same shares; lower = more stable.

    Parameters
    ----------
    importances : array_like of float, shape (B, d)
        Non-negative importances, one row per resample; B >= 2.

    Returns
    -------
    float
    """
    M = np.asarray(importances, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] < 2:
        raise ValueError(f"importances: expected shape (B, d) with B >= 2 resamples, got "
                         f"{M.shape}")
    shares = np.stack([normalize_importances(row) for row in M])
    return float(shares.var(axis=0, ddof=1).sum())


def validation_curve(fit_score: Callable[[np.ndarray], float], scores: Any,
                     ks: Optional[Sequence[int]] = None) -> np.ndarray:
    """Score of a model retrained on the top-k features, for each k.

    Parameters
    ----------
    fit_score : callable
        ``fit_score(columns)`` trains an estimator on the training rows restricted to
        ``columns`` (an int array of feature positions, most important first) and returns its
        score on held-out rows (R² or accuracy: higher is better).
        :func:`holdout_scorer` builds one from a scikit-learn style estimator.
    scores : array_like of float, shape (d,)
        Importances; the top k are taken in descending order, ties to the lower position.
    ks : sequence of int, optional
        The subset sizes (each 1..d). Default 1..d.

    Returns
    -------
    numpy.ndarray of shape (len(ks),), float64
    """
    s = _vector("scores", scores)
    d = s.size
    ks = list(range(1, d + 1)) if ks is None else [_check_k(k, d) for k in ks]
    order = np.argsort(-s, kind="stable")
    return np.array([float(fit_score(order[:k])) for k in ks], dtype=np.float64)


def curve_area(curve: Any) -> float:
    """Area under a validation curve over k = 1..d, divided by d (the mean score over k).

    In the score's own units: a curve that reaches the full-model score at k = 1 has the area
    of that score; one that needs every feature has about half of it.

    Parameters
    ----------
    curve : array_like of float, shape (d,)
        Scores at k = 1..d (:func:`validation_curve` with the default ``ks``).

    Returns
    -------
    float
    """
    return float(np.mean(_vector("curve", curve)))


def holdout_scorer(make_estimator: Callable[[], Any], Xtr: Any, ytr: Any, Xte: Any, yte: Any,
                   *, task: str = "regression") -> Callable[[np.ndarray], float]:
    """A ``fit_score`` for :func:`validation_curve`: fit a fresh estimator on the chosen columns
    of the training rows, return R² (regression) or accuracy (classification) on the test rows.

    Parameters
    ----------
    make_estimator : callable
        Returns a new unfitted estimator with ``fit(X, y)`` and ``predict(X)``.
    Xtr, ytr, Xte, yte : array_like
        Training and held-out rows (numpy, columns by position).
    task : {"regression", "classification"}, default "regression"
        Which score: R² or accuracy.

    Returns
    -------
    callable
    """
    if task not in ("regression", "classification"):
        raise ValueError(f"task: must be 'regression' or 'classification', got {task!r}")
    Xtr, Xte = np.asarray(Xtr, dtype=np.float64), np.asarray(Xte, dtype=np.float64)
    ytr, yte = np.asarray(ytr), np.asarray(yte)

    def fit_score(columns: np.ndarray) -> float:
        cols = np.asarray(columns, dtype=np.int64)
        est = make_estimator().fit(np.ascontiguousarray(Xtr[:, cols]), ytr)
        pred = np.asarray(est.predict(np.ascontiguousarray(Xte[:, cols])))
        if task == "classification":
            return float(np.mean(pred == yte))
        ss_tot = float(np.sum((yte - yte.mean()) ** 2))
        return 1.0 - float(np.sum((yte - pred) ** 2)) / ss_tot

    return fit_score
