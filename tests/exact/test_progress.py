"""Progress bars, the slow-call warning and pgexact.estimate (pgexact._exact._progress, _estimate)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pgexact
from pgexact._exact import _progress


def _rows(data, n=40):
    return np.ascontiguousarray(data[0][:n])


EXACT_CALLS = {
    "pg2": lambda m, X, **kw: pgexact.pg2(m, X, [0, 2], **kw),
    "pg2_curve": lambda m, X, **kw: pgexact.pg2_curve(m, X, np.arange(X.shape[1]), **kw),
    "pgi2": lambda m, X, **kw: pgexact.pgi2(m, X, **kw),
    "pgu2": lambda m, X, **kw: pgexact.pgu2(m, X, **kw),
    "rank": lambda m, X, **kw: pgexact.rank(m, X, **kw),
    "expected": lambda m, X, **kw: pgexact.expected(m, X, [1], **kw),
    "infidelity": lambda m, X, **kw: pgexact.infidelity(m, X, np.ones(X.shape), **kw),
    "explainer": lambda m, X, **kw: pgexact.Explainer(m)(X, **kw),
    "mc.pgi2": lambda m, X, **kw: pgexact.mc.pgi2(m, X, np.arange(X.shape[1]), n_samples=50, **kw),
    "openxai.pgi": lambda m, X, **kw: pgexact.openxai.pgi(m, X, np.ones(X.shape), seed=0, **kw),
    "openxai.pgu exact": lambda m, X, **kw: pgexact.openxai.pgu(m, X, np.ones(X.shape), exact=True,
                                                                **kw),
}


@pytest.mark.parametrize("name", sorted(EXACT_CALLS))
def test_bar_on_stderr_never_stdout(reg_model, data, capsys, name):
    X = _rows(data)
    quiet = EXACT_CALLS[name](reg_model, X, progress=False)
    assert capsys.readouterr().err == ""
    shown = EXACT_CALLS[name](reg_model, X, progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert "row" in err and f"{len(X)}/{len(X)}" in err  # tqdm's counter reached every row
    # the bar changes nothing
    for a, b in zip(np.atleast_1d(quiet), np.atleast_1d(shown)):
        np.testing.assert_array_equal(getattr(a, "values", a), getattr(b, "values", b))


def test_default_shows_no_bar_for_a_quick_call(reg_model, data, capsys):
    pgexact.pgi2(reg_model, _rows(data))
    assert capsys.readouterr() == ("", "")


def test_default_opens_the_bar_for_a_call_projected_long(reg_model, data, capsys, monkeypatch):
    monkeypatch.setattr(_progress, "SETTLE_SECONDS", 0.0)
    monkeypatch.setattr(_progress, "BAR_SECONDS", 0.0)
    pgexact.pgi2(reg_model, _rows(data))
    out, err = capsys.readouterr()
    assert out == "" and "pgi2" in err


def test_without_tqdm_no_bar_and_no_error(reg_model, data, capsys, monkeypatch):
    monkeypatch.setattr(_progress, "optional", lambda module: None)
    a = pgexact.pgi2(reg_model, _rows(data), progress=True)
    np.testing.assert_array_equal(a, pgexact.pgi2(reg_model, _rows(data), progress=False))
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("bad", ["yes", 1, 0.5])
def test_progress_must_be_a_bool_or_none(reg_model, data, bad):
    with pytest.raises(TypeError, match="^progress"):
        pgexact.pg2(reg_model, _rows(data), [0], progress=bad)


def test_dask_points_to_its_own_diagnostics(reg_model, data):
    da = pytest.importorskip("dask.array")
    import pgexact.dask as pgd

    X = da.from_array(_rows(data), chunks=(10, -1))
    with pytest.raises(ValueError, match="^progress: .*dask.diagnostics.ProgressBar"):
        pgd.pgi2(reg_model, X, progress=True)
    np.testing.assert_array_equal(pgd.pgi2(reg_model, X, progress=None).compute(),
                                  pgexact.pgi2(reg_model, _rows(data)))


# ------------------------------------------------------------------------ the slow-call warning
def _projecting(monkeypatch, threshold):
    """Every call's projection is its own elapsed time; warn above ``threshold`` seconds."""
    monkeypatch.setattr(_progress, "SETTLE_SECONDS", 0.0)
    monkeypatch.setattr(_progress, "WARN_SECONDS", threshold)


