"""XGBoost: export a model for the exact kernels, and call its own batched predict.

Both directions use the same trees: :func:`booster_and_iterations` holds the one rule for
which iterations the library itself predicts with.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from . import _parsers
from ._target import Target, n_threads, select_output
from .._data._userdata import xgboost_json_categories
from ._outputs import ModelOutputs, arena_outputs
from ..ensemble import TreeEnsemble

__all__ = ["booster_and_iterations", "from_xgboost", "is_xgboost", "may_split_by_category",
           "xgboost_outputs", "xgboost_target"]


def is_xgboost(model: Any) -> bool:
    """An XGBoost Booster or one of its scikit-learn wrappers (fitted or not)."""
    module = type(model).__module__ or ""
    return module.startswith("xgboost") and (hasattr(model, "save_raw")
                                             or hasattr(model, "get_booster"))


def may_split_by_category(model: Any) -> bool:
    """Whether the model may split by category: only with categorical feature types ('c')."""
    booster = model.get_booster() if hasattr(model, "get_booster") else model
    types = getattr(booster, "feature_types", None)
    return types is not None and any(t == "c" for t in types)


def booster_and_iterations(model: Any) -> Tuple[Any, int]:
    """The Booster of ``model`` and how many iterations its predict uses (-1: all).

    ``Booster.predict`` uses every tree by default; the scikit-learn wrapper predicts with the
    best iteration when early stopping recorded one.
    """
    if type(model).__name__ == "Booster":
        return model, -1
    try:
        booster = model.get_booster()
    except Exception as exc:  # xgboost raises NotFittedError on an unfitted wrapper
        raise ValueError(f"model: this {type(model).__name__} is not fitted ({exc})") from None
    best = booster.attr("best_iteration")
    return booster, (int(best) + 1 if best is not None else -1)


def _boolean_fields(node: Any) -> Iterator[Tuple[str, Any]]:
    """Every ``default_left`` array of a parsed XGBoost JSON model (any nesting, DART too)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "default_left":
                yield key, value
            else:
                yield from _boolean_fields(value)
    elif isinstance(node, list) and node and isinstance(node[0], (dict, list)):
        for value in node:
            yield from _boolean_fields(value)


def check_written_fields(raw: bytes) -> None:
    """Refuse an XGBoost JSON file whose ``default_left`` holds anything but 0 / 1.

    XGBoost only ever writes 0 or 1 there; another value (a hand-edited or corrupted file) is
    refused rather than read a third way. UBJSON files are checked by the C++ parser only.
    """
    if raw.lstrip()[:1] != b"{":
        return
    try:
        doc = json.loads(raw)
        fields = list(_boolean_fields(doc))
    except (ValueError, RecursionError):
        return  # the C++ parser reports malformed or absurdly nested JSON itself
    for key, values in fields:
        bad = [v for v in (values if isinstance(values, list) else [values])
               if not (isinstance(v, (int, bool)) and int(v) in (0, 1))]
        if bad:
            raise _parsers.ModelError(f"{key} holds {bad[0]!r}; XGBoost writes only 0 or 1 there "
                                      "(re-save the model with XGBoost)")


def xgboost_outputs(raw: bytes, n_iterations: int, source: str,
                    names: Optional[List[str]] = None,
                    check: Optional[Callable[[TreeEnsemble], None]] = None) -> ModelOutputs:
    """Parse XGBoost JSON / UBJSON bytes once; each output column is selected from that parse.

    ``check(ensemble)`` runs on every selected output (the comparison with XGBoost's margin).
    """
    full, info = _parsers.parse_xgboost_json(raw, n_iterations)
    meta = info.as_dict()
    # the categories XGBoost stored for pandas category columns (it re-codes a frame to them)
    meta["xgboost_categories"] = xgboost_json_categories(raw)
    feature_names = names if names is not None else (info.feature_names or None)
    return arena_outputs(full, "XGBoost model", check, always_select=True,
                         feature_names=feature_names, source=source, meta=meta)


def _check_against_xgboost(ens: TreeEnsemble, booster: Any, n_iterations: int) -> None:
    """Compare the intercept and routing with XGBoost's own margin on a few probe rows."""
    import xgboost as xgb

    d = ens.n_features
    rng = np.random.default_rng(0)
    probe = np.vstack([np.zeros(d), np.full(d, np.nan), rng.normal(size=(6, d))]).astype(np.float32)
    cats = [j for j, t in enumerate(booster.feature_types or []) if t == "c"]
    if cats:
        probe[:, cats] = np.abs(np.round(probe[:, cats]))
    kwargs: Dict[str, Any] = {"output_margin": True, "validate_features": False}
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


def from_xgboost(model: Any) -> ModelOutputs:
    """The outputs of a Booster or scikit-learn wrapper, each checked against XGBoost's margin."""
    booster, n_iterations = booster_and_iterations(model)
    # UBJSON unless the model splits by category: XGBoost writes it about 9x faster than JSON and
    # the parser reads its floats as binary rather than decimal text, the same values (XGBoost
    # holds float32; the JSON text round-trips them): XGBoost(500, depth 8) loads in 0.06 s
    # instead of 0.25 s, a cost every call on a model object pays. The categories of pandas
    # category columns (cats.enc) are read from the JSON text, so those models stay on JSON.
    raw_format = "json" if may_split_by_category(booster) else "ubj"
    raw = bytes(booster.save_raw(raw_format=raw_format))
    names = list(booster.feature_names) if booster.feature_names else None
    return xgboost_outputs(raw, n_iterations, f"xgboost.{type(model).__name__}", names,
                           lambda ens: _check_against_xgboost(ens, booster, n_iterations))


def xgboost_target(model: Any, output: Optional[int], n_jobs: Optional[int]) -> Target:
    """Monte Carlo's view of an XGBoost model: ``inplace_predict`` margins on our threads."""
    booster, n_iterations = booster_and_iterations(model)
    iteration_range = (0, n_iterations) if n_iterations >= 0 else (0, 0)  # (0, 0): all trees
    threads = n_threads(n_jobs)
    try:
        config = json.loads(booster.save_config())["learner"]["generic_param"]
        current = int(config.get("nthread", 0))
    except (KeyError, ValueError, TypeError):  # pragma: no cover - unexpected config layout
        current = -1
    names = booster.feature_names

    def predict(X: np.ndarray) -> np.ndarray:
        # Our thread count for this call only: the user's booster is left as it was (cheaper
        # than copying the booster, which serialises every tree).
        if current != threads:
            booster.set_param({"nthread": threads})
        try:
            out = booster.inplace_predict(
                X, predict_type="margin", iteration_range=iteration_range, missing=np.nan
            )
        finally:
            if current != threads and current >= 0:
                booster.set_param({"nthread": current})
        return select_output(out, output, "XGBoost inplace_predict")

    # XGBoost reads its input as float32: building the copies in float32 gives the same
    # predictions (x + delta is rounded once, from double) with half the memory traffic
    return Target(predict, booster.num_features(), list(names) if names else None, model,
                  np.float32)
