"""``pgexact-bench rankers``: feature rankers judged the way feature-selection benchmarks judge
them (ground truth, stability, validation curve, cost), next to their exact PGI² and PGU².

:func:`run_rankers` does the work and returns the results.json payload; :func:`rankers_table`
prints it; :mod:`~pgexact.bench.ranker_plots` draws it; :func:`cmd_rankers` is the subcommand.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

import pgexact
from pgexact import metrics

from .common import (Args, Json, UsageError, bar, best_time, echo, first_line, fmt_time, log,
                     require_matplotlib, text_table, versions, write_json)
from .ranker_models import (Context, Ranker, fit_model, given_attributions, model_recipe,
                            rankers_for, ranking_from_scores, warm_up)
from .data import missing_rows_rule
from .truth import TruthData, load_truth

__all__ = ["QUICK", "cmd_rankers", "k_text", "load_rankers_data", "rankers_table", "run_rankers"]

#: --quick: a run of a few seconds (the tests use it)
QUICK = dict(n_samples=400, rows=20, bootstraps=3, permutation_repeats=2)


def _settings(args: Args) -> Json:
    """The run's sizes: the command line, with --quick's defaults where it gave none."""
    quick = bool(getattr(args, "quick", False))

    def pick(name: str, default: int) -> int:
        v = getattr(args, name, None)
        return int(v) if v is not None else (QUICK[name] if quick else default)

    return dict(quick=quick, n_samples=pick("n_samples", 2000), rows=pick("rows", 200),
                bootstraps=pick("bootstraps", 10),
                permutation_repeats=pick("permutation_repeats", 5))


def _eval_index(n_test: int, rows: int, seed: int) -> np.ndarray:
    """Positions of the test rows to explain: ``rows`` of them at random, in their order."""
    if rows >= n_test:
        return np.arange(n_test)
    return np.sort(np.random.default_rng(seed).choice(n_test, rows, replace=False))


def _load_attributions(path: str, n_test: int, d: int) -> np.ndarray:
    """``--attributions``: a (d,) or (n_test, d) float array from a .npy file."""
    if not os.path.isfile(path):
        raise UsageError(f"--attributions: file not found: {path}")
    try:
        A = np.asarray(np.load(path, allow_pickle=False), dtype=np.float64)
    except Exception as e:  # noqa: BLE001 - a broken file is the user's input
        raise UsageError(f"--attributions: cannot read {path}: {first_line(e)}") from None
    if A.shape not in ((d,), (n_test, d)):
        raise UsageError(f"--attributions: expected shape ({d},) or ({n_test}, {d}) (one row per "
                         f"test row, in the order of X_test.npy), got {A.shape}")
    if not np.all(np.isfinite(A)):
        raise UsageError("--attributions: contains NaN or infinite values")
    return A


def _truth_scores(truth: TruthData, imp: np.ndarray, k: int) -> Json:
    """R², log loss and top-k precision/recall against the ground truth (None without it)."""
    out: Json = dict(r2=None, log_loss=None, precision_at_k=None, recall_at_k=None)
    if not truth.has_truth or not np.any(imp > 0):
        return out
    gt = truth.importances
    if gt is None:  # only the relevant set is known: importance 1 each
        gt = np.zeros(imp.size)
        gt[np.asarray(truth.relevant)] = 1.0
    out["r2"] = metrics.importance_r2(imp, gt)
    out["log_loss"] = metrics.importance_log_loss(imp, gt)
    out["precision_at_k"], out["recall_at_k"] = metrics.top_k_precision_recall(
        imp, truth.relevant, k)
    return out


class _Curves:
    """Validation curves with one fit per distinct feature set (rankers often agree)."""

    def __init__(self, library: str, truth: TruthData, recipe: Json, seed: int,
                 n_jobs: Optional[int]) -> None:
        data = truth.data
        self.score = metrics.holdout_scorer(
            lambda: _Unfitted(library, truth.task, recipe, seed, n_jobs),
            data.Xtr, data.ytr, data.Xte, data.yte, task=truth.task)
        self.cache: Dict[Tuple[int, ...], float] = {}

    def fit_score(self, columns: np.ndarray) -> float:
        key = tuple(sorted(int(c) for c in columns))  # the set decides, not its order
        if key not in self.cache:
            self.cache[key] = self.score(np.asarray(key, dtype=np.int64))
        return self.cache[key]


class _Unfitted:
    """An estimator for :func:`pgexact.metrics.holdout_scorer`: the run's library and recipe."""

    def __init__(self, library: str, task: str, recipe: Json, seed: int,
                 n_jobs: Optional[int]) -> None:
        self.library, self.task, self.recipe, self.seed, self.n_jobs = (library, task, recipe,
                                                                         seed, n_jobs)
        self.model: Any = None

    def fit(self, X: np.ndarray, y: np.ndarray) -> "_Unfitted":
        self.model = fit_model(self.library, self.task, X, y, self.recipe, seed=self.seed,
                               n_jobs=self.n_jobs)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict(X))