@pytest.mark.parametrize("name", ["pgi2", "rank", "infidelity", "pgu2"])
def test_warning_above_the_threshold_once(reg_model, data, monkeypatch, name):
    _projecting(monkeypatch, 0.0)
    with pytest.warns(pgexact.PerformanceWarning) as record:
        EXACT_CALLS[name](reg_model, _rows(data), progress=False)
    ours = [w for w in record if issubclass(w.category, pgexact.PerformanceWarning)]
    assert len(ours) == 1  # once, however many kernels the call runs
    message = str(ours[0].message)
    for way_out in ("n_jobs", "fewer rows", "pgexact.dask", "pgexact.mc", "expected to take"):
        assert way_out in message
    assert ours[0].filename == __file__  # points at the user's call
    assert issubclass(pgexact.PerformanceWarning, UserWarning)


def test_no_warning_below_the_threshold(reg_model, data, monkeypatch):
    _projecting(monkeypatch, 1e9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pgexact.PerformanceWarning)
        pgexact.pgi2(reg_model, _rows(data))
        pgexact.rank(reg_model, _rows(data))


def test_monte_carlo_does_not_warn(reg_model, data, monkeypatch):
    _projecting(monkeypatch, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pgexact.PerformanceWarning)
        pgexact.mc.pg2(reg_model, _rows(data), [0], n_samples=20)


# ----------------------------------------------------------------------------- estimate
@pytest.mark.parametrize("kind", ["pg2", "pgi2", "rank"])
def test_estimate_of_a_quick_call_is_its_time(reg_model, data, kind):
    seconds = pgexact.estimate(reg_model, _rows(data), kind, n_jobs=1)
    assert 0.0 < seconds < 5.0


def test_estimate_with_a_ranking_and_refusals(reg_model, data):
    X = _rows(data)
    assert pgexact.estimate(reg_model, X, ranking=np.arange(X.shape[1])) > 0.0
    assert pgexact.estimate(reg_model, X[:0]) == 0.0
    with pytest.raises(ValueError, match="^kind"):
        pgexact.estimate(reg_model, X, "shap")
    with pytest.raises(ValueError, match="^ranking"):
        pgexact.estimate(reg_model, X, "rank", ranking=np.arange(X.shape[1]))
    with pytest.raises(ValueError, match="^ranking"):
        pgexact.estimate(reg_model, X, ranking=[0, 0, 1, 2, 3])


def test_estimate_projects_from_the_rate(monkeypatch):
    """The projection: time so far plus the units left at the rate seen between reports."""
    from pgexact._exact import _estimate

    cal = _estimate._Calibration(10, 0.3)
    cal.samples = [(0.1, 0, 1000), (0.2, 10, 1000), (0.4, 30, 1000)]
    # 20 units in 0.2 s: 100 units/s; 970 left -> 9.7 s after 0.4 s
    assert cal.projected() == pytest.approx(0.4 + 9.7)


