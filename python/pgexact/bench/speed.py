"""``pgexact-bench speed``: time per (row, S) pair of the exact kernel, the paper's unpruned
O(n²) pair walk and Monte Carlo, over XGBoost models from 16 to 10,000+ leaves."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

import pgexact
from pgexact import mc
from pgexact._exact._kernels import PreparedCall
from pgexact._exact._prepare import prepare_call

from .common import (call_progress, Args, Json, bar, best_time, echo, finish_command, fmt_time, require_matplotlib,
                     require_xgboost, text_table, timed)
from .data import Dataset, load_data, random_pairs
from .models import fit_xgb

__all__ = ["LADDER", "cmd_speed", "plot_speed", "run_speed", "speed_table", "time_reference"]


#: (trees, max_depth), from one depth-4 tree (16 leaves) to 10,000+ leaves (wine, housing)
LADDER = ((1, 4), (10, 5), (20, 6), (40, 6), (40, 8), (60, 8), (40, 10), (80, 10))


def time_reference(call: PreparedCall, mask: np.ndarray, exact: np.ndarray,
                   budget: float) -> Tuple[float, int, float]:
    """Time the paper's unpruned O(n²) pair walk on the pairs of ``call`` within ``budget``.

    Returns ``(seconds per pair, pairs timed, largest difference from the fast kernel's
    values relative to the largest value)``.  When one pair is cheap, all pairs are timed in
    one call, as the fast kernel is; otherwise in chunks of 1, 2, 4, ... pairs (in their random
    order) until all are done or the budget is spent, so no pair starts long past the budget.
    """
    N = call.n_rows

    def walk(lo: int, hi: int) -> np.ndarray:
        return call.rows(lo, hi).pg2(mask[lo:hi], reference=True)

    r1, t1 = timed(walk, 0, 1)
    if t1 * N * 4 <= budget:
        ref, t_ref = best_time(lambda: walk(0, N))
        m = N
    else:
        parts, m, t_ref, chunk = [np.asarray(r1)], 1, t1, 2
        while m < N and t_ref < budget:
            stop = min(N, m + chunk)
            r, t = timed(walk, m, stop)
            parts.append(np.asarray(r))
            m, t_ref, chunk = stop, t_ref + t, chunk * 2
        ref = np.concatenate(parts)
    ref = np.asarray(ref, dtype=np.float64)
    scale = max(float(np.max(np.abs(ref))), 1e-300)
    return t_ref / m, m, float(np.max(np.abs(ref - exact[:m])) / scale)


def run_speed(args: Args, data: Dataset, *, n_pairs: int, mc_iterations: int, budget: float,
              max_leaves: int, sigma: float = 0.3) -> Json:
    """Time exact, reference and Monte Carlo PG² over the model ladder :data:`LADDER`."""
    Xp, mask = random_pairs(data.Xte, n_pairs, args.seed + 2)
    N = Xp.shape[0]
    out: List[Json] = []
    prev: Optional[Tuple[int, float]] = None  # (leaves, reference seconds per pair) of the last model
    pbar = bar(args, total=len(LADDER), desc=f"speed {data.name}")
    for trees, depth in LADDER:
        params = dict(n_estimators=trees, max_depth=depth, learning_rate=0.3, subsample=1.0)
        model = fit_xgb(data.Xtr, data.ytr, params, seed=args.seed, n_jobs=args.n_jobs)
        ens = pgexact.load(model)
        leaves = int(ens.n_leaves)
        if out and leaves > max_leaves:
            break
        pbar.set_postfix_str(f"{leaves} leaves")
        pgexact.pg2(ens, Xp[:1], mask[:1], sigma=sigma, n_jobs=args.n_jobs, progress=False)  # warm-up
        exact, t_exact = best_time(lambda: pgexact.pg2(ens, Xp, mask, sigma=sigma, progress=call_progress(args),
                                                       n_jobs=args.n_jobs))
        est, t_mc = best_time(lambda: mc.pg2(model, Xp, mask, sigma=sigma,
                                             n_samples=mc_iterations, seed=args.seed,
                                             n_jobs=args.n_jobs))
        row = dict(trees=trees, max_depth=depth, leaves=leaves, nodes=int(ens.n_nodes), pairs=N,
                   time_exact_s=t_exact / N, time_mc_s=t_mc / N, mc_iterations=mc_iterations,
                   time_reference_s=None, reference_pairs=0, reference_max_rel_diff=None,
                   note="")
        # the unpruned O(n²) pair walk: predict its time per pair from the last model (it
        # grows with the square of the leaves) and skip it past the budget
        guess: Optional[float] = prev[1] * (leaves / prev[0]) ** 2 if prev else None
        if guess is not None and guess > budget:
            row["note"] = (f"reference skipped: about {guess:.0f} s per pair predicted "
                           f"(budget {budget:g} s)")
        else:
            call = prepare_call(ens, Xp, sigma=sigma, noise="normal", n_jobs=args.n_jobs)
            t_ref, m, rel = time_reference(call, call.feature_mask(mask), exact, budget)
            row.update(time_reference_s=t_ref, reference_pairs=m, reference_max_rel_diff=rel)
            if m < N:
                row["note"] = f"reference timed on {m} of {N} pairs (budget {budget:g} s)"
            prev = (leaves, t_ref)
        out.append(row)
        pbar.update()
    pbar.close()
    return dict(dataset=data.name, sigma=sigma, pairs=N, mc_iterations=mc_iterations,
                reference_budget_s=budget, models=out)


def speed_table(res: Json) -> str:
    """The printed table: one line per model of the ladder."""
    out = []
    for r in res["models"]:
        ref = r["time_reference_s"]
        out.append([f"{r['trees']}x{r['max_depth']}", f"{r['leaves']:,}",
                    fmt_time(r["time_exact_s"]), "skipped" if ref is None else fmt_time(ref),
                    fmt_time(r["time_mc_s"]),
                    "-" if ref is None else f"{ref / r['time_exact_s']:.3g}x",
                    f"{r['time_mc_s'] / r['time_exact_s']:.3g}x",
                    "-" if ref is None else f"{r['reference_max_rel_diff']:.1e}"])
    return text_table(["trees x depth", "leaves", "exact/pair", "reference/pair",
                       f"MC-{res['mc_iterations']}/pair", "reference / exact", "MC / exact",
                       "max rel. diff"], out)


def plot_speed(ax: Any, results: Sequence[Json], title: str) -> None:
    """Seconds per pair against leaves, log-log: exact, reference and Monte Carlo per dataset."""
    for res in results:
        leaves = [r["leaves"] for r in res["models"]]
        tag = f" ({res['dataset']})" if len(results) > 1 else ""
        (l1,) = ax.loglog(leaves, [r["time_exact_s"] for r in res["models"]], "o-",
                          label="pgexact exact" + tag)
        ref = [(r["leaves"], r["time_reference_s"]) for r in res["models"]
               if r["time_reference_s"] is not None]
        if ref:
            ax.loglog(*zip(*ref), "s--", color=l1.get_color(),
                      label="unpruned O(n²) reference" + tag)
        ax.loglog(leaves, [r["time_mc_s"] for r in res["models"]], "^:", color=l1.get_color(),
                  label=f"Monte Carlo, {res['mc_iterations']} it." + tag)
    ax.set_xlabel("leaves in the model")
    ax.set_ylabel("seconds per (row, S) pair")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def cmd_speed(args: Args) -> int:
    """The ``speed`` subcommand: run the ladder, print the table, write the figure and JSON."""
    require_matplotlib()
    require_xgboost()
    data = load_data(args)
    res = run_speed(args, data, n_pairs=args.samples or 50, mc_iterations=args.mc_iterations,
                    budget=args.reference_budget, max_leaves=args.max_leaves)
    echo(f"pgexact speed on {data.name}: {res['pairs']} random (row, S) pairs, sigma "
         f"{res['sigma']:g}, XGBoost models of growing size (trees x depth)\n")
    echo(speed_table(res))
    notes = [f"{r['trees']}x{r['max_depth']}: {r['note']}" for r in res["models"] if r["note"]]
    if notes:
        echo("\n" + "\n".join(notes))
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    plot_speed(ax, [res], f"{data.name}: time per PG² evaluation")
    head = dict(command="speed", data=data.describe(), seed=args.seed, n_jobs=args.n_jobs)
    return finish_command(args, fig, "speed.png", head, res)
