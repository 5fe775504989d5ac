"""OpenXAI-compatible prediction-gap metrics: ``pgi`` and ``pgu`` (Agarwal et al., 2022).

>>> from pgexact import openxai
>>> openxai.pgi(model, X, attributions)                 # OpenXAI's PGI, Monte Carlo, per row
>>> openxai.pgu(model, X, attributions, exact=True)     # the squared-gap PGU, exact

Definitions, for one row ``x`` with attributions ``a`` and ``K`` features kept:

- the top-k set ``T_k`` holds the k features of largest ``|a_j|`` (ties: lower index first);
- ``PGI_k = E|f(x') - f(x)|`` with the features of ``T_k`` perturbed, the others fixed;
- ``PGU_k`` is the same with the *complement* of ``T_k`` (``d - k`` features) perturbed;
- ``auc=True`` (OpenXAI's ``AUC=True``): the values for ``k = 1..K`` are combined by the
  trapezoid rule on ``[0, 1]``, ``sklearn.metrics.auc(arange(K) / (K - 1), [v_1, ..., v_K])``;
  with ``K = 1`` (or ``auc=False``) the result is the single value ``v_K``.

``f`` is the model's raw output column (as :func:`pgexact.load`: margin for boosted
classifiers, class-1 probability for binary forest classifiers). The perturbation adds
``sigma * z`` to each perturbed feature, ``z`` standard normal by default; a feature the model
splits on by category is perturbed by category instead (:func:`pgexact.noise.categorical`, as
in the exact functions; OpenXAI flips binary features); missing values stay missing. ``exact=True`` replaces the Monte Carlo absolute gap by the exact squared gap
``E[(f(x') - f(x))^2]`` (:func:`pgexact.pg2`) with the same sets, k and AUC conventions.

Monte Carlo draws: one ``numpy.random.default_rng(seed)`` stream; row ``i`` reads the ``i``-th
block of ``n_samples * d`` standard normals in (row, sample, feature) order (all ``d`` are drawn,
those of fixed features are unused), and every ``k`` reuses the same draws (common random
numbers, as OpenXAI's per-row reseeding does). ``seed=None`` gives fresh draws each call. This
is :mod:`pgexact.mc`'s stream: the predictions go through the library's own batched predict.

How it differs from OpenXAI's code (``openxai/metrics.py``, ``eval_pred_faithfulness``):
OpenXAI evaluates the first column of a torch model's softmax (a probability), reseeds torch
per row (``seed=-1``: the row index), breaks ties with ``torch.topk`` (unspecified order),
flips discrete features with a Bernoulli draw, and accepts ``k`` only as a float in ``(0, 1)``
or ``-1``. Here ``k`` may also be ``1.0`` (all d features) or an integer ``1..d``.
"""

from __future__ import annotations

from typing import Any, Optional, cast

import numpy as np

from . import mc
from ._data._features import ranking_from_attributions
from ._data._rows import as_matrix_ordered
from ._data._scalars import as_positive_int, as_seed, as_top_k
from ._exact._perturbation import as_noise
from ._models._adapters import predictor
from ._models._pipeline import unwrap
from ._exact._prepare import prepare_call
from ._exact._progress import check_progress
from .noise import Sampler

__all__ = ["pgi", "pgu"]


def _trapezoid_auc(values: np.ndarray) -> np.ndarray:
    """Trapezoid rule of the columns of (n, K) values on the grid arange(K) / (K - 1)."""
    K = values.shape[1]
    if K == 1:
        return values[:, 0].copy()
    return cast(np.ndarray, (values[:, :-1] + values[:, 1:]).sum(axis=1) / (2.0 * (K - 1)))


