"""Noise families for the perturbation ``x'_i = x_i + delta_i``.

``sigma`` is always the **standard deviation** of ``delta_i``:

========  ==========================================  =================================
family    distribution of ``delta``                   parameter from ``sigma``
========  ==========================================  =================================
Normal    ``N(0, sigma^2)``                            standard deviation ``sigma``
Uniform   ``U(-a, a)``                                 half-width ``a = sigma * sqrt(3)``
Laplace   ``Laplace(0, b)``                            scale ``b = sigma / sqrt(2)``
========  ==========================================  =================================

Where a noise is accepted (``noise=`` of :func:`pgexact.pg2` and friends):

* a name, ``"normal"``, ``"uniform"`` or ``"laplace"``, for every feature;
* one of these objects, e.g. ``pgexact.noise.Laplace()`` or ``pgexact.noise.Uniform(sigma=0.5)``;
* a list with one name or object per feature (per-feature families), where ``None`` leaves
  that feature unperturbed (``x'_j = x_j``; numeric and categorical features alike).

**Categorical features.** :func:`categorical` (``Categorical``) perturbs a feature by category
instead of by additive noise: ``x'_j`` keeps ``x_j`` with probability ``1 - p``, otherwise it
takes a value drawn from ``categories`` with probabilities ``weights``. PG² still factorises over
features (the probability that ``x'_j`` falls in a split's category set is a sum over the set),
so the exact kernels stay exact. Defaults:

* ``categories=None``: the categories the model's splits name on that feature (for
  HistGradientBoosting, the categories its encoder learned), uniformly unless ``weights`` says
  otherwise. Pass the frequencies of a background sample as ``weights`` to draw like the data.
* A feature the model splits on categorically gets ``categorical(DEFAULT_P)`` (``p = 0.3``,
  uniform over its split categories) when the noise is given as one family for all features:
  additive noise on category codes has no meaning, and pgexact never applies it. In a
  per-feature list such a feature must be given ``categorical(...)`` or ``None``.
* Missing values (NaN) stay missing under every perturbation.

How ``sigma`` combines: the ``sigma`` argument of the metric gives every feature its standard
deviation; a noise object created **with** its own ``sigma`` overrides it for the features it
applies to (an object given for all features may carry a scalar or one value per feature; an
object inside a per-feature list carries a scalar). An object without ``sigma`` uses the
``sigma`` argument. ``sigma=None`` is accepted when the noise objects give every feature its own.

Only these three additive families and the categorical perturbation are supported by the
exact kernels, which evaluate the probabilities in C++. Arbitrary user CDFs are not supported:
passing any other object raises ``TypeError``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, List, Optional, Tuple, cast

import numpy as np

__all__ = ["Normal", "Uniform", "Laplace", "NoiseFamily", "Categorical", "categorical", "DEFAULT_P",
           "Sampler", "scaled"]

_SQRT3 = math.sqrt(3.0)
_SQRT2 = math.sqrt(2.0)
_SQRT_HALF = math.sqrt(0.5)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _check_sigma(sigma: Any, name: str = "sigma") -> Optional[np.ndarray]:
    if sigma is None:
        return None
    if isinstance(sigma, (str, bytes, bool, np.bool_)):
        raise TypeError(f"{name}: expected a positive float or a 1-D array of them, got {sigma!r}")
    try:
        arr = np.array(sigma, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a positive float or a 1-D array of them") from None
    if arr.ndim > 1:
        raise ValueError(f"{name}: expected a scalar or a 1-D array, got shape {arr.shape}")
    if arr.size == 0 or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError(f"{name}: every value must be positive and finite")
    arr.setflags(write=False)
    return arr


class NoiseFamily:
    """Base class of the supported noise families; ``sigma`` is the standard deviation."""

    name: str = ""
    code: int = -1  # the family code the C++ kernels use

    __slots__ = ("_sigma",)

    def __init__(self, sigma: Any = None) -> None:
        self._sigma = _check_sigma(sigma)

    @property
    def sigma(self) -> Optional[Any]:
        """The standard deviation carried by this object (float or array), or None."""
        if self._sigma is None:
            return None
        return float(self._sigma) if self._sigma.ndim == 0 else self._sigma

    def _scale(self, sigma: Any) -> np.ndarray:
        s = _check_sigma(sigma) if sigma is not None else self._sigma
        if s is None:
            raise ValueError(f"sigma: {type(self).__name__}() has no sigma of its own; pass sigma=")
        return s

    def cdf(self, u: Any, sigma: Any = None) -> np.ndarray:
        """``P(delta <= u)`` for ``delta`` of this family with standard deviation ``sigma``.

        ``u`` and ``sigma`` broadcast together; ``sigma`` defaults to the object's own.
        """
        u = np.asarray(u, dtype=np.float64)
        s = self._scale(sigma)
        z = u / s
        return np.asarray(self._unit_cdf(z), dtype=np.float64)

    def sf(self, u: Any, sigma: Any = None) -> np.ndarray:
        """``P(delta > u)``, computed directly (accurate in the upper tail)."""
        u = np.asarray(u, dtype=np.float64)
        s = self._scale(sigma)
        return np.asarray(self._unit_cdf(-(u / s)), dtype=np.float64)  # symmetric families

    def sample(self, rng: np.random.Generator, shape: Any) -> np.ndarray:
        """Draws with standard deviation 1 (the Monte Carlo estimators multiply by sigma).

        Parameters
        ----------
        rng : numpy.random.Generator
            The random stream.
        shape : int or tuple of int
            Shape of the draws.

        Returns
        -------
        numpy.ndarray of float64
            Unit-variance draws of this family: ``rng.standard_normal`` for Normal, the inverse
            CDF (:meth:`from_uniform`) of ``rng.random`` draws for the others.
        """
        return self.from_uniform(rng.random(shape))

    @staticmethod
    def from_uniform(u: np.ndarray) -> np.ndarray:
        """Unit-variance draws of this family from uniforms ``u`` in ``[0, 1)`` (inverse CDF)."""
        raise NotImplementedError

    def _unit_cdf(self, z: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        if self._sigma is None:
            return f"pgexact.noise.{type(self).__name__}()"
        s = self.sigma
        return f"pgexact.noise.{type(self).__name__}(sigma={s if isinstance(s, float) else list(self._sigma)!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        a, b = self._sigma, other._sigma
        if a is None or b is None:
            return a is None and b is None
        return a.shape == b.shape and bool(np.all(a == b))

    def __hash__(self) -> int:
        return hash((type(self).__name__, None if self._sigma is None else self._sigma.tobytes()))


class Normal(NoiseFamily):
    """Gaussian noise ``N(0, sigma^2)``."""

    name = "normal"
    code = 0
    __slots__ = ()

    def _unit_cdf(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        return 0.5 * np.asarray(_erfc(-z / _SQRT2), dtype=np.float64)

    def sample(self, rng: np.random.Generator, shape: Any) -> np.ndarray:
        return cast(np.ndarray, rng.standard_normal(shape))


class Uniform(NoiseFamily):
    """Uniform noise on ``(-a, a)`` with ``a = sigma * sqrt(3)``."""

    name = "uniform"
    code = 1
    __slots__ = ()

    def _unit_cdf(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        return np.clip((z + _SQRT3) / (2.0 * _SQRT3), 0.0, 1.0)

    @staticmethod
    def from_uniform(u: np.ndarray) -> np.ndarray:
        return _SQRT3 * (2.0 * u - 1.0)


class Laplace(NoiseFamily):
    """Laplace noise with scale ``b = sigma / sqrt(2)``."""

    name = "laplace"
    code = 2
    __slots__ = ()

    def _unit_cdf(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        t = z * _SQRT2  # z / b with b = 1/sqrt(2)
        with np.errstate(over="ignore"):
            return np.where(t < 0, 0.5 * np.exp(np.minimum(t, 0.0)), 1.0 - 0.5 * np.exp(-np.maximum(t, 0.0)))

    @staticmethod
    def from_uniform(u: np.ndarray) -> np.ndarray:
        v = u - 0.5  # in [-0.5, 0.5)
        tail = np.maximum(1.0 - 2.0 * np.abs(v), np.finfo(np.float64).tiny)
        return -_SQRT_HALF * np.sign(v) * np.log(tail)


FAMILIES = {"normal": Normal, "uniform": Uniform, "laplace": Laplace}

#: family code of a categorical feature and of an unperturbed one (``None``), as the kernels read them
CATEGORICAL_CODE = 3
FIXED_CODE = 4
#: the change probability a categorically split feature gets when no noise names it
DEFAULT_P = 0.3
#: categories are integer codes in [0, 2^24): the range XGBoost and HistGradientBoosting accept
MAX_CATEGORY = 1 << 24


class Categorical:
    """Categorical perturbation: keep ``x_j`` with probability ``1 - p``, else draw a category.

    Parameters
    ----------
    p : float
        Probability in ``(0, 1]`` that ``x'_j`` is drawn anew (it may draw ``x_j`` itself).
    categories : array_like of int, optional
        The integer codes drawn from, distinct, in ``[0, 2^24)``. None: the categories the
        model's splits name on the feature (see the module docstring).
    weights : array_like of float, optional
        Non-negative weights of ``categories`` (normalised to sum to 1), e.g. the category
        frequencies of a background sample. None: uniform. Requires ``categories``.

    Notes
    -----
    Missing values stay missing. A value of ``x_j`` outside ``categories`` is kept with
    probability ``1 - p`` and routed by the library's own rule, like any observed value.
    """

    name = "categorical"
    code = CATEGORICAL_CODE
    __slots__ = ("_p", "_categories", "_weights")

    def __init__(self, p: float = DEFAULT_P, categories: Any = None, weights: Any = None) -> None:
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.number)):
            raise TypeError(f"p: expected a probability in (0, 1], got {p!r}")
        if not (0.0 < float(p) <= 1.0):
            raise ValueError(f"p: expected a probability in (0, 1], got {p!r}")
        self._p = float(p)
        self._categories: Optional[np.ndarray] = None
        self._weights: Optional[np.ndarray] = None
        if categories is not None:
            self._categories = check_categories(categories, "categories")
        if weights is not None:
            if self._categories is None:
                raise ValueError("weights: given without categories; pass categories= with the codes "
                                 "the weights belong to")
            self._weights = check_weights(weights, self._categories.size, "weights")

    @property
    def p(self) -> float:
        """The probability that the category is drawn anew."""
        return self._p

    @property
    def categories(self) -> Optional[np.ndarray]:
        """The categories drawn from, or None for the model's split categories."""
        return self._categories

    @property
    def weights(self) -> Optional[np.ndarray]:
        """Normalised weights of :attr:`categories`, or None for uniform."""
        return self._weights

    def resolved(self, default_categories: Optional[np.ndarray], where: str,
                 feature: str = "this feature") -> "tuple[np.ndarray, np.ndarray]":
        """``(categories, probabilities)`` with the model's categories as the default.

        Parameters
        ----------
        default_categories : numpy.ndarray or None
            The categories the model's splits name on the feature (None or empty: it has none).
        where : str
            The argument named in errors (``"noise"`` or ``"noise[j]"``).
        feature : str
            How errors name the feature.
        """
        cats = self._categories
        if cats is None:
            if default_categories is None or default_categories.size == 0:
                raise ValueError(f"{where}: the model names no categories for {feature} (it has no "
                                 "categorical splits); pass pgexact.noise.categorical(p, categories=[...]) "
                                 "with the codes to draw, or additive noise")
            cats = check_categories(default_categories, where)
        w = self._weights if self._weights is not None else np.full(cats.size, 1.0 / cats.size)
        return cats, w

    def __repr__(self) -> str:
        extra = "" if self._categories is None else f", categories={self._categories.tolist()!r}"
        extra += "" if self._weights is None else f", weights={self._weights.tolist()!r}"
        return f"pgexact.noise.categorical({self._p!r}{extra})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._p == other._p and _same(self._categories, other._categories) and \
            _same(self._weights, other._weights)

    def __hash__(self) -> int:
        return hash(("categorical", self._p,
                     None if self._categories is None else self._categories.tobytes(),
                     None if self._weights is None else self._weights.tobytes()))


