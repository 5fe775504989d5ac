"""Exact expectations beyond PG²: the expected prediction and Yeh et al.'s infidelity."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _core
from ._api import _prepare
from ._validation import as_attributions, as_feature_mask


def expected(model: Any, X: Any, features: Any, *, sigma: Any = 0.3, noise: Any = "normal",
             n_jobs: Optional[int] = None, output: Optional[int] = None) -> np.ndarray:
    """Exact ``E[f(x')]``: the expected raw output when ``features`` are perturbed, (n,)."""
    ens, Xa, sig, fam, threads = _prepare(model, X, sigma, noise, n_jobs, output)
    mask = as_feature_mask(features, ens, Xa.shape[0])
    return _core.expected(ens._arena, Xa, mask, sig, fam, threads)


def infidelity(model: Any, X: Any, attributions: Any, *, sigma: Any = 0.3, noise: Any = "normal",
               n_jobs: Optional[int] = None, output: Optional[int] = None) -> np.ndarray:
    """Exact infidelity (Yeh et al. 2019) of attributions ``a`` per row, (n,):

    ``E[(aᵀI − (f(x) − f(x − I)))²]`` with independent noise ``I`` on every feature.

    Expanding the square gives ``Σ a_j² σ_j² − 2 Σ a_j E[δ_j f(x + δ)] + PG²(x, all)`` (for
    symmetric noise, with ``δ = −I``); each term is exact. A missing feature stays missing, so
    its noise only enters through ``a_j I_j``. The sum is clamped at zero against rounding.
    """
    ens, Xa, sig, fam, threads = _prepare(model, X, sigma, noise, n_jobs, output)
    a = as_attributions(attributions, ens.n_features, Xa.shape[0])
    d = ens.n_features
    everything = np.ones(d, dtype=np.uint8)
    pg2_all = _core.pg2(ens._arena, Xa, everything, sig, fam, threads)
    moments = _core.first_moments(ens._arena, Xa, sig, fam, threads)
    out = (a * a) @ (sig * sig) - 2.0 * np.einsum("ij,ij->i", a, moments) + pg2_all
    return np.maximum(out, 0.0)
