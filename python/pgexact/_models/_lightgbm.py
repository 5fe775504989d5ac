"""LightGBM adapter: Booster, LGBMRegressor / LGBMClassifier (/ LGBMRanker) and text model files.

The model text (``model_to_string``, 17 significant digits) is parsed in C++; Python only picks
the iterations LightGBM's own ``predict`` would use and the output column.

``f`` is LightGBM's raw score (``predict(raw_score=True)``): the regression value, the margin of
a binary classifier, the margin of class k of a multi-class one. In random-forest mode
(``boosting="rf"``) ``f`` is the average over the iterations, which is what ``predict`` returns
for regression and what the predicted probability is the sigmoid / softmax of; LightGBM's own
``raw_score=True`` returns the sum over iterations without averaging there.
"""

from __future__ import annotations

import re
from typing import Any, Callable, List, Optional

import numpy as np

from . import _parsers
from ._target import Target, n_threads, select_output
from ._outputs import ModelOutputs, arena_outputs
from ..ensemble import TreeEnsemble

_AUTO_NAME = re.compile(r"Column_(\d+)\Z")


def may_split_by_category(model: Any) -> bool:
    """Whether the model may split by category: a LightGBM object does not say cheaply (its
    categorical features live in the model text), so yes, and the parsed model tells."""
    return True


def is_lightgbm(model: Any) -> bool:
    module = type(model).__module__ or ""
    if not module.startswith("lightgbm"):
        return False
    # Booster, or a scikit-learn wrapper (fitted or not: booster_ raises when unfitted).
    return hasattr(model, "model_to_string") or any(c.__name__ == "LGBMModel" for c in type(model).__mro__)


def _feature_names(info: _parsers.LightGBMModelInfo) -> Optional[List[str]]:
    names = list(info.feature_names)
    if not names:
        return None
    # LightGBM invents Column_0, Column_1, ... when trained without names: treat those as none.
    if all((m := _AUTO_NAME.match(n)) is not None and int(m.group(1)) == j for j, n in enumerate(names)):
        return None
    return names


def lightgbm_outputs(text: Any, n_iterations: int, source: str,
                     check: Optional[Callable[[TreeEnsemble], None]] = None) -> ModelOutputs:
    """Parse a LightGBM text model (str or bytes) once; each output is selected from that parse."""
    full, info = _parsers.parse_lightgbm_text(text, n_iterations)
    # a model trained on pandas category columns: a DataFrame's category columns are mapped
    # onto its pandas_categorical as LightGBM's own predict does (pgexact._data._userdata)
    objective = info.objective.split(" ")[0]
    what = f"LightGBM model (objective {objective!r})" if objective else "LightGBM model"
    return arena_outputs(full, what, check, feature_names=_feature_names(info), source=source,
                         meta=info.as_dict())


def _booster_of(model: Any) -> Any:
    if hasattr(model, "model_to_string"):
        return model
    try:
        return model.booster_
    except Exception as exc:  # lightgbm raises LGBMNotFittedError (a ValueError subclass)
        raise ValueError(f"model: this {type(model).__name__} is not fitted ({exc})") from None


def _check_against_lightgbm(ens: TreeEnsemble, booster: Any, n_iterations: int) -> None:
    """Cheap guard: pgexact's output equals LightGBM's raw score on a few probe rows."""
    d = ens.n_features
    rng = np.random.default_rng(0)
    probe = np.vstack([np.zeros(d), np.full(d, np.nan), rng.normal(size=(6, d))])
    cats = ens._arena.categorical_features
    if cats:
        probe[:, cats] = np.abs(np.round(np.nan_to_num(probe[:, cats] * 3)))
    ref = np.asarray(booster.predict(probe, raw_score=True, num_iteration=n_iterations), dtype=np.float64)
    if ref.ndim == 2:
        ref = ref[:, ens.output]
    if ens._meta.get("average_output") and ens._meta.get("n_iterations_used", 0) > 0:
        # rf mode: raw_score=True returns the sum over iterations; predict() averages it.
        ref = ref / ens._meta["n_iterations_used"]
    ours = ens.predict(probe)
    if not np.allclose(ours, ref, rtol=1e-12, atol=1e-12 * (1.0 + float(np.max(np.abs(ref))))):
        raise ValueError(
            "model: pgexact could not reproduce LightGBM's own raw score for this model; max difference "
            f"{float(np.max(np.abs(ours - ref))):.3g}"
        )


def from_lightgbm(model: Any) -> ModelOutputs:
    booster = _booster_of(model)
    # LightGBM's predict (Booster and the scikit-learn wrappers alike) uses the best iteration
    # when early stopping recorded one, and every iteration otherwise.
    best = int(getattr(booster, "best_iteration", -1) or -1)
    n_iterations = best if best > 0 else -1
    text = booster.model_to_string(num_iteration=n_iterations)
    return lightgbm_outputs(text, -1, f"lightgbm.{type(model).__name__}",
                            lambda ens: _check_against_lightgbm(ens, booster, n_iterations))


def looks_like_lightgbm_text(raw: bytes) -> bool:
    """A LightGBM text model starts with the line ``tree``."""
    head = raw.lstrip()[:5]
    return head in (b"tree\n", b"tree\r") or raw.lstrip() == b"tree"


def lightgbm_target(model: Any, output: Optional[int], n_jobs: Optional[int]) -> Target:
    """Monte Carlo's view of a LightGBM model: ``predict(raw_score=True)`` on our threads.

    LightGBM's predict uses the best iteration when early stopping recorded one, as
    :func:`from_lightgbm` does.
    """
    booster = _booster_of(model)
    kwargs = {"raw_score": True, "num_threads": n_threads(n_jobs)}
    given = list(booster.feature_name())
    # LightGBM's automatic names Column_0, ... mean the model was trained without names
    names = None if given == [f"Column_{i}" for i in range(len(given))] else given

    def predict(X: np.ndarray) -> np.ndarray:
        return select_output(booster.predict(X, **kwargs), output, "LightGBM predict")

    return Target(predict, booster.num_feature(), names, model)
