"""The models and feature rankers that ``pgexact-bench rankers`` compares.

A model is one library's 40-tree depth-4 boosted ensemble (``--library``), fitted for the
dataset's task. A :class:`Ranker` turns a fitted model and the rows to explain into global
importances and, where the method has them, a ranking per row. The registry
:func:`rankers_for` lists the rankers that apply to a library.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, List, NamedTuple, Optional, Tuple

import numpy as np

from pgexact import metrics
from pgexact._exact._api import rank_with_curve
from pgexact.ensemble import TreeEnsemble

from .common import Json, UsageError, first_line

__all__ = ["LIBRARIES", "Context", "Ranker", "fit_model", "given_attributions",
           "greedy_importances", "model_recipe", "rankers_for", "ranking_from_scores", "warm_up"]

LIBRARIES = ("xgboost", "lightgbm", "sklearn")


def model_recipe(quick: bool) -> Json:
    """The boosted ensemble every library gets: 40 trees of depth 4, learning rate 0.3
    (the paper's "Bigger"); ``--quick``: 10 trees."""
    return dict(n_estimators=10 if quick else 40, max_depth=4, learning_rate=0.3)


def fit_model(library: str, task: str, Xtr: np.ndarray, ytr: np.ndarray, recipe: Json, *,
              seed: int, n_jobs: Optional[int]) -> Any:
    """A fresh ``library`` model with ``recipe`` fitted on ``(Xtr, ytr)`` (regressor or binary
    classifier by ``task``)."""
    classify = task == "classification"
    if library == "xgboost":
        import xgboost as xgb

        cls = xgb.XGBClassifier if classify else xgb.XGBRegressor
        model = cls(tree_method="hist", random_state=seed, n_jobs=n_jobs, **recipe)
    elif library == "lightgbm":
        import lightgbm as lgb

        cls = lgb.LGBMClassifier if classify else lgb.LGBMRegressor
        model = cls(num_leaves=2 ** recipe["max_depth"], random_state=seed, n_jobs=n_jobs or 0,
                    verbose=-1, **recipe)
    elif library == "sklearn":
        from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

        cls = GradientBoostingClassifier if classify else GradientBoostingRegressor
        model = cls(random_state=seed, **recipe)
    else:
        raise UsageError(f"--library: unknown library {library!r} (choose from "
                         f"{', '.join(LIBRARIES)})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LightGBM's feature-name chatter on numpy input
        return model.fit(Xtr, ytr.astype(np.int64) if classify else ytr)


class Context(NamedTuple):
    """What a ranker may use: the fitted model, its TreeEnsemble, the rows to explain, the
    held-out rows with their targets (for permutation importance), and the settings."""

    model: Any
    ens: TreeEnsemble
    X: np.ndarray
    Xte: np.ndarray
    yte: np.ndarray
    task: str
    sigma: float
    seed: int
    n_jobs: Optional[int]
    permutation_repeats: int


#: a ranker's result: global importances (d,) and a ranking per row (n, d), or None
RankerResult = Tuple[np.ndarray, Optional[np.ndarray]]


class Ranker(NamedTuple):
    """A named feature ranker; ``per_row`` says whether it ranks each row separately."""

    name: str
    per_row: bool
    compute: Callable[[Context], RankerResult]
    description: str


def ranking_from_scores(scores: np.ndarray) -> np.ndarray:
    """Descending order of each row of ``scores`` (n, d), ties to the lower position."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), axis=-1, kind="stable")


def greedy_importances(ranking: np.ndarray, curve: np.ndarray) -> np.ndarray:
    """Per-row importances of the greedy PG² ranking: the PG² that adding each feature gained.

    ``curve[i, k]`` is PG² of row i's top k+1 features; feature ``ranking[i, k]`` gets
    ``curve[i, k] - curve[i, k-1]`` (the first gets ``curve[i, 0]``), clipped at 0 (noising one
    more feature can lower PG² a little through cancellation). Rows of the result add up to the
    full-noise PG² when nothing was clipped.
    """
    gains = np.diff(curve, axis=1, prepend=0.0)
    out = np.zeros_like(curve)
    np.put_along_axis(out, ranking, np.maximum(gains, 0.0), axis=1)
    return out


def _greedy(ctx: Context) -> RankerResult:
    R, curve = rank_with_curve(ctx.ens, ctx.X, sigma=ctx.sigma, n_jobs=ctx.n_jobs)
    R = np.asarray(R, dtype=np.int64)
    return greedy_importances(R, np.asarray(curve)).mean(axis=0), R


def _abs_shap(ctx: Context) -> np.ndarray:
    try:
        out: np.ndarray = np.abs(metrics.shap_values(ctx.model, ctx.X))
        return out
    except ImportError as e:
        raise UsageError(f"the SHAP rankers need shap: {first_line(e)}") from None


def warm_up(ctx: Context) -> None:
    """Import shap and compile its tree walker on two rows, so the first SHAP ranker's time
    is not the import's."""
    _abs_shap(ctx._replace(X=ctx.X[:2]))


def _shap_rows(ctx: Context) -> RankerResult:
    A = _abs_shap(ctx)
    return A.mean(axis=0), ranking_from_scores(A)


def _shap_mean(ctx: Context) -> RankerResult:
    return _abs_shap(ctx).mean(axis=0), None


def _permutation(ctx: Context) -> RankerResult:
    from sklearn.inspection import permutation_importance

    y = ctx.yte.astype(np.int64) if ctx.task == "classification" else ctx.yte
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = permutation_importance(ctx.model, ctx.Xte, y, n_repeats=ctx.permutation_repeats,
                                   random_state=ctx.seed, n_jobs=1)
    # a feature whose shuffling helped by chance gets 0, not a negative importance
    return np.maximum(np.asarray(r.importances_mean, dtype=np.float64), 0.0), None


def _xgb_score(kind: str) -> Callable[[Context], RankerResult]:
    def compute(ctx: Context) -> RankerResult:
        booster = ctx.model.get_booster()
        names = booster.feature_names or [f"f{j}" for j in range(ctx.X.shape[1])]
        score = booster.get_score(importance_type=kind)
        return np.array([float(score.get(n, 0.0)) for n in names]), None
    return compute


def _lgb_score(kind: str) -> Callable[[Context], RankerResult]:
    def compute(ctx: Context) -> RankerResult:
        imp = ctx.model.booster_.feature_importance(importance_type=kind)
        return np.asarray(imp, dtype=np.float64), None
    return compute


def _impurity(ctx: Context) -> RankerResult:
    return np.asarray(ctx.model.feature_importances_, dtype=np.float64), None


def given_attributions(A: np.ndarray) -> Callable[[Context], RankerResult]:
    """A ranker over a user's attribution array: (n, d) per row (|A| ranked) or (d,) global."""
    def compute(ctx: Context) -> RankerResult:
        if A.ndim == 1:
            return np.abs(A), None
        absA = np.abs(A[: ctx.X.shape[0]])
        return absA.mean(axis=0), ranking_from_scores(absA)
    return compute


def rankers_for(library: str, sigma: float) -> List[Ranker]:
    """The rankers that apply to a ``library`` model, greedy PG² (at ``sigma``) first."""
    out = [
        Ranker(f"PG² greedy σ={sigma:g}", True, _greedy,
               "exact greedy PG² ranking per row; importance = mean PG² gain when added"),
        Ranker("SHAP |φ| per row", True, _shap_rows,
               "TreeSHAP, each row ranked by its own |φ|; importance = mean |φ|"),
        Ranker("SHAP mean |φ|", False, _shap_mean,
               "TreeSHAP mean |φ| over the rows, one ranking for all rows"),
    ]
    if library == "xgboost":
        out += [Ranker(f"XGBoost {k}", False, _xgb_score(k), f"booster.get_score('{k}')")
                for k in ("gain", "weight", "cover")]
    elif library == "lightgbm":
        out += [Ranker(f"LightGBM {k}", False, _lgb_score(k),
                       f"booster_.feature_importance('{k}')") for k in ("split", "gain")]
    else:
        out.append(Ranker("sklearn impurity", False, _impurity, "feature_importances_ (MDI)"))
    out.append(Ranker("permutation", False, _permutation,
                      "sklearn permutation_importance on the test split, clipped at 0"))
    return out
