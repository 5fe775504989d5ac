"""Figures of ``pgexact-bench agreement``: win matrices, the dataset x explainer heat map, flip
probability against the number of rows, metric agreement, and verdict flips on random subsets
of datasets and metrics.

Every ``plot_*`` function takes plain arrays and labels and returns a matplotlib figure;
:func:`plot_all` feeds them from a run and saves the PNGs.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .common import Args, Json, save_figure

__all__ = ["plot_all", "plot_flip_curves", "plot_heat_map", "plot_matrix_grid",
           "plot_subset_flip", "top_pairs"]


def top_pairs(res: Any) -> List[Tuple[int, int, int]]:
    """Per metric, ``(metric, best, runner-up)`` by the mean-score ranks (undefined last)."""
    out = []
    for m in range(len(res.metrics)):
        order = np.argsort(np.asarray(res.ranks)[m], kind="stable")  # NaN sorts last
        out.append((m, int(order[0]), int(order[1])))
    return out


def _grid(n: int, ncols: int, size: float) -> Any:
    import matplotlib.pyplot as plt

    cols = min(n, ncols)
    rows = (n + cols - 1) // cols
    # constrained layout: room for a colour bar shared by several panels (tight_layout has none)
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols + 0.6, size * rows + 0.5),
                             squeeze=False, layout="constrained")
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat


def _annotated(ax: Any, M: np.ndarray, xlabels: Sequence[str], ylabels: Sequence[str],
               cmap: str, vmin: float, vmax: float, fmt: str, fontsize: int = 7) -> Any:
    """An image of M with each cell's value written in it (blank for NaN)."""
    im = ax.imshow(np.ma.masked_invalid(M), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    for (r, c), v in np.ndenumerate(M):
        if np.isfinite(v):
            dark = (v - vmin) / (vmax - vmin + 1e-12)
            ax.text(c, r, format(v, fmt), ha="center", va="center", fontsize=fontsize,
                    color="white" if dark > 0.65 or dark < 0.2 else "black")
    ax.set_xticks(range(len(xlabels)))
    ax.set_xticklabels(xlabels, rotation=40, ha="right", fontsize=7)
    ax.set_yticks(range(len(ylabels)))
    ax.set_yticklabels(ylabels, fontsize=7)
    return im


def plot_matrix_grid(mats: Sequence[np.ndarray], titles: Sequence[str],
                     labels: Sequence[Sequence[str]], suptitle: str, *, vmin: float = 0.0,
                     vmax: float = 1.0, cmap: str = "RdBu", fmt: str = ".2f",
                     ncols: int = 4) -> Any:
    """Square matrices side by side, one panel each, on one colour scale (win matrices:
    row beats column on that share of rows; metric agreement); ``labels[p]`` names panel p's
    rows and columns."""
    fig, axes = _grid(len(mats), ncols, 2.9)
    im = None
    for ax, M, t, lab in zip(axes, mats, titles, labels):
        im = _annotated(ax, np.asarray(M, dtype=float), lab, lab, cmap, vmin, vmax, fmt, 6)
        ax.set_title(t, fontsize=8)
    if im is not None:
        fig.colorbar(im, ax=axes[: len(mats)], shrink=0.8)
    fig.suptitle(suptitle, fontsize=9)
    return fig


def plot_heat_map(table: np.ndarray, datasets: Sequence[str], explainers: Sequence[str],
                  title: str) -> Any:
    """Rows: datasets, columns: explainers, cells: the explainer's rank there (1 = best,
    dark). Vertical stripes = the same verdict on every dataset."""
    import matplotlib.pyplot as plt

    T = np.asarray(table, dtype=float)
    fig, ax = plt.subplots(figsize=(1.0 * len(explainers) + 2.6, 0.38 * len(datasets) + 1.8),
                           layout="constrained")
    im = _annotated(ax, T, explainers, datasets, "viridis_r", 1.0, float(len(explainers)), "g", 8)
    fig.colorbar(im, ax=ax, label="rank (1 = best)")
    ax.set_title(title, fontsize=9)
    return fig


def plot_flip_curves(sizes: Sequence[np.ndarray], curves: Sequence[np.ndarray],
                     curve_labels: Sequence[Sequence[str]], titles: Sequence[str],
                     suptitle: str, threshold: float = 0.05, ncols: int = 3) -> Any:
    """Per panel (a setup), the bootstrap flip probability of a verdict against the number of
    rows, one line per curve (a metric's best vs runner-up); the dashed line is the 5 %
    threshold that defines "rows needed"."""
    fig, axes = _grid(len(curves), ncols, 3.4)
    styles = ["o-", "s--", "^-.", "v:", "D-", "x--", "P-.", "*:"]
    for ax, x, C, labs, t in zip(axes, sizes, curves, curve_labels, titles):
        for c, (y, lab) in enumerate(zip(np.asarray(C, dtype=float), labs)):
            if np.any(np.isfinite(y)):
                ax.plot(x, y, styles[c % len(styles)], ms=3, lw=1, label=lab)
        ax.axhline(threshold, color="k", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 0.62)
        ax.set_xlabel("rows", fontsize=7)
        ax.set_ylabel("P(verdict flips)", fontsize=7)
        ax.set_title(t, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=5.5)
    fig.suptitle(suptitle, fontsize=9)
    return fig


def plot_subset_flip(mean: np.ndarray, winner: np.ndarray, n_datasets: int, n_metrics: int,
                     rule: str) -> Any:
    """The probability that a verdict on a random subset of the datasets and metrics differs
    from the verdict on all of them, against the number of datasets, one line per number of
    metrics: pairwise verdicts (mean over pairs) and the overall winner."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8), sharey=True, layout="constrained")
    x = np.arange(1, n_datasets + 1)
    for ax, P, what in ((axes[0], mean, "a pairwise verdict (mean over pairs)"),
                        (axes[1], winner, "the winner (best mean rank)")):
        P = np.asarray(P, dtype=float)
        for b in range(n_metrics):
            ax.plot(x, P[:, b], "o-", ms=3, lw=1, color=plt.cm.viridis(b / max(1, n_metrics - 1)),
                    label=f"{b + 1} metric{'s' if b else ''}")
        ax.axhline(0.1, color="k", ls=":", lw=0.8)
        ax.set_xlabel("datasets (setups) in the subset")
        ax.set_title(f"P({what} differs from all)", fontsize=8)
        ax.set_xticks(x)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("probability")
    axes[1].legend(fontsize=7)
    fig.suptitle(f"Verdicts on random subsets of {n_datasets} setups x {n_metrics} metrics "
                 f"(rule: {rule}); dotted: 10 %", fontsize=9)
    return fig


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_")


def _short(name: str) -> str:
    return name if len(name) <= 12 else name[:11] + "."


def plot_all(args: Args, payload: Json, results: List[Any]) -> List[str]:
    """Draw every figure of a run into ``--out``; returns the file names."""
    import os


    def save(fig: Any, name: str) -> str:
        return os.path.basename(save_figure(args, fig, name))

    out: List[str] = []
    a = payload["across"]
    labels = [js["label"] for js in payload["setups"]]
    for lab, res in zip(labels, results):
        mats = [np.asarray(res.win_rate)[m] for m in range(len(res.metrics))]
        out.append(save(plot_matrix_grid(
            mats, list(res.metrics), [[_short(e) for e in res.explainers]] * len(mats),
            f"{lab}: share of {res.n_rows} rows on which the row's explainer beats the column's",
            ncols=min(4, len(mats))), f"win_{_slug(lab)}.png"))
    sizes, curves, curve_labels = [], [], []
    for res in results:
        fc = res.flip_curve
        sizes.append(np.asarray(fc["sizes"]))
        P = np.asarray(fc["probability"])
        curves.append(np.stack([P[m, i, j] for m, i, j in top_pairs(res)]))
        curve_labels.append([f"{res.metrics[m]}: {_short(res.explainers[i])} vs "
                             f"{_short(res.explainers[j])}" for m, i, j in top_pairs(res)])
    out.append(save(plot_flip_curves(sizes, curves, curve_labels, labels,
                                     "Bootstrap flip probability of each metric's best vs "
                                     "runner-up, by rows"), "flip_by_rows.png"))
    lowest = min(float(np.nanmin(r.metric_agreement)) for r in results)
    out.append(save(plot_matrix_grid(
        [np.asarray(r.metric_agreement) for r in results], labels,
        [list(r.metrics) for r in results], "Metric agreement (see docs/agreement.md)",
        vmin=-1.0 if lowest < 0 else 0.0,
        ncols=3), "metric_agreement.png"))
    w: Optional[float] = a["kendall_w"]
    out.append(save(plot_heat_map(
        np.asarray(a["heat_map"]), a["datasets"], a["explainers"],
        f"Rank per setup over {len(a['metrics'])} metrics; Kendall's W = "
        f"{'-' if w is None or not np.isfinite(w) else format(w, '.2f')}"), "heat_map.png"))
    sf = a["subset_flip"]
    out.append(save(plot_subset_flip(sf["mean"], sf["winner"], len(a["datasets"]),
                                     len(a["metrics"]), a["rule"]), "subset_flip.png"))
    return out
