"""Ctrl-C: SIGINT stops a long call within a second, and the process carries on correctly.

Each case runs a child Python process on a model big enough that the call would take minutes
(300 trees of depth 8, 12 features): the child computes a reference on a small model, starts the
long call and says so; the parent sends SIGINT 1.5 s later and times the child's report of
KeyboardInterrupt; the child then recomputes the reference (the next call must give the same
bits) and a short call on the big model, and exits.

The child must see SIGINT as a fresh interactive Python does whatever the parent's disposition
(pytest run with SIGINT ignored: a background job of a non-interactive shell, ``nohup``, some CI
runners): it is reset to the default before the child starts (``preexec_fn``), and the child
installs Python's ``default_int_handler`` itself. Everything the child writes is read by threads
(no line lost between a ``readline`` and a later read of the raw pipe), and every wait has a
timeout, so a broken interrupt fails the test instead of hanging the run.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)   # even if started with SIGINT ignored
    import numpy as np
    import xgboost as xgb
    import pgexact

    kind, n_jobs, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    big = pgexact.load(path)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(256, 12))
    small = xgb.XGBRegressor(n_estimators=10, max_depth=3, nthread=1).fit(X[:100], X[:100, 0])
    before = pgexact.pgi2(small, X[:20], n_jobs=n_jobs)
    calls = {
        "pgi2": lambda: pgexact.pgi2(big, X, n_jobs=n_jobs, progress=False),
        "rank": lambda: pgexact.rank(big, X, n_jobs=n_jobs, progress=False),
        # one row: the greedy ranking on the shared walks (kernels.hpp's few_rows_on_walks)
        "rank1": lambda: pgexact.rank(big, X[:1], n_jobs=n_jobs, progress=False),
        # a loop of one-row calls with a given ranking (under 2 s each): the union walk
        # (union_walk.hpp)
        "pgi2_1": lambda: [pgexact.pgi2(big, X[i:i + 1], np.arange(12), n_jobs=n_jobs, progress=False)
                           for i in range(30)],
        "mc": lambda: pgexact.mc.pgi2(big, X, np.arange(12), n_samples=200_000, n_jobs=n_jobs,
                                      progress=False),
    }
    print("started", flush=True)
    try:
        calls[kind]()
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    after = pgexact.pgi2(small, X[:20], n_jobs=n_jobs)
    print("same" if np.array_equal(before, after) else "different", flush=True)
    value = pgexact.pg2(big, X[:1], [0], n_jobs=n_jobs)
    print("ok" if value.shape == (1,) and value[0] >= 0 else "bad", flush=True)
""")


@pytest.fixture(scope="module")
def big_model(tmp_path_factory):
    import xgboost as xgb

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 12))
    y = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + X[:, 3:].sum(axis=1) + 0.3 * rng.normal(size=2000)
    model = xgb.XGBRegressor(n_estimators=300, max_depth=8, tree_method="hist", random_state=0,
                             nthread=2).fit(X, y)
    path = tmp_path_factory.mktemp("interrupt") / "big.json"
    model.save_model(path)
    return str(path)


class _Child:
    """A child process whose stdout lines and stderr are read by threads, with timeouts."""

    def __init__(self, args):
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=_default_sigint)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.err: list[str] = []
        self._threads = [threading.Thread(target=self._read_out, daemon=True),
                         threading.Thread(target=self._read_err, daemon=True)]
        for t in self._threads:
            t.start()

    def _read_out(self):
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)   # end of output

    def _read_err(self):
        assert self.proc.stderr is not None
        self.err.extend(self.proc.stderr)

    def stderr(self) -> str:
        return "".join(self.err)

    def readline(self, timeout: float) -> str | None:
        """The next line, None at the end of the output; fails after ``timeout`` seconds."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"the child wrote no line within {timeout:.0f} s; stderr:\n{self.stderr()}")

    def rest(self, timeout: float) -> list[str]:
        """Every remaining line, once the child has closed its output."""
        deadline = time.monotonic() + timeout
        out = []
        while (line := self.readline(max(deadline - time.monotonic(), 0.01))) is not None:
            out.append(line)
        return out

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=60)
        for t in self._threads:
            t.join(timeout=10)


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("kind", ["pgi2", "rank", "rank1", "pgi2_1", "mc"])
def test_sigint_stops_within_a_second(big_model, kind, n_jobs):
    child = _Child([sys.executable, "-c", CHILD, kind, str(n_jobs), big_model])
    try:
        assert child.readline(timeout=120) == "started", child.stderr()
        time.sleep(1.5)
        sent = time.perf_counter()
        os.kill(child.proc.pid, signal.SIGINT)
        line = child.readline(timeout=30)
        latency = time.perf_counter() - sent
        assert line == "interrupted", f"{line!r}; stderr:\n{child.stderr()}"
        assert latency < 1.0, f"KeyboardInterrupt {latency:.2f} s after SIGINT"
        assert child.rest(timeout=120) == ["same", "ok"], child.stderr()
        assert child.proc.wait(timeout=60) == 0, child.stderr()
    finally:
        child.close()


def test_child_reader_keeps_every_line():
    """Lines written together with the first one are not lost (the race of issue 29)."""
    script = "import sys; sys.stdout.write('started\\n' + ''.join(f'{i}\\n' for i in range(2000)))"
    child = _Child([sys.executable, "-c", script])
    try:
        assert child.readline(timeout=60) == "started"
        assert child.rest(timeout=60) == [str(i) for i in range(2000)]
    finally:
        child.close()


def test_child_sigint_is_reset_when_the_parent_ignores_it():
    """A parent with SIGINT ignored still gets a child that raises KeyboardInterrupt."""
    script = textwrap.dedent("""
        import signal, sys, time
        try:  # the line is written inside the try: a SIGINT right after it is caught
            print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)
            time.sleep(60)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        child = _Child([sys.executable, "-c", script])
    finally:
        signal.signal(signal.SIGINT, old)
    try:
        assert child.readline(timeout=60) == "True", child.stderr()
        os.kill(child.proc.pid, signal.SIGINT)
        assert child.readline(timeout=30) == "interrupted", child.stderr()
        assert child.rest(timeout=30) == []
    finally:
        child.close()
