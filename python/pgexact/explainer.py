"""Drop-in explainer: ``pgexact.Explainer(model)(X)`` where notebooks call ``shap.TreeExplainer``.

>>> ex = pgexact.Explainer(model, sigma=0.3)(X_test)
>>> ex.values                       # (n, d) greedy PG² gains; each row sums to PG²(x, all features)
>>> ex.global_importance("geom")    # pandas Series, most important first
>>> shap.plots.beeswarm(ex.to_shap())

Only numpy is needed to compute an explanation; pandas, matplotlib and shap are imported when
``global_importance``, ``plot`` and ``to_shap`` are called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Tuple, cast

import numpy as np

from . import metrics as _metrics
from ._adapters import load
from ._columns import ColumnOrder
from ._pipeline import is_pipeline, split_pipeline, transform
from ._api import rank_with_curve
from ._optional import require
from ._plotting import plot_explanation
from ._validation import (
    as_importance_scheme,
    as_matrix_ordered,
    as_n_jobs,
    as_noise,
    as_row_index,
)
from .ensemble import TreeEnsemble

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    from matplotlib.axes import Axes

__all__ = ["Explainer", "Explanation"]


# ---------------------------------------------------------------------------------------- helpers
def _output_name(estimator: Any, ens: TreeEnsemble) -> str:
    """A short label for the explained output column (also shap's ``output_names``)."""
    k = ens.output
    classes = getattr(estimator, "classes_", None)
    if classes is not None:
        try:
            labels = list(np.asarray(classes).tolist())
        except Exception:  # pragma: no cover - exotic class labels
            labels = []
        if len(labels) == ens.n_outputs and ens.n_outputs > 1:
            return f"class {labels[k]}"
        if ens.n_outputs == 1 and len(labels) == 2:
            return f"class {labels[1]} (margin)"
    return "output" if ens.n_outputs == 1 else f"output {k}"


def _describe(value: Any) -> str:
    if isinstance(value, (int, float, str)):
        return repr(value)
    arr = np.asarray(value) if isinstance(value, (list, tuple, np.ndarray)) else None
    if arr is not None and arr.dtype.kind in "if":
        return f"array({arr.shape[0]})" if arr.ndim == 1 else f"array{arr.shape}"
    return type(value).__name__ if not isinstance(value, type) else value.__name__


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
        Which output column (required for multi-class models), as in :func:`pgexact.load`.
    """

    def __init__(self, model: Any, *, sigma: Any = 0.3, noise: Any = "normal",
                 n_jobs: Optional[int] = None, output: Optional[int] = None) -> None:
        self._preprocess, estimator = split_pipeline(model)
        self._is_pipeline = is_pipeline(model)
        self.model = model
        self.ensemble: TreeEnsemble = load(estimator, output=output)
        as_noise(noise, sigma, self.ensemble)  # fail here, not at the first call
        as_n_jobs(n_jobs)
        self.sigma = sigma
        self.noise = noise
        self.n_jobs = n_jobs
        self.output_names = _output_name(estimator, self.ensemble)

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
            The greedy gains, ranking and curve of every row.
        """
        ens = self.ensemble
        if self._preprocess is not None:
            X = transform(self._preprocess, X)
        Xa, order = as_matrix_ordered(X, ens)
        ranking, curve = rank_with_curve(ens, X, sigma=self.sigma, noise=self.noise, n_jobs=self.n_jobs,
                                         progress=progress)
        gains = np.diff(curve, axis=1, prepend=0.0)
        values = np.empty_like(curve)
        np.put_along_axis(values, ranking, gains, axis=1)
        values += 0.0  # no -0.0 in outputs
        return Explanation(
            values=values,
            ranking=ranking,
            curve=curve + 0.0,
            base_values=ens.predict(Xa),
            data=order.columns_out(Xa),
            feature_names=self._names_for(order),
            output_names=self.output_names,
            sigma=self.sigma,
            noise=self.noise,
        )

    def __repr__(self) -> str:
        via = " (last step of a Pipeline)" if self._is_pipeline else ""
        return (f"pgexact.Explainer({self.ensemble.source or 'TreeEnsemble'}{via}: "
                f"{self.n_features} features, {self.ensemble.n_trees} trees, "
                f"sigma={_describe(self.sigma)}, noise={_describe(self.noise)}, output={self.output_names!r})")


# ----------------------------------------------------------------------------------- Explanation
class Explanation:
    """PG² explanations of n rows (or of one row, after ``ex[i]``).

    Attributes (shapes for n rows and d features; one row drops the leading axis)
    ----------------------------------------------------------------------------
    values : (n, d) float64
        Greedy PG² gains: ``values[r, ranking[r, k]] = curve[r, k] - curve[r, k-1]``; each row
        sums to ``PG²(x_r, all features)``. A gain can be negative: PG² is not monotone in S.
    ranking : (n, d) int64
        The greedy ranking, most important first (equal to :func:`pgexact.rank`).
    curve : (n, d) float64
        ``curve[r, k] = PG²(x_r, first k+1 features of the ranking)``.
    pgi2 : (n,) float64
        ``PGI²`` of the ranking, the mean of ``curve`` over k (equal to :func:`pgexact.pgi2`).
    pg2 : (n,) float64
        ``PG²(x, all features)``, the last column of ``curve``.
    base_values : (n,) float64
        ``f(x)``, the model's raw output (margin for boosted classifiers).
    data : (n, d) float64
        The rows, in X's column order (transformed rows for a Pipeline).
    feature_names : list of d str
        DataFrame column names when X was a DataFrame, else the model's names, else x0, x1, ...
    output_names : str
        Which output was explained (e.g. ``"output"``, ``"class 2"``).
    """

    def __init__(self, *, values: Any, ranking: Any, curve: Any, base_values: Any, data: Any,
                 feature_names: List[str], output_names: Optional[str] = None, sigma: Any = None,
                 noise: Any = None, pgi2: Any = None) -> None:
        self.values = np.asarray(values, dtype=np.float64)
        self.ranking = np.asarray(ranking, dtype=np.int64)
        self.curve = np.asarray(curve, dtype=np.float64)
        self.base_values = np.asarray(base_values, dtype=np.float64)
        self.data = np.asarray(data, dtype=np.float64)
        self.pgi2 = (self.curve.mean(axis=-1) if pgi2 is None else np.asarray(pgi2, dtype=np.float64))
        self.feature_names = [str(n) for n in feature_names]
        self.output_names = output_names
        self.sigma = sigma
        self.noise = noise
        shape = self.values.shape
        if self.values.ndim not in (1, 2):
            raise ValueError(f"values: expected shape (n, d) or (d,), got {shape}")
        for name in ("ranking", "curve", "data"):
            if getattr(self, name).shape != shape:
                raise ValueError(f"{name}: expected shape {shape}, got {getattr(self, name).shape}")
        for name in ("base_values", "pgi2"):
            if getattr(self, name).shape != shape[:-1]:
                raise ValueError(f"{name}: expected shape {shape[:-1]}, got {getattr(self, name).shape}")
        if len(self.feature_names) != shape[-1]:
            raise ValueError(f"feature_names: expected {shape[-1]} names, got {len(self.feature_names)}")

    # -- shape and slicing -------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        """``(n, d)``, or ``(d,)`` for a single row."""
        return self.values.shape

    @property
    def n_features(self) -> int:
        return int(self.values.shape[-1])

    @property
    def is_single_row(self) -> bool:
        return self.values.ndim == 1

    @property
    def pg2(self) -> np.ndarray:
        """``PG²(x, all features)``: the last column of ``curve`` (= the row sums of ``values``)."""
        return self.curve[..., -1]

    def __len__(self) -> int:
        if self.is_single_row:
            raise TypeError("len() of a single-row Explanation")
        return int(self.values.shape[0])

    def __iter__(self) -> Iterator["Explanation"]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, index: Any) -> "Explanation":
        """Rows: ``ex[i]`` (one row, leading axis dropped), ``ex[a:b]``, ``ex[[i, j]]``, ``ex[mask]``."""
        if self.is_single_row:
            raise TypeError("index: this Explanation holds a single row; it cannot be indexed further")
        rows = as_row_index(index, self.values.shape[0])
        return Explanation(
            values=self.values[rows], ranking=self.ranking[rows], curve=self.curve[rows],
            base_values=self.base_values[rows], data=self.data[rows], pgi2=self.pgi2[rows],
            feature_names=self.feature_names, output_names=self.output_names,
            sigma=self.sigma, noise=self.noise,
        )

    # -- aggregates --------------------------------------------------------------------------
    def _2d(self, name: str) -> np.ndarray:
        arr = getattr(self, name)
        return cast(np.ndarray, arr[None, :] if arr.ndim == 1 else arr)

    def rank_counts(self) -> np.ndarray:
        """``(d, d)`` int64: ``counts[i, k]`` = number of rows in which feature i has rank k+1."""
        return _metrics.rank_counts(self._2d("ranking"))

    def global_importance(self, scheme: str = "geom") -> "pandas.Series":
        """Aggregate score ``R_i`` per feature, a pandas Series sorted descending.

        With n rows and ``k_r(i)`` the 1-based rank of feature i in the greedy ranking of row r:

        - ``"geom"``: ``R_i = sum_r 2 ** -k_r(i)`` (a sum over rows, not a mean; each row
          contributes 1/2 to its top feature, 1/4 to the second, ...; the total over features is
          ``n * (1 - 2 ** -d)``);
        - ``"top1"``, ``"top2"``, ``"top3"`` (any ``"top<K>"``, K <= d): ``R_i = #{r : k_r(i) <= K} / n``,
          the *fraction* of rows in which feature i is among the top K;
        - ``"gain"``: ``R_i = (1/n) sum_r values[r, i]``, the mean greedy PG² gain.

        Ties keep the features' column order. The index holds the feature names.
        """
        pd = require("pandas", "Explanation.global_importance()")
        d = self.n_features
        kind, _ = as_importance_scheme(scheme, d)
        if kind == "gain":
            n = self._2d("values").shape[0]
            score = self._2d("values").mean(axis=0) if n else np.full(d, np.nan)
        else:  # one implementation, shared with pgexact.metrics.global_scores
            score = _metrics.global_scores(self._2d("ranking"), scheme)
        series = pd.Series(np.asarray(score, dtype=np.float64) + 0.0,  # no -0.0
                           index=pd.Index(self.feature_names, name="feature"),
                           name=f"pgexact importance ({scheme.lower()})")
        return series.sort_values(ascending=False, kind="stable")

    # -- plots -------------------------------------------------------------------------------
    def plot(self, kind: str = "bar", *, scheme: str = "geom", max_display: Optional[int] = 20,
             ax: Optional["Axes"] = None) -> "Axes":
        """Plot with matplotlib and return the Axes; axes are labelled in PG² terms.

        - ``kind="bar"``: horizontal bars of :meth:`global_importance` (``scheme``, the same
          default), largest on top;
        - ``kind="ranks"``: a heat map of the fraction of rows in which each feature (rows,
          ordered by ``scheme``) sits at each rank (columns, 1 = most important);
        - ``kind="beeswarm"``: every row's greedy PG² gain per feature, coloured by the
          feature's value, features ordered by ``scheme``;
        - ``kind="waterfall"`` (one row, ``ex[i]``): the PG² curve of the row's greedy ranking,
          from 0 up to ``PG²(x, all features)``, one bar per feature.

        ``max_display`` caps the number of features (and ranks) shown; None shows all.
        """
        return cast("Axes", plot_explanation(self, kind, scheme=scheme, max_display=max_display,
                                             ax=ax))

    # -- shap interoperability ---------------------------------------------------------------
    def to_shap(self) -> Any:
        """A ``shap.Explanation`` in PG² units: the greedy PG² gains, base values 0.

        ``values[r]`` sums to ``PG²(x_r, all features)`` and ``base_values`` are 0, so the two
        add up in PG² (squared output) units: a waterfall starts at 0 and ends at
        ``PG²(x, all features)``. ``f(x)`` stays in :attr:`base_values` of this Explanation.
        shap labels its axes for SHAP values ("SHAP value", "E[f(X)]", "f(x)") and its bar
        plot ranks by mean |value| (the ``"gain"`` scheme, in absolute value); for PG² labels
        and the ``"geom"`` default use :meth:`plot` (``"bar"``, ``"beeswarm"``,
        ``"waterfall"``, ``"ranks"``).
        """
        shap = require("shap", "to_shap()")
        return shap.Explanation(
            values=self.values + 0.0,  # no -0.0
            base_values=np.zeros_like(self.base_values) if self.base_values.ndim else 0.0,
            data=self.data.copy(),
            feature_names=list(self.feature_names),
            # shap cannot infer the output dimensions of one row from a string output name
            output_names=None if self.is_single_row else self.output_names,
        )

    def __repr__(self) -> str:
        d = self.n_features
        settings = f"sigma={_describe(self.sigma)}, noise={_describe(self.noise)}, output={self.output_names!r}"
        if self.is_single_row:
            order = ", ".join(self.feature_names[j] for j in self.ranking[:8])
            return (f"pgexact.Explanation(1 row x {d} features; {settings})\n"
                    f"  f(x) = {float(self.base_values):.6g}   PG²(x, all) = {float(self.pg2):.6g}   "
                    f"PGI² = {float(self.pgi2):.6g}\n"
                    f"  greedy ranking: {order}{', ...' if d > 8 else ''}")
        n = self.values.shape[0]
        head = f"pgexact.Explanation({n} rows x {d} features; {settings})"
        if n == 0:
            return head
        counts = _metrics.global_scores(self.ranking, "geom")
        best = np.argsort(-counts, kind="stable")[:5]
        top = ", ".join(self.feature_names[j] for j in best)
        return (f"{head}\n"
                f"  mean PG²(x, all) = {float(self.pg2.mean()):.6g}   mean PGI² = {float(self.pgi2.mean()):.6g}\n"
                f"  top features (geom): {top}{', ...' if d > 5 else ''}")
