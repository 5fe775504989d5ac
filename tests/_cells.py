"""Library-agnostic brute force for PG² (|S| <= 2) and edge-case test rows.

Nothing here imports pgexact. The model is only ever evaluated through a callable that uses the
library's own prediction (or its own leaf routing); the split boundaries are read by the test
files from each library's own tree dump.

Brute force: along each perturbed feature the model is piecewise constant between consecutive
switching points ("boundaries"). Enumerate the cells of the product grid, evaluate the model at
one interior point per cell, and sum P(cell) * (f(cell) - f(x))^2, where P(cell) is a product of
CDF differences under the noise family (each difference taken on the side where both CDF values
are small, so tail cells keep their relative precision).

Boundaries: for a double-precision ``x <= t`` library the boundary is t itself; for a library
that casts the input to float32 and tests ``float32(x) <= t``, a real y goes left iff
``y < midpoint(t32, nextafter32(t32, +inf))`` where t32 is the largest float32 <= t.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr

FAMILIES = ("normal", "uniform", "laplace")
SQRT3 = math.sqrt(3.0)
SQRT2 = math.sqrt(2.0)


# ------------------------------------------------------------------------------ boundaries
def float32_le_boundary(t) -> np.ndarray:
    """Switching point of ``float32(y) <= t`` (t float64) on the real line."""
    t = np.asarray(t, dtype=np.float64)
    t32 = t.astype(np.float32)
    too_big = t32.astype(np.float64) > t
    t32 = np.where(too_big, np.nextafter(t32, np.float32(-np.inf)), t32)
    up = np.nextafter(t32, np.float32(np.inf))
    return (t32.astype(np.float64) + up.astype(np.float64)) / 2.0


def float32_below(t) -> np.ndarray:
    """Largest float32 <= t (as float32)."""
    t = np.asarray(t, dtype=np.float64)
    t32 = t.astype(np.float32)
    return np.where(t32.astype(np.float64) > t, np.nextafter(t32, np.float32(-np.inf)), t32)


# ------------------------------------------------------------------------------ noise CDFs
def _lower_upper(family: str, u: np.ndarray, s: float):
    """(P(delta < u), P(delta > u)) for delta with standard deviation s, each side direct."""
    u = np.asarray(u, dtype=np.float64)
    if family == "normal":
        z = u / s
        return ndtr(z), ndtr(-z)
    if family == "uniform":
        a = s * SQRT3
        lo = np.clip((u + a) / (2 * a), 0.0, 1.0)
        up = np.clip((a - u) / (2 * a), 0.0, 1.0)
        return lo, up
    if family == "laplace":
        b = s / SQRT2
        z = u / b
        with np.errstate(over="ignore"):
            lo = np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0)), 1.0 - 0.5 * np.exp(-np.maximum(z, 0)))
            up = np.where(z > 0, 0.5 * np.exp(-np.maximum(z, 0)), 1.0 - 0.5 * np.exp(np.minimum(z, 0)))
        return lo, up
    raise ValueError(family)


def cell_probs(edges: np.ndarray, x: float, s: float, family: str) -> np.ndarray:
    """P(edges[i] < x + delta < edges[i+1]) for consecutive edges (first -inf, last +inf)."""
    lo_l, lo_u = _lower_upper(family, edges[:-1] - x, s)
    hi_l, hi_u = _lower_upper(family, edges[1:] - x, s)
    p = np.where(lo_l >= 0.5, lo_u - hi_u, hi_l - lo_l)
    return np.maximum(p, 0.0)


def feature_cells(bounds: np.ndarray, x: float, s: float, family: str):
    """(one point inside each cell, cell probabilities) for one perturbed feature."""
    if np.isnan(x):
        return np.array([np.nan]), np.array([1.0])  # a missing value stays missing
    b = np.unique(np.asarray(bounds, dtype=np.float64))
    b = b[np.isfinite(b)]
    if b.size == 0:
        return np.array([x]), np.array([1.0])
    reps = np.concatenate([[b[0] - max(1.0, abs(b[0]))], (b[:-1] + b[1:]) / 2.0, [b[-1] + max(1.0, abs(b[-1]))]])
    edges = np.concatenate([[-np.inf], b, [np.inf]])
    return reps, cell_probs(edges, float(x), float(s), family)


def category_cells(x: float, p: float, categories, weights):
    """The values a categorically perturbed feature takes, with their probabilities: x itself
    with 1 - p (NaN stays NaN with probability 1), each category c with p * w_c."""
    if np.isnan(x):
        return np.array([x]), np.array([1.0])
    return (np.concatenate([[x], np.asarray(categories, dtype=np.float64)]),
            np.concatenate([[1.0 - p], p * np.asarray(weights, dtype=np.float64)]))


def pg2_bruteforce(f, X, S, sigma, family, bounds, categorical=None) -> np.ndarray:
    """Exact PG² by cell enumeration. ``f(A) -> (m,)`` float64 through the library's routing;
    ``bounds[j]`` the switching points of feature j; ``family`` a name or one name per feature;
    ``categorical[j] = (p, categories, weights)`` for a feature perturbed by category."""
    categorical = categorical or {}
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    n, d = X.shape
    sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (d,))
    fams = [family] * d if isinstance(family, str) else list(family)
    S = list(S)
    assert 1 <= len(S) <= 2
    blocks, weights, owners = [], [], []
    for i in range(n):
        cells = [category_cells(X[i, j], *categorical[j]) if j in categorical
                 else feature_cells(bounds.get(j, np.zeros(0)), X[i, j], sig[j], fams[j]) for j in S]
        grids = np.meshgrid(*[c[0] for c in cells], indexing="ij")
        probs = cells[0][1]
        for c in cells[1:]:
            probs = np.multiply.outer(probs, c[1])
        A = np.repeat(X[i][None, :], grids[0].size, axis=0)
        for j, g in zip(S, grids):
            A[:, j] = g.ravel()
        blocks.append(A)
        weights.append(probs.ravel())
        owners.append(np.full(grids[0].size, i))
    A = np.vstack(blocks + [X])
    values = np.asarray(f(A), dtype=np.float64)
    fx = values[-n:]
    values = values[:-n]
    w = np.concatenate(weights)
    own = np.concatenate(owners)
    return np.bincount(own, weights=w * (values - fx[own]) ** 2, minlength=n)


# ------------------------------------------------------------------------------ test rows
def edge_rows(base: np.ndarray, splits, float32: bool, zero_band: bool = False, seed: int = 0,
              max_splits: int = 150) -> np.ndarray:
    """Rows that probe the routing: the base rows, NaN rows, a zero row, and for each split
    (feature, threshold): x = t and one ulp either side (float64 ulps; with ``float32`` also
    the float32 t32, its float32 neighbours, and doubles either side of the float32 rounding
    boundary). ``zero_band`` adds LightGBM's |x| <= 1e-35 band edges."""
    rng = np.random.default_rng(seed)
    base = np.atleast_2d(np.asarray(base, dtype=np.float64))
    n, d = base.shape
    rows = [base]
    nan_rows = base[rng.integers(0, n, 12)].copy()
    nan_rows[rng.random(nan_rows.shape) < 0.35] = np.nan
    nan_rows[0, :] = np.nan
    rows.append(nan_rows)
    rows.append(np.zeros((1, d)))
    rows.append(np.full((1, d), -0.0))
    splits = list(splits)
    if len(splits) > max_splits:
        splits = [splits[k] for k in rng.choice(len(splits), max_splits, replace=False)]
    for f, t in splits:
        if not np.isfinite(t):  # scikit-learn's "only NaN goes right" splits use t = +inf
            continue
        vals = [t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf)]
        if float32:
            t32 = float32_below(t)
            b = float32_le_boundary(t)
            vals += [float(t32), float(np.nextafter(t32, np.float32(-np.inf))), float(np.nextafter(t32, np.float32(np.inf))),
                     float(np.nextafter(b, -np.inf)), float(np.nextafter(b, np.inf))]
        r = np.repeat(base[rng.integers(0, n)][None, :], len(vals), axis=0)
        r[:, f] = vals
        rows.append(r)
    if zero_band:
        z = float(np.float32(1e-35))
        band = [z, -z, np.nextafter(z, np.inf), -np.nextafter(z, np.inf), 1e-36, -1e-36, 5e-324, -5e-324]
        for j in range(d):
            r = np.repeat(base[rng.integers(0, n)][None, :], len(band), axis=0)
            r[:, j] = band
            rows.append(r)
    return np.vstack(rows)