def test_estimate_rate_starts_after_the_first_work_and_waits_for_enough(monkeypatch):
    """The rate is measured from the report after the first report of work (whose units carry
    the run's set-up), and the calibration stops only once that rate spans MIN_RATE_SECONDS and
    MIN_UNITS_SEEN units (or 1 % of them): a deep forest's unit is a pair of trees."""
    from pgexact._exact import _estimate

    cal = _estimate._Calibration(1, 0.15)
    cal.samples = [(0.1, 0, 100), (0.5, 1, 100), (0.6, 2, 100), (0.7, 6, 100)]
    # from (0.6, 2): 4 units in 0.1 s, 94 left (from (0.5, 1) it would be 25 units/s: 4.46 s)
    assert cal.projected() == pytest.approx(0.7 + 94 / 40)

    clock = {"now": 0.0}
    monkeypatch.setattr(_estimate.time, "perf_counter", lambda: clock["now"])
    cal = _estimate._Calibration(1, 0.15)
    for now, done in ((0.2, 1), (0.3, 2), (0.35, 5), (0.45, 9)):  # coarse units, 1,000 in all
        clock["now"] = now
        cal.update(done, 1000)  # not yet: 7 units seen since (0.3, 2)
    clock["now"] = 0.5
    with pytest.raises(_estimate._Enough):
        cal.update(10, 1000)  # 8 units over 0.2 s
    clock["now"] = 0.0
    cal = _estimate._Calibration(1, 0.15)
    for now, done in ((0.2, 10**6), (0.225, 2 * 10**6), (0.25, 3 * 10**6)):  # fine units
        clock["now"] = now
        cal.update(done, 10**9)  # not yet: the rate spans 0.025 s
    clock["now"] = 0.33
    with pytest.raises(_estimate._Enough):
        cal.update(5 * 10**6, 10**9)


def test_bar_counts_rows_in_hundredths(monkeypatch):
    """The bar counts rows' worth of work, rounded down: within a one-row call it moves in
    hundredths (a whole count read 1/1 from halfway on) and reads every row only at the end."""
    pytest.importorskip("tqdm")
    p = _progress.Progress(True, 1, "rank", warn=False)
    with p:
        update = p.stage()
        shown = []
        for done in (0, 1, 499, 500, 999, 1000):
            update(done, 1000)
            shown.append(p._bar.n)
        assert shown == [0.0, 0.0, 0.49, 0.5, 0.99, 1.0]
    p = _progress.Progress(True, 20, "pgi2", stages=2, warn=False)
    with p:
        p.stage()(1, 2)  # half of the first of two stages: a quarter of the work
        assert p._bar.n == 5.0


def test_projection_counts_set_up_once(monkeypatch):
    """The in-call projection (bar, PerformanceWarning) extrapolates the rate seen since the
    first report of work, as estimate does: a kernel's set-up before its first unit (leaf boxes
    and row tables of a deep forest) is not multiplied by the number of units."""
    clock = {"now": 0.0}
    monkeypatch.setattr(_progress.time, "perf_counter", lambda: clock["now"])
    p = _progress.Progress(False, 1, "pgi2", warn=False)
    update = p.stage()
    clock["now"] = 10.0  # ten seconds of set-up, then 0.1 % of the work
    update(1, 1000)
    assert p.projected_seconds() == pytest.approx(10.0 / 0.001)  # one report: elapsed / fraction
    clock["now"] = 11.0  # another 0.1 % a second later: 998 s to go at that rate
    update(2, 1000)
    assert p.projected_seconds() == pytest.approx(11.0 + 0.998 * 1000.0)


def test_no_warning_before_a_rate(monkeypatch):
    """One report of work after a long set-up projects elapsed / fraction, which counts the
    set-up once per unit: the PerformanceWarning waits for a second report and its rate (a
    million rows of a two-tree model warned of 136 s for a call of 2.4 s)."""
    clock = {"now": 0.0}
    monkeypatch.setattr(_progress.time, "perf_counter", lambda: clock["now"])
    p = _progress.Progress(False, 1, "pgi2", warn=True)
    update = p.stage()
    with warnings.catch_warnings():
        warnings.simplefilter("error", pgexact.PerformanceWarning)
        clock["now"] = 1.0  # a second of set-up, then 0.1 % of the work
        update(1, 1000)
        assert p.projected_seconds() == pytest.approx(1000.0)  # past WARN_SECONDS, no rate yet
        clock["now"] = 1.01  # the rate: 10 s to go
        update(2, 1000)
    clock["now"] = 2.0  # then the rate drops: about 500 s to go, and now it warns
    with pytest.warns(pgexact.PerformanceWarning):
        update(3, 1000)


