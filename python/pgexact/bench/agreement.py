"""``pgexact-bench agreement``: do faithfulness metrics agree on which explainer is best, how
many rows does a reliable verdict need, and does the verdict survive a change of datasets?

Per setup (dataset x model) :func:`pgexact.metrics.agreement` scores the explainers
(:mod:`~pgexact.bench.agreement_setup`) under every metric; across setups
:mod:`pgexact.metrics._agreement_across` ranks them per dataset (the heat map) and computes how
often a verdict on a random subset of datasets and metrics differs from the verdict on all.
:func:`run_agreement` returns the results.json payload, :func:`agreement_tables` prints it,
:mod:`~pgexact.bench.agreement_plots` draws it, :func:`cmd_agreement` is the subcommand.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from pgexact._optional import install_hint, optional
from pgexact.metrics import agreement
from pgexact.metrics._agreement_across import (cell_ranks, dataset_ranks, kendall_w,
                                               pair_verdicts, subset_flip_probability)

from .agreement_plots import top_pairs
from .agreement_setup import EXPLAINERS, Setup, explain, load_setups
from .common import (Args, Json, UsageError, call_progress, echo, first_line, log, text_table,
                     versions)

__all__ = ["DEFAULTS", "QUICK", "across_datasets", "agreement_tables", "cmd_agreement",
           "pooled_summary", "run_agreement", "write_results"]

#: the sizes of a full run, and of --quick (a few seconds; the tests use it)
DEFAULTS = dict(n_samples=2000, rows=200, bootstraps=1000, seeds=20, mc_samples=100,
                permutation_repeats=5)
QUICK = dict(n_samples=400, rows=12, bootstraps=50, seeds=3, mc_samples=20,
             permutation_repeats=2)


def _settings(args: Args) -> Json:
    """The run's sizes: the command line, with the (--quick) defaults where it gave none."""
    base = QUICK if args.quick else DEFAULTS
    st: Json = {k: (getattr(args, k) if getattr(args, k, None) is not None else v)
                for k, v in base.items()}
    if len(set(args.explainers)) < 2:
        raise UsageError("--explainers: give at least two different explainers")
    if st["rows"] < 4:
        raise UsageError("--rows: at least 4 rows (the bootstrap needs several)")
    return dict(st, quick=bool(args.quick), sigma=args.sigma, level=args.level, rule=args.rule,
                explainers=list(dict.fromkeys(args.explainers)))


def _run_setup(args: Args, st: Json, s: Setup, where: str) -> Tuple[Json, Any]:
    """Explain the setup's rows with every explainer and score them: (its JSON, the
    AgreementResult)."""
    log(args, f"{where} {s.label}: explaining {s.X.shape[0]} rows with {len(st['explainers'])} "
              "explainers ...")
    explanations, seconds = explain(s, st["explainers"], args, st)
    log(args, f"{where} {s.label}: scoring ({st['bootstraps']} bootstraps, {st['seeds']} Monte "
              f"Carlo seeds of {st['mc_samples']} samples) ...")
    kw: Json = dict(ground_truth=s.ground_truth, sigma=args.sigma, n_samples=st["mc_samples"],
                    n_seeds=st["seeds"], n_bootstraps=st["bootstraps"], level=args.level,
                    seed=args.seed, n_jobs=args.n_jobs, progress=call_progress(args))
    if args.metrics:
        kw["metrics"] = tuple(args.metrics)
    try:
        res = agreement(s.ens, s.X, explanations, **kw)
    except ValueError as e:
        msg = first_line(e)
        if msg.startswith("metrics:"):  # the one argument the user spelled
            raise UsageError(f"--{msg}") from None
        raise
    described = [dict(name=EXPLAINERS[k][0], id=k, description=EXPLAINERS[k][1],
                      time_per_row_s=seconds[EXPLAINERS[k][0]]) for k in st["explainers"]]
    return dict(label=s.label, data=s.data, model=s.model_info, explained_rows=int(s.X.shape[0]),
                explainers=described, agreement=res.to_dict()), res