def _model_info(library: str, recipe: Json, model: Any, ens: Any, truth: TruthData) -> Json:
    data = truth.data
    pred = np.asarray(model.predict(data.Xte))
    if truth.task == "classification":
        score_name, score = "test accuracy", float(np.mean(pred == data.yte))
    else:
        score_name = "test R²"
        score = 1.0 - float(np.sum((data.yte - pred) ** 2) / np.sum((data.yte - data.yte.mean()) ** 2))
    return dict(library=library, **recipe, n_trees=int(ens.n_trees), n_leaves=int(ens.n_leaves),
                score_name=score_name, score=score)


def _run_one(ranker: Ranker, ctx: Context) -> Tuple[np.ndarray, np.ndarray, float]:
    """Importances, the per-row ranking (a global one repeated) and the seconds it took."""
    # the fastest of up to 3 calls while they take < 0.25 s together: the machine may be busy
    (imp, R), seconds = best_time(lambda: ranker.compute(ctx))
    imp = np.asarray(imp, dtype=np.float64)
    if R is None:
        R = np.tile(ranking_from_scores(imp), (ctx.X.shape[0], 1))
    return imp, np.ascontiguousarray(R, dtype=np.int64), seconds


def _bootstrap_importances(args: Args, truth: TruthData, rankers: List[Ranker], ctx: Context,
                           recipe: Json, B: int) -> Dict[str, np.ndarray]:
    """Each ranker's importances on B models retrained on bootstrap resamples of the training
    rows, ``{name: (B, d)}`` (the explained rows stay the same)."""
    data = truth.data
    rng = np.random.default_rng(args.seed + 1000)
    out: Dict[str, List[np.ndarray]] = {r.name: [] for r in rankers}
    pbar = bar(args, total=B * len(rankers), desc="bootstraps")
    try:
        for b in range(B):
            idx = rng.integers(0, data.Xtr.shape[0], data.Xtr.shape[0])
            model = fit_model(args.library, truth.task, data.Xtr[idx], data.ytr[idx], recipe,
                              seed=args.seed + 1 + b, n_jobs=args.n_jobs)
            bctx = ctx._replace(model=model, ens=pgexact.load(model))
            for r in rankers:
                out[r.name].append(np.asarray(r.compute(bctx)[0], dtype=np.float64))
                pbar.update()
    finally:
        pbar.close()
    return {k: np.stack(v) for k, v in out.items()}


def _stability_scores(I: np.ndarray, k: int) -> Json:
    """Nogueira's stability of the top-k sets and the summed variance of the importances."""
    out: Json = dict(stability=None, stability_ci95=None, importance_variance=None)
    if I.shape[0] < 2:
        return out
    phi, lo, hi = metrics.stability_interval(metrics.top_k_mask(I, k))
    out.update(stability=phi, stability_ci95=[lo, hi])
    if np.all(I.sum(axis=1) > 0):
        out["importance_variance"] = metrics.importance_variance(np.maximum(I, 0.0))
    return out


def load_rankers_data(args: Args) -> TruthData:
    """The data of the parsed command line (a ground-truth generator or real data)."""
    return load_truth(args, n=_settings(args)["n_samples"], d=args.features)


