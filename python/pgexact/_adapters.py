"""Model adapters: detect what the user passed and turn it into a TreeEnsemble.

Each adapter extracts what the library itself serialises (XGBoost JSON bytes, ...) and hands
it to the C++ parser; the Python side only decides which trees and which output to use.
"""

from __future__ import annotations

import os
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from . import _kernels, _lightgbm, _sklearn
from ._validation import as_output
from .ensemble import TreeEnsemble

SUPPORTED = (
    "xgboost Booster / XGBRegressor / XGBClassifier / XGBRFRegressor / XGBRFClassifier, "
    "lightgbm Booster / LGBMRegressor / LGBMClassifier, "
    "scikit-learn DecisionTree* / ExtraTree* / RandomForest* / ExtraTrees* / GradientBoosting* / "
    "HistGradientBoosting* (regressor or classifier), "
    "a path to an XGBoost .json / .ubj or LightGBM text model file, or a pgexact.TreeEnsemble"
)


def _qualname(obj: Any) -> Tuple[str, str]:
    cls = type(obj)
    return cls.__module__ or "", cls.__name__


def _xgboost_ensemble(raw: bytes, output: Optional[int], n_iterations: int, source: str,
                      names: Optional[List[str]] = None) -> Tuple[TreeEnsemble, Any, dict]:
    full, meta = _kernels.parse_xgboost_json(raw, n_iterations)
    k = as_output(output, full.n_outputs, "XGBoost model")
    arena = full.select_output(k)
    feature_names = names if names is not None else (meta["feature_names"] or None)
    ens = TreeEnsemble(arena, feature_names=feature_names, output=k, n_outputs=full.n_outputs,
                       source=source, meta=meta)
    return ens, full, meta


def _check_against_xgboost(ens: TreeEnsemble, booster: Any, n_iterations: int) -> None:
    """Compare the intercept and routing with XGBoost's own margin on a few probe rows."""
    import xgboost as xgb

    d = ens.n_features
    rng = np.random.default_rng(0)
    probe = np.vstack([np.zeros(d), np.full(d, np.nan), rng.normal(size=(6, d))]).astype(np.float32)
    cats = [j for j, t in enumerate(booster.feature_types or []) if t == "c"]
    if cats:
        probe[:, cats] = np.abs(np.round(probe[:, cats]))
    kwargs = {"output_margin": True, "validate_features": False}
    if n_iterations >= 0:
        kwargs["iteration_range"] = (0, n_iterations)
    dm = xgb.DMatrix(probe, feature_types=booster.feature_types, enable_categorical=bool(cats))
    margin = np.asarray(booster.predict(dm, **kwargs), dtype=np.float64)
    if margin.ndim == 2:
        margin = margin[:, ens.output]
    ours = ens.predict(probe.astype(np.float64))
    # XGBoost sums in float32: allow its rounding, but not a wrong intercept or a wrong branch.
    tolerance = 1e-4 * np.maximum(1.0, np.abs(margin)) + 1e-6 * ens.n_trees
    if not np.all(np.abs(ours - margin) <= tolerance):
        raise ValueError(
            "model: pgexact could not reproduce XGBoost's own margin for this model "
            f"(objective {ens._meta.get('objective')!r}); max difference "
            f"{float(np.max(np.abs(ours - margin))):.3g}"
        )


def _from_xgboost(model: Any, output: Optional[int]) -> TreeEnsemble:
    module, name = _qualname(model)
    if name == "Booster":
        booster = model
        n_iterations = -1  # Booster.predict uses every tree by default
    else:
        try:
            booster = model.get_booster()
        except Exception as exc:  # xgboost raises NotFittedError on an unfitted wrapper
            raise ValueError(f"model: this {name} is not fitted ({exc})") from None
        # The scikit-learn wrapper predicts with the best iteration when early stopping set one.
        best = booster.attr("best_iteration")
        n_iterations = int(best) + 1 if best is not None else -1
    raw = bytes(booster.save_raw(raw_format="json"))
    names = list(booster.feature_names) if booster.feature_names else None
    ens, _, _ = _xgboost_ensemble(raw, output, n_iterations, f"xgboost.{name}", names)
    _check_against_xgboost(ens, booster, n_iterations)
    return ens


def _from_path(path: str, output: Optional[int]) -> TreeEnsemble:
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
        return _lightgbm.lightgbm_ensemble(raw, output, -1, f"LightGBM file {os.path.basename(path)}")
    if head == b"{" or path.endswith((".json", ".ubj")):
        ens, _, _ = _xgboost_ensemble(raw, output, -1, f"XGBoost file {os.path.basename(path)}")
        return ens
    raise ValueError(
        f"model: {path!r} is not a recognised model file (expected XGBoost .json / .ubj or a LightGBM text model)"
    )


_ADAPTERS: List[Tuple[Callable[[Any], bool], Callable[[Any, Optional[int]], TreeEnsemble]]] = [
    (lambda m: _qualname(m)[0].startswith("xgboost") and hasattr(m, "save_raw"), _from_xgboost),
    (lambda m: _qualname(m)[0].startswith("xgboost") and hasattr(m, "get_booster"), _from_xgboost),
    (_lightgbm.is_lightgbm, _lightgbm.from_lightgbm),
    (_sklearn.accepts, _sklearn.from_sklearn),
]


def load(model: Any, output: Optional[int] = None) -> TreeEnsemble:
    """Turn a supported model (object or file path) into a :class:`TreeEnsemble`.

    ``output`` selects the output column: binary boosted classifiers default to the margin,
    forest-style scikit-learn classifiers to the probability of class 1; multi-class models
    require it.
    """
    if isinstance(model, TreeEnsemble):
        if output is not None and as_output(output, model.n_outputs, "model") != model.output:
            raise ValueError(
                f"output: this TreeEnsemble computes output {model.output}; reload the original "
                f"model with output={output}"
            )
        return model
    if isinstance(model, (str, os.PathLike)):
        return _from_path(os.fspath(model), output)
    for accepts, adapter in _ADAPTERS:
        if accepts(model):
            return adapter(model, output)
    raise TypeError(f"model: unsupported type {type(model).__module__}.{type(model).__name__}; "
                    f"expected {SUPPORTED}")