def across_datasets(results: List[Any], labels: List[str], rule: str, seed: int) -> Json:
    """The dataset x explainer statistics of several AgreementResults (one per setup).

    Every metric any setup has is a column of the score table (NaN where a setup lacks it:
    ground-truth metrics on real data). Returns the results.json ``across`` entry.
    """
    explainers = list(results[0].explainers)
    metrics: List[str] = list(dict.fromkeys(m for r in results for m in r.metrics))
    hib: Dict[str, bool] = {}
    S = np.full((len(results), len(metrics), len(explainers)), np.nan)
    for d, r in enumerate(results):
        hib.update(r.higher_is_better)
        for i, m in enumerate(r.metrics):
            S[d, metrics.index(m)] = np.asarray(r.mean_scores)[i]
    ranks = cell_ranks(S, [hib[m] for m in metrics])
    heat = dataset_ranks(ranks)
    flips = subset_flip_probability(ranks, rule=rule, seed=seed)
    return dict(datasets=labels, explainers=explainers, metrics=metrics, rule=rule,
                mean_scores=S, cell_ranks=ranks, heat_map=heat, kendall_w=kendall_w(heat),
                verdict=pair_verdicts(ranks, rule=rule),
                subset_flip={k: v for k, v in flips.items()})


def _nanmean(values: List[float]) -> Optional[float]:
    v = np.asarray(values, dtype=float)
    return float(np.mean(v[np.isfinite(v)])) if np.any(np.isfinite(v)) else None


def pooled_summary(results: List[Any], baseline: str = "random") -> Json:
    """Per metric, pooled over setups and over the pairs of explainers other than
    ``baseline`` (a chance baseline loses every comparison and would make every metric look
    decisive): the rows a verdict needs, the flip probability, seed flips, agreement with the
    other metrics, the error-case rate, and each setup's hardest rows."""
    metrics: List[str] = list(dict.fromkeys(m for r in results for m in r.metrics))
    out: Json = dict(metrics=metrics, baseline=baseline, per_metric=[], agreement=None,
                     hardest=[])
    for name in metrics:
        need, flip, seed_flip, err, n_rows = [], [], [], [], []
        for r in results:
            if name not in r.metrics:
                continue
            a = r.metrics.index(name)
            keep = [i for i, e in enumerate(r.explainers) if e != baseline]
            for x in range(len(keep)):
                for y in range(x + 1, len(keep)):
                    i, j = keep[x], keep[y]
                    if np.isfinite(r.flip_probability[a, i, j]):
                        need.append(float(r.rows_needed[a, i, j]))
                        flip.append(float(r.flip_probability[a, i, j]))
                        seed_flip.append(float(r.seed_flip_rate[a, i, j]))
                        n_rows.append(r.n_rows)
            err.append(float(r.error_case_rate[a]))
        need_a = np.asarray(need)
        out["per_metric"].append(dict(
            metric=name, monte_carlo=any(r.monte_carlo.get(name, False) for r in results),
            pairs=len(need), median_rows_needed=float(np.median(need_a)) if need else None,
            settled_share=float(np.mean(np.isfinite(need_a))) if need else None,
            mean_flip_probability=float(np.mean(flip)) if flip else None,
            mean_seed_flip_rate=_nanmean(seed_flip), mean_error_case_rate=_nanmean(err)))
    A = np.full((len(results), len(metrics), len(metrics)), np.nan)
    for d, r in enumerate(results):
        idx = [metrics.index(m) for m in r.metrics]
        A[d][np.ix_(idx, idx)] = np.asarray(r.metric_agreement)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a metric pair no setup has: NaN
        out["agreement"] = np.nanmean(A, axis=0)
    out["hardest"] = [dict(rows=[int(x) for x in r.hardest_rows[:5]],
                           median_hardness=float(np.nanmedian(r.hardness)),
                           hardness=[float(r.hardness[x]) for x in r.hardest_rows[:5]])
                      for r in results]
    return out


