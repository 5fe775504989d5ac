"""``pgexact-bench accuracy`` (paper §4.3): NMAE of Monte Carlo against the exact PG² over
random (row, S) pairs, per noise level and iteration count, and at equal time."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

import pgexact
from pgexact import mc, metrics

from .common import (call_progress, Args, Json, bar, best_time, echo, finish_command, fmt_time,
                     require_matplotlib, text_table)
from .data import random_pairs
from .models import Setup, model_line, prepare_setup

__all__ = ["accuracy_tables", "cmd_accuracy", "matched_iterations", "plot_accuracy",
           "run_accuracy"]


def matched_iterations(ks: Sequence[int], times: Sequence[float], target: float) -> int:
    """Iterations at which Monte Carlo takes ``target`` seconds: piecewise linear in k through
    the measured (k, time) points, extended linearly past either end; at least 1."""
    order = np.argsort(np.asarray(ks, dtype=np.float64))
    k_sorted = np.asarray(ks, dtype=np.float64)[order]
    t_sorted = np.asarray(times, dtype=np.float64)[order]
    if len(k_sorted) == 1:
        k = k_sorted[0] * target / t_sorted[0]
    elif target <= t_sorted[0]:
        slope = max((t_sorted[1] - t_sorted[0]) / (k_sorted[1] - k_sorted[0]), 1e-300)
        k = k_sorted[0] - (t_sorted[0] - target) / slope
    elif target >= t_sorted[-1]:
        slope = max((t_sorted[-1] - t_sorted[-2]) / (k_sorted[-1] - k_sorted[-2]), 1e-300)
        k = k_sorted[-1] + (target - t_sorted[-1]) / slope
    else:
        k = float(np.interp(target, np.maximum.accumulate(t_sorted), k_sorted))
    return int(min(max(round(k), 1), 10_000_000))


def run_accuracy(args: Args, setup: Setup, sigmas: Sequence[float],
                 iterations: Sequence[int], n_pairs: int) -> Json:
    """NMAE of Monte Carlo vs exact PG² over random (row, S) pairs; times per pair."""
    Xp, mask = random_pairs(setup.data.Xte, n_pairs, args.seed)
    N = Xp.shape[0]
    iterations = sorted(set(int(k) for k in iterations))
    # warm-up: thread pools, first-call allocations
    pgexact.pg2(setup.ens, Xp[:1], mask[:1], sigma=sigmas[0], n_jobs=args.n_jobs, progress=False)
    mc.pg2(setup.model, Xp[:1], mask[:1], sigma=sigmas[0], n_samples=4, seed=0, n_jobs=args.n_jobs)

    rows, matched = [], []
    pbar = bar(args, total=len(sigmas) * (len(iterations) + 2), desc=f"accuracy {setup.label}")
    for i, s in enumerate(sigmas):
        pbar.set_postfix_str(f"sigma={s:g} exact")
        exact, t_exact = best_time(
            lambda: pgexact.pg2(setup.ens, Xp, mask, sigma=s, n_jobs=args.n_jobs,
                                progress=call_progress(args)))
        exact = np.asarray(exact, dtype=np.float64)
        t_exact /= N
        pbar.update()
        t_mc = []
        for j, k in enumerate(iterations):
            pbar.set_postfix_str(f"sigma={s:g} MC k={k}")
            est, t = best_time(lambda: mc.pg2(setup.model, Xp, mask, sigma=s, n_samples=k,
                                              seed=args.seed + 1000 * i + j,
                                              n_jobs=args.n_jobs))
            t_mc.append(t / N)
            rows.append(dict(sigma=s, iterations=k, nmae=metrics.nmae(exact, est),
                             time_exact_s=t_exact, time_mc_s=t / N))
            pbar.update()
        k_eq = matched_iterations(iterations, t_mc, t_exact)
        pbar.set_postfix_str(f"sigma={s:g} MC k={k_eq} (time-matched)")
        est, t = best_time(lambda: mc.pg2(setup.model, Xp, mask, sigma=s, n_samples=k_eq,
                                          seed=args.seed + 1000 * i + 999, n_jobs=args.n_jobs))
        matched.append(dict(sigma=s, iterations=k_eq, nmae=metrics.nmae(exact, est),
                            time_exact_s=t_exact, time_mc_s=t / N,
                            mean_exact=float(exact.mean()),
                            negative_exact=int(np.sum(exact < 0))))
        pbar.update()
    pbar.close()
    return dict(pairs=N, pair_sizes="|S| spread evenly over 1..d", iterations=iterations,
                sigmas=list(sigmas), rows=rows, time_matched=matched)


def accuracy_tables(res: Json) -> Tuple[str, str]:
    """The two printed tables: by iteration count, and at equal time."""
    out = []
    for r in res["rows"]:
        out.append([f"{r['sigma']:g}", f"{r['iterations']:,}", f"{r['nmae']:.4f}",
                    fmt_time(r["time_exact_s"]), fmt_time(r["time_mc_s"]),
                    f"{r['time_mc_s'] / r['time_exact_s']:.3g}x"])
    t1 = text_table(["sigma", "MC iterations", "NMAE", "exact/pair", "MC/pair", "MC / exact time"],
                    out, "rrrrrr")
    out = []
    for r in res["time_matched"]:
        out.append([f"{r['sigma']:g}", f"{r['iterations']:,}", f"{r['nmae']:.4f}",
                    fmt_time(r["time_exact_s"]), fmt_time(r["time_mc_s"])])
    t2 = text_table(["sigma", "MC iterations at equal time", "NMAE at equal time", "exact/pair",
                     "MC/pair"], out, "rrrrr")
    return t1, t2


def plot_accuracy(ax: Any, res: Json, title: str, reference: Optional[Json] = None) -> None:
    """NMAE against iterations per sigma (stars: time-matched; dashed: the authors' MC)."""
    colors = {}
    for s in res["sigmas"]:
        pts = [r for r in res["rows"] if r["sigma"] == s]
        (line,) = ax.loglog([r["iterations"] for r in pts], [max(r["nmae"], 1e-6) for r in pts],
                            "o-", label=f"σ={s:g}")
        colors[s] = line.get_color()
        m = [r for r in res["time_matched"] if r["sigma"] == s][0]
        ax.loglog([m["iterations"]], [max(m["nmae"], 1e-6)], "*", ms=13, color=line.get_color(),
                  markeredgecolor="k")
    if reference:
        for s_str, r in reference.items():
            s = float(s_str)
            if s in colors:
                ks = sorted(int(k) for k in r["nmae_mc_at"])
                ax.loglog(ks, [r["nmae_mc_at"][str(k)] for k in ks], "--", color=colors[s],
                          alpha=0.6, lw=1)
    ax.set_xlabel("Monte Carlo iterations per (row, S)")
    ax.set_ylabel("NMAE vs exact")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, title="★ = time-matched" + ("\n-- = authors' MC" if reference else ""),
              title_fontsize=7)


def cmd_accuracy(args: Args) -> int:
    """The ``accuracy`` subcommand: run, print both tables, write the figure and JSON."""
    require_matplotlib()
    setup = prepare_setup(args)
    n_pairs = args.samples or 200
    res = run_accuracy(args, setup, args.sigma, args.iterations, n_pairs)
    t1, t2 = accuracy_tables(res)
    echo(f"pgexact accuracy: {model_line(setup)}\n{res['pairs']} random (row, S) test pairs, "
         f"|S| spread evenly over 1..{setup.data.d}, seed {args.seed}\n")
    echo(t1)
    echo("\nTime-matched: Monte Carlo given the time the exact computation takes (the paper's "
         "Tables 1-5)\n")
    echo(t2)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    plot_accuracy(ax, res, f"{setup.label}: NMAE of Monte Carlo PG² vs exact")
    head = dict(command="accuracy", data=setup.data.describe(), model=setup.info,
                seed=args.seed, n_jobs=args.n_jobs)
    return finish_command(args, fig, "accuracy.png", head, res)
