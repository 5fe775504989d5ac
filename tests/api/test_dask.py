"""pgexact.dask on a LocalCluster with 2 worker processes: identical results, one model shipment."""

from __future__ import annotations

import inspect
import logging
import pickle

import cloudpickle
import numpy as np
import pandas as pd
import pytest
import xgboost as xgb
from sklearn.ensemble import RandomForestClassifier

import dask
import dask.array as da
import dask.dataframe as dd
from dask._task_spec import DataNode, Task
from distributed import Client, LocalCluster

import pgexact
import pgexact.dask as pgd

NAMES = ["age", "bmi", "bp", "s1", "s2", "s3"]
D = len(NAMES)
N = 80
CHUNKS = ((30, 19, 1, 30), (D,))
FUNCS = ["pg2", "pg2_curve", "pgi2", "pgu2", "rank", "expected"]


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def client():
    # The active memory manager would trim the broadcast model's replicas every 2 s (a worker
    # then fetches it back from a peer when it needs it); off, so copies can be counted.
    with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=":0", silence_logs=logging.ERROR) as cluster:
        with Client(cluster) as c:
            c.wait_for_workers(2)
            yield c


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(5)
    Xa = rng.normal(size=(N, D))
    Xa[rng.random(Xa.shape) < 0.08] = np.nan  # missing values stay missing
    return Xa


@pytest.fixture(scope="module")
def model():
    """A regressor trained on a DataFrame: it carries feature names."""
    rng = np.random.default_rng(0)
    Xt = rng.normal(size=(400, D))
    y = np.sin(2 * Xt[:, 0]) + Xt[:, 1] * Xt[:, 2] + 0.5 * Xt[:, 3] - 0.3 * Xt[:, 5] ** 2
    return xgb.XGBRegressor(n_estimators=20, max_depth=4, learning_rate=0.3, nthread=2,
                            random_state=0).fit(pd.DataFrame(Xt, columns=NAMES), y)


@pytest.fixture(scope="module")
def ens(model):
    return pgexact.load(model)


@pytest.fixture(scope="module")
def forest():
    """A scikit-learn classifier without feature names (probability of class 1)."""
    rng = np.random.default_rng(1)
    Xt = rng.normal(size=(300, D))
    lab = (Xt[:, 0] + Xt[:, 1] * Xt[:, 4] > 0).astype(int)
    return RandomForestClassifier(n_estimators=8, max_depth=4, random_state=0).fit(Xt, lab)


@pytest.fixture(scope="module")
def per_row(X):
    rng = np.random.default_rng(9)
    return {
        "ranking": np.argsort(rng.normal(size=X.shape), axis=1),
        "attributions": rng.normal(size=X.shape),
        "mask": rng.random(X.shape) < 0.5,
    }


def _dask(a):
    return da.from_array(a, chunks=(CHUNKS[0],) + ((a.shape[1],) if a.ndim == 2 else ()))


# ------------------------------------------------------------------------------ pickling
def test_pickle_round_trip(ens, X):
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        blob = dumps(ens)
        back = loads(blob)
        assert isinstance(back, pgexact.TreeEnsemble)
        assert back is not ens and back._arena is not ens._arena
        assert (back.n_trees, back.n_nodes, back.n_leaves, back.n_features, back.feature_names,
                back.output, back.base_score) == (ens.n_trees, ens.n_nodes, ens.n_leaves,
                                                  ens.n_features, ens.feature_names, ens.output,
                                                  ens.base_score)
        assert np.array_equal(back.predict(X), ens.predict(X), equal_nan=True)
        rk = np.arange(D)
        assert np.array_equal(pgexact.pgi2(back, X, rk), pgexact.pgi2(ens, X, rk))
        assert np.array_equal(loads(dumps(back)).predict(X), ens.predict(X))
        assert len(blob) < 64 * ens.n_nodes + 8192  # compact: the arena's own bytes
    # the arena is validated on arrival
    state = ens.__getstate__()
    broken = pgexact.TreeEnsemble.__new__(pgexact.TreeEnsemble)
    with pytest.raises(ValueError):
        broken.__setstate__(dict(state, arena=state["arena"][:-9]))


def test_pickled_model_predicts_identically_in_a_worker_process(client, ens, forest, X):
    for e in (ens, pgexact.load(forest)):
        remote = client.submit(lambda m, x: (m.predict(x), m.n_nodes), e, X, pure=False).result()
        assert np.array_equal(remote[0], e.predict(X)) and remote[1] == e.n_nodes


