"""Ctrl-C: SIGINT stops a long call within a second, and the process carries on correctly.

Each case runs a child Python process on a model big enough that the call would take minutes
(300 trees of depth 8, 12 features): the child computes a reference on a small model, starts the
long call and says so; the parent sends SIGINT 1.5 s later and times the child's report of
KeyboardInterrupt; the child then recomputes the reference (the next call must give the same
bits) and a short call on the big model, and exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent("""
    import sys, time
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


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("kind", ["pgi2", "rank", "mc"])
def test_sigint_stops_within_a_second(big_model, kind, n_jobs):
    child = subprocess.Popen([sys.executable, "-c", CHILD, kind, str(n_jobs), big_model],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "started"
        time.sleep(1.5)
        sent = time.perf_counter()
        os.kill(child.pid, signal.SIGINT)
        line = child.stdout.readline().strip()
        latency = time.perf_counter() - sent
        assert line == "interrupted", child.stderr.read() if child.stderr else ""
        assert latency < 1.0, f"KeyboardInterrupt {latency:.2f} s after SIGINT"
        rest, err = child.communicate(timeout=120)
        assert rest.split() == ["same", "ok"], err
        assert child.returncode == 0, err
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
