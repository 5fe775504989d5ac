"""The exact metrics: PG², its curve over a ranking, PGI², PGU² and the greedy ranking."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from . import _core
from ._adapters import load
from ._validation import (
    as_feature_mask,
    as_matrix,
    as_n_jobs,
    as_noise,
    as_ranking,
    ranking_from_attributions,
)
from .ensemble import TreeEnsemble


def _prepare(model: Any, X: Any, sigma: Any, noise: Any, n_jobs: Any, output: Optional[int]
             ) -> Tuple[TreeEnsemble, np.ndarray, np.ndarray, np.ndarray, int]:
    ens = load(model, output=output)
    Xa = as_matrix(X, ens)
    d = ens.n_features
    sig, fam = as_noise(noise, sigma, d)
    return ens, Xa, sig, fam, as_n_jobs(n_jobs)


def pg2(model: Any, X: Any, features: Any, *, sigma: Any = 0.3, noise: Any = "normal",
        n_jobs: Optional[int] = None, output: Optional[int] = None) -> np.ndarray:
    """Exact ``PG²(x, S) = E[(f(x') - f(x))²]`` for every row of X.

    ``features`` is the perturbed set S (indices or names, the same for every row) or a
    boolean mask of shape (d,) or (n, d). Returns an (n,) float64 array, never negative.
    """
    ens, Xa, sig, fam, threads = _prepare(model, X, sigma, noise, n_jobs, output)
    mask = as_feature_mask(features, ens, Xa.shape[0])
    return _core.pg2(ens._arena, Xa, mask, sig, fam, threads)


def pg2_curve(model: Any, X: Any, ranking: Any, *, sigma: Any = 0.3, noise: Any = "normal",
              n_jobs: Optional[int] = None, output: Optional[int] = None) -> np.ndarray:
    """``PG²`` of every prefix of a ranking: column k is PG² of its top k+1 features, (n, d)."""
    ens, Xa, sig, fam, threads = _prepare(model, X, sigma, noise, n_jobs, output)
    rk = as_ranking(ranking, ens.n_features, Xa.shape[0])
    return _core.pg2_curve(ens._arena, Xa, rk, ens.n_features, sig, fam, threads)


def _resolve_ranking(ens: TreeEnsemble, Xa: np.ndarray, ranking: Any, attributions: Any,
                     sig: np.ndarray, fam: np.ndarray, threads: int
                     ) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """The ranking to evaluate, and its top-k curve when the greedy search already has it."""
    if ranking is not None and attributions is not None:
        raise ValueError("ranking: give either ranking or attributions, not both")
    d, n = ens.n_features, Xa.shape[0]
    if ranking is not None:
        return as_ranking(ranking, d, n), None
    if attributions is not None:
        return ranking_from_attributions(attributions, d, n), None
    greedy, curve = _core.greedy_rank(ens._arena, Xa, sig, fam, threads)
    return greedy, curve


def pgi2(model: Any, X: Any, ranking: Any = None, *, attributions: Any = None, sigma: Any = 0.3,
         noise: Any = "normal", n_jobs: Optional[int] = None, output: Optional[int] = None
         ) -> np.ndarray:
    """``PGI²(x, π) = (1/d) Σ_k PG²(x, top-k of π)``, exactly, for every row.

    The ranking π comes from ``ranking``, from ``attributions`` (descending absolute value,
    ties to the lower index), or, when neither is given, from the greedy PG² search.
    """
    ens, Xa, sig, fam, threads = _prepare(model, X, sigma, noise, n_jobs, output)
    rk, curve = _resolve_ranking(ens, Xa, ranking, attributions, sig, fam, threads)
    if curve is None:
        curve = _core.pg2_curve(ens._arena, Xa, rk, ens.n_features, sig, fam, threads)
    return curve.mean(axis=1)


def pgu2(model: Any, X: Any, ranking: Any = None, *, attributions: Any = None, sigma: Any = 0.3,
         noise: Any = "normal", n_jobs: Optional[int] = None, output: Optional[int] = None
         ) -> np.ndarray:
    """``PGU²(x, π) = (1/d) Σ_k PG²(x, bottom-k of π)``: perturbing the least important first."""
    ens, Xa, sig, fam, threads = _prepare(model, X, sigma, noise, n_jobs, output)
    rk, _ = _resolve_ranking(ens, Xa, ranking, attributions, sig, fam, threads)
    reverse = np.ascontiguousarray(rk[..., ::-1])
    return _core.pg2_curve(ens._arena, Xa, reverse, ens.n_features, sig, fam, threads).mean(axis=1)


def rank_with_curve(model: Any, X: Any, *, sigma: Any = 0.3, noise: Any = "normal",
                    n_jobs: Optional[int] = None, output: Optional[int] = None
                    ) -> Tuple[np.ndarray, np.ndarray]:
    """Greedy ranking (n, d) and the PG² of each of its prefixes (n, d)."""
    ens, Xa, sig, fam, threads = _prepare(model, X, sigma, noise, n_jobs, output)
    return _core.greedy_rank(ens._arena, Xa, sig, fam, threads)


def rank(model: Any, X: Any, *, sigma: Any = 0.3, noise: Any = "normal",
         n_jobs: Optional[int] = None, output: Optional[int] = None) -> np.ndarray:
    """Greedy PG² ranking per row, most important first, shape (n, d), int64.

    Feature 1 maximises ``PG²(x, {i})``; feature l+1 maximises ``PG²(x, S_l ∪ {i})``; ties go
    to the lower index.
    """
    return rank_with_curve(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output)[0]
