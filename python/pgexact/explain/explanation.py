"""The result of :class:`pgexact.Explainer`: :class:`Explanation`, shaped like shap's.

One output gives ``(n, d)`` values; K outputs (a multi-class model) add a last axis of length
K, as shap's multi-output ``Explanation`` does. Only numpy is needed to hold one; pandas,
matplotlib and shap are imported when ``global_importance``, ``plot`` and ``to_shap`` are
called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Tuple, cast

import numpy as np

from .. import metrics as _metrics
from .._optional import require
from .._models._outputs import single_position
from .plotting import plot_explanation
from ..metrics._checks import as_importance_scheme
from ._checks import as_row_index

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["Explanation"]


def describe(value: Any) -> str:
    """A short form of a setting (sigma, noise) for reprs."""
    if isinstance(value, (int, float, str)):
        return repr(value)
    arr = np.asarray(value) if isinstance(value, (list, tuple, np.ndarray)) else None
    if arr is not None and arr.dtype.kind in "if":
        return f"array({arr.shape[0]})" if arr.ndim == 1 else f"array{arr.shape}"
    return type(value).__name__ if not isinstance(value, type) else value.__name__


class Explanation:
    """PG² explanations of n rows (or of one row, after ``ex[i]``), of one output or of K.

    Attributes (shapes for n rows and d features; one row drops the leading axis; an
    explanation of K outputs adds a last axis of length K, as shap's multi-output Explanation)
    --------------------------------------------------------------------------------------
    values : (n, d) float64, or (n, d, K)
        Greedy PG² gains: ``values[r, ranking[r, k]] = curve[r, k] - curve[r, k-1]``; each row
        sums to ``PG²(x_r, all features)``. A gain can be negative: PG² is not monotone in S.
    ranking : (n, d) int64, or (n, d, K)
        The greedy ranking, most important first (equal to :func:`pgexact.rank`, whose
        ``output="all"`` result is ``(n, K, d)``: ``ranking[:, :, k] == rank(...)[:, k]``).
    curve : (n, d) float64, or (n, d, K)
        ``curve[r, k] = PG²(x_r, first k+1 features of the ranking)``.
    pgi2 : (n,) float64, or (n, K)
        ``PGI²`` of the ranking, the mean of ``curve`` over k (equal to :func:`pgexact.pgi2`).
    pg2 : (n,) float64, or (n, K)
        ``PG²(x, all features)``, the last column of ``curve``.
    base_values : (n,) float64, or (n, K)
        ``f(x)``, the model's raw output (margin for boosted classifiers).
    data : (n, d) float64
        The rows, in X's column order (transformed rows for a Pipeline); no outputs axis.
    feature_names : list of d str
        DataFrame column names when X was a DataFrame, else the model's names, else x0, x1, ...
    output_names : str, or list of K str
        Which output was explained (e.g. ``"output"``, ``"class 2"``), one name per output.
    output_labels : list of K labels or None
        The class label of each output (the estimator's ``classes_``), K outputs only.

    ``ex[:, :, k]`` (or :meth:`for_output`) is the explanation of output k alone, by position
    or class label; ``ex[i]``, ``ex[a:b]`` select rows and keep every output.
    """

    def __init__(self, *, values: Any, ranking: Any, curve: Any, base_values: Any, data: Any,
                 feature_names: List[str], output_names: Any = None, sigma: Any = None,
                 noise: Any = None, pgi2: Any = None, output_labels: Optional[List[Any]] = None) -> None:
        self.values = np.asarray(values, dtype=np.float64)
        self.ranking = np.asarray(ranking, dtype=np.int64)
        self.curve = np.asarray(curve, dtype=np.float64)
        self.base_values = np.asarray(base_values, dtype=np.float64)
        self.data = np.asarray(data, dtype=np.float64)
        multi = self.values.ndim == self.data.ndim + 1
        self.pgi2 = (self.curve.mean(axis=-2 if multi else -1) if pgi2 is None
                     else np.asarray(pgi2, dtype=np.float64))
        self.feature_names = [str(n) for n in feature_names]
        self.output_names = list(output_names) if multi and output_names is not None else output_names
        self.sigma = sigma
        self.noise = noise
        shape = self.values.shape
        if self.data.ndim not in (1, 2) or self.values.ndim not in (self.data.ndim, self.data.ndim + 1):
            raise ValueError(f"values: expected shape (n, d), (d,), (n, d, K) or (d, K) with data "
                             f"(n, d) or (d,), got {shape} and data {self.data.shape}")
        per_row = shape[:-1] if not multi else shape[:-2] + shape[-1:]
        for name in ("ranking", "curve"):
            if getattr(self, name).shape != shape:
                raise ValueError(f"{name}: expected shape {shape}, got {getattr(self, name).shape}")
        if self.data.shape != (shape[:-1] if multi else shape):
            raise ValueError(f"data: expected shape {shape[:-1] if multi else shape}, got {self.data.shape}")
        for name in ("base_values", "pgi2"):
            if getattr(self, name).shape != per_row:
                raise ValueError(f"{name}: expected shape {per_row}, got {getattr(self, name).shape}")
        if len(self.feature_names) != self.data.shape[-1]:
            raise ValueError(f"feature_names: expected {self.data.shape[-1]} names, got {len(self.feature_names)}")
        if multi and self.output_names is not None and len(self.output_names) != shape[-1]:
            raise ValueError(f"output_names: expected {shape[-1]} names, got {len(self.output_names)}")
        #: the class label of each output (``classes_``), when the model has one output per class
        self.output_labels = list(output_labels) if multi and output_labels is not None \
            and len(output_labels) == shape[-1] else None

    # -- shape and slicing -------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        """``(n, d)``, or ``(d,)`` for a single row; ``(n, d, K)`` / ``(d, K)`` for K outputs."""
        return self.values.shape

    @property
    def n_features(self) -> int:
        return int(self.data.shape[-1])

    @property
    def is_single_row(self) -> bool:
        return self.data.ndim == 1

    @property
    def is_multi_output(self) -> bool:
        """True when every per-row result has a last axis over the model's outputs."""
        return self.values.ndim == self.data.ndim + 1

    @property
    def n_outputs(self) -> int:
        """K, the number of outputs explained (1 for a single-output explanation)."""
        return int(self.values.shape[-1]) if self.is_multi_output else 1

    @property
    def pg2(self) -> np.ndarray:
        """``PG²(x, all features)``: the last column of ``curve`` (= the row sums of ``values``)."""
        return self.curve[..., -1, :] if self.is_multi_output else self.curve[..., -1]

    def __len__(self) -> int:
        if self.is_single_row:
            raise TypeError("len() of a single-row Explanation")
        return int(self.values.shape[0])

    def __iter__(self) -> Iterator["Explanation"]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, index: Any) -> "Explanation":
        """Rows: ``ex[i]`` (one row, leading axis dropped), ``ex[a:b]``, ``ex[[i, j]]``, ``ex[mask]``;
        with K outputs, ``ex[rows, :, k]`` selects output k too (a position or a class label)."""
        if isinstance(index, tuple) and self.is_multi_output:
            whole = slice(None)
            if len(index) != 3 or not (isinstance(index[1], slice) and index[1] == whole):
                raise TypeError("index: select rows and an output as ex[rows, :, k] (features stay "
                                "whole: select them in the returned arrays)")
            rows, _, k = index
            one = self.for_output(k)
            return one if isinstance(rows, slice) and rows == whole else one[rows]
        if self.is_single_row:
            raise TypeError("index: this Explanation holds a single row; it cannot be indexed further")
        rows = as_row_index(index, self.values.shape[0])
        return Explanation(
            values=self.values[rows], ranking=self.ranking[rows], curve=self.curve[rows],
            base_values=self.base_values[rows], data=self.data[rows], pgi2=self.pgi2[rows],
            feature_names=self.feature_names, output_names=self.output_names,
            sigma=self.sigma, noise=self.noise, output_labels=self.output_labels,
        )

    def _output_position(self, output: Any) -> int:
        """An output of this explanation: a position in 0..K-1, a class label (of
        :attr:`output_labels`) or one of :attr:`output_names` (``"class 2"``)."""
        names = self._names()
        if isinstance(output, str) and output in names and \
                (self.output_labels is None or output not in self.output_labels):
            return names.index(output)
        k = single_position(output, self.n_outputs, self.output_labels, "Explanation")
        assert k is not None
        return k

    def for_output(self, output: Any) -> "Explanation":
        """The explanation of one output, as ``Explainer(model, output=k)`` gives it.

        Parameters
        ----------
        output : int, class label, ClassLabel or ClassPosition
            A position in 0..K-1, or a class label (as in :func:`pgexact.load`; an int that is
            both, with different meanings, is refused).

        Returns
        -------
        Explanation
            Single-output: ``values`` of shape ``(n, d)``.
        """
        if not self.is_multi_output:
            raise ValueError("output: this Explanation holds one output; it has nothing to select")
        k = self._output_position(output)
        return Explanation(
            values=self.values[..., k], ranking=self.ranking[..., k], curve=self.curve[..., k],
            base_values=self.base_values[..., k], data=self.data, pgi2=self.pgi2[..., k],
            feature_names=self.feature_names,
            output_names=None if self.output_names is None else self.output_names[k],
            sigma=self.sigma, noise=self.noise,
        )

    # -- aggregates --------------------------------------------------------------------------
    def _2d(self, name: str) -> np.ndarray:
        arr = getattr(self, name)
        return cast(np.ndarray, arr[None, :] if arr.ndim == 1 else arr)

    def _one_output(self, output: Any, what: str) -> "Explanation":
        """This explanation, or the one of ``output`` when it holds several."""
        if output is not None:
            return self.for_output(output)
        if self.is_multi_output:
            raise ValueError(f"output: this Explanation holds {self.n_outputs} outputs "
                             f"{self.output_names}; pass output=k (a position or a class label) "
                             f"to {what}")
        return self

    def rank_counts(self, output: Any = None) -> np.ndarray:
        """``(d, d)`` int64: ``counts[i, k]`` = number of rows in which feature i has rank k+1.

        ``output`` selects one output of a multi-output explanation (required there).
        """
        return _metrics.rank_counts(self._one_output(output, "rank_counts()")._2d("ranking"))

    def global_importance(self, scheme: str = "geom", output: Any = None) -> Any:
        """Aggregate score ``R_i`` per feature, a pandas Series sorted descending.

        With n rows and ``k_r(i)`` the 1-based rank of feature i in the greedy ranking of row r:

        - ``"geom"``: ``R_i = sum_r 2 ** -k_r(i)`` (a sum over rows, not a mean; each row
          contributes 1/2 to its top feature, 1/4 to the second, ...; the total over features is
          ``n * (1 - 2 ** -d)``);
        - ``"top1"``, ``"top2"``, ``"top3"`` (any ``"top<K>"``, K <= d): ``R_i = #{r : k_r(i) <= K} / n``,
          the *fraction* of rows in which feature i is among the top K;
        - ``"gain"``: ``R_i = (1/n) sum_r values[r, i]``, the mean greedy PG² gain.

        Ties keep the features' column order. The index holds the feature names.

        With K outputs: ``output=k`` (a position or a class label) gives that output's Series;
        without it, a DataFrame with one column per output (named by :attr:`output_names`),
        rows sorted by the sum over outputs, descending.
        """
        pd = require("pandas", "Explanation.global_importance()")
        if self.is_multi_output and output is None:
            columns = {str(name): self.for_output(k).global_importance(scheme)
                       for k, name in enumerate(self._names())}
            table = pd.DataFrame(columns).loc[self.feature_names]
            table.columns.name = "output"
            total = table.sum(axis=1).to_numpy()
            return table.iloc[np.argsort(-total, kind="stable")]
        one = self._one_output(output, "global_importance()")
        d = one.n_features
        kind, _ = as_importance_scheme(scheme, d)
        if kind == "gain":
            n = one._2d("values").shape[0]
            score = one._2d("values").mean(axis=0) if n else np.full(d, np.nan)
        else:  # one implementation, shared with pgexact.metrics.global_scores
            score = _metrics.global_scores(one._2d("ranking"), scheme)
        series = pd.Series(np.asarray(score, dtype=np.float64) + 0.0,  # no -0.0
                           index=pd.Index(one.feature_names, name="feature"),
                           name=f"pgexact importance ({scheme.lower()})")
        return series.sort_values(ascending=False, kind="stable")

    def _names(self) -> List[str]:
        names = self.output_names if isinstance(self.output_names, list) else None
        return [str(n) for n in names] if names is not None else \
            [f"output {k}" for k in range(self.n_outputs)]

    # -- plots -------------------------------------------------------------------------------
    def plot(self, kind: str = "bar", *, scheme: str = "geom", max_display: Optional[int] = 20,
             ax: Optional["Axes"] = None, output: Any = None) -> "Axes":
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
        With K outputs, ``output=k`` (a position or a class label) plots that output; it is
        required there (``ex.plot("bar", output="class 2")``).
        """
        one = self._one_output(output, "plot()")
        return cast("Axes", plot_explanation(one, kind, scheme=scheme, max_display=max_display,
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

        With K outputs the result is shaped as shap's own multi-output explanation
        (``values`` ``(n, d, K)``, ``base_values`` ``(n, K)``, ``data`` ``(n, d)``,
        ``output_names`` the K names); plot one output with ``ex.to_shap()[:, :, k]``.
        """
        shap = require("shap", "to_shap()")
        multi = self.is_multi_output
        return shap.Explanation(
            values=self.values + 0.0,  # no -0.0
            base_values=np.zeros_like(self.base_values) if self.base_values.ndim else 0.0,
            data=self.data.copy(),
            feature_names=list(self.feature_names),
            # shap cannot infer the output dimensions of one row from a string output name
            output_names=self._names() if multi else
            (None if self.is_single_row else self.output_names),
        )

    def __repr__(self) -> str:
        if self.is_multi_output:
            rows = "1 row" if self.is_single_row else f"{self.values.shape[0]} rows"
            lines = [f"pgexact.Explanation({rows} x {self.n_features} features x {self.n_outputs} "
                     f"outputs; sigma={describe(self.sigma)}, noise={describe(self.noise)})"]
            for k, name in enumerate(self._names()):
                pg2, pgi2 = self.pg2[..., k], self.pgi2[..., k]
                lines.append(f"  {name}: mean PG²(x, all) = {float(np.mean(pg2)) if pg2.size else float('nan'):.6g}"
                             f"   mean PGI² = {float(np.mean(pgi2)) if pgi2.size else float('nan'):.6g}")
            return "\n".join(lines)
        d = self.n_features
        settings = f"sigma={describe(self.sigma)}, noise={describe(self.noise)}, output={self.output_names!r}"
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
