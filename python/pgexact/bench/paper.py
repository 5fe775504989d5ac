"""``pgexact-bench paper``: every experiment on the wine and California housing data, single-
tree and "Bigger" models, the figures, and REPORT.md next to the paper authors' numbers."""

from __future__ import annotations

import json
import os
import platform
import time
from typing import List

from .accuracy import accuracy_tables, plot_accuracy, run_accuracy
from .common import (Args, Json, UsageError, echo, first_line, load_average, log, require_matplotlib,
                     require_xgboost, save_figure, versions, write_json)
from .conciseness import conciseness_table, plot_conciseness, run_conciseness
from .data import Dataset, default_data_dir, eval_rows, load_named
from .models import GRID, RECIPES, model_line, prepare_setup
from .ranking import greedy_rankings, plot_ranking, ranking_table, run_ranking, shap_ranking
from .reference import load_reference
from .report import render_report
from .speed import plot_speed, run_speed, speed_table

__all__ = ["PAPER_DATASETS", "PAPER_MODELS", "cmd_paper", "paper_figures", "paper_report_only",
           "paper_settings", "run_model", "write_report"]

PAPER_DATASETS = ("wine", "housing")
PAPER_MODELS = ("single", "bigger")


def run_model(args: Args, data: Dataset, kind: str) -> Json:
    """Accuracy, ranking and conciseness of one (dataset, model) pair; prints their tables."""
    key = f"{data.name}/{kind}"
    t0 = time.perf_counter()
    setup = prepare_setup(args, data=data, kind=kind)
    log(args, f"[{key}] {model_line(setup)}")
    acc = run_accuracy(args, setup, args.sigma, args.iterations, args.samples)
    X = eval_rows(data, args.rows, args.seed + 1)
    # one greedy ranking and one SHAP ranking per row, shared by both experiments
    greedy, t_rank = greedy_rankings(args, setup, X, args.sigma_rank, f"greedy {key}")
    shap_R = shap_ranking(setup, X)
    rk = run_ranking(args, setup, X, args.sigma_rank, args.sigma_eval, rankings=greedy)
    cc = run_conciseness(args, setup, X, args.sigma_rank, rankings=greedy, shap_R=shap_R)
    run = dict(model=setup.info, accuracy=acc, ranking=rk, conciseness=cc,
               greedy_time_per_row_s={f"{s:g}": t / X.shape[0] for s, t in t_rank.items()},
               seconds=time.perf_counter() - t0)
    echo(f"\n=== {key}: {model_line(setup)}")
    _, at_equal_time = accuracy_tables(acc)
    echo("\nAccuracy at equal time (paper Tables 1-5):\n" + at_equal_time)
    echo(f"\nMean PGI² over {rk['rows']} test rows (paper Figures 3-6):\n" + ranking_table(rk))
    echo("\nConciseness, entropy in bits (paper Tables 6-9):\n" + conciseness_table(cc))
    return run


def paper_settings(args: Args, data_dir: str) -> Json:
    """The run's settings, as results.json and REPORT.md record them."""
    threads = args.n_jobs if args.n_jobs is not None else (os.cpu_count() or 1)
    return dict(
        data_dir=os.path.abspath(data_dir), seed=args.seed, n_jobs=args.n_jobs, threads=threads,
        grid_search=bool(args.grid_search), accuracy_pairs=args.samples,
        accuracy_sigmas=list(args.sigma), accuracy_iterations=list(args.iterations),
        ranking_rows=args.rows, sigma_rank=list(args.sigma_rank),
        sigma_eval=list(args.sigma_eval), speed_pairs=args.speed_samples,
        mc_iterations=args.mc_iterations, reference_budget_s=args.reference_budget,
        max_leaves=args.max_leaves, recipes=RECIPES, grid=GRID,
    )


def write_report(args: Args, payload: Json, reference: Json) -> str:
    """Write ``<--out>/REPORT.md`` from a paper payload; returns its path."""
    path = os.path.join(args.out, "REPORT.md")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render_report(payload, reference, args.out))
    log(args, f"wrote {path}")
    return path


