#!/usr/bin/env python
"""Exact PGI² against Monte Carlo through XGBoost's own batched predict.

For each model, on the same test rows, the same fixed ranking (the greedy exact ranking,
computed once and not timed) and the same number of threads (``n_jobs`` for pgexact,
``nthread`` for XGBoost), this times per row:

* exact PGI²: ``pgexact.pgi2`` over all d top-k prefixes;
* Monte Carlo PGI² with 100 and 1000 samples per prefix: ``pgexact.mc.pgi2``, which builds the
  perturbed copies of a batch of rows in one array and calls ``Booster.inplace_predict`` once
  per batch;
* for reference, XGBoost's predict alone on the same number of pre-built rows (1000 per
  prefix): the floor for any Monte Carlo implementation.

Each measurement is the median of ``--repeats`` runs, interleaved.  Models (paper recipes,
standardised features, 80:20 split):

(a) "Bigger": 40 trees, depth 4, red wine quality (11 features);
(b) 100 trees, depth 6, California housing (8 numeric features, NaN kept), or a synthetic
    8-feature regression when the file is absent.

Run:  python bench/bench_xgboost.py [--data-dir ../shared/datasets] [--rows 100] [--repeats 3]
It prints a markdown table and (unless --no-write) rewrites bench/RESULTS.md.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from pgexact.bench.common import UsageError, fmt_time, timed
from pgexact.bench.data import DATA_FILES, load_named, split_and_standardise
from pgexact.bench.models import fit_xgb
from pgexact.metrics import nmae

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


# ------------------------------------------------------------------------------------ data
# The split, standardisation, CSV reading and NMAE are pgexact-bench's own (pgexact.bench), so
# this script and the CLI read the same data the same way.


def load_wine(data_dir: Path, seed):
    data = _load_named("wine", data_dir, seed)
    return "red wine quality", data.names, data.Xtr, data.Xte, data.ytr, data.yte


def load_housing(data_dir: Path, seed):
    if (data_dir / DATA_FILES["housing"][0]).exists():
        # total_bedrooms has NaN: kept as missing (the CLI drops those rows, as the paper)
        data = _load_named("housing", data_dir, seed, keep_missing=True)
        return "California housing", data.names, data.Xtr, data.Xte, data.ytr, data.yte
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=20000, n_features=8, noise=0.5, random_state=seed)
    names = [f"x{i}" for i in range(8)]
    data = split_and_standardise("friedman8", X, y, names, [], "make_friedman1", seed=seed)
    return ("synthetic (Friedman #1, 8 features)", names, data.Xtr, data.Xte, data.ytr,
            data.yte)


def _load_named(name, data_dir: Path, seed, **kwargs):
    try:
        return load_named(name, str(data_dir), seed=seed, **kwargs)
    except UsageError as e:
        raise SystemExit(f"bench_xgboost: {e} (set --data-dir)") from None


# ----------------------------------------------------------------------------- measuring


def _fmt(seconds):
    return fmt_time(seconds, micro="µs")


def bench_model(label, dataset, Xtr, Xte, ytr, *, n_trees, depth, rows, repeats, sigma,
                n_jobs, seed, log, ranking_kind="greedy"):
    import pgexact
    from pgexact import mc

    params = dict(n_estimators=n_trees, max_depth=depth, learning_rate=0.3)
    model = fit_xgb(Xtr, ytr, params, seed=seed, n_jobs=n_jobs)
    X = np.ascontiguousarray(Xte[:rows])
    n, d = X.shape
    te = pgexact.load(model)
    log(f"[{label}] {dataset}: {n_trees} trees depth {depth}, {te.n_leaves} leaves, "
        f"{d} features, {n} rows")

    if ranking_kind == "greedy":
        ranking, t_rank = timed(lambda: np.asarray(pgexact.rank(te, X, sigma=sigma,
                                                                 n_jobs=n_jobs)))
    else:  # one fixed random permutation for every row
        ranking, t_rank = np.random.default_rng(seed).permutation(d), float("nan")

    # pre-built copies for the predict-only floor: the same row count as MC-1000
    booster = model.get_booster().copy()
    booster.set_param({"nthread": n_jobs})
    rng = np.random.default_rng(seed)
    floor_rows = min(n * d * 1000, 2_000_000)
    Xfloor = np.repeat(X, -(-floor_rows // n), axis=0)[:floor_rows].astype(np.float32)
    Xfloor += (rng.standard_normal(Xfloor.shape) * sigma).astype(np.float32)
    floor_scale = (n * d * 1000) / floor_rows

    def run_exact():
        return np.asarray(pgexact.pgi2(te, X, ranking, sigma=sigma, n_jobs=n_jobs))

    def run_mc(k, s):
        return lambda: mc.pgi2(model, X, ranking, sigma=sigma, n_samples=k, seed=s,
                               n_jobs=n_jobs)

    def run_floor():
        return booster.inplace_predict(Xfloor, predict_type="margin")

    # warm-up on two rows (thread pools, first-call allocations), not timed
    pgexact.pgi2(te, X[:2], ranking if ranking.ndim == 1 else ranking[:2], sigma=sigma,
                 n_jobs=n_jobs)
    mc.pgi2(model, X[:2], ranking if ranking.ndim == 1 else ranking[:2], sigma=sigma,
            n_samples=10, n_jobs=n_jobs)
    run_floor()
    times = {"exact": [], "mc100": [], "mc1000": [], "floor": []}
    nmae100, nmae1000 = [], []
    for r in range(repeats):
        exact, t = timed(run_exact)
        times["exact"].append(t)
        est, t = timed(run_mc(100, seed + r))
        times["mc100"].append(t)
        nmae100.append(nmae(exact, est))
        est, t = timed(run_mc(1000, seed + r))
        times["mc1000"].append(t)
        nmae1000.append(nmae(exact, est))
        _, t = timed(run_floor)
        times["floor"].append(t * floor_scale)
    med = {k: statistics.median(v) / n for k, v in times.items()}
    res = dict(
        label=label, dataset=dataset, ranking=ranking_kind, n_trees=n_trees, depth=depth,
        n_leaves=int(te.n_leaves),
        d=d, rows=n, rank_per_row=t_rank / n,
        exact=med["exact"], mc100=med["mc100"], mc1000=med["mc1000"], floor1000=med["floor"],
        ratio100=med["exact"] / med["mc100"], ratio1000=med["exact"] / med["mc1000"],
        nmae100=statistics.median(nmae100), nmae1000=statistics.median(nmae1000),
        spread_exact=(min(times["exact"]) / n, max(times["exact"]) / n),
    )
    log(f"[{label}] exact {_fmt(res['exact'])}/row, MC-100 {_fmt(res['mc100'])}/row, "
        f"MC-1000 {_fmt(res['mc1000'])}/row")
    return res


# ----------------------------------------------------------------------------- reporting


def markdown_table(results):
    head = ("| model | leaves | d | rows | exact PGI² / row | MC-100 / row | MC-1000 / row "
            "| exact / MC-100 | exact / MC-1000 | NMAE MC-100 | NMAE MC-1000 "
            "| XGBoost predict only, 1000 / prefix | greedy rank / row |")
    sep = "|" + "|".join(["---"] + ["--:"] * (head.count("|") - 2)) + "|"
    lines = [head, sep]
    for r in results:
        lines.append(
            f"| ({r['label']}) {r['dataset']}, {r['n_trees']} trees depth {r['depth']} "
            f"| {r['n_leaves']} | {r['d']} | {r['rows']} | {_fmt(r['exact'])} "
            f"| {_fmt(r['mc100'])} | {_fmt(r['mc1000'])} | {r['ratio100']:.3g} "
            f"| {r['ratio1000']:.3g} | {r['nmae100']:.3f} | {r['nmae1000']:.3f} "
            f"| {_fmt(r['floor1000'])} | "
            + (f"{_fmt(r['rank_per_row'])} |" if r["ranking"] == "greedy" else "not used |")
        )
    return "\n".join(lines)


def machine_info(n_jobs):
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor() or "unknown"
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("pgexact", "xgboost", "sklearn"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            versions[mod] = "?"
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if commit and dirty:
            commit += " with uncommitted changes"
    except (OSError, subprocess.SubprocessError):
        commit = ""
    try:
        load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:  # pragma: no cover
        load = "?"
    return dict(nproc=os.cpu_count(), cpu=cpu, threads=n_jobs, versions=versions, load=load,
                platform=platform.platform(), commit=commit or "uncommitted",
                date=datetime.date.today().isoformat())


def write_results(path: Path, table, info, args):
    v = info["versions"]
    ranking_text = ("the greedy exact ranking, computed once; its own cost is the last column"
                    if args.ranking == "greedy" else "one random permutation for all rows")
    command = (f"python bench/bench_xgboost.py --rows {args.rows} --repeats {args.repeats} "
               f"--n-jobs {args.n_jobs} --sigma {args.sigma} --ranking {args.ranking}")
    notes = textwrap.fill(
        f"Times are per row and are medians of {args.repeats} interleaved repeats on the same "
        f"rows, the same fixed ranking ({ranking_text}) and the same {args.n_jobs} threads "
        f"(`n_jobs={args.n_jobs}` for pgexact, `nthread={args.n_jobs}` for XGBoost). PGI² "
        "averages PG² over all d top-k prefixes, so Monte Carlo with K samples per prefix makes "
        "d·K predictions per row (`pgexact.mc.pgi2`: all perturbed copies of a batch of rows "
        "in one array, one `inplace_predict` call per batch). A ratio below 1 means exact is "
        "faster than that Monte Carlo. NMAE = Σ|exact − MC| / Σ|exact| is the Monte Carlo error "
        "the exact number removes. \"XGBoost predict only\" is `inplace_predict` alone on "
        "d·1000 pre-built rows per row (scaled from at most 2·10⁶ rows): the floor for any "
        "Monte Carlo implementation. Noise: Gaussian, σ = "
        f"{args.sigma} on standardised features; models trained with learning rate 0.3, "
        f"`tree_method=\"hist\"`, 80:20 split, seed {args.seed}.",
        width=95, break_long_words=False, break_on_hyphens=False)
    busy = ""
    try:
        if float(info["load"].split()[0]) > (info["nproc"] or 1):
            busy = ("\n\n**The machine was busy during this run** (1-minute load average above "
                    "`nproc`): absolute times are inflated and noisy; the ratios, measured "
                    "interleaved in the same run, are the numbers to read. Re-run on an idle "
                    "machine for clean absolute times.")
    except (ValueError, IndexError):
        pass
    text = f"""<!-- xgboost-begin -->
