"""How long an exact call will take: :func:`estimate`.

The kernels count their work in units fixed by the model's structure before they start (rows,
or tree pairs of each pass over a block of rows: :file:`cpp/include/pgexact/exact/run_control.hpp`),
and report how many are done every 25 ms. A short calibration starts the very call on the
very rows, watches the rate at which units get done for a tenth of a second or two, and stops it
(the same way Ctrl-C does); the estimate is the time spent so far plus the units left at that
rate. The calibration's sweeps over pairs of trees start halfway through each tile's second
trees (``calibration=True``): the first trees' pairs among themselves cost less per unit than
most of a call's. Nothing is hard-coded about the speed of the kernels or of the machine, so the estimate
follows both. A call that finishes within the calibration is simply timed.
"""

from __future__ import annotations

import time
from typing import List, Optional, Tuple

import numpy as np

from ._kernels import PreparedCall, pair_store_paused
from ._per_output import per_output
from ._prepare import prepare_calls
from ._progress import Progress
from ._tolerance import DEFAULT_TOL, as_tol
from .._typing import ArrayLike, ModelLike, NoiseLike, OutputLike, SigmaLike

__all__ = ["estimate"]

#: how long the calibrations of one estimate watch their runs in all, in seconds, shared among
#: the runs (the greedy ranking runs two per output); each stops at the first report after its
#: share, and the model's preparation comes on top: an estimate takes about half a second
WATCH_SECONDS = 0.3
#: but each run is watched at least this long (a rate needs a few of the 25 ms reports)
MIN_WATCH_SECONDS = 0.1
#: and until it has seen this many units of work done after the first (or 1 % of them): a
#: rate from one or two units was a coin toss on deep forests, where a unit is a pair of trees
#: of 10,000 leaves each (0.05-0.25 s: a row of RandomForestRegressor() projected anywhere from
#: 250 to 2,500 s)
MIN_UNITS_SEEN = 8
#: and over at least this long (a set-up of a few tenths of a second, 64 rows of a forest's
#: tables, can use up the watch before the first unit: one 25 ms interval was 0.7-1.3x the rate)
MIN_RATE_SECONDS = 0.1
#: the calibration gives up waiting for a rate after this long and extrapolates what it has
CALIBRATION_LIMIT = 5.0
KINDS = ("pg2", "pgi2", "rank")
#: a greedy ranking on the leaf pairs costs at least this many passes with every feature
#: perturbed per candidate: measured 0.61-0.90 on 64 rows of boosted models on housing (the
#: first step sweeps, the last four are one pass of about two; their short look is right within
#: 0.74-1.06x), 0.22-0.63 on forests, 0.40-0.42 on the one whose short look was 25x under (4
#: rows of a 20-tree unbounded forest; bench/RESULTS.md, session 15). At 0.5 the floor
#: overestimated a 5-tree forest's 64 rows 1.7-2.25x (0.22-0.29 passes a candidate; 1.43x at 0.4)
PASSES_PER_CANDIDATE = 0.4
#: a greedy ranking on the union walks costs at least its tail walk, about this many walks of
#: every feature (measured 1.8-6.3 for a whole one-row ranking, d = 8 and 11; the floor a short
#: look at the cheap first steps needs on deep forests: 0.4 of the time on one alone)
TAIL_WALKS = 2.0


class _Enough(Exception):
    """Raised from the progress callback to stop the calibration run."""


