"""Drop-in explainer: ``pgexact.Explainer(model)(X)`` where notebooks call ``shap.TreeExplainer``.

>>> ex = pgexact.Explainer(model, sigma=0.3)(X_test)
>>> ex.values                       # (n, d) greedy PG² gains; each row sums to PG²(x, all features)
>>> ex.global_importance("geom")    # pandas Series, most important first
>>> shap.plots.beeswarm(ex.to_shap())
>>> ex = pgexact.Explainer(multiclass_model)(X_test)   # every class, as shap.TreeExplainer
>>> ex.values.shape                 # (n, d, K)
>>> shap.plots.beeswarm(ex.to_shap()[:, :, k])           # class k

Only numpy is needed to compute an explanation (:mod:`pgexact.explain.explanation`); pandas, matplotlib
and shap are imported when ``global_importance``, ``plot`` and ``to_shap`` are called.
"""

from __future__ import annotations

from typing import Any, List, Optional, Union

import numpy as np

from .._models._adapters import load_outputs
from .._exact._api import greedy_rankings
from .._data._columns import ColumnOrder
from .._models._outputs import class_labels, is_all
from .._models._pipeline import is_pipeline, split_pipeline, transform
from .._exact._prepare import calls_for
from .._data._scalars import as_n_jobs
from .._exact._tolerance import as_tol
from .._exact._perturbation import as_noise
from ..ensemble import TreeEnsemble
from .explanation import Explanation, describe

__all__ = ["Explainer", "Explanation"]


# ---------------------------------------------------------------------------------------- helpers
def _output_name(estimator: Any, ens: TreeEnsemble) -> str:
    """A short label for the explained output column (also shap's ``output_names``)."""
    k = ens.output
    labels = class_labels(estimator)
    if labels is not None:
        if len(labels) == ens.n_outputs and ens.n_outputs > 1:
            return f"class {labels[k]}"
        if ens.n_outputs == 1 and len(labels) == 2:
            return f"class {labels[1]} (margin)"
    return "output" if ens.n_outputs == 1 else f"output {k}"


