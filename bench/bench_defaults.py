"""Exact PGI² against Monte Carlo on the models people train with library defaults (issue 25).

For each model of issue 25's table, on the shipped California housing and red wine data
(features standardised, 80:20 split, σ = 0.3, a SHAP ranking per row, 1 thread on both sides),
and for each number of rows per call (1 and 64 by default):

- trees / leaves of the parsed model;
- exact ``pgexact.pgi2(model, X, ranking)`` per row;
- ``pgexact.mc.pgi2`` with 100 samples per prefix on the same rows and ranking (MC-100);
- N, the sample count for a 1 % relative standard error, from ``return_se=True`` at a pilot
  sample count (the median over the rows of the per-row N), then MC-N run and timed;
- greedy ``pgexact.rank`` on the same rows against the exact PGI² of the given ranking.

Exact and MC are timed back to back in this one process, interleaved, median of the repeats:
the machine is shared, so only ratios taken within one run mean anything. A call that
``pgexact.estimate`` projects past ``--max-seconds`` runs on fewer rows (the table says so);
when even one row is projected past it, the estimate is reported and marked "estimated".

``PGEXACT_LEAF_PRUNING`` (per-row leaf pruning in the exact kernel, on unless ``0``; read per
call) is recorded; on the first ``--pruning-models`` models the exact call is timed both ways,
interleaved, for the before/after of that switch.

    python bench/bench_defaults.py [--quick] [--models gbr,xgb,...] [--rows 1,64]
                                   [--max-seconds 120] [--repeats 3] [--write]

Not part of the test run (pytest collects ``tests/`` only).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import pgexact  # noqa: E402
import pgexact.mc  # noqa: E402
from pgexact.bench.data import DATA_FILES, default_data_dir, read_table, standardise_features  # noqa: E402

from _results import write_section  # noqa: E402

MARK_BEGIN = "<!-- defaults-begin -->"  # --section NAME: <!-- NAME-begin --> instead
MARK_END = "<!-- defaults-end -->"
SIGMA = 0.3
PRUNING = "PGEXACT_LEAF_PRUNING"


# ----------------------------------------------------------------------------------- data


def load_dataset(name: str, data_dir: str, seed: int):
    """Standardised 80:20 split of one shipped file, read where it is (never copied)."""
    from sklearn.model_selection import train_test_split

    fname, sep, target, drop = DATA_FILES[name]
    X, y, names, _, _ = read_table(os.path.join(data_dir, fname), sep=sep, target=target, drop=drop)
    if name == "housing":
        keep = ~np.isnan(X).any(axis=1)  # total_bedrooms: rows with NaN dropped (as the paper)
        X, y = X[keep], y[keep] / 1e5  # target in units of 100,000 dollars
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=seed)
    Xtr, Xte = standardise_features(Xtr, Xte)
    return np.ascontiguousarray(Xtr), np.ascontiguousarray(Xte), ytr, yte, names


# --------------------------------------------------------------------------------- models


def _xgb(**kw):
    import xgboost as xgb

    return xgb.XGBRegressor(random_state=0, n_jobs=2, **kw)


def _lgbm(**kw):
    import lightgbm as lgb

    return lgb.LGBMRegressor(random_state=0, n_jobs=2, verbose=-1, **kw)


def _cat(**kw):
    import catboost as cb

    return cb.CatBoostRegressor(random_seed=0, thread_count=2, verbose=0,
                                allow_writing_files=False, **kw)


def _sk(cls_name, **kw):
    import sklearn.ensemble as ske

    cls = getattr(ske, cls_name)
    extra = {"n_jobs": 2} if "Forest" in cls_name or "Trees" in cls_name else {}
    return cls(random_state=0, **extra, **kw)


# key -> (label, dataset, factory); the order of issue 25's table. Training uses 2 threads
# (it is not measured); every measured predict and exact call uses 1.
MODELS: Dict[str, tuple] = {
    "gbr": ("GradientBoostingRegressor()", "housing", lambda: _sk("GradientBoostingRegressor")),
    "hgb": ("HistGradientBoostingRegressor()", "housing",
            lambda: _sk("HistGradientBoostingRegressor")),
    "lgbm": ("LGBMRegressor()", "housing", lambda: _lgbm()),
    "gbr-wine": ("GradientBoostingRegressor()", "wine", lambda: _sk("GradientBoostingRegressor")),
    "hgb-wine": ("HistGradientBoostingRegressor()", "wine",
                 lambda: _sk("HistGradientBoostingRegressor")),
    "lgbm-wine": ("LGBMRegressor()", "wine", lambda: _lgbm()),
    "xgb": ("XGBRegressor() (100 × depth 6)", "housing", lambda: _xgb(n_estimators=100, max_depth=6)),
    "cat200": ("CatBoostRegressor(iterations=200)", "housing", lambda: _cat(iterations=200)),
    "rf10": ("RandomForestRegressor(max_depth=10)", "housing",
             lambda: _sk("RandomForestRegressor", max_depth=10)),
    "rf-wine": ("RandomForestRegressor()", "wine", lambda: _sk("RandomForestRegressor")),
    "xgb500": ("XGBRegressor(500, max_depth=8)", "housing",
               lambda: _xgb(n_estimators=500, max_depth=8)),
    "lgbm500": ("LGBMRegressor(500, num_leaves=255)", "housing",
                lambda: _lgbm(n_estimators=500, num_leaves=255)),
    "cat1000": ("CatBoostRegressor() (1000 trees)", "housing", lambda: _cat()),
    "rf": ("RandomForestRegressor()", "housing", lambda: _sk("RandomForestRegressor")),
    "et": ("ExtraTreesRegressor()", "housing", lambda: _sk("ExtraTreesRegressor")),
}
QUICK = ["gbr", "hgb", "lgbm", "xgb"]


# ------------------------------------------------------------------------------ measuring


def fmt(seconds: float) -> str:
    if seconds is None or not np.isfinite(seconds):
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def ratio(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or not np.isfinite(a) or not np.isfinite(b) or b <= 0:
        return "-"
    r = a / b
    return f"{r:.3g}" if r < 1000 else (f"{r:,.0f}" if r < 1e6 else f"{r:.1e}")


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def set_pruning(value: Optional[str]) -> None:
    if value is None:
        os.environ.pop(PRUNING, None)
    else:
        os.environ[PRUNING] = value


def pruning_state() -> str:
    v = os.environ.get(PRUNING)
    return f"{PRUNING}={v!r} (pruning {'off' if v == '0' else 'on'})" if v is not None else \
        f"{PRUNING} unset (pruning on)"


def build_reads_pruning_flag() -> bool:
    """Whether the loaded _core mentions the variable at all (a build before the switch does not)."""
    try:
        return PRUNING.encode() in Path(pgexact._core.__file__).read_bytes()
    except OSError:
        return False


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def needed_samples(model, X, ranking, pilot: int, target_rse: float) -> Dict[str, Any]:
    """Per-row N for ``target_rse`` relative standard error of MC PGI², from a pilot run."""
    t = time.perf_counter()
    mean, se = pgexact.mc.pgi2(model, X, ranking, sigma=SIGMA, n_samples=pilot, n_jobs=1,
                               return_se=True, progress=False)
    seconds = time.perf_counter() - t
    rse = se / np.abs(mean)
    ok = np.isfinite(rse) & (mean > 0)
    per_row = np.ceil(pilot * (rse[ok] / target_rse) ** 2)
    if per_row.size == 0:
        return dict(N=None, lo=None, hi=None, pilot_seconds=seconds)
    N = int(np.ceil(np.median(per_row) / 100.0) * 100)
    return dict(N=max(N, 100), lo=int(per_row.min()), hi=int(per_row.max()), pilot_seconds=seconds)


class Runner:
    def __init__(self, args):
        self.args = args
        self.log = lambda m: print(m, file=sys.stderr, flush=True)

    def bench_model(self, key: str, data_cache: Dict[str, Any]) -> List[Dict[str, Any]]:
        args, log = self.args, self.log
        label, dataset, factory = MODELS[key]
        if dataset not in data_cache:
            data_cache[dataset] = load_dataset(dataset, args.data_dir, args.seed)
        Xtr, Xte, ytr, _, _ = data_cache[dataset]
        t = time.perf_counter()
        model = factory().fit(Xtr, ytr)
        t_fit = time.perf_counter() - t
        t_load = statistics.median(timed(lambda: pgexact.load(model)) for _ in range(3))
        ens = pgexact.load(model)
        log(f"[{key}] {label} on {dataset}: {ens.n_trees} trees, {ens.n_leaves} leaves, depth "
            f"{ens.max_depth}; fit {t_fit:.1f} s, parse {fmt(t_load)}")
        rng = np.random.default_rng(args.seed)
        n_max = max(max(args.rows), args.draw)  # the same rows whatever --rows asks for
        R_all = np.ascontiguousarray(Xte[rng.choice(Xte.shape[0], n_max, replace=False)])
        rk_all = pgexact.metrics.shap_ranking(model, R_all)
        # One row first, with pgexact.estimate: it decides how many rows a call can afford.
        t = time.perf_counter()
        est1 = pgexact.estimate(model, R_all[:1], "pgi2", ranking=rk_all[:1], sigma=SIGMA, n_jobs=1)
        t_est1 = time.perf_counter() - t
        log(f"[{key}] estimate for 1 row: {fmt(est1)} (took {fmt(t_est1)})")
        out = []
        for k in args.rows:
            out.append(self.bench_rows(key, label, dataset, model, ens, R_all, rk_all, k, est1, t_load,
                                       t_est1))
        return out

    def bench_rows(self, key, label, dataset, model, ens, R_all, rk_all, k, est1, t_load, t_est1):
        args, log = self.args, self.log
        budget = args.max_seconds
        row: Dict[str, Any] = dict(key=key, label=label, dataset=dataset, trees=ens.n_trees,
                                   leaves=ens.n_leaves, depth=ens.max_depth, d=R_all.shape[1],
                                   rows_asked=k, parse=t_load, notes=[])
        # How many rows the exact call can afford: halve until the estimate fits the budget.
        estimated = est1 > budget
        n = k
        est = est1
        t_est = t_est1  # how long the estimate of the call run took
        if not estimated and k > 1:
            while True:
                t = time.perf_counter()
                est = pgexact.estimate(model, R_all[:n], "pgi2", ranking=rk_all[:n], sigma=SIGMA,
                                       n_jobs=1)
                t_est = time.perf_counter() - t
                if est <= budget or n == 1:
                    break
                n = max(1, n // 2)
            if n < k:
                row["notes"].append(f"exact on {n} of {k} rows (estimate for {k} rows past "
                                    f"{budget:.0f} s)")
        R, rk = R_all[:n], rk_all[:n]
        row.update(rows=n, estimate=est, estimated=estimated)

        exact = lambda: pgexact.pgi2(model, R, rk, sigma=SIGMA, n_jobs=1, progress=False)  # noqa: E731
        mc100 = lambda: pgexact.mc.pgi2(model, R, rk, sigma=SIGMA, n_samples=100, n_jobs=1,  # noqa: E731
                                        progress=False)
        both_ways = key in args.pruning_models and not estimated and build_reads_pruning_flag()
        variants: List[Optional[str]] = ["0", "1"] if both_ways else [os.environ.get(PRUNING)]
        launch_state = os.environ.get(PRUNING)
        # repeats: as many as fit the budget (at least one)
        reps = args.repeats if est * args.repeats * len(variants) <= budget else 1
        t_ex: Dict[Optional[str], List[float]] = {v: [] for v in variants}
        values: Dict[Optional[str], np.ndarray] = {}
        t_mc: List[float] = []
        if not estimated:
            if est < 1.0:  # warm-up for cheap calls: first-call costs are not what we compare
                exact(), mc100()
            for _ in range(reps):  # interleaved, so a neighbour's load hits both alike
                for v in variants:
                    set_pruning(v)
                    t = time.perf_counter()
                    values[v] = exact()
                    t_ex[v].append(time.perf_counter() - t)
                set_pruning(launch_state)
                t_mc.append(timed(mc100))
            set_pruning(launch_state)
            main = launch_state if launch_state in t_ex else (variants[-1])
            row["exact"] = statistics.median(t_ex[main]) / n
            row["est_ratio"] = est / (row["exact"] * n)
            row["est_seconds"] = [t_est]
            if both_ways:
                row["exact_off"] = statistics.median(t_ex["0"]) / n
                row["exact_on"] = statistics.median(t_ex["1"]) / n
                a, b = values["0"], values["1"]
                row["prune_rel_diff"] = float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-300)))
        else:
            # Not run: pgexact.estimate of the whole k-row call (the pair enumeration is shared
            # by the rows of a call, so a row costs less in a bigger call).
            est = est1 if k == 1 else pgexact.estimate(model, R, "pgi2", ranking=rk, sigma=SIGMA,
                                                       n_jobs=1)
            row.update(exact=est / n, estimate=est)
            row["notes"].append(f"exact not run: estimated {fmt(est)} for the {n}-row call "
                                f"(one row: {fmt(est1)}, past {budget:.0f} s)")
            for _ in range(args.repeats):
                t_mc.append(timed(mc100))
        row["reps"] = reps
        row["mc100"] = statistics.median(t_mc) / n
        log(f"[{key}] {n} rows: exact {fmt(row['exact'])}{' (estimated)' if estimated else ''}, "
            f"MC-100 {fmt(row['mc100'])} per row")

        # N for 1 % relative standard error (pilot on at most --pilot-rows rows), then MC-N.
        pr = min(n, args.pilot_rows)
        pilot = needed_samples(model, R[:pr], rk[:pr], args.pilot, args.rse)
        row.update(N=pilot["N"], N_lo=pilot["lo"], N_hi=pilot["hi"])
        if pilot["N"] is not None:
            N = pilot["N"]
            projected = row["mc100"] * N / 100.0  # per row
            m = n
            while m > 1 and projected * m * 2 > budget:  # MC-N twice: the budget for both runs
                m = max(1, m // 2)
            if m < n:
                row["notes"].append(f"MC-N on {m} of {n} rows")
            mcN = lambda: pgexact.mc.pgi2(model, R[:m], rk[:m], sigma=SIGMA, n_samples=N,  # noqa: E731
                                          n_jobs=1, progress=False)
            r2 = 2 if projected * m * 2 <= budget else 1
            row["mcN"] = statistics.median(timed(mcN) for _ in range(r2)) / m
            row["mcN_rows"] = m
            log(f"[{key}] N = {N} (per row {pilot['lo']}–{pilot['hi']}), MC-N {fmt(row['mcN'])} per row "
                f"on {m} rows")

        # Greedy rank on the same rows, against the exact PGI² of the given ranking.
        if not args.no_rank:
            t = time.perf_counter()
            est_rank = pgexact.estimate(model, R, "rank", sigma=SIGMA, n_jobs=1)
            row.setdefault("est_seconds", []).append(time.perf_counter() - t)
            if est_rank <= budget and not estimated:
                t_r, t_e = [], []
                r3 = reps if est_rank * reps <= budget else 1
                for _ in range(r3):
                    t_r.append(timed(lambda: pgexact.rank(model, R, sigma=SIGMA, n_jobs=1,
                                                          progress=False)))
                    t_e.append(timed(exact) if r3 > 1 else row["exact"] * n)
                row["rank_ratio"] = statistics.median(t_r) / statistics.median(t_e)
                row["rank_estimated"] = False
                row["est_rank_ratio"] = est_rank / statistics.median(t_r)
            else:
                row["rank_ratio"] = est_rank / row["estimate"]  # both projected alike
                row["rank_estimated"] = True
            log(f"[{key}] rank / exact {row['rank_ratio']:.2f}"
                f"{' (estimated)' if row['rank_estimated'] else ''}")
        row["rss"] = rss_mib()
        return row


# --------------------------------------------------------------------------------- output


def table_lines(rows: List[Dict[str, Any]]) -> List[str]:
    lines = ["| model | data | trees / leaves (depth) | rows / call | exact PGI² / row | MC-100 / row "
             "| exact / MC-100 | N for 1 % (row range) | MC-N / row | exact / MC-N | rank / PGI² "
             "| estimate / time: PGI², rank (estimate took) | notes |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    for r in rows:
        star = " (estimated)" if r["estimated"] else ""
        rows_cell = f"{r['rows']}" if r["rows"] == r["rows_asked"] else f"{r['rows']} (of {r['rows_asked']})"
        n_cell = "-" if r.get("N") is None else f"{r['N']:,} ({r['N_lo']:,}–{r['N_hi']:,})"
        rank = "-" if "rank_ratio" not in r else f"{r['rank_ratio']:.2f}" + (" (est.)" if r["rank_estimated"] else "")
        est_cell = ("-" if "est_ratio" not in r else f"{r['est_ratio']:.2f}") + ", " + \
            ("-" if "est_rank_ratio" not in r else f"{r['est_rank_ratio']:.2f}") + \
            ("" if not r.get("est_seconds") else f" ({fmt(max(r['est_seconds']))})")
        lines.append(
            f"| {r['label']} | {r['dataset']} | {r['trees']} / {r['leaves']:,} ({r['depth']}) | {rows_cell} | "
            f"{fmt(r['exact'])}{star} | {fmt(r['mc100'])} | {ratio(r['exact'], r['mc100'])}{star} | {n_cell} | "
            f"{fmt(r.get('mcN'))} | {ratio(r['exact'], r.get('mcN'))}{star} | {rank} | {est_cell} | "
            f"{'; '.join(r['notes'])} |")
    return lines


def pruning_lines(rows: List[Dict[str, Any]]) -> List[str]:
    sel = [r for r in rows if "exact_off" in r]
    if not sel:
        return []
    lines = ["", f"### Per-row leaf pruning off / on (`{PRUNING}=0` / `=1`, same process, interleaved)", "",
             "| model | data | rows / call | exact, pruning off | exact, pruning on | off / on | "
             "max relative difference |", "|---|---|--:|--:|--:|--:|--:|"]
    for r in sel:
        lines.append(f"| {r['label']} | {r['dataset']} | {r['rows']} | {fmt(r['exact_off'])} | "
                     f"{fmt(r['exact_on'])} | {ratio(r['exact_off'], r['exact_on'])} | "
                     f"{r['prune_rel_diff']:.1e} |")
    return lines


def machine() -> Dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = [f"Python {platform.python_version()}", f"numpy {np.__version__}"]
    for mod, name in (("sklearn", "scikit-learn"), ("xgboost", "xgboost"), ("lightgbm", "lightgbm"),
                      ("catboost", "catboost"), ("shap", "shap")):
        try:
            versions.append(f"{name} {__import__(mod).__version__}")
        except Exception:  # noqa: BLE001
            pass
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, timeout=10).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no",
                            "--", ".", ":!bench/RESULTS.md"],  # the file this run writes
                           capture_output=True, text=True, timeout=10).stdout.strip()
    return dict(cpu=cpu, nproc=str(os.cpu_count()), versions=", ".join(versions),
                commit=commit + (" with uncommitted changes" if dirty else ""),
                load="{:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


def markdown(rows, args, info, started, complete: bool) -> str:
    begin, end = f"<!-- {args.section}-begin -->", f"<!-- {args.section}-end -->"
    cmd = "python bench/bench_defaults.py " + " ".join(sys.argv[1:])
    state = pruning_state()
    lines = [
        begin,
        "## Library defaults (issue 25): exact PGI² against MC-100 and MC-N (bench/bench_defaults.py)",
        "",
        f"`{cmd.strip()}` on {started:%Y-%m-%d %H:%M} UTC, commit {info['commit']}, {state} at launch; "
        f"the loaded `_core` {'reads' if build_reads_pruning_flag() else 'does NOT read'} `{PRUNING}`"
        + ("" if complete else " — **partial: the run stopped here; models not listed were not run**") + ".",
        "",
        *table_lines(rows),
        *pruning_lines(rows),
        "",
        f"Per-row times; 1 thread on both sides (`n_jobs=1`: the exact kernel and the library's own "
        f"predict through `pgexact.mc`); the model object is passed to both, so both pay for parsing it "
        f"on every call (parse time per model: "
        + ", ".join(f"{r['key']} {fmt(r['parse'])}" for r in rows if r['rows_asked'] == args.rows[0])
        + "). Exact and MC-100 interleaved in this one process, median of up to "
        f"{args.repeats} repeats (one where {args.repeats} would run past {args.max_seconds:.0f} s). "
        f"N: the sample count per prefix for a {args.rse:.0%} relative standard error of MC PGI², "
        f"from `pgexact.mc.pgi2(..., return_se=True)` with {args.pilot} samples on at most "
        f"{args.pilot_rows} of the rows (median of the rows' N, rounded up to 100; their range in "
        "brackets); MC-N is then run with that N and timed, not extrapolated (fewer rows where the "
        "notes say so: MC time per row depends little on the batch beyond the parse). \"rank / PGI²\": greedy "
        "`pgexact.rank` on the same rows over the exact PGI² of the SHAP ranking (\"est.\": the ratio of "
        "the two calls' `pgexact.estimate`, neither run). \"estimate / time\": `pgexact.estimate` of the "
        "PGI² call and of the ranking over their measured times (the estimates made before the calls, "
        "on a model that earlier calls of this run may have left in the pair cache), and in brackets "
        "the longer of the two estimates' own wall-clock times. Rows per call reduced where `pgexact.estimate` "
        f"projected the call past {args.max_seconds:.0f} s; \"estimated\": even one row was projected "
        "past it, so nothing exact was run: the time is `pgexact.estimate`'s for the whole call of that "
        "many rows, divided by the rows. Data: `california_housing.csv` (rows with "
        "NaN and `ocean_proximity` dropped, target in units of 10⁵) and `winequality_red.csv`, "
        "features standardised, 80:20 split (seed 0), rows drawn from the test split; rankings "
        "`pgexact.metrics.shap_ranking` (SHAP TreeExplainer); Gaussian noise, σ = 0.3.",
        "",
        f"Machine: {info['cpu']}, `nproc` = {info['nproc']}, shared with other jobs (load average at "
        f"the end {info['load']}); {info['versions']}; peak RSS of the process "
        f"{max(r['rss'] for r in rows):.0f} MiB.",
        end,
    ]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"small models only ({', '.join(QUICK)}), rows 1,8")
    ap.add_argument("--models", default=None, help=f"comma-separated keys of: {', '.join(MODELS)}")
    ap.add_argument("--rows", default=None, help="rows per call, comma-separated (default 1,64)")
    ap.add_argument("--max-seconds", type=float, default=120.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pilot", type=int, default=1000, help="samples of the pilot MC run that finds N")
    ap.add_argument("--pilot-rows", type=int, default=16)
    ap.add_argument("--rse", type=float, default=0.01, help="target relative standard error")
    ap.add_argument("--pruning-models", default="gbr,hgb,lgbm,xgb,cat200",
                    help="models timed with pruning off and on")
    ap.add_argument("--draw", type=int, default=64,
                    help="rows drawn from the test split (the first k of them serve a call of k rows), so that "
                         "a run with --rows 1 times the row a default run does")
    ap.add_argument("--no-rank", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--section", default="defaults", help="name of the RESULTS.md section (its markers)")
    ap.add_argument("--write", action="store_true", help="write the section of bench/RESULTS.md "
                    "(after every model, so a stopped run leaves what it measured)")
    args = ap.parse_args(argv)
    args.data_dir = args.data_dir or default_data_dir() or str(REPO.parent / "shared" / "datasets")
    keys = args.models.split(",") if args.models else (QUICK if args.quick else
                                                       [k for k in MODELS if not k.endswith("-wine")
                                                        or k == "rf-wine"])
    unknown = [k for k in keys if k not in MODELS]
    if unknown:
        ap.error(f"unknown model keys {unknown}; choose from {', '.join(MODELS)}")
    args.rows = [int(v) for v in (args.rows or ("1,8" if args.quick else "1,64")).split(",")]
    args.pruning_models = set(args.pruning_models.split(",")) if args.pruning_models else set()
    warnings.simplefilter("ignore", pgexact.PerformanceWarning)
    started = datetime.datetime.now(datetime.timezone.utc)
    runner = Runner(args)
    rows: List[Dict[str, Any]] = []
    cache: Dict[str, Any] = {}
    failed: List[str] = []
    text = ""
    for i, key in enumerate(keys):
        try:
            rows += runner.bench_model(key, cache)
        except Exception as e:  # noqa: BLE001 - one model's failure must not lose the others
            runner.log(f"[{key}] FAILED: {type(e).__name__}: {e}")
            failed.append(f"{key} ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
        if not rows:
            continue
        text = markdown(rows, args, machine(), started, complete=(i == len(keys) - 1))
        if failed:
            text = text.replace(f"<!-- {args.section}-end -->",
                                "Failed: " + "; ".join(failed) + f"\n<!-- {args.section}-end -->")
        if args.write:
            write_section(text, f"<!-- {args.section}-begin -->", f"<!-- {args.section}-end -->")
    print(text)


if __name__ == "__main__":
    main()
