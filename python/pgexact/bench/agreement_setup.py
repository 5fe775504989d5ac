"""The setups and explainers of ``pgexact-bench agreement``.

A setup is one dataset with one model: a built-in dataset (with or without ground truth) or a
user's CSV, and a model trained by one library (``--library``, the same 40-tree depth-4 recipe
as ``pgexact-bench rankers``) or read from ``--model-file``. The explainers turn a setup into
the ``explanations`` mapping :func:`pgexact.metrics.agreement` scores.
"""

from __future__ import annotations

import argparse
import copy
import os
import warnings
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import numpy as np

import pgexact
from pgexact import metrics
from pgexact._exact._api import rank_with_curve

from .common import Args, Json, UsageError, best_time, first_line, log
from .data import DATASETS, eval_rows, load_data, missing_rows_rule
from .models import prepare_setups
from .ranker_models import Context, fit_model, model_recipe, rankers_for
from .truth import TRUTH_DATASETS, load_truth

__all__ = ["EXPLAINERS", "Setup", "explain", "load_setups"]


class Setup(NamedTuple):
    """One dataset with one model, and the rows to explain."""

    label: str
    data: Json  # the dataset's results.json entry
    model_info: Json
    model: Any  # the library object (SHAP, permutation and gain need it)
    ens: Any  # its pgexact TreeEnsemble
    output: Any
    X: np.ndarray  # the explained rows
    Xte: np.ndarray  # every test row, with yte: permutation importance's held-out data
    yte: np.ndarray
    task: str
    ground_truth: Optional[np.ndarray]


def _one(args: Args, **over: Any) -> Args:
    """A copy of the parsed command line with one dataset chosen (what data.py reads)."""
    ns = argparse.Namespace(**vars(args))
    for k, v in over.items():
        setattr(ns, k, v)
    return ns


def _model_info(library: str, recipe: Json, model: Any, ens: Any, task: str,
                Xte: np.ndarray, yte: np.ndarray) -> Json:
    """The model's results.json entry: library, recipe, size and its test score."""
    pred = np.asarray(model.predict(Xte))
    if task == "classification":
        name, score = "test accuracy", float(np.mean(pred == yte))
    else:
        name = "test R²"
        score = 1.0 - float(np.sum((yte - pred) ** 2) / np.sum((yte - yte.mean()) ** 2))
    return dict(library=library, **recipe, n_trees=int(ens.n_trees), n_leaves=int(ens.n_leaves),
                score_name=name, score=score)


def _file_setups(args: Args, names: List[Optional[str]], rows: int) -> List[Setup]:
    """``--model-file``: one dataset (a real one or --data), the file's model, each output."""
    if len(names) != 1:
        raise UsageError("--model-file: give one dataset (--dataset NAME or --data CSV); a model "
                         "file fits one dataset's columns")
    if names[0] in TRUTH_DATASETS:
        raise UsageError(f"--model-file: {names[0]} is generated here, so a saved model was not "
                         f"trained on it; choose from {', '.join(DATASETS)} or give --data CSV")
    ns = _one(args, dataset=names[0], model=None)
    out = []
    for s in prepare_setups(ns, load_data(ns)):
        X = eval_rows(s.data, rows, args.seed + 1)
        label = f"{s.data.name}/{os.path.basename(args.model_file)}"
        if s.output_name:
            label += f" {s.output_name}"
        info = dict(s.info, score_name="test RMSE", score=s.info["test_rmse"])
        out.append(Setup(label, s.data.describe(), info, s.model, s.ens, s.output, X, s.data.Xte,
                         s.data.yte, "regression", None))
    return out


def load_setups(args: Args, st: Json) -> List[Setup]:
    """Every (dataset, library) of the command line, trained, with its rows to explain."""
    names: List[Optional[str]] = list(args.dataset or [])
    if args.data is not None:
        names.append(None)  # the CSV, read by data.load_data
    elif args.target:
        raise UsageError("--target goes with --data CSV")
    names = names or ["friedman1"]
    if args.model_file:
        return _file_setups(args, names, st["rows"])
    recipe = model_recipe(st["quick"])
    out = []
    for name in names:
        # one dataset at a time: a name, or (None) the CSV of --data
        ns = _one(args, dataset=name) if name is None else _one(args, dataset=name, data=None,
                                                                  target=None)
        truth = load_truth(ns, n=st["n_samples"], d=args.features)
        gt = truth.importances
        if gt is None and truth.relevant is not None:  # only the relevant set is known
            gt = np.zeros(truth.data.d)
            gt[truth.relevant] = 1.0
        for library in args.library:
            # scikit-learn's GradientBoosting refuses NaN; the others route it (a copy, so one
            # library's note is not the next one's)
            data = missing_rows_rule(copy.copy(truth.data), library != "sklearn",
                                     "GradientBoosting" if library == "sklearn" else library)
            data.notes = list(dict.fromkeys(data.notes))
            log(args, f"training the {library} model on {data.name} ({data.Xtr.shape[0]:,} "
                      f"rows, {data.d} features) ...")
            model = fit_model(library, truth.task, data.Xtr, data.ytr, recipe, seed=args.seed,
                              n_jobs=args.n_jobs)
            try:
                ens = pgexact.load(model)
            except (TypeError, ValueError) as e:
                raise UsageError(f"model: {first_line(e)}") from None
            desc = truth.describe()
            desc.update(data.describe())
            out.append(Setup(f"{data.name}/{library}", desc,
                             _model_info(library, recipe, model, ens, truth.task, data.Xte,
                                         data.yte),
                             model, ens, None, eval_rows(data, st["rows"], args.seed + 1),
                             data.Xte, data.yte, truth.task, gt))
    return out


