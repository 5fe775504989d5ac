"""scikit-learn adapters: decision trees, random forests, extra trees, gradient boosting and
histogram gradient boosting, regressors and classifiers.

The trees are read as numpy arrays (node fields by name) and handed to the C++ arena builder,
which validates them. What each model's raw output ``f`` is:

* ``DecisionTree*`` / ``ExtraTree*`` / ``RandomForest*`` / ``ExtraTrees*``: the input is cast to
  float32 and ``x <= t`` goes left (t in float64); NaN follows ``missing_go_to_left``. Regressors:
  the prediction (output k = target k of a multi-output regressor). Classifiers: the class
  fraction of the leaf, ``predict_proba[:, k]`` (forests average over their trees).
* ``GradientBoosting*``: float32 input, ``x <= t``; leaves times ``learning_rate``, plus the
  init estimator's raw prediction; K trees per stage. Output k is ``decision_function[:, k]``
  (a regressor's ``predict``; a binary classifier's log-odds).
* ``HistGradientBoosting*``: float64 input, ``x <= t``; NaN follows ``missing_go_to_left``;
  categorical splits through the model's own category encoder; baseline plus leaves (already
  shrunk). Output k is the raw prediction (``decision_function``; a regressor's ``predict``
  on the link scale, i.e. log for the Poisson and gamma losses).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

import numpy as np

from . import _parsers
from ._target import Target, n_threads, select_output
from ._outputs import ModelOutputs, as_output
from ..ensemble import TreeEnsemble


def is_sklearn(model: Any) -> bool:
    return any((c.__module__ or "").startswith("sklearn.") for c in type(model).__mro__)


def may_split_by_category(model: Any) -> bool:
    """Whether the model may split by category: only HistGradientBoosting with categorical
    features (``is_categorical_``)."""
    if not type(model).__name__.startswith("HistGradientBoosting"):
        return False
    flags = getattr(model, "is_categorical_", None)
    return flags is not None and bool(np.any(flags))


def _fitted(model: Any) -> None:
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(model)
    except NotFittedError:
        raise ValueError(f"model: this {type(model).__name__} is not fitted") from None


def _feature_names(model: Any) -> Optional[List[str]]:
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def _sklearn_version() -> Tuple[int, int]:
    import sklearn

    parts = sklearn.__version__.split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


def _classifier_default(n_classes: int) -> Optional[int]:
    """Forest-style classifiers: binary defaults to the probability of class 1."""
    return 1 if n_classes == 2 else (0 if n_classes == 1 else None)


# --------------------------------------------------------------------------- trees and forests
def _tree_dict(tree: Any, value: np.ndarray, weight: float, missing: bool = True) -> Dict[str, Any]:
    n = tree.node_count
    left = np.asarray(tree.children_left[:n], dtype=np.int64)
    mgl = getattr(tree, "missing_go_to_left", None)
    if mgl is None or not missing:
        mgl = np.zeros(n, dtype=np.uint8)
    return {
        "children_left": left,
        "children_right": np.asarray(tree.children_right[:n], dtype=np.int64),
        "feature": np.asarray(tree.feature[:n], dtype=np.int64),
        "threshold": np.asarray(tree.threshold[:n], dtype=np.float64),
        "value": np.ascontiguousarray(value, dtype=np.float64),
        "missing_go_to_left": np.asarray(mgl[:n], dtype=np.uint8),
        "weight": float(weight),
    }


def _leaf_values(est: Any, k: int, classifier: bool) -> np.ndarray:
    """Per-node values of output k exactly as the estimator's predict / predict_proba reads them."""
    tree = est.tree_
    value = np.asarray(tree.value)[: tree.node_count]
    if not classifier:
        return value[:, k, 0]
    n_classes = int(np.atleast_1d(est.n_classes_)[0])
    proba = np.ascontiguousarray(value[:, 0, :n_classes])
    if _sklearn_version() < (1, 4):
        # scikit-learn < 1.4 stored weighted counts and normalised them in predict_proba.
        normalizer = proba.sum(axis=1)[:, np.newaxis]
        normalizer[normalizer == 0.0] = 1.0
        proba = proba / normalizer
    return proba[:, k]


