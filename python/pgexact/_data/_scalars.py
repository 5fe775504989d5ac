"""Scalar arguments shared by every room: threads, positive integers, option names, seeds, k."""

from __future__ import annotations

import numbers
from typing import Any, Optional, Tuple

import numpy as np

__all__ = ["MAX_N_JOBS", "as_choice", "as_n_jobs", "as_positive_int", "as_seed", "as_top_k"]


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


def as_choice(value: Any, choices: Tuple[str, ...], name: str) -> str:
    """One of a fixed set of option names (case-insensitive), returned in lower case."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected one of {', '.join(map(repr, choices))}, got {value!r}")
    key = value.lower()
    if key not in choices:
        raise ValueError(f"{name}: unknown value {value!r}; expected one of {', '.join(map(repr, choices))}")
    return key


def as_positive_int(value: Any, name: str, allow_none: bool = False) -> Optional[int]:
    """A positive integer (or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected a positive integer{' or None' if allow_none else ''}, got {value!r}")
    if int(value) < 1:
        raise ValueError(f"{name}: expected a positive integer, got {int(value)}")
    return int(value)


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