# ------------------------------------------------------------------ equal to in-memory
def _cases(per_row):
    r, a, m = per_row["ranking"], per_row["attributions"], per_row["mask"]
    fixed = np.array([3, 0, 5, 1, 4, 2])
    return [
        ("pg2", (["bmi", "s2"],), {}),
        ("pg2", ([0, 3, 5],), {"sigma": np.linspace(0.1, 0.6, D)}),
        ("pg2", (m,), {"noise": "laplace"}),
        ("pg2", (_dask(m),), {"noise": "uniform"}),
        ("expected", (["age", "bp", "s3"],), {}),
        ("expected", (_dask(m),), {"sigma": 0.5}),
        ("pg2_curve", (fixed,), {}),
        ("pg2_curve", (r,), {"noise": "uniform"}),
        ("pg2_curve", (_dask(r),), {}),
        ("pgi2", (), {}),
        ("pgi2", (fixed,), {"sigma": 0.2}),
        ("pgi2", (_dask(r),), {}),
        ("pgi2", (), {"attributions": a}),
        ("pgi2", (), {"attributions": _dask(a), "noise": "laplace"}),
        ("pgu2", (), {}),
        ("pgu2", (r,), {}),
        ("pgu2", (), {"attributions": a[0]}),
        ("rank", (), {}),
        ("rank", (), {"sigma": np.linspace(0.6, 0.1, D), "noise": "uniform"}),
        ("pg2", ([0, 3, 5],), {"tol": 0.0}),
        ("pg2_curve", (r,), {"tol": 1e-6}),
        ("pgi2", (fixed,), {"tol": 1e-3}),
        ("pgu2", (), {"attributions": a, "tol": 0.1}),
        ("rank", (), {"tol": 1e-3}),
    ]


def _materialise(v):
    return v.compute(scheduler="sync") if isinstance(v, da.Array) else v


@pytest.mark.parametrize("case", range(24))
def test_equals_in_memory(client, model, X, per_row, case):
    name, args, kw = _cases(per_row)[case]
    dx = da.from_array(X, chunks=CHUNKS)
    lazy = getattr(pgd, name)(model, dx, *args, **kw)
    ref = getattr(pgexact, name)(model, X, *[_materialise(v) for v in args],
                                 **{k: _materialise(v) for k, v in kw.items()})
    assert isinstance(lazy, da.Array)
    wide = name in ("pg2_curve", "rank")
    assert lazy.chunks == ((CHUNKS[0], (D,)) if wide else (CHUNKS[0],))
    assert lazy.dtype == (np.int64 if name == "rank" else np.float64)
    got = lazy.compute()
    assert got.dtype == ref.dtype and got.shape == ref.shape
    assert np.array_equal(got, ref)


def test_a_call_of_one_row_keeps_its_bits(client, X):
    """A call of one row as a whole ranks on its own kernel (CatBoost's trees of 64 leaves: each
    step's sets in the lanes), which a block of a larger call does not: a one-row dask array
    keeps the in-memory call's bits, as a one-row block of a larger one keeps that call's."""
    from catboost import CatBoostRegressor

    from pgexact._core import exact as core_exact
    from pgexact._exact._kernels import block_of_call

    rng = np.random.default_rng(0)
    Xt = rng.normal(size=(300, D))
    cat = pgexact.load(CatBoostRegressor(iterations=12, depth=6, verbose=0, thread_count=1, random_seed=0,
                                         allow_writing_files=False).fit(Xt, Xt[:, 0] * Xt[:, 1] + Xt[:, 2]))
    assert cat.n_leaves == 64 * cat.n_trees and not core_exact.few_rows_on_walks(  # (not on the walks)
        cat._arena, core_exact.Perturbation(np.full(D, 0.3), np.zeros(D, np.uint8)), 1, core_exact.FewRowsCall.greedy)
    rows = np.nan_to_num(X)

    def as_block_of_more(row):
        with block_of_call(2):
            return pgexact.pgi2(cat, row)

    # a row whose PGI2 alone is not its bits as a block of a larger call (most rows agree to the bit)
    i = next(i for i in range(len(rows)) if pgexact.pgi2(cat, rows[i:i + 1]) != as_block_of_more(rows[i:i + 1]))
    one = rows[i:i + 1]
    for name in ("rank", "pgi2"):
        got = getattr(pgd, name)(cat, da.from_array(one, chunks=(1, D))).compute()
        assert np.array_equal(got, getattr(pgexact, name)(cat, one))
    lazy = pgd.pgi2(cat, da.from_array(np.nan_to_num(X[:9]), chunks=((8, 1), (D,))))
    assert np.array_equal(lazy.compute(), pgexact.pgi2(cat, np.nan_to_num(X[:9])))