def cmd_paper(args: Args) -> int:
    """The ``paper`` subcommand: everything on wine and housing, figures and REPORT.md."""
    require_matplotlib()
    require_xgboost()
    reference = load_reference()
    if args.report_only:
        return paper_report_only(args, reference)
    data_dir = args.data_dir or default_data_dir()
    if not data_dir:
        raise UsageError("paper needs --data-dir (the directory holding winequality_red.csv "
                         "and california_housing.csv); ../shared/datasets was not found")
    # read both files before the long part starts, so a bad directory fails at once
    datasets = {ds: load_named(ds, data_dir, seed=args.seed, keep_missing=False)
                for ds in PAPER_DATASETS}
    t_start = time.perf_counter()
    runs, speed = {}, {}
    for ds, data in datasets.items():
        for kind in PAPER_MODELS:
            runs[f"{ds}/{kind}"] = run_model(args, data, kind)
        log(args, f"[{ds}] speed ladder ...")
        speed[ds] = run_speed(args, data, n_pairs=args.speed_samples,
                              mc_iterations=args.mc_iterations, budget=args.reference_budget,
                              max_leaves=args.max_leaves)
        echo(f"\n=== speed on {ds}:\n" + speed_table(speed[ds]))
    elapsed = time.perf_counter() - t_start

    figs = paper_figures(args, runs, speed, reference)
    payload = dict(command="paper", settings=paper_settings(args, data_dir),
                   argv=getattr(args, "argv", None),
                   data={ds: d.describe() for ds, d in datasets.items()}, runs=runs, speed=speed,
                   seconds=elapsed, figures=figs, versions=versions(),
                   machine=dict(platform=platform.platform(), cpus=os.cpu_count(),
                                load_average=load_average()))
    log(args, f"wrote {write_json(args, 'results.json', payload)}")
    path = write_report(args, payload, reference)
    echo(f"\npaper: done in {elapsed / 60:.1f} min; see {path}")
    return 0


def paper_report_only(args: Args, reference: Json) -> int:
    """Redraw the figures and rewrite REPORT.md from ``<out>/results.json`` (no computing)."""
    path = os.path.join(args.out, "results.json")
    try:
        with open(path, encoding="utf-8") as fh:
            payload = json.load(fh)
    except FileNotFoundError:
        raise UsageError(f"--report-only: {path} not found (run paper first)") from None
    except ValueError as e:
        raise UsageError(f"--report-only: {path} is not valid JSON: {first_line(e)}") from None
    if payload.get("command") != "paper":
        raise UsageError(f"--report-only: {path} was not written by the paper subcommand")
    payload["figures"] = paper_figures(args, payload["runs"], payload["speed"], reference)
    write_report(args, payload, reference)
    return 0


def paper_figures(args: Args, runs: Json, speed: Json, ref: Json) -> List[str]:
    """The four figures, one panel per (dataset, model); returns their file names."""
    import matplotlib.pyplot as plt

    keys = list(runs)
    shape = (2, 2) if len(keys) == 4 else (1, len(keys))
    size = (11, 8.2) if len(keys) == 4 else (5.5 * len(keys), 4.4)
    figs = []

    fig, axes = plt.subplots(*shape, figsize=size, squeeze=False)
    for ax, key in zip(axes.ravel(), keys):
        plot_accuracy(ax, runs[key]["accuracy"],
                      f"{key} ({runs[key]['model']['n_leaves']:,} leaves)",
                      reference=ref["accuracy"].get(key))
    fig.tight_layout()
    figs.append(os.path.basename(save_figure(args, fig, "accuracy.png")))

    fig, axes = plt.subplots(len(keys), 2, figsize=(11, 3.6 * len(keys)), squeeze=False)
    for row, key in zip(axes, keys):
        plot_ranking(row, runs[key]["ranking"], f"{key}: mean PGI²",
                     reference=ref["pgi2_ratio"].get(key))
    fig.tight_layout()
    figs.append(os.path.basename(save_figure(args, fig, "ranking.png")))

    fig, axes = plt.subplots(*shape, figsize=size, squeeze=False)
    for ax, key in zip(axes.ravel(), keys):
        plot_conciseness(ax, runs[key]["conciseness"], key, reference=ref["entropy"].get(key))
    fig.tight_layout()
    figs.append(os.path.basename(save_figure(args, fig, "conciseness.png")))

    fig, ax = plt.subplots(figsize=(7.5, 5))
    plot_speed(ax, list(speed.values()), "time per PG² evaluation, σ = 0.3")
    fig.tight_layout()
    figs.append(os.path.basename(save_figure(args, fig, "speed.png")))
    return figs
