"""Models for ``pgexact-bench``: the paper's XGBoost recipes, the optional grid search, a
saved model file, and the :class:`Setup` (data, model, TreeEnsemble) every experiment uses."""

from __future__ import annotations

import os
from typing import Any, Optional, Tuple

import numpy as np

import pgexact
from pgexact._models._catboost import catboost_model_file, looks_like_catboost_json
from pgexact._data._columns import lightgbm_name, uses_lightgbm_names
from pgexact.ensemble import TreeEnsemble

from .common import Args, Json, UsageError, echo, first_line, log, require_xgboost
from .data import Dataset, load_data

__all__ = ["GRID", "RECIPES", "Setup", "align_to_model", "fit_recipe", "fit_xgb", "load_model_file", "model_line",
           "prepare_setup", "xgb_regressor"]

RECIPES = {
    "single": dict(n_estimators=1, max_depth=4, learning_rate=1.0, subsample=1.0),
    "bigger": dict(n_estimators=40, max_depth=4, learning_rate=0.3, subsample=1.0),
}
#: --grid-search: eta x subsample, 5-fold cross-validation on the training rows
GRID = {"learning_rate": [0.01, 0.03, 0.1, 0.3, 1.0], "subsample": [0.5, 0.75, 1.0]}


class Setup:
    """Data, the library model, its pgexact.TreeEnsemble and a description."""

    def __init__(self, data: Dataset, model: Any, ens: TreeEnsemble, info: Json) -> None:
        self.data, self.model, self.ens, self.info = data, model, ens, info

    @property
    def label(self) -> str:
        """``dataset/model kind``, for progress bars and figure titles."""
        return f"{self.data.name}/{self.info.get('kind', 'model')}"


def xgb_regressor(params: Json, *, seed: int, n_jobs: Optional[int]) -> Any:
    """An unfitted XGBoost regressor with ``params`` (hist method, seeded, ``n_jobs`` threads)."""
    import xgboost as xgb

    return xgb.XGBRegressor(tree_method="hist", random_state=seed, n_jobs=n_jobs, **params)


def fit_xgb(Xtr: np.ndarray, ytr: np.ndarray, params: Json, *, seed: int,
            n_jobs: Optional[int]) -> Any:
    """An XGBoost regressor with ``params`` fitted on ``(Xtr, ytr)``."""
    return xgb_regressor(params, seed=seed, n_jobs=n_jobs).fit(Xtr, ytr)


def fit_recipe(args: Args, data: Dataset, kind: str) -> Tuple[Any, Json]:
    """Train the paper's ``single`` / ``bigger`` model (optionally grid-searched)."""
    params = dict(RECIPES[kind])
    info: Json = dict(kind=kind, library="xgboost")
    if getattr(args, "grid_search", False):
        from sklearn.model_selection import GridSearchCV, KFold

        log(args, f"grid search ({kind}): eta x subsample, 5-fold CV on "
                  f"{data.Xtr.shape[0]:,} rows ...")
        base = {k: v for k, v in params.items() if k not in GRID}
        search = GridSearchCV(
            xgb_regressor(base, seed=args.seed, n_jobs=args.n_jobs),
            GRID, cv=KFold(5, shuffle=True, random_state=args.seed),
            scoring="neg_mean_squared_error", n_jobs=1,
        ).fit(data.Xtr, data.ytr)
        params.update(search.best_params_)
        info["grid_search"] = dict(grid=GRID, cv_folds=5, best=search.best_params_,
                                   cv_rmse=float(np.sqrt(-search.best_score_)))
        model = search.best_estimator_
    else:
        model = fit_xgb(data.Xtr, data.ytr, params, seed=args.seed, n_jobs=args.n_jobs)
    info.update(params)
    return model, info


def load_model_file(path: str, d: int) -> Tuple[Any, Json]:
    """An XGBoost .json/.ubj, LightGBM text or CatBoost .json/.cbm model as the library's own
    object."""
    if not os.path.isfile(path):
        raise UsageError(f"--model-file: file not found: {path}")
    ext = os.path.splitext(path)[1].lower()
    model: Any  # an xgboost.Booster, a lightgbm.Booster or a catboost.CatBoost
    try:
        if ext == ".cbm" or (ext == ".json" and _is_catboost_json(path)):
            model = catboost_model_file(path)
            lib = "catboost"
        elif ext in (".json", ".ubj"):
            import xgboost as xgb

            model = xgb.Booster()
            model.load_model(path)
            lib = "xgboost"
        elif ext in (".txt", ".lgb", ".model"):
            import lightgbm as lgb

            model = lgb.Booster(model_file=path)
            lib = "lightgbm"
        else:
            raise UsageError(f"--model-file: unsupported file type {ext or '(none)'!r}: give an "
                             "XGBoost .json / .ubj, a LightGBM text model (.txt) or a CatBoost "
                             ".json / .cbm")
    except UsageError:
        raise
    except ImportError as e:
        raise UsageError(f"--model-file: {e.name} is not installed") from None
    except Exception as e:  # noqa: BLE001 - a broken file is the user's input
        raise UsageError(f"--model-file: cannot load {path}: {first_line(e)}") from None
    return model, dict(kind="file", library=lib, path=os.path.abspath(path))