def test_all_functions_with_a_forest_and_column_chunks(client, forest, X):
    """A model without names, X chunked by columns too (rechunked into one column chunk)."""
    dx = da.from_array(X, chunks=((50, 30), (2, 4)))
    ranking = np.arange(D)[::-1]
    lazies = [pgd.pg2(forest, dx, [1, 4]), pgd.expected(forest, dx, [0]),
              pgd.pg2_curve(forest, dx, ranking), pgd.pgi2(forest, dx),
              pgd.pgu2(forest, dx, ranking),
              pgd.rank(forest, dx)]
    refs = [pgexact.pg2(forest, X, [1, 4]), pgexact.expected(forest, X, [0]),
            pgexact.pg2_curve(forest, X, ranking), pgexact.pgi2(forest, X),
            pgexact.pgu2(forest, X, ranking), pgexact.rank(forest, X)]
    for lazy in lazies:
        assert lazy.chunks[0] == (50, 30)
    for got, ref in zip(dask.compute(*lazies), refs):
        assert np.array_equal(got, ref)


def test_unknown_row_chunks(client, ens, X):
    dx = da.from_array(X, chunks=CHUNKS)
    keep = X[:, 0] > -0.2
    sub = dx[dx[:, 0] > -0.2]
    assert np.isnan(sub.shape[0])
    got = pgd.pgi2(ens, sub, np.arange(D)).compute()
    assert np.array_equal(got, pgexact.pgi2(ens, X[keep], np.arange(D)))
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        pgd.pgi2(ens, sub, np.tile(np.arange(D), (int(keep.sum()), 1)))


# ---------------------------------------------------------------------- dask DataFrame
def test_dataframe_with_permuted_and_extra_columns(client, model, ens, X, per_row):
    order = [4, 1, 5, 0, 3, 2]
    pdf = pd.DataFrame(X[:, order], columns=[NAMES[j] for j in order])
    pdf.insert(2, "unused", np.arange(N, dtype=float))
    pdf["bp"] = pdf["bp"].astype("Float64")  # a nullable column: pd.NA is missing
    ddf = dd.from_pandas(pdf, npartitions=3)
    ranking = per_row["ranking"]

    got = pgd.pgi2(model, ddf, ranking)
    assert len(got.chunks[0]) == 3 and sum(got.chunks[0]) == N
    calls = [("pgi2", (ranking,)), ("pg2", (["s3", "age"],)), ("expected", (["bmi"],)),
             ("pg2_curve", (np.arange(D),)), ("rank", ()), ("pgu2", ())]
    lazies = [got] + [getattr(pgd, name)(ens, ddf, *args) for name, args in calls[1:]]
    # positions follow pdf's columns (unused one dropped): pdf position p is model feature order[p]
    to_model = np.asarray(order)
    for (name, args), value in zip(calls, dask.compute(*lazies)):
        assert np.array_equal(value, getattr(pgexact, name)(model, pdf, *args)), name
        model_args = [to_model[a] if isinstance(a, np.ndarray) else a for a in args]
        expect = getattr(pgexact, name)(model, X, *model_args)
        assert np.array_equal(to_model[value] if name == "rank" else value, expect), name
    # per-row attributions given as a dask DataFrame too
    att = dd.from_pandas(pd.DataFrame(per_row["attributions"]), npartitions=4)
    assert np.array_equal(pgd.pgu2(ens, ddf, attributions=att).compute(),
                          pgexact.pgu2(ens, pdf, attributions=per_row["attributions"]))


def test_dataframe_column_errors_are_eager(model):
    bad = dd.from_pandas(pd.DataFrame(np.zeros((10, D)), columns=NAMES[:-1] + ["zzz"]),
                         npartitions=2)
    with pytest.raises(ValueError, match="feature names"):
        pgd.pg2(model, bad, [0])
    text = pd.DataFrame(np.zeros((10, D)), columns=NAMES).astype({"bp": "string"})
    with pytest.raises(TypeError, match="numeric"):
        pgd.pg2(model, dd.from_pandas(text, npartitions=2), [0])


# -------------------------------------------------------------------- model shipped once
def _holds_model(value, arena_bytes):
    return arena_bytes in cloudpickle.dumps(value)


def _block_tasks(graph, name):
    return [v for k, v in graph.items() if isinstance(k, tuple) and k[0] == name]


