"""Progress bars and the slow-call warning of the long-running functions.

One :class:`Progress` watches one public call. The kernels call it every 25 ms with the work
done so far (:mod:`pgexact._core` runs them on a worker thread and checks for Ctrl-C between
calls); Python loops (Monte Carlo, OpenXAI) call :meth:`Progress.advance` per chunk. A call may
run several stages (several kernels, or a Python loop and then kernels): each is one
:meth:`Progress.stage` and the bar moves through them in turn.

``progress=None`` opens a bar once the call has run for half a second and is projected to take
more than about 2 s in all, ``True`` opens it at once, ``False`` never; the bar is
``tqdm.auto`` on stderr (a widget in notebooks), nothing goes to stdout, and without tqdm there
is no bar and no error. Whatever ``progress``, an exact call projected to take more than
:data:`WARN_SECONDS` emits one :class:`PerformanceWarning` naming the projection and the ways
out. The projection is the one :func:`pgexact.estimate` uses: the time so far plus the work
left at the rate seen since the first report of work, so the warning waits for a second report
(one report alone gives only elapsed time over the fraction done, which counts the kernel's
set-up once per unit of work).
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from types import TracebackType
from typing import Any, Callable, Optional, Tuple, Type

from .._optional import optional
from .._warnings import user_stacklevel

__all__ = ["PerformanceWarning", "Progress", "WARN_SECONDS", "check_progress"]

#: calls projected to take longer than this many seconds warn once
WARN_SECONDS = 60.0
#: with ``progress=None``, a bar opens for calls projected to take longer than this
BAR_SECONDS = 2.0
#: and only after the call has run this long (so that the projection means something)
SETTLE_SECONDS = 0.5
#: the bar redraws at most this often (the kernels report every 25 ms, for estimate's sake)
REDRAW_SECONDS = 0.1


class PerformanceWarning(UserWarning):
    """A call is expected to take long (more than a minute): the message says how to speed it up."""


def check_progress(progress: Any) -> Optional[bool]:
    """``progress`` validated: None, True or False."""
    if progress is None or isinstance(progress, bool):
        return progress
    raise TypeError(f"progress: expected None, True or False, got {type(progress).__name__}")


class Progress:
    """The bar and the slow-call warning of one public call.

    Parameters
    ----------
    progress : bool or None
        True: a bar at once; False: never; None: when the call is projected to take > ~2 s.
    rows : int
        Rows of the call: the bar counts rows.
    desc : str
        The bar's label (the function's name).
    stages : int, default 1
        Kernels or loops the call runs one after the other.
    warn : bool, default True
        Whether a projection above :data:`WARN_SECONDS` warns (exact calls; not Monte Carlo,
        whose ways out are its own ``n_samples``).
    """

    def __init__(self, progress: Optional[bool], rows: int, desc: str, stages: int = 1,
                 warn: bool = True) -> None:
        self.mode = check_progress(progress)
        self.rows = max(int(rows), 1)
        self.desc = desc
        self.stages = max(int(stages), 1)
        self._stage = -1
        self._fraction = 0.0  # of the current stage
        self._start = time.perf_counter()
        self._first_work: Optional[Tuple[float, float]] = None  # (seconds, fraction) at first progress
        self._bar: Any = None
        self._drawn = 0.0  # perf_counter of the bar's last redraw
        self._warned = not warn
        if self.mode:
            self._open()

    # -- stages ----------------------------------------------------------------------------------
    def stage(self) -> Callable[[int, int], None]:
        """The callback of the next stage: ``callback(done, total)``, as the kernels call it."""
        self._stage = min(self._stage + 1, self.stages - 1)
        self._fraction = 0.0
        return self.update

    def update(self, done: int, total: int) -> None:
        """``done`` of ``total`` units of the current stage are done."""
        self._fraction = min(max(done / total, 0.0), 1.0) if total > 0 else 0.0
        if self._first_work is None and self.fraction() > 0:
            self._first_work = (time.perf_counter() - self._start, self.fraction())
        self._refresh()

    def advance(self, done: int, total: int) -> None:
        """A Python loop's chunk: the same as :meth:`update` (named for the loops' call sites)."""
        self.update(done, total)

    # -- projection ------------------------------------------------------------------------------
    def fraction(self) -> float:
        """Fraction of the whole call done so far."""
        return (max(self._stage, 0) + self._fraction) / self.stages

    def projected_seconds(self) -> Optional[float]:
        """Projected wall-clock seconds of the whole call, None before any work is done.

        Time so far plus the work left at the rate seen since the first report of progress,
        as :func:`pgexact.estimate` does: a kernel's set-up (leaf boxes, per-row tables) comes
        before its first unit of work, and dividing the elapsed time by the fraction done would
        count it again for every unit (an hour projected for a call of minutes on a deep
        forest). Before a second report: elapsed / fraction, which overstates.
        """
        now = time.perf_counter() - self._start
        f = self.fraction()
        if f <= 0:
            return None
        if self._has_rate():
            t0, f0 = self._first_work  # type: ignore[misc]
            return now + (1.0 - f) * (now - t0) / (f - f0)
        return now / f

    def _has_rate(self) -> bool:
        """Whether work was reported done after the first report of work: only then is there a
        rate to project from. The first report is taken when it comes (update), not at the first
        look at the projection, half a second in: on CatBoost's 1000 trees that look found no
        rate yet and its elapsed / fraction, which carries the set-up, projected 66 s for a call
        of 29 s and warned."""
        if self._first_work is None:
            return False
        t0, f0 = self._first_work
        return self.fraction() > f0 and time.perf_counter() - self._start > t0

    def _refresh(self) -> None:
        elapsed = time.perf_counter() - self._start
        if elapsed >= SETTLE_SECONDS:
            projected = self.projected_seconds()
            if projected is not None:
                # A warning waits for a rate (or the call's end): before a second report of
                # work, elapsed / fraction counts the set-up once per unit (a million rows of a
                # two-tree model, whose rows the kernel first orders: 136 s projected for a call
                # of 2.4 s). The bar may open on it: a bar is cheap to be wrong about.
                if (not self._warned and projected > WARN_SECONDS
                        and (self._has_rate() or self.fraction() >= 1.0)):
                    self._warned = True
                    warnings.warn(
                        f"{self.desc} on {self.rows} rows is expected to take about "
                        f"{projected:.0f} s (pgexact.estimate gives the same projection before a "
                        f"call). To speed it up: more threads (n_jobs), fewer rows, pgexact.dask "
                        f"to spread rows over workers, or a Monte Carlo estimate (pgexact.mc).",
                        PerformanceWarning, stacklevel=user_stacklevel())
                if self._bar is None and self.mode is None and projected > BAR_SECONDS:
                    self._open()
        if self._bar is not None:
            self._bar.n = self._rows_done()
            now = time.perf_counter()
            if now - self._drawn >= REDRAW_SECONDS or self._fraction >= 1.0:  # a stage's end shows
                self._drawn = now
                self._bar.refresh()

    # -- the bar ---------------------------------------------------------------------------------
    def _open(self) -> None:
        tqdm = optional("tqdm.auto")
        if tqdm is None:
            return
        self._bar = tqdm.tqdm(total=self.rows, desc=self.desc, unit="row", file=sys.stderr,
                              leave=False, dynamic_ncols=True)
        self._bar.n = self._rows_done()
        self._bar.refresh()

    def _rows_done(self) -> float:
        """Rows' worth of work done, rounded down to hundredths: the bar reads 0.42/1 within a
        one-row call (a whole count rounded read 1/1 from halfway through the row on) and
        reaches every row only when the work has; whole counts stay whole (40/40)."""
        done = min(math.floor(self.fraction() * self.rows * 100) / 100, float(self.rows))
        return int(done) if done.is_integer() else done

    def close(self) -> None:
        """Closes the bar (at the end of the call, finished or not)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()