def _evaluate(model: Any, X: Any, attributions: Any, *, k: Any, sigma: Any, noise: Any,
              n_samples: Any, auc: Any, seed: Any, output: Optional[int], exact: Any,
              n_jobs: Optional[int], important: bool, progress: Optional[bool]) -> np.ndarray:
    if not isinstance(auc, (bool, np.bool_)):
        raise TypeError(f"auc: expected True or False, got {auc!r}")
    if not isinstance(exact, (bool, np.bool_)):
        raise TypeError(f"exact: expected True or False, got {exact!r}")
    n_samples = as_positive_int(n_samples, "n_samples")
    seed = as_seed(seed)
    model, X = unwrap(model, X)  # a Pipeline: its final model on the transformed rows
    if exact:
        call = prepare_call(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                            progress=progress, desc="openxai.pgi" if important else "openxai.pgu")
        n, d = call.n_rows, call.n_features
    else:
        target = predictor(model, output, n_jobs)
        A, order = as_matrix_ordered(X, target)
        n, d = A.shape
        kn = as_noise(noise, sigma, mc._structure(model, output), order)
    K = as_top_k(k, d)
    # attribution columns follow X's (by name for a DataFrame); the ranking holds model indices
    ranking = call.attribution_ranking(attributions) if exact else \
        ranking_from_attributions(attributions, d, n, order)
    ks = np.arange(1, K + 1) if auc else np.array([K])

    if exact:
        if important:  # T_k = top-k prefix: column k-1 of the curve
            with call.progress:
                curve = call.pg2_curve(ranking)
            values = curve[:, ks - 1]
        else:  # complement of T_k = bottom-(d-k) prefix of the reversed ranking; empty for k = d
            reverse = np.ascontiguousarray(ranking[:, ::-1])
            with call.progress:
                curve = call.pg2_curve(reverse)
            values = np.zeros((n, ks.size))
            inner = ks < d
            values[:, inner] = curve[:, d - ks[inner] - 1]
    else:
        pos = np.empty_like(ranking)
        np.put_along_axis(pos, ranking, np.arange(d)[None, :], axis=1)  # rank of each feature
        top = pos[:, None, :] < ks[None, :, None]  # (n, P, d): T_k for every k evaluated
        masks = top if important else ~top
        sampler = Sampler(kn.family, seed, kn.categorical)
        stats = mc._simulate(target, A, masks, kn.sigma, sampler, n_samples, check_progress(progress),
                             "openxai.pgi" if important else "openxai.pgu")
        values = stats["ab"]
    return _trapezoid_auc(np.asarray(values, dtype=np.float64))


def pgi(model: Any, X: Any, attributions: Any, *, k: Any = 0.25, sigma: Any = 0.1,
        n_samples: int = 100, auc: bool = True, seed: Optional[int] = None,
        output: Optional[int] = None, exact: bool = False, noise: Any = "normal",
        n_jobs: Optional[int] = None, progress: Optional[bool] = None) -> np.ndarray:
    """OpenXAI's Prediction Gap on Important features, per row, (n,) float64.

    Perturbs the top-k features by ``|attributions|`` and averages ``|f(x') - f(x)|`` over
    ``n_samples`` draws; see the module docstring for the exact conventions.

    Parameters
    ----------
    model
        Anything :func:`pgexact.load` accepts; the library's own predict is used when given.
    X
        (n, d) rows (numpy array or DataFrame).
    attributions
        (n, d) finite attributions (a (d,) vector applies to every row), e.g. SHAP values,
        one column per column of X (a DataFrame is matched by name; ``docs/columns.md``).
    k
        A fraction in ``(0, 1]`` -> ``ceil(k * d)`` features, or an integer in ``1..d``.
    sigma, noise
        Perturbation scale (float or (d,) array) and family, as in :func:`pgexact.pg2`.
    n_samples, seed
        Monte Carlo draws per row and k, and the seed (None: fresh draws).
    auc
        Combine k = 1..K by the trapezoid rule on [0, 1] (True) or return the k = K value.
    output
        Output column for multi-class models.
    exact
        Return the exact squared gap ``E[(f(x') - f(x))^2]`` instead of the Monte Carlo
        absolute gap (``n_samples`` and ``seed`` are then unused).
    n_jobs
        Threads (None: all cores); results do not depend on it.
    progress
        A bar on stderr (tqdm): None when the call is projected to take more than about 2 s,
        True always, False never (as in :func:`pgexact.pg2`).
    """
    return _evaluate(model, X, attributions, k=k, sigma=sigma, noise=noise, n_samples=n_samples,
                     auc=auc, seed=seed, output=output, exact=exact, n_jobs=n_jobs, important=True,
                     progress=progress)


def pgu(model: Any, X: Any, attributions: Any, *, k: Any = 0.25, sigma: Any = 0.1,
        n_samples: int = 100, auc: bool = True, seed: Optional[int] = None,
        output: Optional[int] = None, exact: bool = False, noise: Any = "normal",
        n_jobs: Optional[int] = None, progress: Optional[bool] = None) -> np.ndarray:
    """OpenXAI's Prediction Gap on Unimportant features, per row, (n,) float64.

    Keeps the top-k features by ``|attributions|`` fixed and perturbs the other ``d - k``
    (OpenXAI's inverted mask). Note: :func:`pgexact.pgu2` instead perturbs the bottom-k
    features for k = 1..d (the paper's convention). Parameters as :func:`pgi`.
    """
    return _evaluate(model, X, attributions, k=k, sigma=sigma, noise=noise, n_samples=n_samples,
                     auc=auc, seed=seed, output=output, exact=exact, n_jobs=n_jobs, important=False,
                     progress=progress)
