"""Model comparison: SHAP values and rankings, and mean PGI² of rankings side by side.

Needs the optional shap and pandas (imported when called, with a message naming the extra).
Public through :mod:`pgexact.metrics`.
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from .._models._adapters import load_outputs
from .._exact._api import pg2_curve, rank
from .._optional import require
from .._models._outputs import class_labels, is_all, per_output
from .._data._features import ranking_from_attributions
from .._data._rows import as_matrix_ordered
from ._checks import as_sigma_list
from ..ensemble import TreeEnsemble

__all__ = ["compare", "shap_ranking", "shap_values"]


# ------------------------------------------------------------------------------- SHAP ranking
def _is_pgexact_model(model: Any) -> bool:
    return isinstance(model, (TreeEnsemble, str, bytes)) or hasattr(model, "__fspath__")


def shap_values(model: Any, X: Any, *, output: Any = None) -> np.ndarray:
    """``shap.TreeExplainer`` values of the model's raw output column, (n, d) float64.

    Columns follow X's as passed (``docs/columns.md``).

    The column is the one :func:`pgexact.load` explains (margin for boosted classifiers,
    probability of class 1 for binary forest classifiers, ``output`` for multi-class).

    Parameters
    ----------
    model : XGBoost, LightGBM, CatBoost or scikit-learn model object
        The library model (not a TreeEnsemble or a path: SHAP needs the object).
    X : array_like or DataFrame, shape (n, d)
        The rows.
    output : int, class label, ClassLabel, ClassPosition or "all", optional
        The output column, as in :func:`pgexact.load`; ``"all"``: every output.

    Returns
    -------
    numpy.ndarray of shape (n, d), float64 (``(n, d, K)`` for ``output="all"``, shap's layout)
        The SHAP values.
    """
    phis = _shap_per_output(model, X, load_outputs(model, output) if not _is_pgexact_model(model)
                            else [])
    return np.stack(phis, axis=-1) if is_all(output) else phis[0]


def _shap_per_output(model: Any, X: Any, ensembles: List[TreeEnsemble]) -> List[np.ndarray]:
    """SHAP values (n, d) in X's column order of each of ``ensembles`` (outputs of ``model``),
    from one ``shap.TreeExplainer`` run."""
    if _is_pgexact_model(model):
        raise TypeError(
            "model: SHAP needs the library model (XGBoost / LightGBM / scikit-learn object); a "
            "pgexact.TreeEnsemble or a model file path cannot be handed to shap.TreeExplainer")
    shap = require("shap", "shap_ranking()")
    ens = ensembles[0]
    Xa, order = as_matrix_ordered(X, ens)
    data: Any = Xa
    if ens.feature_names is not None:
        pd = require("pandas", "shap_ranking() with feature names")
        data = pd.DataFrame(Xa, columns=list(ens.feature_names))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # shap's and the libraries' chatter about formats
        phi = shap.TreeExplainer(model).shap_values(data, check_additivity=False)
    if isinstance(phi, list):  # older shap: one (n, d) array per output
        phi = np.stack([np.asarray(p) for p in phi], axis=-1)
    phi = np.asarray(phi, dtype=np.float64)
    n, d = Xa.shape
    out = []
    for ens in ensembles:
        one = phi
        if phi.ndim == 3:
            if phi.shape[-1] == ens.n_outputs:
                one = phi[..., ens.output]
            elif phi.shape[-1] == 2 and ens.n_outputs == 1:  # a binary model explained per class
                one = phi[..., 1]
            else:
                raise ValueError(f"model: shap returned values of shape {phi.shape}; cannot tell which "
                                 f"of them is output {ens.output}")
        if one.shape != (n, d):
            raise ValueError(f"model: shap returned values of shape {one.shape}, expected ({n}, {d})")
        out.append(order.columns_out(np.ascontiguousarray(one)))  # X's column order
    return out


def shap_ranking(model: Any, X: Any, *, output: Any = None) -> np.ndarray:
    """SHAP ranking per row: ``argsort(-|phi|)`` (stable: ties to the lower index), (n, d) int64,
    as positions of X's columns.

    ``phi`` are ``shap.TreeExplainer`` values on the model's raw output (see
    :func:`shap_values`). ``model`` must be the library model: a :class:`pgexact.TreeEnsemble`
    or a path raises ``TypeError``.

    Parameters
    ----------
    model, X, output
        As in :func:`shap_values`.

    Returns
    -------
    numpy.ndarray of shape (n, d), int64 (``(n, K, d)`` for ``output="all"``, as :func:`pgexact.rank`)
        The ranking of each row, most important first.
    """
    phi = shap_values(model, X, output=output)
    if phi.ndim == 3:
        return np.stack([ranking_from_attributions(phi[..., k], phi.shape[1], phi.shape[0])
                         for k in range(phi.shape[2])], axis=1)
    return ranking_from_attributions(phi, phi.shape[1], phi.shape[0])


# --------------------------------------------------------------------------------- compare
_RESERVED = ("greedy", "shap")


def compare(model: Any, X: Any, *, sigma_rank: Any = 0.3,
            sigma_eval: Any = (0.1, 0.3, 0.5, 1.0),
            methods: Optional[Mapping[str, Any]] = None,
            output: Any = None, progress: Optional[bool] = None) -> "Any":
    """Mean exact PGI² over the rows of X, per evaluation noise level, per ranking method.

    Methods (columns, in this order): ``"greedy"`` (the greedy PG² ranking computed at
    ``sigma_rank``, a float or (d,) array), ``"shap"`` (:func:`shap_ranking`), then every
    ``{name: attributions}`` of ``methods`` (each (n, d), or (d,) for all rows, ranked by
    descending absolute value). Rows: ``sigma_eval`` (index named ``"sigma_eval"``), the
    scalar noise levels at which PGI² is evaluated (normal noise). Returns a pandas DataFrame.

    The SHAP column needs the library model; for a :class:`pgexact.TreeEnsemble` or a path it
    is left out with a ``UserWarning``.

    Parameters
    ----------
    model, X, output
        As in :func:`pgexact.pgi2`. With ``output="all"`` the columns are a MultiIndex
        ``(output, method)``: one block per output (named ``"output k"``, or ``"class c"`` for
        a classifier), each equal to ``compare(..., output=k)``; attributions in ``methods``
        may then be ``(n, d, K)`` or a list of K ``(n, d)`` arrays (one per output).
    sigma_rank : float or array_like of shape (d,), default 0.3
        Noise of the greedy ranking.
    sigma_eval : sequence of float
        Noise levels at which PGI² is evaluated.
    methods : dict of str to array_like, optional
        More rankings, as attributions.
    progress : bool, optional
        As in :func:`pgexact.pgi2`, for each exact call (the greedy ranking, then one PG²
        curve per method and noise level).

    Returns
    -------
    pandas.DataFrame
        Mean PGI² per ``sigma_eval`` (rows) and method (columns).
    """
    pd = require("pandas", "compare()")
    levels = as_sigma_list(sigma_eval, "sigma_eval")
    if methods is None:
        methods = {}
    if not isinstance(methods, Mapping):
        raise TypeError(f"methods: expected a dict {{name: attributions}}, got {type(methods).__name__}")
    for name in methods:
        if not isinstance(name, str):
            raise TypeError(f"methods: names must be strings, got {name!r}")
        if name in _RESERVED:
            raise ValueError(f"methods: the name {name!r} is reserved for a built-in column")
    ensembles = load_outputs(model, output)
    K = len(ensembles)
    if _is_pgexact_model(model):
        warnings.warn("compare: the 'shap' column is left out: SHAP needs the library model, "
                      "not a pgexact.TreeEnsemble or a path", UserWarning, stacklevel=2)
        shap_phi: List[Optional[np.ndarray]] = [None] * K
    else:
        shap_phi = list(_shap_per_output(model, X, ensembles))
    per_method = {name: per_output(attributions, K, output, f"methods[{name!r}]")
                  for name, attributions in methods.items()}
    tables = [_compare_one(ens, X, sigma_rank, levels, shap_phi[k],
                           {name: values[k] for name, values in per_method.items()}, progress)
              for k, ens in enumerate(ensembles)]
    if not is_all(output):
        return tables[0]
    labels = class_labels(model) if not _is_pgexact_model(model) else None
    keys = [f"class {labels[e.output]}" if labels is not None and len(labels) == e.n_outputs
            else f"output {e.output}" for e in ensembles]
    return pd.concat(tables, axis=1, keys=keys, names=["output", "method"])


def _compare_one(ens: TreeEnsemble, X: Any, sigma_rank: Any, levels: Tuple[float, ...],
                 phi: Optional[np.ndarray], methods: Mapping[str, Any],
                 progress: Optional[bool]) -> Any:
    """The table of :func:`compare` for one output (``phi``: its SHAP values, or None)."""
    pd = require("pandas", "compare()")
    Xa, order = as_matrix_ordered(X, ens)
    n, d = Xa.shape
    # every ranking below holds positions of X's columns, as the functions it is passed to expect
    rankings: Dict[str, np.ndarray] = {}
    rankings["greedy"] = rank(ens, X, sigma=sigma_rank, progress=progress)
    if phi is not None:
        rankings["shap"] = ranking_from_attributions(phi, d, n)
    for name, attributions in methods.items():
        try:
            rankings[name] = ranking_from_attributions(attributions, d, n, order.in_x_order())
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"methods[{name!r}]: {exc}") from None
    table = {name: [float(pg2_curve(ens, X, R, sigma=s, progress=progress).mean())
                    if n else float("nan")
                    for s in levels]
             for name, R in rankings.items()}
    return pd.DataFrame(table, index=pd.Index(levels, name="sigma_eval"), columns=list(rankings))
