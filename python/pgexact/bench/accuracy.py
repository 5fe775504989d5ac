"""``pgexact-bench accuracy`` (paper §4.3): NMAE of Monte Carlo against the exact PG² over
random (row, S) pairs, per noise level and iteration count, and at equal time."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

import pgexact
from pgexact import mc, metrics

from .common import (call_progress, Args, Json, bar, echo, finish_outputs, fmt_time, median_time,
                     output_axes, require_matplotlib, text_table)
from .data import random_pairs
from .models import Setup, model_line, prepare_setups

__all__ = ["accuracy_tables", "cmd_accuracy", "match_time", "matched_iterations", "plot_accuracy",
           "run_accuracy"]


def matched_iterations(ks: Sequence[int], times: Sequence[float], target: float) -> int:
    """Iterations at which Monte Carlo takes ``target`` seconds (see :func:`match_time`)."""
    return int(match_time(ks, times, target)["iterations"])


def match_time(ks: Sequence[int], times: Sequence[float], target: float) -> Json:
    """The Monte Carlo sample count that takes ``target`` seconds, and how it was found.

    Monte Carlo's time does not decrease with the sample count, so the measured ``(k, time)``
    points are read through their running maximum (a noisy fast run at a large k cannot pull
    the curve down), piecewise linear in k between them and extended past either end (below
    the smallest k in proportion to its time, above the largest along the last segment's
    slope, or in proportion when that slope is not positive). The answer is never below a
    measured k whose time was within ``target``: those samples demonstrably fit. At least 1.

    Returns ``dict(iterations, how, floor)``: ``how`` says what was matched (``"between K=10
    and K=100"``, ``"past the largest measured K=10000"``, ``"below the smallest measured
    K=10"``), ``floor`` the largest measured k within the time (None if none).
    """
    order = np.argsort(np.asarray(ks, dtype=np.float64), kind="stable")
    k_sorted = np.asarray(ks, dtype=np.float64)[order]
    t_raw = np.asarray(times, dtype=np.float64)[order]
    t_sorted = np.maximum.accumulate(t_raw)
    fits = k_sorted[t_raw <= target]
    floor = int(fits.max()) if fits.size else None
    if target < t_sorted[0]:
        k = k_sorted[0] * target / t_sorted[0]
        how = f"below the smallest measured K={int(k_sorted[0])} (in proportion to its time)"
    elif target >= t_sorted[-1]:
        slope = ((t_sorted[-1] - t_sorted[-2]) / (k_sorted[-1] - k_sorted[-2])
                 if len(k_sorted) > 1 else 0.0)
        if slope > 0:
            k = k_sorted[-1] + (target - t_sorted[-1]) / slope
        else:
            k = k_sorted[-1] * target / t_sorted[-1]
        how = f"past the largest measured K={int(k_sorted[-1])} (extrapolated)"
    else:
        hi = int(np.searchsorted(t_sorted, target, side="left"))
        lo = hi - 1
        if t_sorted[hi] == target or t_sorted[hi] == t_sorted[lo]:
            k = k_sorted[hi]
        else:
            k = k_sorted[lo] + (k_sorted[hi] - k_sorted[lo]) * (target - t_sorted[lo]) / (
                t_sorted[hi] - t_sorted[lo])
        how = f"between K={int(k_sorted[lo])} and K={int(k_sorted[hi])} (interpolated)"
    k = max(k, floor or 1)
    return dict(iterations=int(min(max(round(k), 1), 10_000_000)), how=how, floor=floor)


def run_accuracy(args: Args, setup: Setup, sigmas: Sequence[float],
                 iterations: Sequence[int], n_pairs: int) -> Json:
    """NMAE of Monte Carlo vs exact PG² over random (row, S) pairs; times per pair."""
    Xp, mask = random_pairs(setup.data.Xte, n_pairs, args.seed)
    N = Xp.shape[0]
    iterations = sorted(set(int(k) for k in iterations))
    # warm-up: thread pools, first-call allocations
    pgexact.pg2(setup.ens, Xp[:1], mask[:1], sigma=sigmas[0], n_jobs=args.n_jobs, progress=False)
    mc.pg2(setup.model, Xp[:1], mask[:1], sigma=sigmas[0], n_samples=4, seed=0, n_jobs=args.n_jobs,
           output=setup.output)

    rows, matched, runs = [], [], []
    pbar = bar(args, total=len(sigmas) * (len(iterations) + 2), desc=f"accuracy {setup.label}")
    for i, s in enumerate(sigmas):
        pbar.set_postfix_str(f"sigma={s:g} exact")
        exact, t_exact, n_exact = median_time(
            lambda: pgexact.pg2(setup.ens, Xp, mask, sigma=s, n_jobs=args.n_jobs,
                                progress=call_progress(args)))
        exact = np.asarray(exact, dtype=np.float64)
        t_exact /= N
        pbar.update()
        t_mc = []
        for j, k in enumerate(iterations):
            pbar.set_postfix_str(f"sigma={s:g} MC k={k}")
            est, t, n_t = median_time(lambda: mc.pg2(setup.model, Xp, mask, sigma=s, n_samples=k,
                                                     seed=args.seed + 1000 * i + j,
                                                     n_jobs=args.n_jobs, output=setup.output))
            t_mc.append(t / N)
            runs.append(n_t)
            rows.append(dict(sigma=s, iterations=k, nmae=metrics.nmae(exact, est),
                             time_exact_s=t_exact, time_mc_s=t / N))
            pbar.update()
        match = match_time(iterations, t_mc, t_exact)
        k_eq = match["iterations"]
        pbar.set_postfix_str(f"sigma={s:g} MC k={k_eq} (time-matched)")
        est, t, _ = median_time(lambda: mc.pg2(setup.model, Xp, mask, sigma=s, n_samples=k_eq,
                                               seed=args.seed + 1000 * i + 999,
                                               n_jobs=args.n_jobs, output=setup.output))
        matched.append(dict(sigma=s, iterations=k_eq, nmae=metrics.nmae(exact, est),
                            time_exact_s=t_exact, time_mc_s=t / N,
                            matched=f"MC's median time per pair to exact's median "
                                    f"{fmt_time(t_exact)} per pair ({n_exact} runs), {match['how']}",
                            how=match["how"], at_least=match["floor"],
                            mean_exact=float(exact.mean()),
                            negative_exact=int(np.sum(exact < 0))))
        pbar.update()
    pbar.close()
    return dict(pairs=N, pair_sizes="|S| spread evenly over 1..d", iterations=iterations,
                sigmas=list(sigmas), rows=rows, time_matched=matched,
                timing=f"median of {min(runs + [n_exact])}-{max(runs + [n_exact])} timed runs "
                       "per measurement")


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
        how = r.get("how", "")
        out.append([f"{r['sigma']:g}", f"{r['iterations']:,}", f"{r['nmae']:.4f}",
                    fmt_time(r["time_exact_s"]), fmt_time(r["time_mc_s"]), how])
    t2 = text_table(["sigma", "MC iterations at equal time", "NMAE at equal time", "exact/pair",
                     "MC/pair", "matched"], out, "rrrrrl")
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
    """The ``accuracy`` subcommand: run, print both tables, write the figure and JSON (one
    panel and one result per output ``--output`` selects)."""
    require_matplotlib()
    setups = prepare_setups(args)
    n_pairs = args.samples or 200
    fig, axes = output_axes(len(setups), 1, (6.4, 4.6))
    results = []
    for setup, (ax,) in zip(setups, axes):
        res = run_accuracy(args, setup, args.sigma, args.iterations, n_pairs)
        t1, t2 = accuracy_tables(res)
        echo(f"pgexact accuracy: {model_line(setup)}\n{res['pairs']} random (row, S) test pairs, "
             f"|S| spread evenly over 1..{setup.data.d}, seed {args.seed}; times are the "
             f"{res['timing']}\n")
        echo(t1)
        echo("\nTime-matched: Monte Carlo given the time the exact computation takes (the "
             "paper's Tables 1-5)\n")
        echo(t2)
        echo()
        plot_accuracy(ax, res, f"{setup.label}: NMAE of Monte Carlo PG² vs exact")
        results.append(res)
    head = dict(command="accuracy", data=setups[0].data.describe(), seed=args.seed,
                n_jobs=args.n_jobs)
    return finish_outputs(args, fig, "accuracy.png", head, setups, results)