def run_agreement(args: Args) -> Tuple[Json, List[Any]]:
    """Run the comparison for the parsed command line: (the results.json payload, the
    AgreementResult of every setup)."""
    st = _settings(args)
    setups = load_setups(args, st)
    per: List[Json] = []
    results: List[Any] = []
    for k, s in enumerate(setups):
        js, res = _run_setup(args, st, s, f"[{k + 1}/{len(setups)}]")
        per.append(js)
        results.append(res)
    across = across_datasets(results, [s.label for s in setups], args.rule, args.seed)
    return dict(command="agreement", argv=getattr(args, "argv", None), seed=args.seed,
                settings=st, setups=per, summary=pooled_summary(results), across=across,
                versions=versions()), results


def _f(v: float, spec: str) -> str:
    return "-" if v is None or not np.isfinite(v) else format(v, spec)


def _verdict_rows(label: str, res: Any) -> List[List[str]]:
    """One line per metric: the best explainer against the runner-up."""
    rows = []
    for m, i, j in top_pairs(res):
        ex = res.explainers
        tie = " (tie)" if res.ranks[m, i] == res.ranks[m, j] else ""
        rows.append([label, res.metrics[m] + (" (MC)" if res.monte_carlo[res.metrics[m]] else ""),
                     ex[i], ex[j] + tie, _f(res.win_rate[m, i, j], ".2f"),
                     _f(res.flip_probability[m, i, j], ".3f"),
                     _f(res.rows_needed[m, i, j], ".0f").replace("inf", f">{res.n_rows}"),
                     _f(res.seed_flip_rate[m, i, j], ".2f")])
    return rows


def _pooled_tables(sm: Json, setups: List[Json]) -> str:
    """The pooled summary: rows needed and flips per metric, mean metric agreement, hard
    rows."""
    rows = [[p["metric"] + (" (MC)" if p["monte_carlo"] else ""), str(p["pairs"]),
             "inf" if p["median_rows_needed"] == np.inf else _f(p["median_rows_needed"], ".0f"),
             _f(p["settled_share"], ".0%"),
             _f(p["mean_flip_probability"], ".3f"), _f(p["mean_seed_flip_rate"], ".3f"),
             _f(p["mean_error_case_rate"], ".2f")] for p in sm["per_metric"]]
    out = [f"\npooled over setups and the pairs of explainers other than {sm['baseline']!r}: "
           "median rows needed (inf: not settled by all rows), share of pairs settled, mean "
           "P(flip) on all rows, mean seed-flip rate, mean error-case rate",
           text_table(["metric", "pairs", "rows needed", "settled", "P(flip)", "seed flips",
                       "error cases"], rows),
           "\nmetric agreement (share of explainer pairs with the same verdict), mean over "
           "setups",
           text_table(["metric"] + sm["metrics"],
                      [[m] + [_f(v, ".2f") for v in np.asarray(sm["agreement"])[i]]
                       for i, m in enumerate(sm["metrics"])]),
           "\nhardest rows (1 - best PGI² / PG²(all); row positions among the explained rows)",
           text_table(["setup", "median hardness", "hardest 5"],
                      [[js["label"], _f(h["median_hardness"], ".2f"),
                        ", ".join(f"{r} ({v:.2f})" for r, v in zip(h["rows"], h["hardness"]))]
                       for js, h in zip(setups, sm["hardest"])], "lrl")]
    return "\n".join(out)