def _top_k(args: Args, truth: TruthData) -> int:
    """``--top-k``, or the size of the relevant set, or min(5, d-1) without ground truth."""
    d = truth.data.d
    k = args.top_k or (len(truth.relevant) if truth.relevant is not None else max(1, min(5, d - 1)))
    if not 1 <= k < d:
        raise UsageError(f"--top-k: must be between 1 and {d - 1} (the number of features - 1)")
    return int(k)


def _evaluate(args: Args, everything: List[Ranker], ctx: Context, truth: TruthData,
              curves: _Curves, sigma_eval: float, k: int) -> List[Json]:
    """Every ranker on the original model: its scores, exact PGI²/PGU², validation curve."""
    results: List[Json] = []
    pbar = bar(args, total=len(everything), desc="rankers")
    try:
        for r in everything:
            pbar.set_postfix_str(r.name)
            imp, R, seconds = _run_one(r, ctx)
            pgi2 = pgexact.pgi2(ctx.ens, ctx.X, ranking=R, sigma=sigma_eval, n_jobs=args.n_jobs)
            pgu2 = pgexact.pgu2(ctx.ens, ctx.X, ranking=R, sigma=sigma_eval, n_jobs=args.n_jobs)
            curve = metrics.validation_curve(curves.fit_score, np.maximum(imp, 0.0))
            results.append(dict(
                name=r.name, per_row=r.per_row, description=r.description,
                importances=imp.tolist(), top_k=ranking_from_scores(imp)[:k].tolist(),
                seconds=seconds, time_per_row_s=seconds / ctx.X.shape[0],
                mean_pgi2=float(np.mean(pgi2)), mean_pgu2=float(np.mean(pgu2)),
                validation_curve=curve.tolist(), validation_area=metrics.curve_area(curve),
                **_truth_scores(truth, imp, k)))
            pbar.update()
    finally:
        pbar.close()
    fastest = min(row["time_per_row_s"] for row in results)
    for row in results:
        row["log2_time_ratio"] = float(np.log2(row["time_per_row_s"] / fastest))
    return results


def run_rankers(args: Args, truth: Optional[TruthData] = None) -> Json:
    """Run the comparison for the parsed command line; returns the results.json payload.

    ``truth``: the data, when the caller loaded it already (:func:`load_rankers_data`).
    """
    st = _settings(args)
    if st["bootstraps"] < 0:
        raise UsageError("--bootstraps: must be 0 (skip stability) or a positive count")
    truth = truth or load_rankers_data(args)
    # scikit-learn's GradientBoosting (the sklearn family here) refuses NaN in fit and predict
    truth.data = missing_rows_rule(truth.data, args.library != "sklearn",
                                   {"sklearn": "GradientBoosting"}.get(args.library, args.library))
    data, d = truth.data, truth.data.d
    k = _top_k(args, truth)
    idx = _eval_index(data.Xte.shape[0], st["rows"], args.seed + 1)
    user: Optional[Ranker] = None
    if args.attributions:  # checked before any training
        A = _load_attributions(args.attributions, data.Xte.shape[0], d)
        user = Ranker("attributions (file)", A.ndim == 2,
                      given_attributions(A if A.ndim == 1 else A[idx]), args.attributions)
    for note in data.notes:
        echo(f"note: {note}")
    recipe = model_recipe(st["quick"])
    log(args, f"training the {args.library} model on {data.name} ({data.Xtr.shape[0]:,} rows, "
              f"{d} features) ...")
    model = fit_model(args.library, truth.task, data.Xtr, data.ytr, recipe, seed=args.seed,
                      n_jobs=args.n_jobs)
    try:
        ens = pgexact.load(model)
    except (TypeError, ValueError) as e:
        raise UsageError(f"model: {first_line(e)}") from None
    X = np.ascontiguousarray(data.Xte[idx])
    sigma_eval = args.sigma_eval if args.sigma_eval is not None else args.sigma_rank
    rankers = rankers_for(args.library, args.sigma_rank)
    ctx = Context(model, ens, X, data.Xte, data.yte, truth.task, args.sigma_rank, args.seed,
                  args.n_jobs, st["permutation_repeats"])
    warm_up(ctx)
    curves = _Curves(args.library, truth, recipe, args.seed, args.n_jobs)
    results = _evaluate(args, rankers + ([user] if user else []), ctx, truth, curves,
                        sigma_eval, k)
    skipped: List[str] = [] if truth.has_truth else [truth.truth_note]
    boot: Dict[str, np.ndarray] = {}
    if st["bootstraps"] >= 2:
        boot = _bootstrap_importances(args, truth, rankers, ctx, recipe, st["bootstraps"])
        if user:
            skipped.append("stability of attributions (file): a fixed array cannot be recomputed "
                           "on the bootstrap models")
    else:
        skipped.append("stability: needs --bootstraps 2 or more")
    for r in results:
        r.update(_stability_scores(boot[r["name"]], k) if r["name"] in boot
                 else dict(stability=None, stability_ci95=None, importance_variance=None))
    return dict(command="rankers", argv=getattr(args, "argv", None), seed=args.seed,
                data=truth.describe(), model=_model_info(args.library, recipe, model, ens, truth),
                settings=dict(st, sigma_rank=args.sigma_rank, sigma_eval=sigma_eval, top_k=k,
                              explained_rows=int(X.shape[0]),
                              validation_score="accuracy" if truth.task == "classification"
                              else "R²"),
                skipped=skipped, rankers=results, versions=versions())


