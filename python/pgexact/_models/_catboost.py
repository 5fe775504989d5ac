"""CatBoost adapter: CatBoost / CatBoostRegressor / CatBoostClassifier (/ CatBoostRanker) objects
and saved models (JSON, and the binary ``.cbm`` through CatBoost's own export).

The model is exported by CatBoost itself (``save_model(..., format="json")``) and parsed in C++;
Python only picks the output column. ``f`` is CatBoost's ``predict(prediction_type=
"RawFormulaVal")``: the regression value, the log-odds of a binary classifier, the raw score of
class k of a multi-class one, ``scale`` and ``bias`` included. CatBoost's predict uses every
tree the model holds (``ntree_end=0``); a model trained with ``use_best_model`` (the default
with an ``eval_set``) was already cut at its best iteration by CatBoost, so pgexact uses the
same trees.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from . import _parsers
from .._optional import require
from ._target import Target, n_threads, select_output
from ._outputs import ModelOutputs, arena_outputs
from ..ensemble import TreeEnsemble

__all__ = ["catboost_outputs", "catboost_model_file", "catboost_target", "cbm_to_json",
           "from_catboost", "from_cbm_file", "is_catboost", "looks_like_catboost_json",
           "looks_like_cbm", "may_split_by_category"]

# CatBoost writes its JSON keys sorted; a model starts with one of its top-level keys.
_JSON_HEAD = re.compile(rb'\A\s*\{\s*"(ctr_data|features_info|model_info|oblivious_trees|'
                        rb'scale_and_bias|trees)"\s*:')


def is_catboost(model: Any) -> bool:
    """A CatBoost model object (fitted or not)."""
    module = type(model).__module__ or ""
    return module.startswith("catboost") and hasattr(model, "save_model") and hasattr(model, "predict")


def may_split_by_category(model: Any) -> bool:
    """Whether the model may split by category: only with categorical features."""
    try:
        return len(model.get_cat_feature_indices()) > 0
    except Exception:  # not fitted or another version: parse, and let the parser speak
        return True


def looks_like_catboost_json(raw: bytes) -> bool:
    """CatBoost's JSON model format (an XGBoost JSON model starts with other keys)."""
    return _JSON_HEAD.match(raw[:4096]) is not None


def looks_like_cbm(raw: bytes) -> bool:
    """CatBoost's binary model format starts with the magic ``CBM1``."""
    return raw[:4] == b"CBM1"


def _feature_names(names: List[str]) -> Optional[List[str]]:
    """The model's names, or None for a model trained without names: CatBoost records "" then
    (and its objects report "0", "1", ... for them)."""
    if not names or any(n == "" for n in names) or names == [str(j) for j in range(len(names))]:
        return None
    return list(names)


def catboost_outputs(text: Any, source: str,
                     check: Optional[Callable[[TreeEnsemble], None]] = None) -> ModelOutputs:
    """Parse a CatBoost JSON model (str or bytes) once; each output is selected from that parse."""
    full, info = _parsers.parse_catboost_json(text, -1)
    loss = info.loss_function
    what = f"CatBoost model (loss {loss!r})" if loss else "CatBoost model"
    return arena_outputs(full, what, check, feature_names=_feature_names(list(info.feature_names)),
                         source=source, meta=info.as_dict())


def _fitted(model: Any) -> Any:
    fitted = getattr(model, "is_fitted", None)
    if callable(fitted) and not fitted():
        raise ValueError(f"model: this {type(model).__name__} is not fitted")
    return model


def _export_json(model: Any) -> bytes:
    """CatBoost's own JSON export of ``model`` (it writes only to files)."""
    with tempfile.TemporaryDirectory(prefix="pgexact-catboost-") as tmp:
        path = os.path.join(tmp, "model.json")
        try:
            model.save_model(path, format="json")
        except Exception as exc:  # CatBoostError: a model CatBoost cannot write as JSON
            raise ValueError(f"model: CatBoost could not export this {type(model).__name__} as "
                             f"JSON ({str(exc).strip().splitlines()[-1] if str(exc).strip() else exc})"
                             ) from None
        with open(path, "rb") as fh:
            return fh.read()


def _raw(model: Any, X: np.ndarray, threads: int) -> np.ndarray:
    """CatBoost's RawFormulaVal: through the base class's predict, since CatBoostRanker's own
    predict takes no prediction_type (its output is the raw value anyway)."""
    catboost = require("catboost", "predicting with a CatBoost model")
    return np.asarray(catboost.CatBoost.predict(model, X, prediction_type="RawFormulaVal",
                                                thread_count=threads), dtype=np.float64)


def _check_against_catboost(ens: TreeEnsemble, model: Any) -> None:
    """Cheap guard: pgexact's output equals CatBoost's raw formula value on a few probe rows."""
    d = ens.n_features
    rng = np.random.default_rng(0)
    probe = np.vstack([np.zeros(d), np.full(d, np.nan), rng.normal(size=(6, d))])
    ref = select_output(_raw(model, probe, 1), ens.output, "CatBoost predict")
    ours = ens.predict(probe)
    # CatBoost multiplies the sum of the leaves by `scale`; pgexact scales each leaf.
    if not np.allclose(ours, ref, rtol=1e-12, atol=1e-12 * (1.0 + float(np.max(np.abs(ref))))):
        raise ValueError(
            "model: pgexact could not reproduce CatBoost's own raw prediction for this model; max "
            f"difference {float(np.max(np.abs(ours - ref))):.3g}"
        )


# CatBoost's getters for the feature kinds pgexact cannot perturb
_NON_NUMERIC = {"categorical": "get_cat_feature_indices", "text": "get_text_feature_indices",
                "embedding": "get_embedding_feature_indices"}


