"""Matplotlib figures of an :class:`~pgexact.Explanation` (``Explanation.plot``).

Kept apart from the data class so that the explanation itself needs only numpy (and pandas
for its tables); matplotlib is imported when a figure is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from ._optional import require
from ._validation import as_choice, as_positive_int

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

    from .explainer import Explanation

__all__ = ["plot_explanation"]


def plot_explanation(explanation: "Explanation", kind: str = "bar", *, scheme: str = "geom",
                     max_display: Optional[int] = 20, ax: Optional["Axes"] = None) -> Any:
    """Plot an explanation with matplotlib and return the Axes (see ``Explanation.plot``).

    Parameters
    ----------
    explanation : Explanation
        What to plot.
    kind : {"bar", "ranks"}, default "bar"
        Bars of the global importance, or a heat map of how often each feature sits at each
        rank.
    scheme : str, default "geom"
        The global-importance scheme that orders the features.
    max_display : int or None, default 20
        At most this many features (and ranks); None shows all.
    ax : matplotlib Axes, optional
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.axes.Axes
    """
    kind = as_choice(kind, ("bar", "ranks"), "kind")
    top = as_positive_int(max_display, "max_display", allow_none=True) or explanation.n_features
    importance = explanation.global_importance(scheme)
    shown = importance.iloc[: min(top, explanation.n_features)]
    if ax is None:
        plt = require("matplotlib.pyplot", "Explanation.plot()")
        height = 0.8 + 0.35 * len(shown)
        _, ax = plt.subplots(figsize=(7.0 if kind == "bar" else 8.0, max(2.5, height)))
    if kind == "bar":
        pos = np.arange(len(shown))[::-1]
        ax.barh(pos, shown.to_numpy(), color="#1f77b4")
        ax.set_yticks(pos)
        ax.set_yticklabels(list(shown.index))
        labels = {"geom": "geometric rank score  sum 2^-rank", "gain": "mean greedy PG² gain"}
        ax.set_xlabel(labels.get(scheme.lower(), f"fraction of rows in the {scheme.lower()}"))
        ax.set_title(f"pgexact global importance ({scheme.lower()})")
        return ax
    n = max(explanation._2d("ranking").shape[0], 1)
    order = [explanation.feature_names.index(name) for name in shown.index]
    n_ranks = min(top, explanation.n_features)
    freq = explanation.rank_counts()[order, :n_ranks] / n
    im = ax.imshow(freq, aspect="auto", cmap="viridis", vmin=0.0, vmax=max(float(freq.max()), 1e-12))
    ax.set_yticks(np.arange(len(order)))
    ax.set_yticklabels(list(shown.index))
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