# ------------------------------------------------------------------------------ explainers
class _Predictor:
    """A loaded model file as scikit-learn's permutation_importance wants an estimator: its
    TreeEnsemble's prediction, scored by R² (a model file is explained as a regressor)."""

    def __init__(self, ens: Any) -> None:
        self.ens = ens

    def fit(self, X: np.ndarray, y: np.ndarray) -> "_Predictor":  # never called: it is fitted
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.ens.predict(X), dtype=np.float64)

    def score(self, X: np.ndarray, y: np.ndarray) -> float:
        r = y - self.predict(X)
        return 1.0 - float(np.sum(r ** 2) / np.sum((y - y.mean()) ** 2))


def _gain(s: Setup) -> np.ndarray:
    """The library's own split-gain importance (scikit-learn: impurity decrease; CatBoost:
    PredictionValuesChange), (d,)."""
    m, d = s.model, s.X.shape[1]
    booster = m.get_booster() if hasattr(m, "get_booster") else m
    if hasattr(booster, "get_score"):  # XGBoost
        names = booster.feature_names or [f"f{j}" for j in range(d)]
        score = booster.get_score(importance_type="gain")
        return np.array([float(score.get(n, 0.0)) for n in names])
    lgb = getattr(m, "booster_", m)
    if hasattr(lgb, "feature_importance"):  # LightGBM
        return np.asarray(lgb.feature_importance(importance_type="gain"), dtype=np.float64)
    if hasattr(m, "feature_importances_"):  # scikit-learn
        return np.asarray(m.feature_importances_, dtype=np.float64)
    return np.asarray(m.get_feature_importance(), dtype=np.float64)  # CatBoost


def _greedy(s: Setup, sigma: float, n_jobs: Optional[int]) -> np.ndarray:
    R, _ = rank_with_curve(s.ens, s.X, sigma=sigma, n_jobs=n_jobs, progress=False)
    return np.asarray(R, dtype=np.int64)  # a ranking per row: scored as ranked, no infidelity


def _shap(s: Setup) -> np.ndarray:
    try:
        return np.asarray(metrics.shap_values(s.model, s.X, output=s.output), dtype=np.float64)
    except ImportError as e:
        raise UsageError(f"--explainers: the SHAP explainers need shap: {first_line(e)}") from None


def _permutation(s: Setup, seed: int, n_jobs: Optional[int], repeats: int) -> np.ndarray:
    # rankers' permutation importance (held-out rows, clipped at 0) on the fitted model, or on
    # a model file's prediction
    model = s.model if hasattr(s.model, "fit") else _Predictor(s.ens)
    perm = next(r for r in rankers_for("sklearn", 0.3) if r.name == "permutation")
    ctx = Context(model, s.ens, s.X, s.Xte, s.yte, s.task, 0.3, seed, n_jobs, repeats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(perm.compute(ctx)[0], dtype=np.float64)


def _random(s: Setup, seed: int) -> np.ndarray:
    # standard normal attributions: a random ranking per row that still has an infidelity
    return np.random.default_rng(seed + 7).standard_normal(s.X.shape)


#: --explainers id -> (name in the tables, what it is)
EXPLAINERS: Dict[str, Tuple[str, str]] = {
    "greedy": ("PG² greedy", "exact greedy PG² ranking per row at --sigma (a ranking: no "
                             "infidelity)"),
    "shap": ("SHAP per row", "TreeSHAP values of each row (ranked by |φ|)"),
    "shap-mean": ("SHAP mean |φ|", "mean |φ| over the explained rows, one ranking for all"),
    "gain": ("gain", "the library's split-gain importance (scikit-learn: impurity decrease)"),
    "permutation": ("permutation", "permutation importance on the test split, clipped at 0"),
    "random": ("random", "standard normal attributions per row: the chance baseline"),
}


def explain(s: Setup, which: List[str], args: Args,
            st: Json) -> Tuple[Dict[str, np.ndarray], Dict[str, float]]:
    """``({name: attributions or rankings}, {name: seconds per row})`` of the chosen
    explainers on the setup's rows."""
    # SHAP mean runs TreeSHAP again rather than reusing SHAP per row's values, so that each
    # explainer's time per row is its own
    run: Dict[str, Callable[[], np.ndarray]] = {
        "greedy": lambda: _greedy(s, args.sigma, args.n_jobs),
        "shap": lambda: _shap(s),
        "shap-mean": lambda: np.abs(_shap(s)).mean(axis=0),
        "gain": lambda: _gain(s),
        "permutation": lambda: _permutation(s, args.seed, args.n_jobs,
                                            st["permutation_repeats"]),
        "random": lambda: _random(s, args.seed),
    }
    out, seconds = {}, {}
    for key in which:
        name = EXPLAINERS[key][0]
        out[name], t = best_time(run[key], max_repeat=1)
        seconds[name] = t / s.X.shape[0]
    return out, seconds