# Exact PGI² vs Monte Carlo through XGBoost's batched predict

Produced by `{command}` on {info['date']} (commit {info['commit']}).

{table}

{notes}{busy}

## Machine

- CPU: {info['cpu']}, `nproc` = {info['nproc']}, threads used: {info['threads']}
- Load average when the run ended (1, 5, 15 min): {info['load']}
- Platform: {info['platform']}
- Python {v['python']}, numpy {v['numpy']}, xgboost {v['xgboost']}, scikit-learn {v['sklearn']},
  pgexact {v['pgexact']}
<!-- xgboost-end -->
"""
    # Replace only this script's section: the other benchmarks write theirs into the same file.
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    begin, end = "<!-- xgboost-begin -->", "<!-- xgboost-end -->"
    if begin in old and end in old:
        text = old[: old.index(begin)] + text + old[old.index(end) + len(end) + 1:]
    elif old.strip():
        text = text + "\n" + old
    path.write_text(text, encoding="utf-8")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "datasets",
                    help="directory with winequality_red.csv and california_housing.csv")
    ap.add_argument("--rows", type=int, default=100, help="test rows per model")
    ap.add_argument("--repeats", type=int, default=3, help="repeats; the median is reported")
    ap.add_argument("--n-jobs", type=int, default=2, help="threads for pgexact and XGBoost")
    ap.add_argument("--sigma", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ranking", choices=["greedy", "random"], default="greedy",
                    help="the fixed ranking: greedy exact (computed once, not in the timings) "
                         "or one random permutation for all rows")
    ap.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    results = []
    label = "a"
    for loader, n_trees, depth in ((load_wine, 40, 4), (load_housing, 100, 6)):
        dataset, _names, Xtr, Xte, ytr, _yte = loader(args.data_dir, args.seed)
        results.append(bench_model(label, dataset, Xtr, Xte, ytr, n_trees=n_trees, depth=depth,
                                   rows=args.rows, repeats=args.repeats, sigma=args.sigma,
                                   n_jobs=args.n_jobs, seed=args.seed, log=log,
                                   ranking_kind=args.ranking))
        label = "b"
    table = markdown_table(results)
    info = machine_info(args.n_jobs)
    print(table)
    print(f"\n{info['cpu']}, nproc={info['nproc']}, threads={args.n_jobs}, "
          + ", ".join(f"{k} {v}" for k, v in info["versions"].items()))
    if not args.no_write:
        write_results(args.results, table, info, args)
        log(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
