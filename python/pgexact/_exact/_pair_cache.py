"""The pair cache: the leaf-pair lists kept across calls on the same model.

The exact kernel enumerates the intersecting leaf pairs of a model before it weighs them per
row; that enumeration depends on the model alone, and on a one-row call it is most of the
time. The cache keeps the lists a call enumerated, per model, within a byte budget (192 MiB by
default, least recently used models dropped first), so the next call on the same model (a
model object parsed again, a TreeEnsemble, a loop over rows, an Explainer) reads them instead.
A kept list is the list enumerated again, so results are the same bits with or without it.

Models are recognised by content, not identity: a refitted model is a different model. Models
whose lists cannot fit (deep random forests) and calls that perturb a feature by category are
not cached.
"""

from __future__ import annotations

import operator
from typing import Dict

from ._kernels import clear_pair_store, pair_store_info, set_pair_store_budget

__all__ = ["clear_pair_cache", "pair_cache_info", "set_pair_cache_limit"]


def set_pair_cache_limit(max_bytes: int) -> int:
    """Set how many bytes the pair cache may hold; return the previous limit.

    Parameters
    ----------
    max_bytes : int
        The budget in bytes, >= 0. 0 turns the cache off and frees what it holds; a smaller
        budget drops the least recently used models until the cache fits.

    Returns
    -------
    int
        The limit before this call.
    """
    if isinstance(max_bytes, bool):
        raise TypeError("max_bytes: expected an integer number of bytes, not a bool")
    try:
        value = operator.index(max_bytes)
    except TypeError:
        raise TypeError(f"max_bytes: expected an integer number of bytes, got "
                        f"{type(max_bytes).__name__}") from None
    if value < 0:
        raise ValueError(f"max_bytes: must be >= 0 (0 turns the cache off), got {value}")
    previous = pair_store_info()["max_bytes"]
    set_pair_store_budget(value)
    return previous


def pair_cache_info() -> Dict[str, int]:
    """What the pair cache holds now.

    Returns
    -------
    dict
        ``max_bytes`` (the limit), ``bytes`` (held), ``models`` (models with kept lists),
        ``hits`` and ``misses`` (calls on a cacheable model that did / did not find its lists).
    """
    return pair_store_info()


def clear_pair_cache() -> None:
    """Drop every kept list and reset the hit and miss counts (the limit stays)."""
    clear_pair_store()