def _is_catboost_json(path: str) -> bool:
    with open(path, "rb") as fh:
        return looks_like_catboost_json(fh.read(4096))


def align_to_model(data: Dataset, ens: Any, path: str) -> Dataset:
    """The data's columns matched to the feature names stored in a model file.

    Columns are reordered into the model's order and those the model does not use are dropped
    (with a note); a feature of the model missing from the data is a UsageError. A file without
    names is matched by position, which the note says.
    """
    names = ens.feature_names
    if names is None:
        if ens.n_features == data.d:
            data.notes.append(f"{os.path.basename(path)} stores no feature names: the data's columns "
                              "are taken in order as the model's features")
        return data
    lookup = {c: i for i, c in enumerate(data.names)}
    if uses_lightgbm_names(ens):
        for i, c in enumerate(data.names):
            lookup.setdefault(lightgbm_name(c), i)
    missing = [n for n in names if n not in lookup]
    if missing:
        raise UsageError(f"--model-file: the data has no column(s) {', '.join(missing[:8])}"
                         f"{', ...' if len(missing) > 8 else ''} that {os.path.basename(path)} uses "
                         f"(the data's columns: {', '.join(data.names[:8])}"
                         f"{', ...' if len(data.names) > 8 else ''})")
    pos = [lookup[n] for n in names]
    extra = [c for i, c in enumerate(data.names) if i not in set(pos)]
    notes = list(data.notes)
    if extra:
        notes.append(f"dropped column(s) {', '.join(extra)}: not features of {os.path.basename(path)}")
    if pos != list(range(data.d)) and not extra:
        notes.append(f"columns reordered to {os.path.basename(path)}'s feature order")
    return Dataset(data.name, np.ascontiguousarray(data.Xtr[:, pos]),
                   np.ascontiguousarray(data.Xte[:, pos]), data.ytr, data.yte,
                   [data.names[p] for p in pos], notes, data.source)


def prepare_setup(args: Args, data: Optional[Dataset] = None,
                  kind: Optional[str] = None) -> Setup:
    """Data and model for one subcommand: (--dataset | --data) x (--model | --model-file)."""
    require_xgboost()
    if data is None:
        data = load_data(args)
    model_file = getattr(args, "model_file", None)
    if model_file:
        model, info = load_model_file(model_file, data.d)
    else:
        kind = kind or getattr(args, "model", None) or "bigger"
        log(args, f"training the {kind} model on {data.name} ({data.Xtr.shape[0]:,} rows, "
            f"{data.d} features) ...")
        model, info = fit_recipe(args, data, kind)
    try:
        ens = pgexact.load(model)
    except (TypeError, ValueError) as e:
        raise UsageError(f"model: {first_line(e)}") from None
    if model_file:
        data = align_to_model(data, ens, model_file)
    for note in data.notes:  # every dropped column and row, and why, on screen
        echo(f"note: {note}")
    if ens.n_features != data.d:
        raise UsageError(f"--model-file: the model has {ens.n_features} features but the data "
                         f"has {data.d} ({', '.join(data.names[:6])}...)")
    pred = np.asarray(ens.predict(data.Xte), dtype=np.float64)
    info.update(n_trees=int(ens.n_trees), n_leaves=int(ens.n_leaves), n_nodes=int(ens.n_nodes),
                test_rmse=float(np.sqrt(np.mean((pred - data.yte) ** 2))))
    return Setup(data, model, ens, info)


def model_line(setup: Setup) -> str:
    """One line describing the model of ``setup``, for the printed header."""
    i = setup.info
    what = (f"{i['kind']} model: XGBoost, {i['n_trees']} tree(s) of depth {i['max_depth']}, "
            f"eta {i['learning_rate']:g}, subsample {i['subsample']:g}"
            if i["kind"] in RECIPES else f"model file {i['path']} ({i['library']}, "
            f"{i['n_trees']} trees)")
    return (f"{what}; {i['n_leaves']:,} leaves; test RMSE {i['test_rmse']:.4g} "
            f"on {setup.data.name} ({setup.data.d} features)")
