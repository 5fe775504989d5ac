"""Models for ``pgexact-bench``: the paper's XGBoost recipes, the optional grid search, a
saved model file, and the :class:`Setup` (data, model, TreeEnsemble) every experiment uses."""

from __future__ import annotations

import os
from typing import Any, List, Optional, Tuple

import numpy as np

import pgexact
from pgexact._models._adapters import load_outputs
from pgexact._models._catboost import catboost_model_file, looks_like_catboost_json
from pgexact._models._outputs import ClassPosition, class_labels
from pgexact._data._columns import lightgbm_name, uses_lightgbm_names
from pgexact.ensemble import TreeEnsemble

from .common import Args, Json, UsageError, echo, first_line, log, require_xgboost
from .data import Dataset, load_data, missing_rows_rule

__all__ = ["GRID", "RECIPES", "Setup", "align_to_model", "fit_recipe", "fit_xgb", "load_model_file", "model_line",
           "output_arg", "prepare_setup", "prepare_setups", "xgb_regressor"]

RECIPES = {
    "single": dict(n_estimators=1, max_depth=4, learning_rate=1.0, subsample=1.0),
    "bigger": dict(n_estimators=40, max_depth=4, learning_rate=0.3, subsample=1.0),
}
#: --grid-search: eta x subsample, 5-fold cross-validation on the training rows
GRID = {"learning_rate": [0.01, 0.03, 0.1, 0.3, 1.0], "subsample": [0.5, 0.75, 1.0]}


class Setup:
    """Data, the library model, its pgexact.TreeEnsemble (one output) and a description.

    ``output`` is what the library calls (``pgexact.mc``, ``metrics``) pass as ``output=``: a
    :class:`~pgexact.ClassPosition` of the ensemble's output for a model with several outputs,
    None for a single-output model; ``output_name`` names it (``"class 2"``, ``"output 1"``).
    """

    def __init__(self, data: Dataset, model: Any, ens: TreeEnsemble, info: Json,
                 output: Any = None, output_name: Optional[str] = None) -> None:
        self.data, self.model, self.ens, self.info = data, model, ens, info
        self.output, self.output_name = output, output_name

    @property
    def label(self) -> str:
        """``dataset/model kind`` (and the output of a multi-output model), for progress bars
        and figure titles."""
        base = f"{self.data.name}/{self.info.get('kind', 'model')}"
        return f"{base} {self.output_name}" if self.output_name else base


def output_arg(s: str) -> Any:
    """argparse type of --output: ``all``, an integer (a position, or a label of a model that
    records class labels) or any other string (a class label)."""
    s = s.strip()
    if s == "all":
        return "all"
    try:
        return int(s)
    except ValueError:
        return s


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
    text_cols = [str(c) for c in data.text[0].columns] if data.text is not None else []
    wanted_text = [n for n in names if n not in lookup and n in text_cols]
    if wanted_text:
        return _with_categories(data, ens, path, wanted_text)
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


def _with_categories(data: Dataset, ens: Any, path: str, wanted: List[str]) -> Dataset:
    """The data for a model file that reads some of its non-numeric columns by category: the
    columns go through pgexact's own reading of a DataFrame (each category coded as the model's
    library codes it, columns matched by name), into the model's feature order."""
    import pandas as pd

    from pgexact._data._rows import as_matrix_ordered

    assert data.text is not None
    frames = []
    for X, text in ((data.Xtr, data.text[0]), (data.Xte, data.text[1])):
        frame = pd.DataFrame(X, columns=data.names)
        for c in wanted:
            frame[c] = text[c].to_numpy()
            frame[c] = frame[c].astype(text[c].dtype)
        frames.append(frame)
    try:
        Xtr, order = as_matrix_ordered(frames[0], ens, "the data")
        Xte, _ = as_matrix_ordered(frames[1], ens, "the data")
    except (TypeError, ValueError) as e:
        raise UsageError(f"--model-file: {first_line(e)}") from None
    used = order.names or []
    extra = [c for c in data.names if c not in used]
    notes = [n for n in data.notes
             if not (n.startswith("dropped non-numeric columns") or "ocean_proximity (as the" in n)]
    notes.append(f"column(s) {', '.join(wanted)} read by category, coded as "
                 f"{os.path.basename(path)}'s library codes them")
    if extra:
        notes.append(f"dropped column(s) {', '.join(extra)}: not features of {os.path.basename(path)}")
    names = [str(n) for n in order.columns(np.asarray(used, dtype=object))] if used else list(ens.feature_names)
    return Dataset(data.name, Xtr, Xte, data.ytr, data.yte, names, notes, data.source)


