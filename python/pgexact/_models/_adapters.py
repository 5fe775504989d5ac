"""The model registry: detect what the user passed, and turn it into what the caller needs.

Every supported library is one :class:`ModelFamily` in :data:`FAMILIES`, which knows

* which objects are the library's (``owns``) and which of those the exact kernels can read
  (``exports``);
* how to export a model for the exact kernels (``export`` -> :class:`TreeEnsemble`): each
  extracts what the library itself serialises (XGBoost JSON bytes, LightGBM model text,
  scikit-learn's tree arrays, CatBoost's JSON export) and hands it to the C++ parser; the Python side only decides
  which trees and which output to use;
* how to call the library's own batched predict for Monte Carlo (``predictor`` ->
  :class:`~pgexact._models._target.Target`).

:func:`load` and :func:`predictor` are the two ways in; paths and :class:`TreeEnsemble`
objects are handled here, the libraries in ``_xgboost``, ``_lightgbm``, ``_catboost`` and ``_sklearn``.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable, List, NamedTuple, Optional

import numpy as np

from . import _catboost, _lightgbm, _parsers, _sklearn, _xgboost
from ._pipeline import is_pipeline
from ._target import Target
from .._data._userdata import data_policy
from ._outputs import ALL, ModelOutputs, class_labels, is_all, positions, refuse_all, single_position
from ..ensemble import TreeEnsemble

__all__ = ["FAMILIES", "SUPPORTED", "ModelFamily", "load", "load_outputs", "may_split_by_category",
           "predictor"]

SUPPORTED = (
    "xgboost Booster / XGBRegressor / XGBClassifier / XGBRFRegressor / XGBRFClassifier, "
    "lightgbm Booster / LGBMRegressor / LGBMClassifier, "
    "catboost CatBoost / CatBoostRegressor / CatBoostClassifier / CatBoostRanker (numeric "
    "features), "
    "scikit-learn DecisionTree* / ExtraTree* / RandomForest* / ExtraTrees* / GradientBoosting* / "
    "HistGradientBoosting* (regressor or classifier), "
    "a path to an XGBoost .json / .ubj, LightGBM text or CatBoost .json / .cbm model file, or a "
    "pgexact.TreeEnsemble"
)


class ModelFamily(NamedTuple):
    """One supported library: how to recognise, export and predict with its models."""

    name: str
    #: the library's model objects (Monte Carlo can predict with any of them)
    owns: Callable[[Any], bool]
    #: those the exact kernels can read
    exports: Callable[[Any], bool]
    #: ``export(model) -> ModelOutputs``: the model parsed once, any output selectable
    export: Callable[[Any], ModelOutputs]
    #: ``predictor(model, output, n_jobs) -> Target``: the library's own batched predict
    predictor: Callable[[Any, Optional[int], Optional[int]], Target]
    #: ``may_split_by_category(model)``: False only where the object says it has no
    #: categorical feature (then nothing needs parsing to perturb it as the kernels do)
    may_split_by_category: Callable[[Any], bool]


FAMILIES = (
    ModelFamily("xgboost", _xgboost.is_xgboost, _xgboost.is_xgboost, _xgboost.from_xgboost,
                _xgboost.xgboost_target, _xgboost.may_split_by_category),
    ModelFamily("lightgbm", _lightgbm.is_lightgbm, _lightgbm.is_lightgbm,
                _lightgbm.from_lightgbm, _lightgbm.lightgbm_target, _lightgbm.may_split_by_category),
    ModelFamily("catboost", _catboost.is_catboost, _catboost.is_catboost,
                _catboost.from_catboost, _catboost.catboost_target, _catboost.may_split_by_category),
    # Monte Carlo can use any scikit-learn estimator's predict; the kernels read only trees.
    ModelFamily("sklearn", _sklearn.is_sklearn, _sklearn.accepts, _sklearn.from_sklearn,
                _sklearn.sklearn_target, _sklearn.may_split_by_category),
)


def _named_model_error(exc: Exception, where: str) -> Exception:
    """A parser's ModelError with its message starting ``model:`` and naming the file or object."""
    msg = str(exc)
    if msg.startswith("model:"):
        msg = msg[len("model:"):].lstrip()
    return type(exc)(f"model: {where}: {msg}")


def _from_path(path: str) -> ModelOutputs:
    try:
        return _parse_path(path)
    except _parsers.ModelError as exc:
        raise _named_model_error(exc, f"file {path!r}") from None


