"""Comparing explanations: estimation error, the SHAP ranking, global scores, conciseness.

>>> from pgexact import metrics
>>> metrics.nmae(exact, estimate)                 # sum|y - y_hat| / sum|y|
>>> R = metrics.shap_ranking(model, X)            # (n, d) SHAP ranking, most important first
>>> metrics.global_scores(R, "geom")              # the paper's aggregate R_i per feature
>>> metrics.conciseness(R, "top1")                # entropy (bits) of the normalised R_i
>>> metrics.compare(model, X, sigma_rank=0.3)     # mean PGI² per sigma': greedy vs SHAP vs yours

Only numpy is needed at import; shap and pandas are imported by the functions that use them.
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, Mapping, Optional

import numpy as np

from ._validation import (
    as_importance_scheme,
    as_rankings,
    as_same_shape_pair,
    as_sigma_list,
    ranking_from_attributions,
)

__all__ = ["nmae", "shap_ranking", "shap_values", "global_scores", "conciseness", "compare", "rank_counts"]


# ------------------------------------------------------------------------------ estimation error
def nmae(exact: Any, approx: Any) -> float:
    """Normalised mean absolute error ``sum |y - y_hat| / sum |y|`` (the paper's NMAE).

    ``exact`` (y) and ``approx`` (y_hat) are arrays of the same shape, summed over every
    element. When ``sum |y| == 0`` the result is 0.0 if the arrays are equal, else ``inf``.
    """
    y, y_hat = as_same_shape_pair(exact, approx, ("exact", "approx"))
    num = float(np.abs(y - y_hat).sum())
    den = float(np.abs(y).sum())
    if den == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return num / den


# ------------------------------------------------------------------------------- SHAP ranking
def _is_pgexact_model(model: Any) -> bool:
    from .ensemble import TreeEnsemble

    return isinstance(model, (TreeEnsemble, str, bytes)) or hasattr(model, "__fspath__")


def shap_values(model: Any, X: Any, *, output: Optional[int] = None) -> np.ndarray:
    """``shap.TreeExplainer`` values of the model's raw output column, (n, d) float64.

    The column is the one :func:`pgexact.load` explains (margin for boosted classifiers,
    probability of class 1 for binary forest classifiers, ``output`` for multi-class).
    """
    if _is_pgexact_model(model):
        raise TypeError(
            "model: SHAP needs the library model (XGBoost / LightGBM / scikit-learn object); a "
            "pgexact.TreeEnsemble or a model file path cannot be handed to shap.TreeExplainer")
    try:
        import shap
    except ImportError:  # pragma: no cover - shap is an optional dependency
        raise ImportError("shap_ranking() needs the shap package: pip install shap") from None
    from ._adapters import load
    from ._validation import as_matrix

    ens = load(model, output=output)  # validates output the same way as the exact metrics
    Xa = as_matrix(X, ens)
    data: Any = Xa
    if ens.feature_names is not None:
        import pandas as pd

        data = pd.DataFrame(Xa, columns=list(ens.feature_names))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # shap's and the libraries' chatter about formats
        phi = shap.TreeExplainer(model).shap_values(data, check_additivity=False)
    if isinstance(phi, list):  # older shap: one (n, d) array per output
        phi = np.stack([np.asarray(p) for p in phi], axis=-1)
    phi = np.asarray(phi, dtype=np.float64)
    n, d = Xa.shape
    if phi.ndim == 3:
        if phi.shape[-1] == ens.n_outputs:
            phi = phi[..., ens.output]
        elif phi.shape[-1] == 2 and ens.n_outputs == 1:  # a binary model explained per class
            phi = phi[..., 1]
        else:
            raise ValueError(f"model: shap returned values of shape {phi.shape}; cannot tell which "
                             f"of them is output {ens.output}")
    if phi.shape != (n, d):
        raise ValueError(f"model: shap returned values of shape {phi.shape}, expected ({n}, {d})")
    return np.ascontiguousarray(phi)


def shap_ranking(model: Any, X: Any, *, output: Optional[int] = None) -> np.ndarray:
    """SHAP ranking per row: ``argsort(-|phi|)`` (stable: ties to the lower index), (n, d) int64.

    ``phi`` are ``shap.TreeExplainer`` values on the model's raw output (see
    :func:`shap_values`). ``model`` must be the library model: a :class:`pgexact.TreeEnsemble`
    or a path raises ``TypeError``.
    """
    phi = shap_values(model, X, output=output)
    return ranking_from_attributions(phi, phi.shape[1], phi.shape[0])


# --------------------------------------------------------------------------- global scores
def rank_counts(rankings: Any) -> np.ndarray:
    """``(d, d)`` int64: ``counts[i, k]`` = number of rows in which feature i has rank k+1."""
    R = as_rankings(rankings)
    d = R.shape[1]
    counts = np.zeros((d, d), dtype=np.int64)
    np.add.at(counts, (R, np.broadcast_to(np.arange(d), R.shape)), 1)
    return counts


def global_scores(rankings: Any, scheme: str = "geom") -> np.ndarray:
    """The paper's aggregate score ``R_i`` of every feature, (d,) float64, in column order.

    ``rankings`` is (n, d) (most important first; a (d,) vector is one row; a
    ``pgexact.Explanation`` gives its ranking). With ``k_r(i)`` the 1-based rank of feature i in
    row r:

    - ``"geom"``: ``R_i = sum_r 2 ** -k_r(i)`` (a sum over rows; the total over features is
      ``n * (1 - 2 ** -d)``);
    - ``"top1"``, ``"top2"``, ``"top3"`` (any ``"top<K>"``, K <= d):
      ``R_i = #{r : k_r(i) <= K} / n``, the fraction of rows with feature i in the top K
      (NaN for zero rows).
    """
    R = as_rankings(rankings)
    n, d = R.shape
    kind, K = as_importance_scheme(scheme, d)
    if kind == "gain":
        raise ValueError("scheme: 'gain' needs attribution values, not rankings; use "
                         "Explanation.global_importance('gain')")
    counts = rank_counts(R).astype(np.float64)
    if kind == "geom":
        return counts @ np.exp2(-np.arange(1, d + 1, dtype=np.float64))
    return counts[:, :K].sum(axis=1) / n if n else np.full(d, np.nan)


def conciseness(rankings: Any, scheme: str = "geom") -> float:
    """Entropy in bits of the normalised aggregate scores ``p_i = R_i / sum_j R_j``.

    ``-sum_i p_i log2 p_i`` (``0 log 0 = 0``), with ``R_i`` from :func:`global_scores`. Lower
    is more concise: 0 when one feature takes all the mass (only possible for ``top1``),
    ``log2(d)`` at most. NaN for zero rows.
    """
    R = global_scores(rankings, scheme)
    total = float(R.sum()) if R.size and np.all(np.isfinite(R)) else 0.0
    if total <= 0.0:
        return float("nan")
    p = R / total
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum()) + 0.0  # + 0.0: no -0.0


# --------------------------------------------------------------------------------- compare
_RESERVED = ("greedy", "shap")


def compare(model: Any, X: Any, *, sigma_rank: Any = 0.3,
            sigma_eval: Any = (0.1, 0.3, 0.5, 1.0),
            methods: Optional[Mapping[str, Any]] = None,
            output: Optional[int] = None) -> "Any":
    """Mean exact PGI² over the rows of X, per evaluation noise level, per ranking method.

    Methods (columns, in this order): ``"greedy"`` (the greedy PG² ranking computed at
    ``sigma_rank``, a float or (d,) array), ``"shap"`` (:func:`shap_ranking`), then every
    ``{name: attributions}`` of ``methods`` (each (n, d), or (d,) for all rows, ranked by
    descending absolute value). Rows: ``sigma_eval`` (index named ``"sigma_eval"``), the
    scalar noise levels at which PGI² is evaluated (normal noise). Returns a pandas DataFrame.

    The SHAP column needs the library model; for a :class:`pgexact.TreeEnsemble` or a path it
    is left out with a ``UserWarning``.
    """
    import pandas as pd

    from ._adapters import load
    from ._api import pg2_curve, rank
    from ._validation import as_matrix

    levels = as_sigma_list(sigma_eval, "sigma_eval")
    if methods is None:
        methods = {}
    if not isinstance(methods, Mapping):
        raise TypeError(f"methods: expected a dict {{name: attributions}}, got {type(methods).__name__}")
    ens = load(model, output=output)
    Xa = as_matrix(X, ens)
    n, d = Xa.shape
    rankings: Dict[str, np.ndarray] = {}
    rankings["greedy"] = rank(ens, Xa, sigma=sigma_rank)
    if _is_pgexact_model(model):
        warnings.warn("compare: the 'shap' column is left out: SHAP needs the library model, "
                      "not a pgexact.TreeEnsemble or a path", UserWarning, stacklevel=2)
    else:
        rankings["shap"] = shap_ranking(model, X, output=output)
    for name, attributions in methods.items():
        if not isinstance(name, str):
            raise TypeError(f"methods: names must be strings, got {name!r}")
        if name in _RESERVED:
            raise ValueError(f"methods: the name {name!r} is reserved for a built-in column")
        try:
            rankings[name] = ranking_from_attributions(attributions, d, n)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"methods[{name!r}]: {exc}") from None
    table = {name: [float(pg2_curve(ens, Xa, R, sigma=s).mean()) if n else float("nan")
                    for s in levels]
             for name, R in rankings.items()}
    return pd.DataFrame(table, index=pd.Index(levels, name="sigma_eval"), columns=list(rankings))
