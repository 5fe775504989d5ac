"""Argument validation: every public function checks its arguments here, in one place.

Each checker returns the canonical form the C++ core expects (contiguous float64 / int64 /
uint8 arrays) or raises ``ValueError`` / ``TypeError`` naming the argument and what was expected.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, List, NamedTuple, Optional, Protocol, Tuple, Union

import numpy as np

from . import _userdata, _warnings
from . import noise as _noise
from ._columns import ColumnOrder, identity_order, match_frame, uses_lightgbm_names


class Columns(Protocol):
    """What the checkers need of a model: its column count and names.

    A :class:`~pgexact.TreeEnsemble` for the exact functions, a Monte Carlo
    :class:`~pgexact._target.Target` for the estimators.
    """

    @property
    def n_features(self) -> Any: ...

    @property
    def feature_names(self) -> Optional[List[str]]: ...


#: where the leaf-pair kernel applies, the only exact kernel for categorical noise
#: (``pairs_apply`` in ``cpp/src/exact/pair_kernel.cpp``)
MAX_PAIR_FEATURES = 64
MAX_PAIR_DEPTH = 256

#: family name -> the code the C++ kernels use; the codes live on the noise classes
#: (``Normal.code`` ...), and :mod:`pgexact._kernels` checks them against the C++ enum
NOISE_FAMILIES = {name: cls.code for name, cls in _noise.FAMILIES.items()}


def _is_dataframe(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "to_numpy") and hasattr(X, "iloc")


def _refuse_strings(arr: np.ndarray, name: str) -> None:
    """Text is never read as numbers, not even numeric strings such as "1.5"."""
    if arr.dtype.kind in "US" or (arr.dtype == object and any(isinstance(v, (str, bytes))
                                                              for v in arr.ravel())):
        raise TypeError(f"{name}: contains text (dtype {arr.dtype}); pass a numeric array: strings are "
                        "not read as numbers (use X.astype(float) if the text is numeric)")


def as_matrix(X: Any, ensemble: "Columns", name: str = "X") -> np.ndarray:
    """Rows as a C-contiguous float64 (n, d) array, DataFrame columns matched by name."""
    return as_matrix_ordered(X, ensemble, name)[0]


def as_matrix_ordered(X: Any, ensemble: "Columns", name: str = "X") -> Tuple[np.ndarray, ColumnOrder]:
    """Rows in the model's feature order, and how ``X``'s own column order maps to it.

    The :class:`~pgexact._columns.ColumnOrder` translates the user's positional arguments
    (which follow ``X``'s columns) into the model's order and the results back.
    """
    d = ensemble.n_features
    order = identity_order(ensemble.feature_names)
    X = _userdata.read_rows(X, ensemble, name)  # a DMatrix / sparse matrix as its library reads it
    if _is_dataframe(X):
        columns = [str(c) for c in X.columns]
        pos, order = match_frame(columns, ensemble.feature_names, d, uses_lightgbm_names(ensemble), name)
        if pos is not None:
            X = X.iloc[:, pos]
        X = _userdata.frame_categories(X, ensemble, name)  # category columns as the library codes them
        if any(dt == object or str(dt).startswith("str") for dt in X.dtypes):
            _refuse_strings(X.to_numpy(), name)
        try:
            X = X.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name}: DataFrame columns must be numeric ({exc})") from None
    try:
        arr = np.asarray(X)
    except Exception as exc:  # pragma: no cover - exotic array-likes
        raise TypeError(f"{name}: expected a 2-D numeric array, got {type(X).__name__}") from exc
    _refuse_strings(arr, name)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}") from None
    if np.iscomplexobj(arr):
        raise TypeError(f"{name}: complex values are not supported")
    if arr.ndim != 2:
        raise ValueError(
            f"{name}: expected a 2-D array of shape (n_rows, {d}), got {arr.ndim}-D"
            + ("; for a single row use X[None, :]" if arr.ndim == 1 else "")
        )
    if arr.shape[1] != d:
        raise ValueError(f"{name}: expected {d} columns (the model's features), got {arr.shape[1]}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    # x + delta is meaningless at +-inf (and the kernels' CDF differences would be inf - inf).
    infinite = np.isinf(arr)
    if infinite.any():
        i, j = (int(v[0]) for v in np.nonzero(infinite))
        j = int(order.ranking_out(np.array([j]))[0])
        raise ValueError(
            f"{name}: contains infinite values (first at row {i}, column {j}); pgexact needs finite "
            "inputs, with NaN for a missing value"
        )
    _userdata.check_missing(arr, ensemble, order.names,
                            lambda j: order.ranking_out(np.array([j]))[0], name)
    return arr, order


def as_sigma(sigma: Any, d: int) -> np.ndarray:
    """Per-feature standard deviations: a positive finite scalar or a (d,) array."""
    if isinstance(sigma, (str, bytes, bool, np.bool_)) or sigma is None:
        raise TypeError(f"sigma: expected a positive float or an array of {d}, got {sigma!r}")
    if np.asarray(sigma).dtype == np.bool_:
        raise TypeError(f"sigma: expected a positive float or an array of {d} floats, got booleans")
    try:
        arr = np.asarray(sigma, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"sigma: expected a positive float or an array of {d} floats") from None
    if arr.ndim == 0:
        arr = np.full(d, float(arr))
    elif arr.shape != (d,):
        raise ValueError(f"sigma: expected a scalar or an array of shape ({d},), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError("sigma: every value must be positive and finite")
    return np.ascontiguousarray(arr)


#: sigma above this many standard deviations of a feature in X draws the one-time warning
LARGE_SIGMA = 5.0
_warned_large_sigma = False


def warn_large_sigma(X: np.ndarray, noise: Any, order: Optional[ColumnOrder] = None) -> None:
    """Warn once per process when sigma exceeds :data:`LARGE_SIGMA` standard deviations of a
    feature in X (both in the model's order; ``order`` names the feature as X does).

    ``noise`` is the :class:`KernelNoise` (only its additive features count) or a sigma array.
    """
    global _warned_large_sigma
    if _warned_large_sigma or X.shape[0] < 2:
        return
    sigma = np.where(noise.additive(), noise.sigma, 0.0) if isinstance(noise, KernelNoise) else noise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        std = np.nanstd(X, axis=0)
    large = np.nonzero((std > 0) & (sigma > LARGE_SIGMA * std))[0]
    if large.size == 0:
        return
    _warned_large_sigma = True
    j = int(large[0])
    label = str(j) if order is None else str(int(order.ranking_out(np.array([j]))[0]))
    if order is not None and order.names is not None:
        label = repr(order.names[int(label)])
    _warnings.warn(
        f"sigma: {sigma[j]:.3g} is {sigma[j] / std[j]:.1f} standard deviations of feature {label} in X "
        f"({large.size} feature(s) above {LARGE_SIGMA:g}); the perturbation may dwarf the data. "
        "Consider sigma=pgexact.noise.scaled(X_background, 0.3). Shown once per session.",
        UserWarning)


def _noise_item(item: Any, j: Optional[int]) -> Any:
    """A NoiseFamily or Categorical instance, or None (unperturbed), from what the user passed
    (``j``: position in a per-feature list)."""
    where = "noise" if j is None else f"noise[{j}]"
    if item is None and j is not None:
        return None
    if isinstance(item, str):
        if item == "categorical":
            return _noise.Categorical()
        if item not in NOISE_FAMILIES:  # names are exact: no aliases, no case folding
            raise ValueError(f"{where}: unknown family {item!r}; expected exactly 'normal', 'uniform', "
                             "'laplace' or 'categorical' (or a pgexact.noise object)")
        return _noise.FAMILIES[item]()
    if isinstance(item, _noise.NoiseFamily) and type(item) in (_noise.Normal, _noise.Uniform, _noise.Laplace):
        return item
    if isinstance(item, _noise.Categorical):
        return item
    if isinstance(item, type) and issubclass(item, (_noise.NoiseFamily, _noise.Categorical)) and \
            item is not _noise.NoiseFamily:
        return item()
    raise TypeError(
        f"{where}: expected 'normal', 'uniform', 'laplace', a pgexact.noise.Normal / Uniform / Laplace "
        f"object or pgexact.noise.categorical(p){'' if j is None else ', or None (unperturbed)'}, got "
        f"{type(item).__name__}; arbitrary CDFs are not supported by the exact kernels"
    )


class KernelNoise(NamedTuple):
    """The perturbation of every feature, in the model's order, as the C++ kernels read it.

    ``family[j]``: 0-2 additive (:data:`NOISE_FAMILIES`) with standard deviation ``sigma[j]``;
    3 categorical (keep ``x_j`` with probability ``1 - change[j]``, else draw
    ``cat_value[cat_begin[j]:cat_begin[j+1]]`` with probabilities ``cat_weight[...]``); 4 never
    perturbed. ``sigma`` is 1.0 where it is unused.
    """

    sigma: np.ndarray
    family: np.ndarray
    change: np.ndarray
    cat_begin: np.ndarray
    cat_value: np.ndarray
    cat_weight: np.ndarray

    @property
    def categorical(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(change, cat_begin, cat_value, cat_weight)``: the kernels' categorical arguments."""
        return self.change, self.cat_begin, self.cat_value, self.cat_weight

    def additive(self) -> np.ndarray:
        """Mask of the features with additive noise."""
        return self.family < _noise.CATEGORICAL_CODE


def _feature_label(j: int, ensemble: Any) -> str:
    """How an error names model feature ``j``: its name when the model has names."""
    names = getattr(ensemble, "feature_names", None)
    return repr(names[j]) if names else f"#{j}"


def as_noise(noise: Any, sigma: Any, ensemble: Any,
             order: Optional[ColumnOrder] = None) -> KernelNoise:
    """The perturbation of every feature, validated, for the kernels (:class:`KernelNoise`).

    ``noise`` is a family name, a ``pgexact.noise`` object, or a sequence with one of those (or
    None, unperturbed) per feature. ``sigma`` is the metric's ``sigma`` argument (positive float
    or (d,) array). A noise object that carries its own ``sigma`` overrides the argument for the
    features it applies to; ``sigma=None`` is accepted when the objects cover every additive
    feature. A feature the model splits on categorically gets ``noise.categorical()`` when the
    noise is one family for all features; in a per-feature list it must be categorical or None.

    Parameters
    ----------
    noise, sigma
        The user's arguments (per-feature values follow ``X``'s columns; a named ``sigma``
        Series is matched by name).
    ensemble : TreeEnsemble or int
        The model: its feature count, its categorical features and their categories. An int
        is a feature count for a model with no categorical splits.
    order : ColumnOrder, optional
        X's columns -> the model's; the result is in the model's order.
    """
    d = int(ensemble) if isinstance(ensemble, numbers.Integral) else int(ensemble.n_features)
    split_on_categories = set() if isinstance(ensemble, numbers.Integral) else \
        set(getattr(ensemble, "categorical_features", []))
    if order is not None:
        sigma = order.by_name(sigma, "sigma")
    per_feature = isinstance(noise, (list, tuple, np.ndarray))
    if per_feature:
        items = list(noise)
        if len(items) != d:
            raise ValueError(f"noise: expected one family per feature ({d}), got {len(items)}")
        families = [_noise_item(item, j) for j, item in enumerate(items)]
        own = np.full(d, np.nan)
        for j, fam in enumerate(families):
            s = fam.sigma if isinstance(fam, _noise.NoiseFamily) else None
            if s is None:
                continue
            if not isinstance(s, float):
                raise ValueError(f"noise[{j}]: an object inside a per-feature list must carry a scalar sigma")
            own[j] = s
    else:
        fam = _noise_item(noise, None)
        families = [fam] * d
        own = np.full(d, np.nan)
        s = fam.sigma if isinstance(fam, _noise.NoiseFamily) else None
        if s is not None:
            arr = np.asarray(s, dtype=np.float64)
            if arr.ndim == 0:
                own[:] = float(arr)
            elif arr.shape == (d,):
                own[:] = arr
            else:
                raise ValueError(f"noise: the object's sigma has shape {arr.shape}; expected a scalar or ({d},)")
    # per-feature items -> the model's order; the model's categorical features by model index
    positions = np.arange(d) if order is None else order.columns(np.arange(d))
    model_items = [families[int(p)] for p in positions]
    for j in sorted(split_on_categories):
        if isinstance(model_items[j], _noise.NoiseFamily):
            if per_feature:
                p = int(positions[j])
                raise ValueError(
                    f"noise[{p}]: the model splits on feature {_feature_label(j, ensemble)} by category, "
                    "so additive noise on its codes has no meaning; pass pgexact.noise.categorical(p) "
                    "for it (or None to leave it unperturbed)")
            model_items[j] = _noise.Categorical()  # the documented default for categorical splits
    additive = np.array([isinstance(f, _noise.NoiseFamily) for f in families], dtype=bool)
    covered = ~np.isnan(own) | ~additive
    if sigma is None and bool(np.all(covered)):
        sig = np.where(np.isnan(own), 1.0, own)
    else:
        if sigma is None:
            raise TypeError(
                f"sigma: expected a positive float or an array of {d} (None is only accepted when the "
                "noise objects carry a sigma for every feature)"
            )
        sig = as_sigma(sigma, d).copy()
        has_own = ~np.isnan(own)
        sig[has_own] = own[has_own]
    if order is not None:
        sig = order.columns(sig)
    sig = np.ascontiguousarray(sig, dtype=np.float64)
    codes = np.empty(d, dtype=np.uint8)
    change = np.zeros(d)
    begin = np.zeros(d + 1, dtype=np.int64)
    values: List[np.ndarray] = []
    weights: List[np.ndarray] = []
    for j, item in enumerate(model_items):
        if item is None:
            codes[j] = _noise.FIXED_CODE
        elif isinstance(item, _noise.Categorical):
            where = f"noise[{int(positions[j])}]" if per_feature else "noise"
            default = ensemble.split_categories(j) if hasattr(ensemble, "split_categories") else None
            cats, w = item.resolved(default, where, f"feature {_feature_label(j, ensemble)}")
            codes[j], change[j] = _noise.CATEGORICAL_CODE, item.p
            values.append(cats)
            weights.append(w)
        else:
            codes[j] = item.code
        if codes[j] >= _noise.CATEGORICAL_CODE:
            sig[j] = 1.0  # unused by the kernels
        begin[j + 1] = begin[j] + (values[-1].size if codes[j] == _noise.CATEGORICAL_CODE else 0)
    categorical = np.flatnonzero(codes == _noise.CATEGORICAL_CODE)
    if categorical.size and not isinstance(ensemble, numbers.Integral) and \
            (d > MAX_PAIR_FEATURES or int(getattr(ensemble, "max_depth", 0)) > MAX_PAIR_DEPTH):
        labels = ", ".join(_feature_label(int(j), ensemble) for j in categorical[:5])
        raise ValueError(
            f"noise: exact categorical perturbation needs a model of at most {MAX_PAIR_FEATURES} features "
            f"and depth {MAX_PAIR_DEPTH} (the leaf-pair kernel); this one has {d} features and depth "
            f"{int(getattr(ensemble, 'max_depth', 0))}. Pass None for feature(s) {labels} in a per-feature "
            "noise list to leave them unperturbed, or estimate with pgexact.mc")
    cat_value = np.ascontiguousarray(np.concatenate(values) if values else np.zeros(0))
    cat_weight = np.ascontiguousarray(np.concatenate(weights) if weights else np.zeros(0))
    return KernelNoise(sig, codes, change, begin, cat_value, cat_weight)


def _feature_index(f: Any, ensemble: "Columns", name: str, order: Optional[ColumnOrder] = None) -> int:
    """The model's index of one feature: a position in ``X`` or a name."""
    d = ensemble.n_features
    if isinstance(f, (bool, np.bool_)):
        raise TypeError(f"{name}: expected feature indices or names, got a boolean {f!r}")
    if isinstance(f, numbers.Integral):
        j = int(f)
        if not 0 <= j < d:
            raise ValueError(f"{name}: feature index {j} is out of range; pass positions 0..{d - 1} of X's "
                             "columns (negative positions are not accepted) or feature names")
        return j if order is None else int(order.ranking(np.array([j]))[0])
    if isinstance(f, str):
        names = ensemble.feature_names
        if names is not None and f in names:
            return names.index(f)
        p = None if order is None else order.position(f)  # X's own name (LightGBM's spaces)
        if order is not None and p is not None:
            return int(order.ranking(np.array([p]))[0])
        if names is None:
            raise ValueError(f"{name}: feature name {f!r} given but the model has no feature names; "
                             "pass positions of X's columns")
        raise ValueError(f"{name}: unknown feature name {f!r}; the model's features are {names[:8]}"
                         f"{'...' if len(names) > 8 else ''}")
    raise TypeError(f"{name}: expected feature indices or names, got {type(f).__name__}")


def as_feature_mask(features: Any, ensemble: "Columns", n_rows: int,
                    order: Optional[ColumnOrder] = None) -> np.ndarray:
    """A (d,) or (n, d) uint8 mask in the model's order from positions in ``X``, names or a
    boolean mask over ``X``'s columns (see :mod:`pgexact._columns`)."""
    d = ensemble.n_features
    if features is None:
        raise TypeError("features: expected feature indices, names or a boolean mask, got None")
    if isinstance(features, (str, numbers.Integral)) and not isinstance(features, (bool, np.bool_)):
        features = [features]
    arr = np.asarray(features) if not isinstance(features, (set, frozenset)) else None
    if arr is not None and arr.dtype == np.bool_:
        if arr.shape == (d,) or arr.shape == (n_rows, d):
            mask = np.ascontiguousarray(arr, dtype=np.uint8)
            return mask if order is None else order.columns(mask)
        raise ValueError(f"features: a boolean mask must have shape ({d},) or ({n_rows}, {d}), got {arr.shape}")
    items = list(features) if arr is None or arr.ndim == 1 else None
    if items is None:
        raise ValueError("features: expected a list of indices or names, or a boolean mask")
    mask = np.zeros(d, dtype=np.uint8)
    for f in items:
        j = _feature_index(f, ensemble, "features", order)
        if mask[j]:
            raise ValueError(f"features: feature {f!r} is listed twice")
        mask[j] = 1
    return mask


def as_ranking(ranking: Any, d: int, n_rows: int, name: str = "ranking") -> np.ndarray:
    """A (d,) or (n, d) int64 array whose every row is a permutation of 0..d-1."""
    try:
        arr = np.asarray(ranking)
    except Exception:
        raise TypeError(f"{name}: expected an integer array") from None
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise TypeError(f"{name}: expected integer positions of X's columns, got dtype {arr.dtype}; "
                        "pass an integer array (attributions go in attributions=)")
    if arr.shape not in ((d,), (n_rows, d)):
        raise ValueError(f"{name}: expected shape ({d},) or ({n_rows}, {d}), got {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    rows = arr.reshape(-1, d)
    if rows.size and not np.array_equal(np.sort(rows, axis=1), np.broadcast_to(np.arange(d), rows.shape)):
        bad = int(np.nonzero(np.any(np.sort(rows, axis=1) != np.arange(d), axis=1))[0][0])
        raise ValueError(f"{name}: row {bad} is not a permutation of 0..{d - 1}")
    return arr


def as_attributions(attributions: Any, d: int, n_rows: int,
                    order: Optional[ColumnOrder] = None) -> np.ndarray:
    """Finite (n, d) float64 attributions; a (d,) vector applies to every row.

    Columns follow ``X``'s (a DataFrame is matched by column name); with ``order`` the result
    is in the model's order (see :mod:`pgexact._columns`).
    """
    if hasattr(attributions, "values") and hasattr(attributions, "base_values"):
        attributions = attributions.values  # a shap.Explanation
    if order is not None:
        attributions = order.by_name(attributions, "attributions")
    elif _is_dataframe(attributions):
        attributions = attributions.to_numpy()
    try:
        arr = np.asarray(attributions, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("attributions: expected a numeric array") from None
    if arr.shape == (d,):
        arr = np.broadcast_to(arr, (n_rows, d))
    if arr.shape != (n_rows, d):
        raise ValueError(f"attributions: expected shape ({n_rows}, {d}), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("attributions: values must be finite (no NaN or inf)")
    arr = np.ascontiguousarray(arr)
    return arr if order is None else order.columns(arr)


def _x_order_ranking(attributions: Any, d: int, n_rows: int,
                     order: Optional[ColumnOrder]) -> np.ndarray:
    arr = as_attributions(attributions, d, n_rows, None if order is None else order.in_x_order())
    # A stable sort of -|a| keeps equal magnitudes in index order.
    return np.ascontiguousarray(np.argsort(-np.abs(arr), axis=1, kind="stable"), dtype=np.int64)


def ranking_from_attributions(attributions: Any, d: int, n_rows: int,
                              order: Optional[ColumnOrder] = None) -> np.ndarray:
    """Most important first: descending |attribution|, ties to the lower position in ``X``.

    With ``order``, the columns follow ``X`` and the ranking holds the model's indices.
    """
    ranking = _x_order_ranking(attributions, d, n_rows, order)
    return ranking if order is None else order.ranking(ranking)


# More threads than this are never requested from the core (which also caps at the row count and
# at four per core): results do not depend on the number of threads.
MAX_N_JOBS = 1 << 16


def as_n_jobs(n_jobs: Any) -> int:
    """OpenMP threads: None or -1 for all cores (0 for the core), else a positive integer."""
    if n_jobs is None:
        return 0
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(f"n_jobs: expected None, -1 or a positive integer, got {n_jobs!r}")
    n = int(n_jobs)
    if n == -1:
        return 0
    if n < 1:
        raise ValueError(f"n_jobs: expected None, -1 or a positive integer, got {n}")
    return min(n, MAX_N_JOBS)


def as_output(output: Optional[Union[int, np.integer]], n_outputs: int, what: str) -> int:
    """Which output column of a model; required when it has several."""
    if output is None:
        if n_outputs > 1:
            raise ValueError(
                f"output: this {what} has {n_outputs} outputs; "
                f"pass output=k with k in 0..{n_outputs - 1}, or output='all' "
                "for every output"
            )
        return 0
    if isinstance(output, (bool, np.bool_)) or not isinstance(output, numbers.Integral):
        raise TypeError(f"output: expected an integer, got {output!r}")
    k = int(output)
    if not 0 <= k < n_outputs:
        raise ValueError(f"output: {k} is out of range; this {what} has {n_outputs} output(s)")
    return k


# -- explainer arguments (pgexact.Explainer / Explanation) -------------------------------------
def as_choice(value: Any, choices: Tuple[str, ...], name: str) -> str:
    """One of a fixed set of option names (case-insensitive), returned in lower case."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected one of {', '.join(map(repr, choices))}, got {value!r}")
    key = value.lower()
    if key not in choices:
        raise ValueError(f"{name}: unknown value {value!r}; expected one of {', '.join(map(repr, choices))}")
    return key


def as_importance_scheme(scheme: Any, d: int) -> Tuple[str, int]:
    """Global-importance scheme: ``"geom"``, ``"gain"`` or ``"top<K>"`` with 1 <= K <= d.

    Returns ``(kind, K)`` with kind ``"geom"``, ``"gain"`` or ``"top"`` (K is 0 unless "top").
    """
    expected = "'geom', 'gain', 'top1', 'top2', 'top3' (or 'top<K>' with K <= the number of features)"
    if not isinstance(scheme, str):
        raise TypeError(f"scheme: expected {expected}, got {scheme!r}")
    key = scheme.lower()
    if key in ("geom", "gain"):
        return key, 0
    if key.startswith("top") and key[3:].isdigit():
        k = int(key[3:])
        if not 1 <= k <= d:
            raise ValueError(f"scheme: {scheme!r} needs 1 <= K <= {d} (the number of features)")
        return "top", k
    raise ValueError(f"scheme: unknown scheme {scheme!r}; expected {expected}")


def as_positive_int(value: Any, name: str, allow_none: bool = False) -> Optional[int]:
    """A positive integer (or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected a positive integer{' or None' if allow_none else ''}, got {value!r}")
    if int(value) < 1:
        raise ValueError(f"{name}: expected a positive integer, got {int(value)}")
    return int(value)


def as_row_index(index: Any, n_rows: int) -> Union[int, slice, np.ndarray]:
    """Rows to select: an integer, a slice, integer positions or a boolean mask of length n_rows.

    An integer is returned as a non-negative int (out of range: ``IndexError``); positions and
    masks as an int64 array; slices unchanged.
    """
    if isinstance(index, tuple):
        raise TypeError("index: only rows can be selected (ex[i], ex[a:b], ex[[i, j]] or a boolean mask); "
                        "select features with the returned arrays or with to_shap()")
    if isinstance(index, slice):
        return index
    if isinstance(index, (bool, np.bool_)):
        raise TypeError(f"index: expected an integer, a slice, positions or a boolean mask, got {index!r}")
    if isinstance(index, numbers.Integral):
        i = int(index)
        if not -n_rows <= i < n_rows:
            raise IndexError(f"index: row {i} is out of range for {n_rows} rows")
        return i % n_rows
    if isinstance(index, (str, bytes)) or index is None:
        raise TypeError(f"index: expected an integer, a slice, positions or a boolean mask, got {index!r}")
    try:
        arr = np.asarray(index)
    except Exception:
        raise TypeError(f"index: expected an integer, a slice, positions or a boolean mask, got "
                        f"{type(index).__name__}") from None
    if arr.ndim == 0:
        raise TypeError(f"index: expected an integer, a slice, positions or a boolean mask, got {index!r}")
    if arr.ndim != 1:
        raise ValueError(f"index: expected a 1-D array of positions or a boolean mask, got {arr.ndim}-D")
    if arr.dtype == np.bool_:
        if arr.shape != (n_rows,):
            raise ValueError(f"index: a boolean mask must have length {n_rows}, got {arr.shape[0]}")
        return np.flatnonzero(arr)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"index: expected integer positions or a boolean mask, got dtype {arr.dtype}")
    if np.any((arr < -n_rows) | (arr >= n_rows)):
        bad = int(arr[(arr < -n_rows) | (arr >= n_rows)][0])
        raise IndexError(f"index: row {bad} is out of range for {n_rows} rows")
    return np.ascontiguousarray(arr % n_rows, dtype=np.int64) if n_rows else arr.astype(np.int64)


# -- evaluation arguments (pgexact.metrics / pgexact.openxai) ----------------------------------
def as_rankings(rankings: Any, name: str = "rankings") -> np.ndarray:
    """(n, d) int64 rankings, every row a permutation of 0..d-1; a (d,) vector is one row."""
    if hasattr(rankings, "ranking") and hasattr(rankings, "curve"):
        rankings = rankings.ranking  # a pgexact.Explanation
    arr = np.asarray(rankings)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise ValueError(f"{name}: expected an (n, d) array of rankings with d >= 1, got shape {arr.shape}")
    return as_ranking(arr, arr.shape[1], arr.shape[0], name).reshape(arr.shape)


def as_sigma_list(values: Any, name: str) -> Tuple[float, ...]:
    """One or more positive finite scalar noise levels, as a tuple of floats."""
    if isinstance(values, (str, bytes, bool, np.bool_)) or values is None:
        raise TypeError(f"{name}: expected a positive float or a sequence of them, got {values!r}")
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a positive float or a sequence of them") from None
    if np.asarray(values).dtype == np.bool_:
        raise TypeError(f"{name}: expected positive floats, got booleans")
    if arr.ndim > 1:
        raise ValueError(f"{name}: expected a scalar or a 1-D sequence of scalars")
    arr = arr.reshape(-1)
    if arr.size == 0:
        raise ValueError(f"{name}: expected at least one value")
    if not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError(f"{name}: every value must be positive and finite, got {arr.tolist()}")
    return tuple(float(v) for v in arr)


def as_same_shape_pair(a: Any, b: Any, names: Tuple[str, str]) -> Tuple[np.ndarray, np.ndarray]:
    """Two finite float64 arrays of the same shape (``names`` label them in errors)."""
    out = []
    for value, name in zip((a, b), names):
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: expected a numeric array") from None
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: values must be finite (no NaN or inf)")
        out.append(arr)
    if out[0].shape != out[1].shape:
        raise ValueError(f"{names[1]}: expected the shape of {names[0]} {out[0].shape}, got {out[1].shape}")
    return out[0], out[1]


def as_top_k(k: Any, d: int) -> int:
    """OpenXAI's ``k``: a fraction in (0, 1] -> ceil(k * d), or an integer in 1..d."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Real):
        raise TypeError(f"k: expected a fraction in (0, 1] or an integer in 1..{d}, got {k!r}")
    if isinstance(k, numbers.Integral):
        if not 1 <= int(k) <= d:
            raise ValueError(f"k: expected an integer in 1..{d} (the number of features), got {int(k)}")
        return int(k)
    x = float(k)
    if not (np.isfinite(x) and 0.0 < x <= 1.0):
        raise ValueError(f"k: expected a fraction in (0, 1] or an integer in 1..{d}, got {k!r}")
    # ceil(k * d), robust to k * d landing a rounding error above an integer (0.3 * 10)
    K = int(np.ceil(x * d - 1e-9 * max(1.0, x * d)))
    return min(max(K, 1), d)


def as_seed(seed: Any) -> Optional[int]:
    """A random seed: None (fresh draws) or a non-negative integer."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed: expected None or a non-negative integer, got {seed!r}")
    if int(seed) < 0:
        raise ValueError(f"seed: expected None or a non-negative integer, got {int(seed)}")
    return int(seed)
