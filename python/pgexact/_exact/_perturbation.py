"""The perturbation: ``sigma`` and ``noise`` checked once into what the C++ kernels read.

:func:`as_noise` turns the user's ``noise`` / ``sigma`` into a :class:`KernelNoise`, in the
model's feature order, giving the model's categorically split features their default
``noise.categorical()``; :func:`warn_large_sigma` is the one-time warning about a sigma that
dwarfs the data.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, List, NamedTuple, Optional, Tuple

import numpy as np

from .. import noise as _noise
from .._data._columns import ColumnOrder

__all__ = ["LARGE_SIGMA", "MAX_PAIR_DEPTH", "MAX_PAIR_FEATURES", "NOISE_FAMILIES", "KernelNoise",
           "as_noise", "as_sigma", "warn_large_sigma"]


#: where the leaf-pair kernel applies, the only exact kernel for categorical noise
#: (``pairs_apply`` in ``cpp/src/exact/pair_kernel.cpp``)
MAX_PAIR_FEATURES = 64
MAX_PAIR_DEPTH = 256

#: family name -> the code the C++ kernels use; the codes live on the noise classes
#: (``Normal.code`` ...), and :mod:`pgexact._exact._kernels` checks them against the C++ enum
NOISE_FAMILIES = {name: cls.code for name, cls in _noise.FAMILIES.items()}


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
    warnings.warn(
        f"sigma: {sigma[j]:.3g} is {sigma[j] / std[j]:.1f} standard deviations of feature {label} in X "
        f"({large.size} feature(s) above {LARGE_SIGMA:g}); the perturbation may dwarf the data. "
        "Consider sigma=pgexact.noise.scaled(X_background, 0.3). Shown once per session.",
        UserWarning, stacklevel=4)


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