class _Calibration(Progress):
    """Records ``(seconds, done, total)`` reports and stops the run once it has a rate."""

    def __init__(self, rows: int, seconds: float) -> None:
        super().__init__(False, rows, "estimate")
        self.seconds = seconds
        self.start = time.perf_counter()
        self.samples: List[Tuple[float, int, int]] = []

    def update(self, done: int, total: int) -> None:
        now = time.perf_counter() - self.start
        if done >= total > 0:  # the final report of a finished run
            return
        self.samples.append((now, done, total))
        start = self._rate_start()
        seen = done - start[1] if start is not None else 0
        spanned = now - start[0] if start is not None else 0.0
        if (now >= self.seconds and spanned >= MIN_RATE_SECONDS
                and seen >= min(MIN_UNITS_SEEN, max(total // 100, 1))) or now >= CALIBRATION_LIMIT:
            raise _Enough

    def _rate_start(self) -> Optional[Tuple[float, int, int]]:
        """The report the rate is measured from: the first after work was first reported done.
        The units of that first report carry the run's set-up (tables, the walk's first pass),
        which on a deep forest made the first pair of trees take as long as the next three."""
        moving = [s for s in self.samples if s[1] > 0]
        return next((s for s in moving if s[1] > moving[0][1]), None) if moving else None

    def projected(self) -> float:
        """Seconds of the whole run: elapsed, plus the units left at the rate seen."""
        now, done, total = self.samples[-1]
        moving = [s for s in self.samples if s[1] > 0]
        start = self._rate_start()
        if start is None or done <= start[1]:  # too few reports: from the first report of work
            start = moving[0] if moving else None
        if start is not None and done > start[1]:
            t0, d0, _ = start
            return now + (total - done) * (now - t0) / (done - d0)
        return now * total / max(done, 1) if done > 0 else now * total


def estimate(model: ModelLike, X: ArrayLike, kind: str = "pgi2", *,
             ranking: Optional[ArrayLike] = None, sigma: SigmaLike = 0.3,
             noise: NoiseLike = "normal", n_jobs: Optional[int] = None,
             output: OutputLike = None, tol: Optional[float] = None) -> float:
    """Expected wall-clock seconds of an exact call, from a short calibration.

    The kernels know how much work a call is before they start (rows, or tree pairs per pass
    over a block of rows, from the model's structure). The calibration starts the call on
    these rows, measures the rate at which that work gets done for a few tenths of a second,
    and stops it; the result is the time so far plus the work left at that rate, measured over
    at least eight units of work. So it follows this machine, its load and the thread count, and
    costs about half a second with the model's preparation (up to a few seconds where the call's
    set-up or eight of its units take longer, and a tenth of a second more per output with
    ``output="all"``). It runs without the pair cache (:func:`pgexact.pair_cache_info`): it
    times the call as on a model seen for the first time and leaves the cache as it was. The
    greedy ranking is calibrated twice within that time, by itself and as a pass with every
    feature perturbed (its early steps are cheaper than its late ones).

    Parameters
    ----------
    model, X, sigma, noise, n_jobs, output
        As in :func:`pgexact.pgi2`: the call to estimate (``output="all"``: the sum over the
        outputs, each calibrated, as the call runs them one after the other).
    kind : {"pgi2", "pg2", "rank"}, default "pgi2"
        ``"pgi2"`` (or ``pgu2``): with ``ranking``, PG² of its every prefix; without, the
        greedy ranking (which gives the curve too). ``"pg2"``: PG² of one set, every feature
        perturbed (the dearest set). ``"rank"``: :func:`pgexact.rank`.
    ranking : array_like of int, shape (d,) or (n, d), optional
        The ranking ``pgi2`` would get (kind ``"pgi2"`` only).
    tol : float, optional
        The call's ``tol`` (:func:`pgexact.pg2`): a looser tolerance makes deep forests
        cheaper, so the calibration runs with it.

    Returns
    -------
    float
        Expected seconds of the call.

    Examples
    --------
    >>> seconds = pgexact.estimate(model, X, "rank", n_jobs=2)  # doctest: +SKIP
    """
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {', '.join(map(repr, KINDS))}, got {kind!r}")
    if ranking is not None and kind != "pgi2":
        raise ValueError(f"ranking: only kind='pgi2' takes a ranking, not kind={kind!r}")
    tol_ = as_tol(tol)
    calls = prepare_calls(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output)
    rankings = per_output(ranking, len(calls), output, "ranking", "ranking")
    runs = len(calls) * (2 if _greedy(kind, ranking) else 1)
    watch = max(WATCH_SECONDS / runs, MIN_WATCH_SECONDS)
    return float(sum(_calibrate(call, kind, r, tol_, watch) for call, r in zip(calls, rankings)))


def _greedy(kind: str, ranking: Optional[ArrayLike]) -> bool:
    """Whether the call estimated is the greedy ranking (``rank``, or ``pgi2`` without one)."""
    return kind == "rank" or (kind == "pgi2" and ranking is None)


def _calibrate(call: PreparedCall, kind: str, ranking: Optional[ArrayLike],
               tol: float = DEFAULT_TOL, watch: float = WATCH_SECONDS) -> float:
    """Seconds of one output's kernel run, from a short calibration of it.

    The greedy ranking's early steps are much cheaper than its late ones (few leaves are live
    while the set is small), so a short look at its first steps underestimates it, by up to
    100× on deep forests. Its late steps cost about a pass over every pair with every feature
    perturbed, and the ranking costs about PASSES_PER_CANDIDATE of its candidates' worth of
    those, so the estimate is the larger of the two projections (on the models where the short
    look was not fooled, it is the larger already). One or two
    rows rank on a union walk per step, whose units weigh a step's tree pairs by the size of its
    sets (the walk of the last four steps by twice the candidates), and compare with two walks of
    every feature per row, about what each row's last walk costs (the ranking of a row costs
    1.8-6.3 of them, d = 8 and 11). A ranking that finishes within the calibration is simply
    timed.
    """
    if _greedy(kind, ranking):
        seconds, finished = _calibrate_run(call, "rank", None, tol, watch)
        if finished:
            return seconds
        if not call.greedy_on_walks():
            # The pass's planning of projected tree pairs is paid once by the ranking, not per
            # candidate (on one row of CatBoost(200) it is about 0.44 of the pass: the floor
            # was 1.5-2x the ranking's time).
            candidates = max(call.n_features - 1, 1)
            pass_seconds = _calibrate_run(call, "pg2", None, tol, watch)[0]
            planning = call.planning_share()
            return max(seconds, pass_seconds * (planning + (1.0 - planning) * PASSES_PER_CANDIDATE * candidates))
        # Few rows rank on the union walks (README "Calls of one or two rows"): the pass
        # to compare with is then a walk of every feature per row, which the walk of a row's
        # last steps contains and costs about twice (greedy_tail.hpp; with fewer than four
        # features the tail is shorter, and once). It is calibrated on the first row alone, whose
        # set takes the union walk: the same single-lane recursion, with progress per chunk of
        # tree pairs (the walk of a block of rows reports once, at its end, so on a default
        # random forest the calibration gave up before the first report and projected 1/50 of
        # the time).
        walk = _calibrate_run(call.rows(0, 1), "pg2", None, tol, watch)[0]
        return max(seconds, call.n_rows * walk * (TAIL_WALKS if call.n_features >= 4 else 1.0))
    return _calibrate_run(call, kind, ranking, tol, watch)[0]


def _calibrate_run(call: PreparedCall, kind: str, ranking: Optional[ArrayLike],
                   tol: float = DEFAULT_TOL, watch: float = WATCH_SECONDS) -> Tuple[float, bool]:
    """Seconds of one kernel run, and whether it finished within the calibration (then timed):
    the run is watched for ``watch`` seconds, then stopped."""
    if call.n_rows == 0:
        return 0.0, True
    calibration = _Calibration(call.n_rows, watch)
    call.progress = calibration
    rk = call.ranking(ranking) if ranking is not None else None
    try:
        _run(call, kind, rk, tol)
    except _Enough:
        return float(calibration.projected()), False
    return float(time.perf_counter() - calibration.start), True


def _run(call: PreparedCall, kind: str, rk: Optional[np.ndarray], tol: float) -> None:
    """The calibrated call, run without the pair cache (pair_store.hpp): a cache holding part
    of the model's lists (those of its first trees, read first) made the first tenths of a
    second run up to 1.7x faster than the rest of the call, and an estimate must not change
    what the cache holds. And as a calibration (RunControl::calibration): its sweeps over tree
    pairs start halfway through each tile's second trees, for the same reason: the first
    trees' pairs among themselves cost less per unit than the rest (8 rows of LightGBM(500
    trees of 255 leaves): 2.6x; the estimate of its 64-row PGI² was 0.30 of the time). A
    calibration also keeps no pair lists within the call (pair_sweep.hpp): a call whose lists
    pass its budget keeps them only at its start, and timing that start projected rankings of
    deep forests at up to 2.2x their time."""
    with pair_store_paused():
        if kind == "pg2":
            call.pg2(np.ones(call.n_features, dtype=np.uint8), tol=tol, calibration=True)
        elif kind == "pgi2" and rk is not None:
            call.pg2_curve(rk, tol=tol, calibration=True)
        else:
            call.greedy_rank(tol=tol, calibration=True)