def prepare_setup(args: Args, data: Optional[Dataset] = None,
                  kind: Optional[str] = None) -> Setup:
    """Data and model for one subcommand: (--dataset | --data) x (--model | --model-file);
    one output (``--output all`` is for :func:`prepare_setups`)."""
    setups = prepare_setups(args, data, kind)
    if len(setups) != 1:
        raise UsageError("--output: this subcommand shows one output at a time; pass --output k")
    return setups[0]


def _output_name(model: Any, ens: TreeEnsemble) -> Optional[str]:
    if ens.n_outputs <= 1:
        return None
    labels = class_labels(model)
    if labels is not None and len(labels) == ens.n_outputs:
        return f"class {labels[ens.output]}"
    return f"output {ens.output}"


def _select_outputs(model: Any, output: Any, what: str) -> List[TreeEnsemble]:
    """The model's ensembles ``--output`` selects (every output for ``all``)."""
    try:
        return load_outputs(model, output)
    except (TypeError, ValueError) as e:
        msg = first_line(e)
        if msg.startswith("output:"):
            msg = msg[len("output:"):].strip()
            msg = (msg.replace("pass output=k with k in", "pass --output k with k in")
                   .replace("or output='all'", "or --output all")
                   .replace("output=pgexact.ClassLabel", "pgexact.ClassLabel")
                   .replace("output=pgexact.ClassPosition", "pgexact.ClassPosition"))
            raise UsageError(f"--output: {what}: {msg}") from None
        raise UsageError(f"model: {msg}") from None


def prepare_setups(args: Args, data: Optional[Dataset] = None,
                   kind: Optional[str] = None) -> List[Setup]:
    """Data and model for one subcommand, one :class:`Setup` per output ``--output`` selects
    (every output of the model for ``--output all``)."""
    require_xgboost()
    if data is None:
        data = load_data(args)
    model_file = getattr(args, "model_file", None)
    if model_file:
        model, info = load_model_file(model_file, data.d)
        data = missing_rows_rule(data, True, f"the {info['library']} model in "
                                 f"{os.path.basename(model_file)}")
    else:
        kind = kind or getattr(args, "model", None) or "bigger"
        data = missing_rows_rule(data, True, "XGBoost")
        log(args, f"training the {kind} model on {data.name} ({data.Xtr.shape[0]:,} rows, "
            f"{data.d} features) ...")
        model, info = fit_recipe(args, data, kind)
    output = getattr(args, "output", None)
    what = f"the model in {os.path.basename(model_file)}" if model_file else "the model"
    ensembles = _select_outputs(model, output, what)
    ens = ensembles[0]
    if model_file:
        data = align_to_model(data, ens, model_file)
    for note in data.notes:  # every dropped column and row, and why, on screen
        echo(f"note: {note}")
    if ens.n_features != data.d:
        raise UsageError(f"--model-file: the model has {ens.n_features} features but the data "
                         f"has {data.d} ({', '.join(data.names[:6])}...)")
    setups = []
    for ens in ensembles:
        one = dict(info)
        pred = np.asarray(ens.predict(data.Xte), dtype=np.float64)
        one.update(n_trees=int(ens.n_trees), n_leaves=int(ens.n_leaves), n_nodes=int(ens.n_nodes),
                   test_rmse=float(np.sqrt(np.mean((pred - data.yte) ** 2))))
        name = _output_name(model, ens)
        if name is not None:
            one.update(output=int(ens.output), output_name=name, n_outputs=int(ens.n_outputs))
        setups.append(Setup(data, model, ens, one,
                            ClassPosition(int(ens.output)) if ens.n_outputs > 1 else None, name))
    return setups


def model_line(setup: Setup) -> str:
    """One line describing the model of ``setup``, for the printed header."""
    i = setup.info
    what = (f"{i['kind']} model: XGBoost, {i['n_trees']} tree(s) of depth {i['max_depth']}, "
            f"eta {i['learning_rate']:g}, subsample {i['subsample']:g}"
            if i["kind"] in RECIPES else f"model file {i['path']} ({i['library']}, "
            f"{i['n_trees']} trees)")
    if setup.output_name:  # a classifier's raw output: an RMSE against the labels means nothing
        which = (f"output {i['output']} of {i['n_outputs']}" if setup.output_name.startswith("output")
                 else f"{setup.output_name} (output {i['output']} of {i['n_outputs']})")
        return (f"{what}; {which}; "
                f"{i['n_leaves']:,} leaves; on {setup.data.name} ({setup.data.d} features)")
    return (f"{what}; {i['n_leaves']:,} leaves; test RMSE {i['test_rmse']:.4g} "
            f"on {setup.data.name} ({setup.data.d} features)")
