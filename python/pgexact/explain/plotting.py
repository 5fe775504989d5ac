"""Matplotlib figures of an :class:`~pgexact.Explanation` (``Explanation.plot``).

Kept apart from the data class so that the explanation itself needs only numpy (and pandas
for its tables); matplotlib is imported when a figure is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

import numpy as np

from .._optional import require
from .._data._scalars import as_choice, as_positive_int

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

    from .explanation import Explanation

__all__ = ["plot_explanation"]


def _new_axes(kind: str, n_shown: int) -> Any:
    plt = require("matplotlib.pyplot", "Explanation.plot()")
    height = 0.8 + 0.35 * n_shown
    _, ax = plt.subplots(figsize=(8.0 if kind in ("ranks", "beeswarm") else 7.0, max(2.5, height)))
    return ax


def plot_explanation(explanation: "Explanation", kind: str = "bar", *, scheme: str = "geom",
                     max_display: Optional[int] = 20, ax: Optional["Axes"] = None) -> Any:
    """Plot an explanation with matplotlib and return the Axes (see ``Explanation.plot``).

    Parameters
    ----------
    explanation : Explanation
        What to plot.
    kind : {"bar", "ranks", "beeswarm", "waterfall"}, default "bar"
        Bars of the global importance; a heat map of how often each feature sits at each rank;
        every row's greedy PG² gain per feature, coloured by the feature's value; or, for one
        row, the PG² curve of its greedy ranking built up feature by feature.
    scheme : str, default "geom"
        The global-importance scheme that orders the features (the same default as
        :meth:`~pgexact.Explanation.global_importance`).
    max_display : int or None, default 20
        At most this many features (and ranks); None shows all.
    ax : matplotlib Axes, optional
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.axes.Axes
    """
    kind = as_choice(kind, ("bar", "ranks", "beeswarm", "waterfall"), "kind")
    top = as_positive_int(max_display, "max_display", allow_none=True) or explanation.n_features
    if kind == "waterfall":
        return _waterfall(explanation, top, ax)
    importance = explanation.global_importance(scheme)
    shown = importance.iloc[: min(top, explanation.n_features)]
    if ax is None:
        ax = _new_axes(kind, len(shown))
    if kind == "bar":
        pos = np.arange(len(shown))[::-1]
        ax.barh(pos, shown.to_numpy(), color="#1f77b4")
        ax.set_yticks(pos)
        ax.set_yticklabels(list(shown.index))
        labels = {"geom": "geometric rank score  sum 2^-rank", "gain": "mean greedy PG² gain"}
        ax.set_xlabel(labels.get(scheme.lower(), f"fraction of rows in the {scheme.lower()}"))
        ax.set_title(f"pgexact global importance ({scheme.lower()})")
        return ax
    order = [explanation.feature_names.index(name) for name in shown.index]
    if kind == "beeswarm":
        return _beeswarm(explanation, order, list(shown.index), ax)
    return _ranks(explanation, order, list(shown.index), min(top, explanation.n_features), ax)


def _ranks(explanation: "Explanation", order: List[int], names: List[str], n_ranks: int,
           ax: Any) -> Any:
    n = max(explanation._2d("ranking").shape[0], 1)
    freq = explanation.rank_counts()[order, :n_ranks] / n
    im = ax.imshow(freq, aspect="auto", cmap="viridis", vmin=0.0, vmax=max(float(freq.max()), 1e-12))
    ax.set_yticks(np.arange(len(order)))
    ax.set_yticklabels(names)
    ax.set_xticks(np.arange(n_ranks))
    ax.set_xticklabels([str(k + 1) for k in range(n_ranks)])
    ax.set_xlabel("rank in the greedy PG² ranking (1 = most important)")
    ax.set_title("how often each feature sits at each rank")
    ax.figure.colorbar(im, ax=ax, label="fraction of rows")
    if len(order) <= 12 and n_ranks <= 12:
        for (i, k), f in np.ndenumerate(freq):
            if f > 0:
                ax.text(k, i, f"{f:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if f < 0.6 * freq.max() else "black")
    return ax


def _beeswarm(explanation: "Explanation", order: List[int], names: List[str], ax: Any) -> Any:
    """Every row's greedy PG² gain per feature (x), features top-down, colour = feature value."""
    values, data = explanation._2d("values"), explanation._2d("data")
    rng = np.random.default_rng(0)  # jitter only: the figure is the same on every call
    pos = np.arange(len(order))[::-1]
    points = None
    for p, j in zip(pos, order):
        col = data[:, j]
        finite = np.isfinite(col)
        lo, hi = (float(np.min(col[finite])), float(np.max(col[finite]))) if finite.any() else (0.0, 1.0)
        shade = np.where(finite, (col - lo) / (hi - lo if hi > lo else 1.0), 0.5)
        y = p + rng.uniform(-0.3, 0.3, size=col.shape[0])
        points = ax.scatter(values[:, j], y, c=shade, cmap="coolwarm", vmin=0.0, vmax=1.0, s=12)
    ax.axvline(0.0, color="#999999", lw=0.8)
    ax.set_yticks(pos)
    ax.set_yticklabels(names)
    ax.set_xlabel("greedy PG² gain of the feature (squared output units)")
    ax.set_title("pgexact: PG² gains per row (values sum to PG²(x, all features))")
    if points is not None:
        ax.figure.colorbar(points, ax=ax, label="feature value (low to high)")
    return ax


def _waterfall(explanation: "Explanation", top: int, ax: Optional[Any]) -> Any:
    """One row: PG² of the top-k prefixes of its greedy ranking, from 0 up to PG²(x, all)."""
    if not explanation.is_single_row:
        raise ValueError("kind: 'waterfall' shows one row; call ex[i].plot('waterfall')")
    d = explanation.n_features
    k = min(top, d)
    ranking, curve = explanation.ranking, explanation.curve
    starts = np.concatenate(([0.0], curve[: k - 1]))
    steps = curve[:k] - starts
    labels = [explanation.feature_names[j] for j in ranking[:k]]
    if k < d:  # the rest of the ranking as one bar
        starts = np.append(starts, curve[k - 1])
        steps = np.append(steps, curve[-1] - curve[k - 1])
        labels.append(f"{d - k} other features")
    if ax is None:
        ax = _new_axes("waterfall", len(labels))
    pos = np.arange(len(labels))[::-1]
    colours = ["#d62728" if s >= 0 else "#1f77b4" for s in steps]
    ax.barh(pos, steps, left=starts, color=colours)
    ax.set_yticks(pos)
    ax.set_yticklabels(labels)
    ax.axvline(0.0, color="#999999", lw=0.8)
    ax.axvline(float(curve[-1]), color="#333333", lw=0.8, ls="--")
    ax.set_xlabel("PG²(x, top-k features of the greedy ranking) (squared output units)")
    ax.set_title(f"f(x) = {float(explanation.base_values):.6g}   PG²(x, all) = {float(curve[-1]):.6g}")
    return ax