def test_projection_rate_starts_at_the_first_report_not_the_first_look(monkeypatch):
    """Reports of work come every 25 ms, the first look at the projection half a second into the
    call: the rate must run from the first report. Taken at the first look, there was no rate
    yet and elapsed / fraction, set-up included, projected 66 s for a CatBoost call of 29 s (a
    false PerformanceWarning)."""
    clock = {"now": 0.0}
    monkeypatch.setattr(_progress.time, "perf_counter", lambda: clock["now"])
    p = _progress.Progress(False, 1, "pgi2", warn=False)
    update = p.stage()
    for now, done in ((0.3, 1), (0.4, 2), (0.5, 3)):  # 0.3 s of set-up, then 0.1 % per 0.1 s
        clock["now"] = now
        update(done, 1000)
    assert p.projected_seconds() == pytest.approx(0.5 + 0.997 * 100.0)


def test_rank_estimate_has_a_floor_of_full_passes(monkeypatch):
    """A short look at the greedy ranking sees its cheap early steps; the estimate is never
    below PASSES_PER_CANDIDATE (0.4) of its candidates' worth of passes with every feature
    perturbed (two walks of every feature per row where one or two rows rank on the union
    walks), unless the ranking finished within the calibration (then its time is the estimate)."""
    from pgexact._exact import _estimate

    seen = []

    class Call:
        n_features = 9
        n_rows = 2
        walks = False
        first_row_only = False
        planning = 0.0

        def greedy_on_walks(self):
            return self.walks

        def planning_share(self):
            return self.planning

        def rows(self, start, stop):
            assert (start, stop) == (0, 1)
            one = Call()
            one.n_rows, one.first_row_only = 1, True
            return one

    finished = {"rank": False, "pg2": False}  # whether a run ends within its calibration

    def fake(call, kind, ranking, tol=None, watch=None):
        seen.append((kind, call.first_row_only))
        return {"rank": 1.0, "pg2": 2.0}[kind], finished[kind]

    monkeypatch.setattr(_estimate, "_calibrate_run", fake)
    assert _estimate.PASSES_PER_CANDIDATE == 0.4
    assert _estimate._calibrate(Call(), "rank", None) == 0.4 * 8 * 2.0
    assert _estimate._calibrate(Call(), "pgi2", None) == 0.4 * 8 * 2.0  # no ranking: greedy
    assert _estimate._calibrate(Call(), "pg2", None) == 2.0
    assert seen == [("rank", False), ("pg2", False), ("rank", False), ("pg2", False), ("pg2", False)]
    # the share of the pass that plans projected tree pairs is paid once, not per candidate
    planned = Call()
    planned.planning = 0.25
    assert _estimate._calibrate(planned, "rank", None) == 2.0 * (0.25 + 0.75 * 0.4 * 8)
    seen.clear()
    # a ranking of one or two rows on the union walks: at least two walks of every feature per
    # row (about what the walk of each row's last steps costs), calibrated on the first row
    # alone (whose set takes the union walk, with progress within the walk)
    few = Call()
    few.walks = True
    seen.clear()
    assert _estimate._calibrate(few, "rank", None) == 2 * 2.0 * _estimate.TAIL_WALKS
    assert seen == [("rank", False), ("pg2", True)]
    # a ranking that finishes within the calibration is simply timed: no floor
    finished["rank"] = True
    seen.clear()
    assert _estimate._calibrate(Call(), "rank", None) == 1.0
    assert _estimate._calibrate(few, "rank", None) == 1.0
    assert seen == [("rank", False), ("rank", False)]