def _trees_outputs(model: Any, estimators: List[Any], source: str, forest: bool) -> ModelOutputs:
    from sklearn.base import is_classifier

    classifier = is_classifier(model)
    n_outputs_y = int(getattr(model, "n_outputs_", 1))
    if classifier:
        if n_outputs_y != 1:
            raise ValueError(f"model: multi-output classifiers ({type(model).__name__} with "
                             f"{n_outputs_y} targets) are not supported")
        n_classes = int(np.atleast_1d(model.n_classes_)[0])
        default = _classifier_default(n_classes)
        what = f"{type(model).__name__} (output k = probability of class k)"
        n_outputs = n_classes
    else:
        default, what = None, f"multi-output {type(model).__name__}"
        n_outputs = n_outputs_y
    if not estimators:
        raise ValueError(f"model: this {type(model).__name__} has no trees")
    # Forests average their trees: predict = (sum of tree predictions) / T.
    weight = 1.0 / len(estimators) if forest else 1.0
    meta = {"library": "sklearn", "classifier": classifier, "n_estimators": len(estimators)}
    if classifier:
        meta["classes"] = list(np.asarray(model.classes_).tolist())

    def select(k: int) -> TreeEnsemble:
        trees = [_tree_dict(e.tree_, _leaf_values(e, k, classifier), weight) for e in estimators]
        arena = _parsers.build_arena_from_arrays(trees, np.zeros(1), int(model.n_features_in_), "<=",
                                                 True, "none")
        return TreeEnsemble(arena, feature_names=_feature_names(model), output=k,
                            n_outputs=n_outputs, source=source, meta=meta)

    return ModelOutputs(n_outputs, what, default, select)


# --------------------------------------------------------------------------- gradient boosting
def _gb_base(model: Any, K: int) -> np.ndarray:
    """The init estimator's raw prediction, which must not depend on X."""
    d = int(model.n_features_in_)
    rng = np.random.default_rng(0)
    probe = np.vstack([np.zeros(d), np.ones(d), rng.normal(size=(4, d)) * 10.0]).astype(np.float32)
    raw = np.asarray(model._raw_predict_init(probe), dtype=np.float64).reshape(probe.shape[0], K)
    if not np.all(raw == raw[0]):
        raise ValueError(
            f"model: the init estimator of this {type(model).__name__} ({type(model.init_).__name__}) "
            "predicts different values for different rows; pgexact needs a constant initial prediction "
            "(the default init, a Dummy* estimator, or init='zero')"
        )
    return cast(np.ndarray, raw[0].copy())


def _gb_outputs(model: Any, source: str) -> ModelOutputs:
    from sklearn.base import is_classifier

    estimators = np.asarray(model.estimators_, dtype=object)
    n_stages, K = estimators.shape
    what = f"{type(model).__name__} (output k = raw prediction of class k)"
    base = _gb_base(model, K)
    lr = float(model.learning_rate)
    meta = {"library": "sklearn", "classifier": is_classifier(model), "n_stages": n_stages,
            "learning_rate": lr, "init": "zero" if isinstance(model.init_, str) else type(model.init_).__name__}

    def select(k: int) -> TreeEnsemble:
        # predict_stages adds learning_rate * value; it compares float32 X with `<=` and has no
        # NaN branch, so a NaN (which scikit-learn refuses at predict) would go right.
        trees = []
        for i in range(n_stages):
            tree = estimators[i, k].tree_
            trees.append(_tree_dict(tree, np.asarray(tree.value)[: tree.node_count, 0, 0], lr,
                                    missing=False))
        arena = _parsers.build_arena_from_arrays(trees, np.array([base[k]]), int(model.n_features_in_),
                                                 "<=", True, "none")
        return TreeEnsemble(arena, feature_names=_feature_names(model), output=k, n_outputs=K,
                            source=source, meta=meta)

    return ModelOutputs(int(K), what, None, select)


# --------------------------------------------------------------------------- histogram GB
def _bits_to_words(left: np.ndarray) -> np.ndarray:
    """bool array over 0..32W-1 -> W uint32 words, bit c of word c // 32 = entry c."""
    n_words = len(left) // 32
    bits = left.reshape(n_words, 32).astype(np.uint64)
    return cast(np.ndarray, (bits << np.arange(32, dtype=np.uint64)).sum(axis=1).astype(np.uint32))