def test_model_is_scattered_once_with_a_client(client, ens, X):
    arena = ens.__getstate__()["arena"]
    dx = da.from_array(X, chunks=CHUNKS)
    lazy = pgd.pgi2(ens, dx, np.arange(D))
    graph = dict(lazy.__dask_graph__())
    # no graph entry carries the model: every block refers to the one broadcast key
    assert not any(_holds_model(v, arena) for v in graph.values())
    tasks = _block_tasks(graph, lazy.name)
    assert len(tasks) == len(CHUNKS[0])
    keys = {k for t in tasks for k in t.dependencies if str(k).startswith("pgexact-model-")}
    assert len(keys) == 1 and all(keys <= t.dependencies for t in tasks)
    (key,) = keys
    assert set(client.who_has()[key]) == set(client.scheduler_info()["workers"])  # broadcast
    assert np.array_equal(lazy.compute(), pgexact.pgi2(ens, X, np.arange(D)))
    # a second array from the same model, while the first is alive, reuses the same copy
    again = pgd.pg2_curve(ens, dx, np.arange(D))
    assert {k for t in _block_tasks(dict(again.__dask_graph__()), again.name)
            for k in t.dependencies if str(k).startswith("pgexact-model-")} == keys
    assert np.array_equal(again.compute(), pgexact.pg2_curve(ens, X, np.arange(D)))

    def held(dask_worker, key=key):
        return [type(v).__name__ for k, v in dask_worker.data.items() if k == key]

    # one unpickled copy per worker process, under the one key
    assert list(client.run(held).values()) == [["TreeEnsemble"], ["TreeEnsemble"]]


def test_model_is_one_graph_key_without_a_client(client, ens, X, monkeypatch):
    monkeypatch.setattr(pgd, "_active_client", lambda: None)
    arena = ens.__getstate__()["arena"]
    dx = da.from_array(X, chunks=CHUNKS)
    lazy = pgd.pg2(ens, dx, ["bmi", "s1"])
    for graph in (dict(lazy.__dask_graph__()), dict(dask.optimize(lazy)[0].__dask_graph__())):
        holders = [k for k, v in graph.items() if _holds_model(v, arena)]
        assert holders == [pgd._model_key(ens)]
        node = graph[holders[0]]
        assert isinstance(node, DataNode) and isinstance(node.value, pgexact.TreeEnsemble)
        tasks = [v for v in graph.values() if isinstance(v, Task) and holders[0] in v.dependencies]
        assert len(tasks) == len(CHUNKS[0])
    # the same graph runs on the threaded scheduler and on the cluster
    ref = pgexact.pg2(ens, X, ["bmi", "s1"])
    assert np.array_equal(lazy.compute(scheduler="threads"), ref)
    assert np.array_equal(client.compute(lazy).result(), ref)


# ------------------------------------------------------------------------ eager checks
def test_arguments_are_validated_on_the_client(model, ens, X):
    dx = da.from_array(X, chunks=CHUNKS)
    bad_rank = np.tile(np.arange(D), (N, 1))
    bad_rank[7, :2] = 0
    cases = [
        (ValueError, "sigma", lambda: pgd.pg2(model, dx, [0], sigma=-1.0)),
        (ValueError, "sigma", lambda: pgd.rank(model, dx, sigma=np.ones(D + 1))),
        (ValueError, "noise", lambda: pgd.pgi2(model, dx, noise="cauchy")),
        (ValueError, "features", lambda: pgd.expected(model, dx, ["nope"])),
        (ValueError, "features", lambda: pgd.pg2(model, dx, np.ones((N + 1, D), bool))),
        (ValueError, "ranking", lambda: pgd.pg2_curve(model, dx, [0, 0, 1, 2, 3, 4])),
        (ValueError, "row 7", lambda: pgd.pgu2(model, dx, bad_rank)),
        (ValueError, "ranking", lambda: pgd.pgi2(model, dx, _dask(bad_rank)[:50])),
        (ValueError, "either", lambda: pgd.pgi2(model, dx, np.arange(D), attributions=X)),
        (ValueError, "attributions", lambda: pgd.pgi2(model, dx, attributions=X[:, :3])),
        (ValueError, "n_jobs", lambda: pgd.pgi2(model, dx, n_jobs=0)),
        (ValueError, "output", lambda: pgd.pgi2(ens, dx, output=1)),
        (ValueError, "columns", lambda: pgd.pgi2(model, dx[:, :3])),
        (ValueError, "2-D", lambda: pgd.pgi2(model, dx[:, 0])),
        (TypeError, "dask", lambda: pgd.pgi2(model, X)),
        (TypeError, "model", lambda: pgd.pgi2(object(), dx)),
    ]
    for exc, match, call in cases:
        with pytest.raises(exc, match=match):
            call()


def test_n_jobs_defaults_to_one_per_task():
    for name in FUNCS:
        assert inspect.signature(getattr(pgd, name)).parameters["n_jobs"].default == 1
        in_memory = inspect.signature(getattr(pgexact, name)).parameters
        ours = inspect.signature(getattr(pgd, name)).parameters
        assert list(ours) == list(in_memory)  # the same arguments, in the same order
