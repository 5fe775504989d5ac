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
* a list with one name or object per feature (per-feature families).

How ``sigma`` combines: the ``sigma`` argument of the metric gives every feature its standard
deviation; a noise object created **with** its own ``sigma`` overrides it for the features it
applies to (an object given for all features may carry a scalar or one value per feature; an
object inside a per-feature list carries a scalar). An object without ``sigma`` uses the
``sigma`` argument. ``sigma=None`` is accepted when the noise objects give every feature its own.

Only these three families are supported by the exact kernels, which evaluate the CDF in C++.
Arbitrary user CDFs are not supported: passing any other object raises ``TypeError``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional, cast

import numpy as np

__all__ = ["Normal", "Uniform", "Laplace", "NoiseFamily", "Sampler", "scaled"]

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


def get(name: str) -> NoiseFamily:
    """The family object for a name (``"normal"``, ``"uniform"``, ``"laplace"``)."""
    try:
        return FAMILIES[name]()  # exact names: no aliases, no case folding
    except (KeyError, TypeError):
        raise ValueError(f"noise: unknown family {name!r}; expected exactly 'normal', 'uniform' or "
                         "'laplace'") from None


class Sampler:
    """Unit-variance noise for Monte Carlo, one family per feature (sigma scales the draws).

    Gaussian features read one ``standard_normal`` stream; uniform and Laplace features read a
    second stream of uniforms, turned into their family by :meth:`NoiseFamily.from_uniform`.
    Every stream is consumed in row-major (row, sample, feature) order, so the draws do not
    depend on how the estimators chunk the rows.

    Parameters
    ----------
    codes : numpy.ndarray of uint8, shape (d,)
        The family code of each feature (``NoiseFamily.code``).
    seed : int or None
        Seed of the stream; None for fresh draws.
    """

    def __init__(self, codes: np.ndarray, seed: Optional[int]) -> None:
        self.rng = np.random.default_rng(seed)
        codes = np.asarray(codes)
        # the families drawn by inverse CDF, in a fixed order (uniform, then Laplace)
        self.by_uniform = [(family, codes == family.code) for family in (Uniform, Laplace)
                           if bool(np.any(codes == family.code))]
        self.aux = (np.random.default_rng(self.rng.integers(2**63)) if self.by_uniform
                    else None)

    def draw(self, shape: Any) -> np.ndarray:
        """Draws of ``shape`` (last axis: the d features), unit variance per feature."""
        z = self.rng.standard_normal(shape)
        if self.aux is not None:
            u = self.aux.random(shape)
            for family, mask in self.by_uniform:
                z[..., mask] = family.from_uniform(u[..., mask])
        return cast(np.ndarray, z)


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