def _in_bitset(words: np.ndarray, c: int) -> bool:
    return bool((int(words[c // 32]) >> (c % 32)) & 1)


class _HistCategories:
    """Maps HistGradientBoosting's internal (encoded) categorical features back to raw input."""

    def __init__(self, model: Any):
        d = int(model.n_features_in_)
        is_cat = getattr(model, "is_categorical_", None)
        self.prep = getattr(model, "_preprocessor", None)
        if self.prep is None or is_cat is None:
            self.original = np.arange(d)
            self.categories: Dict[int, np.ndarray] = {}
            self.string_features: Dict[int, List[Any]] = {}
            return
        is_cat = np.asarray(is_cat, dtype=bool)
        # The preprocessor's ColumnTransformer puts the encoded categorical columns first.
        cat_cols = np.flatnonzero(is_cat)
        self.original = np.concatenate([cat_cols, np.flatnonzero(~is_cat)])
        encoder = self.prep.named_transformers_["encoder"]
        names = _feature_names(model)
        self.categories = {}
        self.string_features = {}  # input column -> its string categories (read as codes 0..k-1)
        for i, (col, cats) in enumerate(zip(cat_cols, encoder.categories_)):
            name = repr(names[col]) if names else f"{col}"
            cats = np.asarray(cats)
            try:
                raw = cats.astype(np.float64)
            except (TypeError, ValueError):
                # string categories (categorical_features="from_dtype" on pandas category or
                # text columns): pgexact reads the encoder's codes, 0..k-1, which is what a
                # DataFrame's categories become (pgexact._userdata) and what a numeric X holds
                raw = np.arange(sum(1 for v in cats.tolist()
                                    if not (isinstance(v, float) and np.isnan(v))),
                                dtype=np.float64)
                self.string_features[int(col)] = [v for v in cats.tolist()
                                                  if not (isinstance(v, float) and np.isnan(v))]
            raw = raw[~np.isnan(raw)]
            if raw.size and (np.any(raw < 0) or np.any(raw != np.floor(raw)) or np.max(raw) >= 2 ** 24):
                raise ValueError(
                    f"model: categorical feature {name} of this {type(model).__name__} has categories that "
                    "are not integers in [0, 2^24); pgexact supports integer-coded categories only"
                )
            self.categories[i] = raw  # remapped feature i, code c -> raw value raw[c]
        self.known, self.f_idx_map = model._bin_mapper.make_known_categories_bitsets()

    def _raw(self, feature: int, where: str) -> np.ndarray:
        if feature not in self.categories:
            raise ValueError(f"model: {where} splits by category on feature {feature} of the encoded "
                             f"data, which is not one of the {len(self.categories)} categorical features; "
                             "the model is corrupted (refit it)")
        return self.categories[feature]

    def bitset(self, feature: int, raw_left: np.ndarray, missing_left: bool, where: str) -> np.ndarray:
        """Raw-integer bitset of the values that go left at a categorical node of `feature`."""
        raw = self._raw(feature, where)
        known = self.known[self.f_idx_map[feature]]
        n_codes = 32 * min(len(raw_left), len(known))
        if raw.size > n_codes:
            raise ValueError(f"model: {where} has a category bitset of {n_codes} bits for "
                             f"{raw.size} categories; the model is corrupted (refit it)")

        def goes_left(code: int) -> bool:
            if _in_bitset(raw_left, code):
                return True
            if _in_bitset(known, code):
                return False
            return bool(missing_left)  # binned data never saw it: treated as missing

        return self._words(raw, goes_left, missing_left)

    def numeric_bitset(self, feature: int, threshold: float, missing_left: bool, where: str) -> np.ndarray:
        """A numeric split on a categorical feature (a corrupted model): scikit-learn compares the
        encoder's code of the value, ``code <= threshold``, and routes an unknown value (its code
        is NaN) the missing way; as a bitset over the raw values."""
        raw = self._raw(feature, where)
        return self._words(raw, lambda code: bool(code <= threshold), missing_left)

    @staticmethod
    def _words(raw: np.ndarray, goes_left: Callable[[int], bool], missing_left: bool) -> np.ndarray:
        top = int(np.max(raw)) if raw.size else 0
        n_words = top // 32 + 1
        # Unknown categories (any integer the encoder does not know) follow the missing direction.
        left = np.full(32 * n_words, bool(missing_left))
        for code, value in enumerate(raw):
            left[int(value)] = goes_left(code)
        return _bits_to_words(left)


def _hist_tree(predictor: Any, cats: _HistCategories, where: str) -> Dict[str, Any]:
    nodes = predictor.nodes
    for field in ("is_leaf", "feature_idx", "left", "right", "num_threshold", "value", "missing_go_to_left",
                  "is_categorical", "bitset_idx"):
        if field not in (nodes.dtype.names or ()):
            raise ValueError(f"model: {where} has no node field {field!r}; the model is corrupted or from an "
                             "unsupported scikit-learn version")
    leaf = np.asarray(nodes["is_leaf"], dtype=bool)
    remapped = np.asarray(nodes["feature_idx"], dtype=np.int64)
    inner = remapped[~leaf]
    bad = inner[(inner < 0) | (inner >= len(cats.original))]
    if bad.size:
        raise ValueError(f"model: {where} splits on feature {int(bad[0])}, "
                         f"outside the model's {len(cats.original)} features; the model is corrupted (refit it)")
    feature = np.where(leaf, 0, cats.original[np.where(leaf, 0, remapped)])
    out: Dict[str, Any] = {
        "children_left": np.where(leaf, -1, np.asarray(nodes["left"], dtype=np.int64)),
        "children_right": np.where(leaf, -1, np.asarray(nodes["right"], dtype=np.int64)),
        "feature": feature,
        "threshold": np.asarray(nodes["num_threshold"], dtype=np.float64),
        "value": np.asarray(nodes["value"], dtype=np.float64),
        "missing_go_to_left": np.asarray(nodes["missing_go_to_left"], dtype=np.uint8),
    }
    is_cat = np.asarray(nodes["is_categorical"], dtype=bool) & ~leaf
    # a numeric split on an encoded categorical feature (only in a corrupted model): scikit-learn
    # compares the category's code, so it is a split by category on the raw values
    on_codes = ~is_cat & ~leaf & np.isin(remapped, list(cats.categories))
    if np.any(is_cat | on_codes):
        bitsets = predictor.raw_left_cat_bitsets
        cat_nodes = np.flatnonzero(is_cat | on_codes)
        out["cat_nodes"] = cat_nodes.astype(np.int64)
        out["cat_bitsets"] = []
        for v in cat_nodes:
            node = f"{where} node {int(v)}"
            missing_left = bool(nodes["missing_go_to_left"][v])
            if on_codes[v]:
                out["cat_bitsets"].append(cats.numeric_bitset(int(remapped[v]), float(nodes["num_threshold"][v]),
                                                              missing_left, node))
                continue
            b = int(nodes["bitset_idx"][v])
            if not 0 <= b < len(bitsets):
                raise ValueError(f"model: {node} names category bitset {b}, the tree has {len(bitsets)}; "
                                 "the model is corrupted (refit it)")
            out["cat_bitsets"].append(cats.bitset(int(remapped[v]), np.asarray(bitsets[b]), missing_left, node))
        out["threshold"] = np.where(is_cat | on_codes, 0.0, out["threshold"])
    return out


def _hist_outputs(model: Any, source: str) -> ModelOutputs:
    from sklearn.base import is_classifier

    K = int(model.n_trees_per_iteration_)
    what = f"{type(model).__name__} (output k = raw prediction of class k)"
    try:
        cats = _HistCategories(model)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ValueError(f"model: this {type(model).__name__}'s category encoder is inconsistent "
                         f"({type(exc).__name__}: {exc}); the model is corrupted (refit it)") from None
    base = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
    if base.size != K:
        raise ValueError(f"model: unexpected baseline prediction shape {np.shape(model._baseline_prediction)}")
    meta = {"library": "sklearn", "classifier": is_classifier(model), "n_iter": len(model._predictors),
            "loss": str(getattr(model, "loss", "")),
            # the encoder's categories per input column: the default of noise.categorical()
            "categories": {int(cats.original[i]): raw.tolist() for i, raw in cats.categories.items()}}

    def select(k: int) -> TreeEnsemble:
        try:
            trees = [_hist_tree(it[k], cats, f"iteration {i} tree {k}") for i, it in enumerate(model._predictors)]
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            # anything the checks above did not name: a corrupted model, not a bare KeyError
            raise ValueError(f"model: this {type(model).__name__} is inconsistent ({type(exc).__name__}: "
                             f"{exc}); the model is corrupted (refit it)") from None
        arena = _parsers.build_arena_from_arrays(trees, np.array([base[k]]), int(model.n_features_in_),
                                                 "<=", False, "sklearn_hist")
        return TreeEnsemble(arena, feature_names=_feature_names(model), output=k, n_outputs=K,
                            source=source, meta=meta)

    return ModelOutputs(K, what, None, select)


# --------------------------------------------------------------------------- dispatch
def from_sklearn(model: Any) -> ModelOutputs:
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    source = f"sklearn.{type(model).__name__}"
    if isinstance(model, (DecisionTreeRegressor, DecisionTreeClassifier)):
        _fitted(model)
        return _trees_outputs(model, [model], source, forest=False)
    if isinstance(model, (RandomForestRegressor, RandomForestClassifier, ExtraTreesRegressor, ExtraTreesClassifier)):
        _fitted(model)
        return _trees_outputs(model, list(model.estimators_), source, forest=True)
    if isinstance(model, (GradientBoostingRegressor, GradientBoostingClassifier)):
        _fitted(model)
        return _gb_outputs(model, source)
    if isinstance(model, (HistGradientBoostingRegressor, HistGradientBoostingClassifier)):
        _fitted(model)
        return _hist_outputs(model, source)
    raise TypeError(f"model: unsupported scikit-learn model {type(model).__name__}")


SKLEARN_TYPES = (
    "DecisionTreeRegressor", "DecisionTreeClassifier", "ExtraTreeRegressor", "ExtraTreeClassifier",
    "RandomForestRegressor", "RandomForestClassifier", "ExtraTreesRegressor", "ExtraTreesClassifier",
    "GradientBoostingRegressor", "GradientBoostingClassifier",
    "HistGradientBoostingRegressor", "HistGradientBoostingClassifier",
)


def accepts(model: Any) -> bool:
    """A scikit-learn tree model pgexact can read (subclasses included)."""
    if not is_sklearn(model):
        return False
    return any(c.__name__ in SKLEARN_TYPES and (c.__module__ or "").startswith("sklearn.")
               for c in type(model).__mro__)


def _hist_frame(model: Any, X: np.ndarray, strings: Dict[int, List[Any]]) -> Any:
    """Rows whose string-categorical columns hold codes, as the DataFrame of categories the
    model was fitted on (its own encoder then reads them; NaN / unknown codes are missing)."""
    import pandas as pd

    names = list(getattr(model, "feature_names_in_", range(X.shape[1])))
    frame = pd.DataFrame(X, columns=names)
    for col, cats in strings.items():
        codes = X[:, col]
        ok = np.isfinite(codes) & (codes >= 0) & (codes < len(cats)) & (codes == np.floor(codes))
        frame.isetitem(col, pd.Categorical.from_codes(np.where(ok, codes, -1).astype(np.int64),
                                                      categories=cats))
    return frame


def sklearn_target(model: Any, output: Optional[int], n_jobs: Optional[int]) -> Target:
    """Monte Carlo's view of a scikit-learn model: its own raw output on our threads.

    HistGradientBoosting: ``_raw_predict``; GradientBoosting: ``decision_function``; classifiers
    with ``predict_proba``: the class probabilities (binary: class 1, as :func:`pgexact.load`);
    anything else with ``predict``: ``predict``.
    """
    name = type(model).__name__
    threads = n_threads(n_jobs)
    if hasattr(model, "n_jobs"):
        model_ = copy.copy(model)  # shallow: fitted trees are shared, n_jobs is ours
        model_.n_jobs = threads
    else:
        model_ = model

    raw: Callable[[np.ndarray], Any]
    if name.startswith("HistGradientBoosting"):
        strings = _HistCategories(model).string_features

        def raw(X: np.ndarray) -> Any:
            return model_._raw_predict(_hist_frame(model_, X, strings) if strings else X,
                                       n_threads=threads)
    elif name.startswith("GradientBoosting") and hasattr(model_, "decision_function"):
        raw = model_.decision_function
    elif hasattr(model_, "predict_proba") and hasattr(model_, "classes_"):
        classes = model_.classes_
        if isinstance(classes, list):
            raise ValueError(f"model: multi-output classifiers ({name}) are not supported")
        if output is None and len(classes) == 2:
            output = 1  # binary: the probability of class 1 (as pgexact.load)
        as_output(output, len(classes), f"{name} (output k = probability of class k)")
        raw = model_.predict_proba
    elif hasattr(model_, "predict"):
        raw = model_.predict
    else:  # pragma: no cover - not a fitted estimator
        raise TypeError(f"model: unsupported scikit-learn object {name}")

    def predict(X: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*feature names.*", category=UserWarning)
            out = raw(X)
        return select_output(out, output, f"{name} prediction")

    names = getattr(model, "feature_names_in_", None)
    return Target(
        predict,
        getattr(model, "n_features_in_", None),
        [str(c) for c in names] if names is not None else None,
        model,
    )