def test_estimate_shares_its_watch_among_its_runs(monkeypatch, reg_model, multi_model, data):
    """An estimate watches its runs for WATCH_SECONDS in all (so it takes about half a second
    with the model's preparation): one run gets all of it, the greedy ranking's two runs half
    each, and no run less than MIN_WATCH_SECONDS (output="all": a run or two per output)."""
    from pgexact._exact import _estimate

    watched = []

    def fake(call, kind, ranking, tol=None, watch=None):
        watched.append(watch)
        return 1.0, False

    monkeypatch.setattr(_estimate, "_calibrate_run", fake)
    X = _rows(data)
    pgexact.estimate(reg_model, X, "pgi2", ranking=np.arange(X.shape[1]))
    pgexact.estimate(reg_model, X, "pg2")
    assert watched == [_estimate.WATCH_SECONDS] * 2
    watched.clear()
    pgexact.estimate(reg_model, X, "rank")
    assert len(watched) == 2 and all(w == _estimate.WATCH_SECONDS / 2 for w in watched)
    watched.clear()
    pgexact.estimate(multi_model, X, "rank", output="all")
    assert len(watched) >= 4 and all(w == _estimate.MIN_WATCH_SECONDS for w in watched)
    assert _estimate.WATCH_SECONDS / 2 >= _estimate.MIN_WATCH_SECONDS


def test_greedy_on_walks_follows_the_rows(reg_model, data):
    from pgexact._exact._kernels import block_of_call
    from pgexact._exact._prepare import prepare_call

    X = _rows(data)
    assert prepare_call(reg_model, X[:1]).greedy_on_walks()
    assert prepare_call(reg_model, X[:2]).greedy_on_walks()
    assert not prepare_call(reg_model, X[:3]).greedy_on_walks()
    with block_of_call(len(X)):
        assert not prepare_call(reg_model, X[:1]).greedy_on_walks()


def test_first_sweep_counts_the_planning_of_projected_pairs():
    """Where tree pairs may be projected, the first sweep of a leaf-pair call also plans them
    (about 0.8 of a sweep over one lane vector): its progress counts that, so that the call's
    rate is even and pgexact.estimate's look at its start holds for the rest. The units are
    planned up front and all done by the end; pg2_planning_share is their share."""
    from catboost import CatBoostRegressor
    from sklearn.ensemble import RandomForestRegressor

    from pgexact import _core
    from pgexact._exact._kernels import Kernel
    from pgexact._exact._prepare import prepare_call

    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 8))
    y = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + X[:, 3:].sum(axis=1)
    n_trees, leaves = 12, 64
    cat = pgexact.load(CatBoostRegressor(iterations=n_trees, depth=6, verbose=0, thread_count=1, random_seed=0,
                                         allow_writing_files=False).fit(X, y))
    assert cat.n_leaves == n_trees * leaves
    sweep = (n_trees * n_trees * leaves * leaves + n_trees * leaves * leaves) // 2
    planning = round(0.8 * leaves * leaves) * n_trees * (n_trees - 1) // 2  # one lane vector
    call = prepare_call(cat, X[:1], n_jobs=1)
    share = _core.exact.pg2_planning_share(cat._arena, call.perturbation, 1)
    assert share == pytest.approx(planning / (sweep + planning), rel=1e-12)
    reports = []
    call.progress.stage = lambda: lambda done, total: reports.append((done, total))
    call.pg2(np.ones(X.shape[1], dtype=np.uint8), kernel=Kernel.leaf_pairs)
    assert reports and all(total == sweep + planning for _, total in reports)
    assert reports[-1][0] == sweep + planning
    # more rows weigh the same planning against more lane vectors
    shares = [_core.exact.pg2_planning_share(cat._arena, call.perturbation, n) for n in (1, 8, 16, 64)]
    assert shares[0] == shares[1] > shares[2] > shares[3] > 0
    # nothing to plan: deep trees, or a feature perturbed by category
    forest = pgexact.load(RandomForestRegressor(n_estimators=3, random_state=0).fit(X, X[:, 0]))
    assert _core.exact.pg2_planning_share(forest._arena, prepare_call(forest, X[:1]).perturbation, 1) == 0.0
    rows = np.abs(np.round(X[:1]))
    categorical = prepare_call(cat, rows, noise=[pgexact.noise.categorical(0.3, [0, 1, 2])] + ["normal"] * 7)
    assert _core.exact.pg2_planning_share(cat._arena, categorical.perturbation, 1) == 0.0