def _unsupported_features(kind: str, columns: List[int], names: List[str], where: str) -> None:
    """Refuse a non-numeric feature kind, naming the first one (``where``: the object or file)."""
    if columns:
        j = int(columns[0])
        name = f"'{names[j]}' (column {j})" if j < len(names) and names[j] else f"column {j}"
        raise ValueError(f"model: {where}: CatBoost model has {kind} feature {name}; pgexact perturbs "
                         f"numeric columns only and does not support {kind} features")


def _refuse_non_numeric(model: Any, kinds: Sequence[str]) -> None:
    """Refuse ``model`` when it has features of ``kinds`` (keys of ``_NON_NUMERIC``)."""
    names = [str(n) for n in (getattr(model, "feature_names_", None) or [])]
    for kind in kinds:
        getter = getattr(model, _NON_NUMERIC[kind], None)
        _unsupported_features(kind, list(getter()) if callable(getter) else [], names,
                              type(model).__name__)


def from_catboost(model: Any) -> ModelOutputs:
    """The outputs of a CatBoost object, each checked against CatBoost's RawFormulaVal."""
    # CatBoost writes models with text or embedding features only as .cbm: say why they are
    # refused before its JSON export fails with a message about formats. Categorical features
    # are refused by the parser, which can say whether their splits are one-hot or CTRs.
    _refuse_non_numeric(_fitted(model), ("text", "embedding"))
    raw = _export_json(model)
    return catboost_outputs(raw, f"catboost.{type(model).__name__}",
                            lambda ens: _check_against_catboost(ens, model))


# CatBoost's own reader crashes the process on some corrupted .cbm files, so it runs in a child
# process: a broken file costs a ValueError, never the user's session.
_CBM_TO_JSON = """
import json, sys, catboost
m = catboost.CatBoost()
m.load_model(sys.argv[1], format="cbm")
unsupported = {k: list(getattr(m, "get_%s_feature_indices" % k)()) for k in ("text", "embedding")}
if any(unsupported.values()):
    print(json.dumps([unsupported, [str(n) for n in (m.feature_names_ or [])]]))
    sys.exit(3)
m.save_model(sys.argv[2], format="json")
"""
# exit status of the child for a model with text / embedding features (CatBoost cannot write it
# as JSON); it prints the feature indices and names
_UNSUPPORTED = 3


def cbm_to_json(path: str) -> bytes:
    """CatBoost's JSON export of the binary model file ``path`` (needs catboost).

    Parameters
    ----------
    path : str
        A ``.cbm`` file written by ``save_model``.

    Returns
    -------
    bytes
        The model as CatBoost's JSON format.
    """
    require("catboost", f"reading the CatBoost binary model {os.path.basename(path)!r}")
    with tempfile.TemporaryDirectory(prefix="pgexact-catboost-") as tmp:
        out = os.path.join(tmp, "model.json")
        try:
            proc = subprocess.run([sys.executable, "-c", _CBM_TO_JSON, os.path.abspath(path), out],
                                  capture_output=True, text=True, timeout=600, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise ValueError(f"model: CatBoost took more than 10 minutes to read {path!r}") from None
        if proc.returncode == _UNSUPPORTED:
            unsupported, names = json.loads(proc.stdout.strip().splitlines()[-1])
            for kind in ("text", "embedding"):
                _unsupported_features(kind, unsupported[kind], names, f"file {path!r}")
        if proc.returncode != 0 or not os.path.exists(out):
            if proc.returncode < 0:
                why = f"CatBoost crashed reading it (signal {-proc.returncode})"
            else:
                lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
                why = f"CatBoost could not read it: {lines[-1] if lines else 'no message'}"
            raise ValueError(f"model: {path!r} is not a readable CatBoost model ({why})")
        with open(out, "rb") as fh:
            return fh.read()


def from_cbm_file(path: str) -> ModelOutputs:
    """A binary ``.cbm`` model, exported to JSON by CatBoost itself."""
    return catboost_outputs(cbm_to_json(path), f"CatBoost file {os.path.basename(path)}")


def catboost_model_file(path: str) -> Any:
    """A saved CatBoost model (``.json`` or ``.cbm``) as a ``catboost.CatBoost`` object.

    The file is checked first (the ``.cbm`` read by CatBoost in a child process, the JSON by
    pgexact's parser), so CatBoost's own reader only ever sees a model it can read.

    Parameters
    ----------
    path : str
        The model file.

    Returns
    -------
    catboost.CatBoost
        The loaded model, for CatBoost's own predict.
    """
    catboost = require("catboost", f"loading the CatBoost model {os.path.basename(path)!r}")
    with open(path, "rb") as fh:
        raw = fh.read()
    fmt = "json" if looks_like_catboost_json(raw) else "cbm"
    _parsers.parse_catboost_json(raw if fmt == "json" else cbm_to_json(path), -1)
    model = catboost.CatBoost()
    model.load_model(path, format=fmt)
    return model


def catboost_target(model: Any, output: Optional[int], n_jobs: Optional[int]) -> Target:
    """Monte Carlo's view of a CatBoost model: ``predict(prediction_type="RawFormulaVal")`` on
    our threads (every tree, as :func:`from_catboost` uses). Rows are float arrays, so models
    reading category values, text or embeddings are refused."""
    _refuse_non_numeric(_fitted(model), tuple(_NON_NUMERIC))
    threads = n_threads(n_jobs)
    names = _feature_names([str(n) for n in (getattr(model, "feature_names_", None) or [])])

    def predict(X: np.ndarray) -> np.ndarray:
        return select_output(_raw(model, X, threads), output, "CatBoost predict")

    # CatBoost reads its input as float32: the perturbed copies can be built in float32
    n = len(getattr(model, "feature_names_", None) or []) or None
    return Target(predict, n, names, model, np.float32)