# ------------------------------------------------------------------------------------- Explainer
class Explainer:
    """Exact PG² explanations of a tree model, shaped like ``shap.TreeExplainer``'s.

    ``Explainer(model, sigma=0.3)(X)`` returns an :class:`Explanation` whose ``values`` are the
    greedy PG² gains: the feature chosen at step k of the greedy ranking gets
    ``PG²(x, S_k) - PG²(x, S_{k-1})`` (``S_0`` empty), so each row sums to ``PG²(x, all features)``.

    Parameters
    ----------
    model
        Anything :func:`pgexact.load` accepts (XGBoost, LightGBM, CatBoost, scikit-learn tree
        models, a model file path, a ``TreeEnsemble``), or a scikit-learn ``Pipeline`` whose last step is
        one of those. A Pipeline's earlier steps transform ``X`` (pass the raw rows) and its last
        step is explained on the transformed features, named by ``get_feature_names_out``
        when the steps provide names; perturbation happens in that space. The model is parsed
        once, here.
    sigma, noise
        The perturbation, as in :func:`pgexact.pg2`: a positive float or a ``(d,)`` array, and
        ``"normal"``, ``"uniform"``, ``"laplace"`` or a ``pgexact.noise`` object.
    n_jobs
        Threads over rows (None = all cores); results do not depend on it.
    output
        Which output column, as in :func:`pgexact.load`: a position, a class label, or
        ``"all"``. By default a model with several outputs and no default one (a multi-class
        model) is explained for every output, as ``shap.TreeExplainer`` does: the
        :class:`Explanation` then has ``values`` of shape ``(n, d, K)`` (``docs/multiclass.md``).
        A single-output model (and a binary classifier) gives ``(n, d)``.
    tol
        As in :func:`pgexact.rank`: the greedy ranking is the exact one whatever ``tol``; the PG²
        values behind the gains are within ``tol`` (relative) of the sums over all leaf pairs,
        so each gain within ``tol`` times the row's PG² of its prefix. None: rounding level.
    """

    def __init__(self, model: Any, *, sigma: Any = 0.3, noise: Any = "normal",
                 n_jobs: Optional[int] = None, output: Any = None,
                 tol: Optional[float] = None) -> None:
        self._preprocess, estimator = split_pipeline(model)
        self._is_pipeline = is_pipeline(model)
        self.model = model
        #: one TreeEnsemble per explained output (the model parsed once)
        self.ensembles: List[TreeEnsemble] = load_outputs(estimator, output, all_by_default=True)
        #: the explanations carry an outputs axis (``output="all"`` or a multi-class default)
        self.multi_output = is_all(output) or len(self.ensembles) > 1
        #: the (first) explained output's ensemble
        self.ensemble: TreeEnsemble = self.ensembles[0]
        for ens in self.ensembles:
            as_noise(noise, sigma, ens)  # fail here, not at the first call
        as_n_jobs(n_jobs)
        self.tol = as_tol(tol)
        self.sigma = sigma
        self.noise = noise
        self.n_jobs = n_jobs
        names = [_output_name(estimator, ens) for ens in self.ensembles]
        self.output_names: Union[str, List[str]] = names if self.multi_output else names[0]
        labels = class_labels(estimator)
        n_outputs = self.ensemble.n_outputs
        #: the class label of each explained output, when the model has one output per class
        self.output_labels = [labels[e.output] for e in self.ensembles] \
            if self.multi_output and labels is not None and len(labels) == n_outputs else None

    @property
    def n_features(self) -> int:
        return self.ensemble.n_features

    @property
    def feature_names(self) -> List[str]:
        """The model's feature names, else names from a Pipeline's earlier steps, else x0, x1, ..."""
        names = self.ensemble.feature_names
        if names is None and self._preprocess is not None:
            try:
                names = [str(n) for n in self._preprocess.get_feature_names_out()]
            except Exception:  # steps without feature names out
                names = None
        if names is None or len(names) != self.n_features:
            names = [f"x{j}" for j in range(self.n_features)]
        return list(names)

    def _names_for(self, order: ColumnOrder) -> List[str]:
        """X's column names in X's order, else :attr:`feature_names`."""
        names, d = order.names, self.n_features
        if names is None or len(names) != d or names == [str(j) for j in range(d)]:
            return self.feature_names
        return list(names)

    def __call__(self, X: Any, *, progress: Optional[bool] = None) -> "Explanation":
        """Explain every row of X (2-D numpy array or DataFrame; raw rows for a Pipeline).

        Everything per feature (``values``, ``ranking``, ``data``, ``feature_names``) follows
        X's columns as passed (``docs/columns.md``).

        Parameters
        ----------
        X : array_like or DataFrame, shape (n, d)
            The rows to explain.
        progress : bool, optional
            A bar on stderr (tqdm): None when the call is projected to take more than about
            2 s, True always, False never (as in :func:`pgexact.rank`).

        Returns
        -------
        Explanation
            The greedy gains, ranking and curve of every row; with several outputs each of
            them has a last axis of length K (``values[:, :, k]`` is bit for bit what
            ``Explainer(model, output=k)`` gives).
        """
        if self._preprocess is not None:
            X = transform(self._preprocess, X)
        calls = calls_for(self.ensembles, X, sigma=self.sigma, noise=self.noise, n_jobs=self.n_jobs,
                          progress=progress, desc="rank")
        Xa, order = calls[0].X, calls[0].order
        rankings, curves = greedy_rankings(calls, self.tol)
        parts = []
        for ens, ranking, curve in zip(self.ensembles, rankings, curves):
            gains = np.diff(curve, axis=1, prepend=0.0)
            values = np.empty_like(curve)
            np.put_along_axis(values, ranking, gains, axis=1)
            values += 0.0  # no -0.0 in outputs
            parts.append((values, ranking, curve + 0.0, ens.predict(Xa)))

        def stacked(i: int) -> np.ndarray:  # outputs on the last axis, as shap's multi-output
            return np.stack([p[i] for p in parts], axis=-1) if self.multi_output else parts[0][i]

        return Explanation(
            values=stacked(0),
            ranking=stacked(1),
            curve=stacked(2),
            base_values=stacked(3),
            data=order.columns_out(Xa),
            feature_names=self._names_for(order),
            output_names=self.output_names,
            sigma=self.sigma,
            noise=self.noise,
            output_labels=self.output_labels,
        )

    def __repr__(self) -> str:
        via = " (last step of a Pipeline)" if self._is_pipeline else ""
        return (f"pgexact.Explainer({self.ensemble.source or 'TreeEnsemble'}{via}: "
                f"{self.n_features} features, {sum(e.n_trees for e in self.ensembles)} trees, "
                f"sigma={describe(self.sigma)}, noise={describe(self.noise)}, output={self.output_names!r})")