def _parse_path(path: str) -> ModelOutputs:
    if not os.path.exists(path):
        raise ValueError(f"model: file not found: {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"model: {path!r} is a directory, not a model file")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ValueError(f"model: cannot read {path!r} ({exc})") from None
    if not raw:
        raise ValueError(f"model: file {path!r} is empty")
    head = raw.lstrip()[:1]
    if _lightgbm.looks_like_lightgbm_text(raw):
        return _lightgbm.lightgbm_outputs(raw, -1, f"LightGBM file {os.path.basename(path)}")
    if _catboost.looks_like_cbm(raw) or path.endswith(".cbm"):
        return _catboost.from_cbm_file(path)
    if _catboost.looks_like_catboost_json(raw):
        return _catboost.catboost_outputs(raw, f"CatBoost file {os.path.basename(path)}")
    if head == b"{" or path.endswith((".json", ".ubj")):
        _xgboost.check_written_fields(raw)
        return _xgboost.xgboost_outputs(raw, -1, f"XGBoost file {os.path.basename(path)}")
    raise ValueError(
        f"model: {path!r} is not a recognised model file (expected XGBoost .json / .ubj, a LightGBM text model or CatBoost .json / .cbm)"
    )


def _ensemble_outputs(ens: TreeEnsemble) -> ModelOutputs:
    """A TreeEnsemble holds one output of its model: only that one can be selected."""
    def select(k: int) -> TreeEnsemble:
        if k != ens.output:
            raise ValueError(
                f"output: this TreeEnsemble computes output {ens.output}; reload the original "
                f"model with output={k} (or output='all')"
            )
        return ens

    return ModelOutputs(ens.n_outputs, "model", ens.output, select)


def _outputs_of(model: Any) -> ModelOutputs:
    """The parsed model behind ``model`` (object, path or TreeEnsemble), every output selectable."""
    if isinstance(model, TreeEnsemble):
        return _ensemble_outputs(model)
    if isinstance(model, (str, os.PathLike)):
        return _from_path(os.fspath(model))
    if is_pipeline(model):
        raise TypeError(
            "model: load() returns the tree model alone and a Pipeline is a function of raw rows; "
            "pass pipeline[-1] and transform the rows with pipeline[:-1].transform(X), or pass the "
            "Pipeline itself to the metrics, Explainer or pgexact.mc, which do both")
    for family in FAMILIES:
        if family.exports(model):
            try:
                return family.export(model)
            except _parsers.ModelError as exc:
                raise _named_model_error(exc, f"{type(model).__name__}") from None
    raise TypeError(f"model: unsupported type {type(model).__module__}.{type(model).__name__}; "
                    "expected xgboost, lightgbm, catboost or scikit-learn tree models (DecisionTree*, "
                    "RandomForest*, ExtraTrees*, GradientBoosting*, HistGradientBoosting*), a saved "
                    "model file or a pgexact.TreeEnsemble (docs/supported_models.md)")


def _select(model: Any, outputs: ModelOutputs, k: int) -> TreeEnsemble:
    try:
        return outputs.select(k)
    except _parsers.ModelError as exc:
        where = f"file {os.fspath(model)!r}" if isinstance(model, (str, os.PathLike)) else \
            type(model).__name__
        raise _named_model_error(exc, where) from None


def load_outputs(model: Any, output: Any = None, all_by_default: bool = False) -> List[TreeEnsemble]:
    """The ensembles of the outputs ``output`` selects, the model parsed once.

    Parameters
    ----------
    model : model object, path or TreeEnsemble
        As in :func:`load`.
    output : None, int, class label, ClassLabel, ClassPosition or "all"
        As in :func:`load`; ``"all"`` selects every output, in order.
    all_by_default : bool, default False
        ``output=None`` on a model with several outputs and no default output selects them
        all (the Explainer's default, as ``shap.TreeExplainer``'s) instead of being refused.

    Returns
    -------
    list of TreeEnsemble
        One per selected output (one unless ``output="all"``), each equal to what
        ``load(model, output=k)`` returns.
    """
    outputs = _outputs_of(model)
    if is_all(output) and isinstance(model, TreeEnsemble) and model.n_outputs > 1:
        raise ValueError(f"output: this TreeEnsemble holds output {model.output} of its model only; "
                         "pass the original model (object or file) for output='all'")
    labels = None if isinstance(model, (TreeEnsemble, str, os.PathLike)) else class_labels(model)
    if output is None and all_by_default and outputs.default is None and outputs.n_outputs > 1:
        output = ALL
    selected = [_select(model, outputs, k) for k in positions(output, outputs, labels)]
    if not isinstance(model, (TreeEnsemble, str, os.PathLike)):
        # how the library reads rows (categories, sparse entries, NaN), asked of the object once
        policy = data_policy(model, selected[0])
        for ens in selected:
            ens._meta["data_policy"] = policy
    return selected


def load(model: Any, output: Any = None) -> TreeEnsemble:
    """Turn a supported model (object or file path) into a :class:`TreeEnsemble`.

    Parameters
    ----------
    model : model object, path or TreeEnsemble
        An XGBoost, LightGBM, CatBoost or scikit-learn tree model (see :data:`SUPPORTED`), a
        path to a saved XGBoost ``.json`` / ``.ubj``, LightGBM text or CatBoost ``.json`` /
        ``.cbm`` model (``.cbm`` needs catboost installed), or a TreeEnsemble (returned as is).
    output : int, class label, ClassLabel or ClassPosition, optional
        The output column: binary boosted classifiers default to the margin, forest-style
        scikit-learn classifiers to the probability of class 1; multi-class models require it.
        An int is a position, or a class label of an estimator with ``classes_``; an int that
        is both, with different meanings, is refused: wrap it in
        :class:`pgexact.ClassLabel` or :class:`pgexact.ClassPosition` (``docs/multiclass.md``).
        ``"all"`` is refused here (one ensemble is one output): use the metrics with
        ``output="all"``.

    Returns
    -------
    TreeEnsemble
        One output column of the model, ready for the exact kernels.
    """
    refuse_all(output, "load() returns one output column")
    return load_outputs(model, output)[0]


def _ensemble_target(model: Any, output: Any, n_jobs: Optional[int]) -> Target:
    """A path or TreeEnsemble (or anything :func:`load` reads) predicted by the arena."""
    te = load(model, output=output)  # a TreeEnsemble is returned as is
    kwargs = {}
    try:
        if "n_jobs" in inspect.signature(te.predict).parameters:
            kwargs["n_jobs"] = n_jobs
    except (TypeError, ValueError):  # pragma: no cover - builtin without a signature
        pass

    def predict(X: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.asarray(te.predict(X, **kwargs), dtype=np.float64))

    names = te.feature_names
    return Target(predict, int(te.n_features), list(names) if names else None, te)


def _one_margin(model: Any) -> bool:
    """A binary classifier with one raw output (a margin): every boosted classifier; not the
    scikit-learn trees and forests, whose ``predict_proba`` has a column per class."""
    module = type(model).__module__ or ""
    return not (module.startswith("sklearn.tree") or module.startswith("sklearn.ensemble._forest"))


def may_split_by_category(model: Any) -> bool:
    """Whether ``model`` may split by category: False only where its library's object says it
    has no categorical feature (paths and TreeEnsembles: True, their parse tells).

    Parameters
    ----------
    model : model object, path or TreeEnsemble
        As in :func:`load`.

    Returns
    -------
    bool
    """
    for family in FAMILIES:
        if family.owns(model):
            return family.may_split_by_category(model)
    return True


def predictor(model: Any, output: Any = None, n_jobs: Optional[int] = None) -> Target:
    """The batched raw predict Monte Carlo uses for ``model``.

    Parameters
    ----------
    model : model object, path or TreeEnsemble
        A library's own object goes through that library's batched predict (margins for
        boosted models, class probabilities for forest-style classifiers); a path or a
        TreeEnsemble through ``TreeEnsemble.predict``.
    output : int, class label, ClassLabel or ClassPosition, optional
        The output column, as in :func:`load` (``"all"`` is refused: Monte Carlo estimates one
        output at a time).
    n_jobs : int, optional
        The library's thread count (None or -1: all cores); the user's object is unchanged.

    Returns
    -------
    Target
        ``predict(X) -> (m,) float64`` for C-contiguous rows in the model's feature order,
        with the model's feature count and names.
    """
    refuse_all(output, "Monte Carlo (the library's own predict)")
    for family in FAMILIES:
        if family.owns(model):
            labels = class_labels(model)
            # a binary boosted classifier has one output (the positive class's margin), and
            # its class labels are read as the exact functions read them
            n = 1 if labels is not None and len(labels) == 2 and _one_margin(model) else None
            k = single_position(output, n, labels, type(model).__name__)
            return family.predictor(model, k, n_jobs)
    return _ensemble_target(model, output, n_jobs)
