"""Figures of ``pgexact-bench rankers``: ground-truth scores, stability, validation curves and
exact PGI² against run time, one PNG each."""

from __future__ import annotations

import os
from typing import Any, List, Optional

import numpy as np

from .common import Args, Json, save_figure

__all__ = ["plot_all", "plot_pgi2_time", "plot_stability", "plot_truth", "plot_validation"]


def _title(res: Json) -> str:
    m, data = res["model"], res["data"]
    return f"{data['name']} ({data['n_features']} features), {m['library']} {m['n_trees']} trees"


def _bars(ax: Any, names: List[str], values: List[Optional[float]], label: str,
          better: str, intervals: Optional[List[Optional[List[float]]]] = None) -> None:
    """Horizontal bars (with error bars from ``intervals`` where given); a metric a ranker has
    no value for is drawn as 'n/a'."""
    y = np.arange(len(names))
    vals = [np.nan if v is None else v for v in values]
    ax.barh(y, np.nan_to_num(vals), color="tab:blue", alpha=0.8)
    label_at = [0.0 if np.isnan(v) else v for v in vals]
    for i, ci in enumerate(intervals or []):
        if ci is not None and not np.isnan(vals[i]):
            ax.errorbar([vals[i]], [i], xerr=[[vals[i] - ci[0]], [ci[1] - vals[i]]], fmt="none",
                        ecolor="k", capsize=3, lw=1)
            label_at[i] = max(label_at[i], ci[1])  # the value right of its error bar
    for i, v in enumerate(vals):
        ax.text(label_at[i], i, " n/a" if np.isnan(v) else f" {v:.3g}", va="center", fontsize=7)
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first ranker on top (idempotent on shared axes)
    ax.set_xlabel(f"{label} ({better})", fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)


def plot_truth(res: Json) -> Any:
    """R², log loss and top-k precision against the ground truth, one bar per ranker."""
    import matplotlib.pyplot as plt

    rk = res["rankers"]
    names = [r["name"] for r in rk]
    fig, axes = plt.subplots(1, 3, figsize=(13, 0.45 * len(rk) + 1.8), sharey=True)
    _bars(axes[0], names, [r["r2"] for r in rk], "R² vs ground truth", "higher is better")
    _bars(axes[1], names, [r["log_loss"] for r in rk], "log loss vs relevant set",
          "lower is better")
    k = res["settings"]["top_k"]
    _bars(axes[2], names, [r["precision_at_k"] for r in rk], f"precision in the top {k}",
          "higher is better")
    fig.suptitle(f"Ground truth: {_title(res)}" + ("" if res["data"]["relevant"] is not None
                                                   else " (no ground truth: skipped)"),
                 fontsize=10)
    return fig


def plot_stability(res: Json) -> Any:
    """Nogueira stability of the top-k sets and the summed importance variance per ranker."""
    import matplotlib.pyplot as plt

    rk = res["rankers"]
    names = [r["name"] for r in rk]
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.45 * len(rk) + 1.8), sharey=True)
    k, B = res["settings"]["top_k"], res["settings"]["bootstraps"]
    _bars(axes[0], names, [r["stability"] for r in rk],
          f"stability of the top {k} (Nogueira), 95 % interval", "1 = identical sets",
          [r.get("stability_ci95") for r in rk])
    _bars(axes[1], names, [r["importance_variance"] for r in rk],
          "variance of normalised importances, summed", "lower is better")
    fig.suptitle(f"Stability over {B} bootstrap refits: {_title(res)}", fontsize=10)
    return fig


def plot_validation(res: Json) -> Any:
    """Held-out score of the model retrained on the top k features, k = 1..d, per ranker."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    styles = ["o-", "s--", "^-.", "v:", "D-", "x--", "P-.", "*:", "h-"]
    for i, r in enumerate(res["rankers"]):
        c = r["validation_curve"]
        ax.plot(np.arange(1, len(c) + 1), c, styles[i % len(styles)], ms=4,
                label=f"{r['name']} (area {r['validation_area']:.3f})")
    ax.set_xlabel("k (features kept, by the ranker's global importance)")
    ax.set_ylabel(f"held-out {res['settings']['validation_score']}")
    ax.set_title(f"Validation curves: {_title(res)}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def plot_pgi2_time(res: Json) -> Any:
    """Exact mean PGI² (filled) and PGU² (open) against run time per row, log time axis."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for r in res["rankers"]:
        t = max(r["time_per_row_s"], 1e-9)
        (pt,) = ax.semilogx([t], [r["mean_pgi2"]], "o", ms=7, label=r["name"])
        ax.semilogx([t], [r["mean_pgu2"]], "o", ms=7, mfc="none", color=pt.get_color())
    ax.set_xlabel("run time per explained row (s, log scale)")
    ax.set_ylabel(f"exact mean PGI² (filled) / PGU² (open), σ'={res['settings']['sigma_eval']:g}")
    ax.set_title(f"Faithfulness vs cost: {_title(res)}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def plot_all(args: Args, res: Json) -> List[str]:
    """Draw the four figures into ``--out``; returns their file names."""
    out = []
    for fn, name in ((plot_truth, "rankers_truth.png"), (plot_stability, "rankers_stability.png"),
                     (plot_validation, "rankers_validation.png"),
                     (plot_pgi2_time, "rankers_pgi2_time.png")):
        fig = fn(res)
        fig.tight_layout()
        out.append(os.path.basename(save_figure(args, fig, name)))
    return out