def agreement_tables(payload: Json, results: List[Any]) -> str:
    """The printed tables: verdicts per setup and metric, the heat map, the subset flips."""
    parts = []
    rows = [r for js, res in zip(payload["setups"], results) for r in _verdict_rows(
        js["label"], res)]
    parts.append(text_table(["setup", "metric", "best", "runner-up", "win rate", "P(flip)",
                             "rows needed", "seed flips"], rows, "llllrrrr"))
    parts.append(_pooled_tables(payload["summary"], payload["setups"]))
    a = payload["across"]
    heat = np.asarray(a["heat_map"])
    parts.append(f"\nrank of each explainer per setup (mean of its ranks over the metrics, "
                 f"re-ranked; 1 = best); Kendall's W across setups = {_f(a['kendall_w'], '.3f')}")
    parts.append(text_table(["setup"] + a["explainers"],
                            [[lab] + [_f(v, "g") for v in heat[d]]
                             for d, lab in enumerate(a["datasets"])]))
    sf = a["subset_flip"]
    mean, win = np.asarray(sf["mean"]), np.asarray(sf["winner"])
    parts.append(f"\nP(a pairwise verdict on a random subset differs from the verdict on all "
                 f"{len(a['datasets'])} setups x {len(a['metrics'])} metrics), mean over pairs "
                 f"[P(the winner differs)], rule {a['rule']}; rows: setups in the subset, "
                 "columns: metrics")
    parts.append(text_table(["setups"] + [str(b + 1) for b in range(mean.shape[1])],
                            [[str(d + 1)] + [f"{_f(mean[d, b], '.2f')} [{_f(win[d, b], '.2f')}]"
                                             for b in range(mean.shape[1])]
                             for d in range(mean.shape[0])]))
    return "\n".join(parts)


def _compact(o: Any) -> Any:
    """JSON-able copy of ``o``: arrays as lists, floats to 6 significant digits, NaN as None
    and infinities as "inf" / "-inf" (as AgreementResult.to_dict writes them)."""
    if isinstance(o, dict):
        return {str(k): _compact(v) for k, v in o.items()}
    if isinstance(o, (list, tuple, np.ndarray)):
        return [_compact(v) for v in (o.tolist() if isinstance(o, np.ndarray) else o)]
    if isinstance(o, (bool, np.bool_)):
        return bool(o)
    if isinstance(o, (int, np.integer)):
        return int(o)
    if isinstance(o, (float, np.floating)):
        if math.isnan(o):
            return None
        if math.isinf(o):
            return "inf" if o > 0 else "-inf"
        return float(f"{float(o):.6g}")
    return o


def write_results(args: Args, payload: Json) -> str:
    """``<--out>/results.json``, compact: a run holds a few (metric, row, explainer) arrays
    per setup, and common.write_json's one-number-per-line layout made them megabytes."""
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "results.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(_compact(payload), fh, separators=(",", ":"), allow_nan=False,
                  ensure_ascii=False)
        fh.write("\n")
    return path


def cmd_agreement(args: Args) -> int:
    """The ``agreement`` subcommand: run, print the tables, write the figures and results.json."""
    payload, results = run_agreement(args)
    for js, res in zip(payload["setups"] if args.details or len(results) == 1 else [], results):
        m = js["model"]
        echo(f"\n== {js['label']}: {m.get('n_trees')} trees, {m.get('n_leaves'):,} leaves, "
             f"{m['score_name']} {m['score']:.3f}; {js['explained_rows']} rows explained")
        echo(repr(res))
    echo("\n" + agreement_tables(payload, results))
    echo("\nwin rate: share of rows where the best beats the runner-up; P(flip): bootstrap "
         "probability that the verdict on the mean differs; rows needed: fewest rows with "
         f"P(flip) < 5 %; seed flips: Monte Carlo verdicts that change with the seed "
         "(0 for exact metrics). See docs/agreement.md.")
    matplotlib = optional("matplotlib")
    if matplotlib is None:
        echo(f"figures skipped: matplotlib is not installed ({install_hint('matplotlib')}); "
             "the tables above and results.json are complete")
        payload["figures"] = []
    else:
        from .agreement_plots import plot_all

        matplotlib.use("Agg")
        payload["figures"] = plot_all(args, payload, results)
    log(args, f"wrote {write_results(args, payload)}")
    return 0