def _same(a: Optional[np.ndarray], b: Optional[np.ndarray]) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(np.all(a == b))


def categorical(p: float = DEFAULT_P, categories: Any = None, weights: Any = None) -> Categorical:
    """A categorical perturbation: keep ``x_j`` with probability ``1 - p``, else draw a category.

    Parameters
    ----------
    p : float, default 0.3
        Probability in ``(0, 1]`` that the category is drawn anew.
    categories : array_like of int, optional
        Integer codes to draw from; None: the categories the model's splits name.
    weights : array_like of float, optional
        Their probabilities (normalised); None: uniform.

    Returns
    -------
    Categorical
        Usable wherever ``noise=`` is accepted, for all features or inside a per-feature list.

    Examples
    --------
    >>> codes, counts = np.unique(X_train[:, 2], return_counts=True)
    >>> noise = ["normal", "normal", pgexact.noise.categorical(0.2, codes, counts)]
    """
    return Categorical(p, categories, weights)


def check_categories(values: Any, name: str) -> np.ndarray:
    """Distinct integer category codes in ``[0, 2^24)`` as a read-only float64 array."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected integer category codes") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D sequence of category codes, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)) or np.any(arr < 0) or \
            np.any(arr >= MAX_CATEGORY):
        raise ValueError(f"{name}: categories must be integers in [0, 2^24)")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name}: categories must be distinct")
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


def check_weights(values: Any, size: int, name: str) -> np.ndarray:
    """Non-negative finite weights, one per category, normalised to sum to 1."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected non-negative numbers, one per category") from None
    if arr.shape != (size,):
        raise ValueError(f"{name}: expected {size} weights (one per category), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or not float(arr.sum()) > 0:
        raise ValueError(f"{name}: weights must be finite, non-negative and not all zero")
    normalised: np.ndarray = arr / arr.sum()
    normalised.setflags(write=False)
    return normalised


def get(name: str) -> NoiseFamily:
    """The family object for a name (``"normal"``, ``"uniform"``, ``"laplace"``)."""
    try:
        return FAMILIES[name]()  # exact names: no aliases, no case folding
    except (KeyError, TypeError):
        raise ValueError(f"noise: unknown family {name!r}; expected exactly 'normal', 'uniform' or "
                         "'laplace'") from None


class Sampler:
    """Perturbed copies for Monte Carlo: additive noise per family, categories, fixed features.

    Gaussian features read one ``standard_normal`` stream; uniform and Laplace features read a
    second stream of uniforms, turned into their family by :meth:`NoiseFamily.from_uniform`.
    Features perturbed by category read a third stream, two uniforms per (row, sample,
    feature): the first below ``p`` draws a category, the second picks it by the cumulative
    weights. Every stream is consumed in row-major (row, sample, feature) order, all ``d``
    features included, so the draws do not depend on how the estimators chunk the rows; the
    second and third streams exist only when some feature needs them (so an all-Gaussian run
    reads the very draws it always did).

    Parameters
    ----------
    codes : numpy.ndarray of uint8, shape (d,)
        The family code of each feature (``NoiseFamily.code``, ``CATEGORICAL_CODE``,
        ``FIXED_CODE``).
    seed : int or None
        Seed of the stream; None for fresh draws.
    categorical : tuple, optional
        ``(change, cat_begin, cat_value, cat_weight)`` as ``pgexact._exact._perturbation.KernelNoise``
        holds them; required when a code is ``CATEGORICAL_CODE``.
    """

    def __init__(self, codes: np.ndarray, seed: Optional[int], categorical: Optional[Any] = None) -> None:
        self.rng = np.random.default_rng(seed)
        codes = np.asarray(codes)
        # the families drawn by inverse CDF, in a fixed order (uniform, then Laplace)
        self.by_uniform = [(family, codes == family.code) for family in (Uniform, Laplace)
                           if bool(np.any(codes == family.code))]
        self.aux = (np.random.default_rng(self.rng.integers(2**63)) if self.by_uniform
                    else None)
        self.fixed = np.flatnonzero(codes == FIXED_CODE)
        # per categorical feature: (feature, p, values, cumulative weights)
        self.categories: List[Tuple[int, float, np.ndarray, np.ndarray]] = []
        if bool(np.any(codes == CATEGORICAL_CODE)):
            if categorical is None:
                raise ValueError("noise: categorical features need their categories")
            change, begin, values, weights = categorical
            for j in np.flatnonzero(codes == CATEGORICAL_CODE):
                b, e = int(begin[j]), int(begin[j + 1])
                cumulative = np.cumsum(weights[b:e])
                self.categories.append((int(j), float(change[j]), np.asarray(values[b:e]), cumulative))
        self.by_category = (np.random.default_rng(self.rng.integers(2**63)) if self.categories
                            else None)

    def draw(self, shape: Any) -> np.ndarray:
        """Draws of ``shape`` (last axis: the d features), unit variance per feature."""
        z = self.rng.standard_normal(shape)
        if self.aux is not None:
            u = self.aux.random(shape)
            for family, mask in self.by_uniform:
                z[..., mask] = family.from_uniform(u[..., mask])
        return cast(np.ndarray, z)

    def perturb(self, x: np.ndarray, n_samples: int, sigma: np.ndarray) -> np.ndarray:
        """``n_samples`` perturbed copies of every row of ``x`` (n, d): shape (n, n_samples, d).

        Additive features get ``x + sigma * z``; a categorical feature keeps ``x_j`` with
        probability ``1 - p`` and otherwise takes a category drawn by its weights; fixed
        features keep ``x_j``. Missing values stay missing.
        """
        n, d = x.shape
        xs = x[:, None, :] + self.draw((n, n_samples, d)) * sigma
        if self.by_category is not None:
            u = self.by_category.random((n, n_samples, d, 2))
            for j, p, values, cumulative in self.categories:
                pick = np.minimum(np.searchsorted(cumulative, u[:, :, j, 1] * cumulative[-1], side="right"),
                                  values.size - 1)
                drawn = (u[:, :, j, 0] < p) & ~np.isnan(x[:, None, j])
                xs[:, :, j] = np.where(drawn, values[pick], x[:, None, j])
        for k in self.fixed:
            xs[:, :, k] = x[:, None, k]
        return cast(np.ndarray, xs)


def scaled(X_background: Any, scale: float = 0.3) -> Any:
    """Per-feature ``sigma``: ``scale`` standard deviations of each feature in a background sample.

    >>> sigma = pgexact.noise.scaled(X_train, 0.3)
    >>> pgexact.pgi2(model, X_test, sigma=sigma)

    Parameters
    ----------
    X_background : array_like or DataFrame, shape (m, d)
        Rows that show each feature's spread (the training data, say); NaN is ignored.
    scale : float, default 0.3
        How many standard deviations of noise each feature gets.

    Returns
    -------
    numpy.ndarray or pandas.Series of shape (d,)
        ``scale * std`` per feature (population standard deviation, NaN ignored). A DataFrame
        gives a Series indexed by its column names, which the metrics match by name
        (``docs/columns.md``); an array gives an array in its column order.
    """
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (int, float, np.number)):
        raise TypeError(f"scale: expected a positive float, got {scale!r}")
    if not (math.isfinite(float(scale)) and float(scale) > 0):
        raise ValueError(f"scale: expected a positive finite float, got {scale!r}")
    is_frame = hasattr(X_background, "columns") and hasattr(X_background, "to_numpy")
    try:
        data = (X_background.to_numpy(dtype=np.float64, na_value=np.nan) if is_frame
                else np.asarray(X_background, dtype=np.float64))
    except (TypeError, ValueError):
        raise TypeError("X_background: expected a 2-D numeric array or DataFrame") from None
    if data.ndim != 2 or data.shape[0] < 2:
        raise ValueError(f"X_background: expected a 2-D array with at least 2 rows, got shape {data.shape}")
    counts = np.sum(~np.isnan(data), axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: reported below
        std = np.nanstd(data, axis=0)
    flat = np.nonzero(~(np.isfinite(std) & (std > 0)) | (counts < 2))[0]
    if flat.size:
        labels = [str(X_background.columns[j]) if is_frame else str(j) for j in flat[:5]]
        raise ValueError(f"X_background: no spread in column(s) {labels}; pass more varied rows, or "
                         "give those features a sigma of your own")
    sigma = float(scale) * std
    if is_frame:
        import pandas as pd

        return pd.Series(sigma, index=X_background.columns, name="sigma")
    return sigma
