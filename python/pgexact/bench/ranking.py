"""``pgexact-bench ranking`` (paper §5.1): mean exact PGI² of the greedy PG² ranking and of
SHAP's ranking over evaluation noise levels sigma'."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

import pgexact
from pgexact import metrics

from .common import (call_progress, Args, Json, UsageError, echo, finish_outputs, first_line, log, pg_column, output_axes, progress,
                     require_matplotlib, text_table, timed)
from .data import eval_rows
from .models import Setup, model_line, prepare_setups

__all__ = ["attributions_from_ranking", "cmd_ranking", "greedy_rankings", "plot_ranking",
           "ranking_table", "run_ranking", "shap_ranking"]


def attributions_from_ranking(R: np.ndarray) -> np.ndarray:
    """Scores whose descending order is the ranking R (for metrics.compare's ``methods``)."""
    R = np.asarray(R, dtype=np.int64)
    n, d = R.shape
    A = np.empty((n, d), dtype=np.float64)
    np.put_along_axis(A, R, np.arange(d, 0, -1, dtype=np.float64)[None, :].repeat(n, 0), axis=1)
    return A


def shap_ranking(setup: Setup, X: np.ndarray) -> np.ndarray:
    """SHAP TreeExplainer's |phi| ranking of rows ``X``, ``(n, d)`` int64."""
    try:
        return np.asarray(metrics.shap_ranking(setup.model, X, output=setup.output), dtype=np.int64)
    except ImportError as e:
        raise UsageError(f"the SHAP ranking needs shap: {first_line(e)}") from None


def greedy_rankings(args: Args, setup: Setup, X: np.ndarray, sigmas: Sequence[float],
                    desc: str) -> Tuple[Dict[float, np.ndarray], Dict[float, float]]:
    """The greedy PG² ranking of ``X`` at each sigma: ``({sigma: ranking}, {sigma: seconds})``."""
    out, times = {}, {}
    for s in progress(args, sigmas, total=len(sigmas), desc=desc):
        R, t = timed(pgexact.rank, setup.ens, X, sigma=s, n_jobs=args.n_jobs,
                     progress=call_progress(args))
        out[s], times[s] = np.asarray(R, dtype=np.int64), t
    return out, times


def run_ranking(args: Args, setup: Setup, X: np.ndarray, sigma_rank: Sequence[float],
                sigma_eval: Sequence[float],
                rankings: Optional[Dict[float, np.ndarray]] = None) -> Json:
    """Mean exact PGI² per sigma' of the greedy ranking(s) and of SHAP (metrics.compare)."""
    s0, rest = sigma_rank[0], list(sigma_rank[1:])
    if rankings is None:  # the first sigma's ranking comes with metrics.compare
        rankings = (greedy_rankings(args, setup, X, rest, f"ranking {setup.label}")[0]
                    if rest else {})
    methods = {pg_column(s): attributions_from_ranking(rankings[s]) for s in rest}
    log(args, f"{setup.label}: mean PGI² over {X.shape[0]} rows, sigma' = "
        f"{', '.join(f'{s:g}' for s in sigma_eval)} ...")
    try:
        df = metrics.compare(setup.model, X, sigma_rank=s0, sigma_eval=list(sigma_eval),
                             methods=methods, output=setup.output)
    except ImportError as e:
        raise UsageError(f"the SHAP ranking needs shap: {first_line(e)}") from None
    df = df.rename(columns={"greedy": pg_column(s0), "shap": "SHAP"})
    cols = ["SHAP"] + [pg_column(s) for s in sigma_rank]
    mean = {c: [float(v) for v in df[c].to_numpy()] for c in cols}
    ratio = {c: [float(a / b) if b > 0 else float("nan") for a, b in zip(mean[c], mean["SHAP"])]
             for c in cols if c != "SHAP"}
    return dict(rows=int(X.shape[0]), sigma_rank=list(sigma_rank), sigma_eval=list(sigma_eval),
                methods=cols, mean_pgi2=mean, ratio_to_shap=ratio)


def ranking_table(res: Json) -> str:
    """The printed table: mean PGI² per method and its ratio to SHAP, one line per sigma'."""
    cols = res["methods"]
    pg = [c for c in cols if c != "SHAP"]
    out = []
    for i, s in enumerate(res["sigma_eval"]):
        out.append([f"{s:g}"] + [f"{res['mean_pgi2'][c][i]:.4g}" for c in cols]
                   + [f"{res['ratio_to_shap'][c][i]:.3f}" for c in pg])
    return text_table(["sigma'"] + cols + [f"{c} / SHAP" for c in pg], out)


def plot_ranking(axes: Any, res: Json, title: str, reference: Optional[Json] = None) -> None:
    """Left: mean PGI² against sigma'; right: the ratio to SHAP (crosses: the authors')."""
    ax1, ax2 = axes
    xs = res["sigma_eval"]
    for c in res["methods"]:
        ax1.loglog(xs, res["mean_pgi2"][c], "o-" if c != "SHAP" else "s--k", label=c)
    ax1.set_xlabel("σ' (evaluation noise)")
    ax1.set_ylabel("mean PGI²")
    ax1.set_title(title, fontsize=10)
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=8)
    for c, r in res["ratio_to_shap"].items():
        (line,) = ax2.semilogx(xs, r, "o-", label=c)
        if reference and c in reference:
            ref = reference[c]
            keys = sorted(ref, key=float)  # '0.01', '0.1', '1.0' in numeric order
            ax2.semilogx([float(k) for k in keys], [ref[k] for k in keys], "x:",
                         color=line.get_color(), alpha=0.7, label=f"{c} (authors)")
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.set_xlabel("σ' (evaluation noise)")
    ax2.set_ylabel("mean PGI² / SHAP's")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=7)


def cmd_ranking(args: Args) -> int:
    """The ``ranking`` subcommand: run, print the table, write the figure and JSON (one row of
    panels and one result per output ``--output`` selects)."""
    require_matplotlib()
    setups = prepare_setups(args)
    X = eval_rows(setups[0].data, args.samples or 200, args.seed + 1)
    fig, axes = output_axes(len(setups), 2, (11, 4.4))
    results = []
    for setup, row in zip(setups, axes):
        res = run_ranking(args, setup, X, args.sigma_rank, args.sigma_eval)
        echo(f"pgexact ranking: {model_line(setup)}\n{res['rows']} test rows; greedy PG² ranking "
             f"at sigma = {', '.join(f'{s:g}' for s in args.sigma_rank)}; SHAP = "
             "TreeExplainer |phi| order; exact mean PGI² (higher = more faithful)\n")
        echo(ranking_table(res))
        echo()
        plot_ranking(row, res, f"{setup.label}: greedy PG² ranking vs SHAP")
        results.append(res)
    head = dict(command="ranking", data=setups[0].data.describe(), seed=args.seed)
    return finish_outputs(args, fig, "ranking.png", head, setups, results)
