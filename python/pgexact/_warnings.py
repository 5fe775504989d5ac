"""Warnings that point at the user's line: the first frame outside pgexact.

Every warning pgexact emits goes through :func:`warn`, whatever the depth of the call that
raises it (``pgexact.pgi2`` -> ``prepare_calls`` -> validation; ``pgexact.mc`` -> the shared
noise validation; a progress callback), so ``warnings.warn``'s ``stacklevel`` is computed, not
counted by hand. ``pgexact.bench`` (the command line) is a user of the library like any other.
"""

from __future__ import annotations

import sys
import warnings
from typing import Type

__all__ = ["user_stacklevel", "warn"]


def _inside(name: str) -> bool:
    return (name == "pgexact" or name.startswith("pgexact.")) and not (
        name == "pgexact.bench" or name.startswith("pgexact.bench."))


def user_stacklevel(skip: int = 1) -> int:
    """The ``stacklevel`` of the first frame outside pgexact, for a ``warnings.warn`` call made
    by the function calling this one; ``skip`` frames are stepped over before looking (2 from
    :func:`warn`: itself and its caller, which is inside pgexact)."""
    frame = sys._getframe(skip)
    level = skip
    while frame is not None and _inside(frame.f_globals.get("__name__", "")):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def warn(message: str, category: Type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line."""
    warnings.warn(message, category, stacklevel=user_stacklevel(2))