def _fmt(v: Optional[float], spec: str) -> str:
    return "-" if v is None else format(v, spec)


def rankers_table(res: Json) -> str:
    """The printed table: one line per ranker, every metric a column."""
    rows = []
    for r in res["rankers"]:
        rows.append([r["name"], _fmt(r["r2"], ".3f"), _fmt(r["log_loss"], ".3f"),
                     _fmt(r["precision_at_k"], ".2f"), _fmt(r["recall_at_k"], ".2f"),
                     _fmt(r["stability"], ".3f"), _fmt(r["importance_variance"], ".2e"),
                     f"{r['validation_area']:.3f}", f"{r['mean_pgi2']:.4g}",
                     f"{r['mean_pgu2']:.4g}", fmt_time(r["time_per_row_s"]),
                     f"{r['log2_time_ratio']:.1f}"])
    k = res["settings"]["top_k"]
    return text_table(["ranker", "R²", "log loss", f"P@{k}", f"R@{k}", "stability",
                       "imp. var", "val. area", "PGI²", "PGU²", "time/row", "log2 t/min"],
                      rows, "l" + "r" * 11)


def cmd_rankers(args: Args) -> int:
    """The ``rankers`` subcommand: run, print the table, write the figures and results.json."""
    from .ranker_plots import plot_all

    require_matplotlib()
    truth = load_rankers_data(args)
    res = run_rankers(args, truth)
    m, s, data = res["model"], res["settings"], res["data"]
    echo(f"pgexact rankers: {m['library']} model, {m['n_trees']} trees of depth "
         f"{m['max_depth']} ({m['n_leaves']:,} leaves), {m['score_name']} {m['score']:.3f}, on "
         f"{data['name']} ({data['n_features']} features, {data['task']}); "
         f"{s['explained_rows']} test rows explained, {s['bootstraps']} bootstraps, "
         f"top k = {k_text(res)}, PGI²/PGU² at σ' = {s['sigma_eval']:g}\n")
    echo(rankers_table(res))
    for note in res["skipped"]:
        echo(f"skipped: {note}")
    echo("\nR², log loss: normalised importances vs ground truth (fseval); P/R@k: relevant "
         "features in the top k; stability: Nogueira et al. 2018 of the top-k sets over the "
         "bootstraps (1 = identical); imp. var: variance of the normalised importances summed "
         "over features; val. area: mean held-out "
         f"{s['validation_score']} of the model retrained on the top k, k = 1..d; PGI²/PGU²: "
         "exact means (higher PGI², lower PGU² = more faithful); log2 t/min: log2 of the time "
         "per row over the fastest ranker's.")
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "X_test.npy"), truth.data.Xte)  # what --attributions follows
    res["figures"] = plot_all(args, res)
    log(args, f"wrote {write_json(args, 'results.json', res)}")
    return 0


def k_text(res: Json) -> str:
    """``5 (the relevant set's size)`` or just the k."""
    k = res["settings"]["top_k"]
    rel = res["data"].get("relevant")
    return f"{k} (the number of relevant features)" if rel is not None and len(rel) == k else str(k)

