"""Exact expectations beyond PG²: the expected prediction and Yeh et al.'s infidelity."""

from __future__ import annotations

from typing import Optional, cast

import numpy as np

from .._models._outputs import stack_outputs
from ._prepare import prepare_call, prepare_calls
from .._typing import ArrayLike, FloatArray, ModelLike, NoiseLike, OutputLike, SigmaLike
from .._data._features import as_attributions

__all__ = ["expected", "infidelity"]


def expected(model: ModelLike, X: ArrayLike, features: ArrayLike, *, sigma: SigmaLike = 0.3,
             noise: NoiseLike = "normal", n_jobs: Optional[int] = None,
             output: OutputLike = None, progress: Optional[bool] = None) -> FloatArray:
    """Exact ``E[f(x')]``: the expected raw output when ``features`` are perturbed.

    Parameters
    ----------
    model, X, features
        As in :func:`pgexact.pg2`.
    sigma, noise, n_jobs, output, progress
        As in :func:`pgexact.pg2` (``output="all"``: every output).

    Returns
    -------
    numpy.ndarray of shape (n,), float64 (``(n, K)`` for ``output="all"``)
        The expected prediction per row.
    """
    calls = prepare_calls(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                          progress=progress, desc="expected")
    with calls[0].progress:
        return stack_outputs(output, [call.expected(call.feature_mask(features)) for call in calls])


def infidelity(model: ModelLike, X: ArrayLike, attributions: ArrayLike, *,
               sigma: SigmaLike = 0.3, noise: NoiseLike = "normal",
               n_jobs: Optional[int] = None, output: OutputLike = None,
               progress: Optional[bool] = None) -> FloatArray:
    """Exact infidelity (Yeh et al. 2019) of attributions ``a`` per row.

    ``E[(aᵀI − (f(x) − f(x − I)))²]`` with independent noise ``I`` on every feature.

    Expanding the square gives ``Σ a_j² σ_j² − 2 Σ a_j E[δ_j f(x + δ)] + PG²(x, all)`` (for
    symmetric noise, with ``δ = −I``); each term is exact. A missing feature stays missing, so
    its noise only enters through ``a_j I_j``. The sum is clamped at zero against rounding.

    Parameters
    ----------
    model, X
        As in :func:`pgexact.pg2`.
    attributions : array_like of shape (n, d) or (d,)
        The attributions ``a`` of each row.
    sigma, noise, n_jobs, output, progress
        As in :func:`pgexact.pg2`; one output at a time (``output="all"`` is refused).

    Returns
    -------
    numpy.ndarray of shape (n,), float64
        The infidelity per row, never negative.
    """
    call = prepare_call(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                        progress=progress, desc="infidelity", stages=2)
    if not bool(np.all(call.noise.additive())):
        raise ValueError("noise: infidelity is defined for additive noise (x' = x + delta) on every "
                         "feature; a categorical or unperturbed (None) feature has no delta. Pass "
                         "'normal', 'uniform' or 'laplace' for every feature (a model that splits by "
                         "category cannot be scored by infidelity)")
    a = as_attributions(attributions, call.n_features, call.n_rows, call.order)
    everything = np.ones(call.n_features, dtype=np.uint8)
    with call.progress:
        pg2_all = call.pg2(everything)
        moments = call.first_moments()
    sig = call.sigma
    out = (a * a) @ (sig * sig) - 2.0 * np.einsum("ij,ij->i", a, moments) + pg2_all
    return cast(FloatArray, np.maximum(out, 0.0))
