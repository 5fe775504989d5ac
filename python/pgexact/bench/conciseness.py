"""``pgexact-bench conciseness`` (paper §5.2): entropy of the aggregated rankings, SHAP
against the greedy PG² ranking at each sigma."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np

from pgexact import metrics

from .common import (Args, Json, echo, finish_outputs, output_axes, pg_column, require_matplotlib,
                     text_table)
from .data import eval_rows
from .models import Setup, model_line, prepare_setups
from .ranking import greedy_rankings, shap_ranking

__all__ = ["SCHEMES", "cmd_conciseness", "conciseness_table", "plot_conciseness",
           "run_conciseness"]

SCHEMES = ("geom", "top1", "top2", "top3")


def run_conciseness(args: Args, setup: Setup, X: np.ndarray, sigmas: Sequence[float],
                    rankings: Optional[Dict[float, np.ndarray]] = None,
                    shap_R: Optional[np.ndarray] = None) -> Json:
    """Entropy of the aggregated SHAP and greedy rankings per scheme, and their top features.

    ``rankings`` ({sigma: ranking}) and ``shap_R`` are computed here unless given (the paper
    subcommand shares them with the ranking experiment).
    """
    d = setup.data.d
    schemes = [s for s in SCHEMES if s == "geom" or int(s[3:]) <= d]
    if rankings is None:
        rankings, _ = greedy_rankings(args, setup, X, sigmas, f"conciseness {setup.label}")
    if shap_R is None:
        shap_R = shap_ranking(setup, X)
    cols = {"SHAP": shap_R, **{pg_column(s): rankings[s] for s in sigmas}}
    entropy = {c: {sc: metrics.conciseness(R, sc) for sc in schemes} for c, R in cols.items()}
    top = {}
    for c, R in cols.items():
        g = metrics.global_scores(R, "geom")
        top[c] = [setup.data.names[j] for j in np.argsort(-g, kind="stable")[:3]]
    return dict(rows=int(X.shape[0]), schemes=schemes, columns=list(cols), entropy=entropy,
                max_entropy_bits=float(np.log2(d)), top_features_geom=top)


def conciseness_table(res: Json) -> str:
    """The printed table: entropy per scheme (rows) and method (columns)."""
    cols = res["columns"]
    out = [[sc] + [f"{res['entropy'][c][sc]:.3f}" for c in cols] for sc in res["schemes"]]
    return text_table(["scheme"] + cols, out)


def plot_conciseness(ax: Any, res: Json, title: str, reference: Optional[Json] = None) -> None:
    """Grouped bars of entropy per scheme and method (dashes: the authors' values)."""
    cols, schemes = res["columns"], res["schemes"]
    width = 0.8 / len(cols)
    x = np.arange(len(schemes))
    for i, c in enumerate(cols):
        ax.bar(x + (i - (len(cols) - 1) / 2) * width, [res["entropy"][c][s] for s in schemes],
               width, label=c, color="0.35" if c == "SHAP" else None)
        if reference and c in reference:
            ax.plot(x + (i - (len(cols) - 1) / 2) * width, [reference[c][s] for s in schemes],
                    "k_", ms=10, mew=2)
    ax.axhline(res["max_entropy_bits"], color="k", ls=":", lw=0.8)
    ax.set_ylim(0, res["max_entropy_bits"] * 1.3)  # room for the legend above the bars
    ax.set_xticks(x)
    ax.set_xticklabels(schemes)
    ax.set_ylabel("entropy (bits, lower = more concise)")
    ax.set_title(title + ("  (— = authors)" if reference else ""), fontsize=10)
    ax.legend(fontsize=7, ncol=len(cols), loc="upper center")


def cmd_conciseness(args: Args) -> int:
    """The ``conciseness`` subcommand: run, print the table, write the figure and JSON (one
    panel and one result per output ``--output`` selects)."""
    require_matplotlib()
    setups = prepare_setups(args)
    X = eval_rows(setups[0].data, args.samples or 200, args.seed + 1)
    fig, axes = output_axes(len(setups), 1, (6.4, 4.4))
    results = []
    for setup, (ax,) in zip(setups, axes):
        res = run_conciseness(args, setup, X, args.sigma)
        echo(f"pgexact conciseness: {model_line(setup)}\n{res['rows']} test rows; entropy in "
             f"bits of the aggregated rankings (lower = more concise; at most log2(d) = "
             f"{res['max_entropy_bits']:.3f})\n")
        echo(conciseness_table(res))
        echo("\ntop-3 features by the geom score: " + "; ".join(
            f"{c}: {', '.join(v)}" for c, v in res["top_features_geom"].items()))
        echo()
        plot_conciseness(ax, res, f"{setup.label}: conciseness of the aggregated rankings")
        results.append(res)
    head = dict(command="conciseness", data=setups[0].data.describe(), seed=args.seed)
    return finish_outputs(args, fig, "conciseness.png", head, setups, results)
