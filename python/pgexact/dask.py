"""The exact metrics over a Dask cluster: rows are independent, so each row block is one task.

>>> import dask.array as da
>>> import pgexact.dask
>>> X = da.from_array(X_numpy, chunks=(10_000, -1))
>>> scores = pgexact.dask.pgi2(model, X, ranking, sigma=0.3)   # lazy (n,) float64
>>> scores.compute()                   # == pgexact.pgi2(model, X_numpy, ranking, sigma=0.3)

Every function takes the same arguments as its in-memory counterpart (:func:`pgexact.pg2`,
:func:`pgexact.pg2_curve`, :func:`pgexact.pgi2`, :func:`pgexact.pgu2`, :func:`pgexact.rank`,
:func:`pgexact.expected`) except that ``X`` is a 2-D ``dask.array.Array`` or a
``dask.dataframe.DataFrame``, and returns a lazy dask array chunked like the rows of X:
``(n,)`` float64, ``(n, d)`` float64 for :func:`pg2_curve`, ``(n, d)`` int64 for :func:`rank`.
Each row block is evaluated by calling the in-memory function on it, so the computed values
are identical (bit for bit) to the in-memory results.

* The model is loaded and the arguments are validated once, eagerly, on the client: a bad
  ``sigma``, feature name, ranking or ``output`` raises here, not later on a worker.
* The :class:`~pgexact.TreeEnsemble` is shipped to the workers once, not once per block: with a
  ``distributed`` client active it is broadcast with ``client.scatter(..., broadcast=True)`` and
  every block task refers to that one key; otherwise it sits in the graph as a single key
  (``pgexact-model-<token>``) that every block task depends on. It pickles as its compact,
  validated arena bytes.
* X may be chunked along columns; it is rechunked to one column chunk. A dask DataFrame is
  matched to the model's feature names like a pandas DataFrame (extra columns dropped), then
  converted with ``to_dask_array(lengths=True)`` (which computes the partition lengths); each
  block is read as a pandas DataFrame again, so positions in ``features``, ``ranking``,
  ``attributions`` and ``sigma`` follow X's columns exactly as in memory (``docs/columns.md``).
* Per-row arguments, a ``(n, d)`` ``ranking``, ``attributions`` or boolean ``features`` mask
  (numpy or dask), are rechunked to X's row chunks; ``(d,)`` ones are shared by every block.
* ``n_jobs`` (OpenMP threads inside each block task) defaults to 1, not "all cores": Dask
  workers already run one task per worker thread, so more threads per task would oversubscribe
  the cores. Raise it only for workers with one thread and several cores each.

* ``progress`` is there for the same arguments as in memory, but the arrays are lazy: watch
  their computation with dask's own diagnostics (``dask.diagnostics.ProgressBar`` locally,
  ``distributed.progress`` or the dashboard on a cluster); ``progress=True`` says so in a
  ValueError. The blocks show no bars of their own.

Build the arrays while the ``Client`` that will compute them is active (the scattered model
belongs to that client).
"""

from __future__ import annotations

import pickle
import sys
import uuid
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

import numpy as np

import dask.array as da
from dask.base import is_dask_collection, tokenize
from dask.delayed import delayed

from ._exact import _api, _moments
from ._models._adapters import load
from ._models._outputs import refuse_all
from ._optional import optional
from ._exact._kernels import block_of_call
from ._exact._progress import check_progress
from ._data._columns import ColumnOrder, identity_order
from ._data._features import as_attributions, as_feature_mask, as_ranking
from ._data._rows import as_matrix, as_matrix_ordered
from ._data._scalars import as_n_jobs
from ._exact._perturbation import as_noise
from ._exact._tolerance import as_tol
from .ensemble import TreeEnsemble

__all__ = ["pg2", "pg2_curve", "pgi2", "pgu2", "rank", "expected"]


# ----------------------------------------------------------------------------- the workers


def _in_memory(name: str) -> Callable[..., np.ndarray]:
    functions: Dict[str, Callable[..., np.ndarray]] = {
        "pg2": _api.pg2,
        "pg2_curve": _api.pg2_curve,
        "pgi2": _api.pgi2,
        "pgu2": _api.pgu2,
        "rank": _api.rank,
        "expected": _moments.expected,
    }
    return functions[name]


def _run_block(ens: TreeEnsemble, x: np.ndarray, *row_args: np.ndarray, metric: str,
               row_names: Tuple[str, ...], options: Dict[str, Any],
               columns: Optional[List[str]] = None, n_rows: Optional[int] = None) -> np.ndarray:
    """One row block: the in-memory function on the block and its slice of the per-row args.

    ``columns``: a dask DataFrame's used column names in its own order; the block becomes a
    pandas DataFrame again so that names and positions are read exactly as in memory.
    ``n_rows``: the rows of the whole array (None: unknown); the block takes the kernel the
    in-memory call on all of them takes, so that its rows get that call's bits.
    """
    kw = dict(options)
    kw.update(zip(row_names, row_args))
    rows: Any = x
    if columns is not None:
        import pandas as pd

        rows = pd.DataFrame(x, columns=columns)
    with block_of_call(n_rows):
        return _in_memory(metric)(ens, rows, **kw)


def _frame_to_float64(df: Any, ens: Optional[TreeEnsemble] = None) -> Any:
    """A pandas partition as float64 columns (pd.NA -> NaN; category columns coded as the
    model's library codes them), as ``as_matrix`` converts it, in the partition's own order."""
    import pandas as pd

    if ens is not None and any(isinstance(t, pd.CategoricalDtype) for t in df.dtypes):
        values, order = as_matrix_ordered(df, ens)
        return pd.DataFrame(order.columns_out(values), index=df.index, columns=df.columns)
    try:
        values = df.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"X: DataFrame columns must be numeric ({exc})") from None
    return pd.DataFrame(values, index=df.index, columns=df.columns)


# ------------------------------------------------------------------------------ the client


def _is_dask_dataframe(X: Any) -> bool:
    return (is_dask_collection(X) and hasattr(X, "columns") and hasattr(X, "map_partitions")
            and hasattr(X, "to_dask_array"))


def _active_client() -> Any:
    """The default ``distributed`` client, if one is active (and synchronous), else None."""
    if "distributed" not in sys.modules:  # no client can exist; skip the import
        return None
    distributed = optional("distributed")
    if distributed is None:  # pragma: no cover - dask without distributed
        return None
    try:
        client = distributed.default_client()
    except ValueError:
        return None
    if getattr(client, "asynchronous", False) or getattr(client, "status", "running") != "running":
        return None
    return client


def _model_key(ens: TreeEnsemble) -> str:
    return "pgexact-model-" + tokenize(pickle.dumps(ens, protocol=pickle.HIGHEST_PROTOCOL))


# live broadcast futures, by (client id, model key): arrays built from the same model while an
# earlier one is alive share its copy on the workers instead of broadcasting it again
_SCATTERED: "weakref.WeakValueDictionary[Tuple[str, str], Any]" = weakref.WeakValueDictionary()


def _model_handle(ens: TreeEnsemble) -> Any:
    """The model as ONE graph key: a broadcast future with a client, else a delayed literal."""
    key = _model_key(ens)
    client = _active_client()
    if client is None:
        return delayed(ens, name=key, pure=True)
    cache_key = (client.id, key)
    future = _SCATTERED.get(cache_key)
    if future is not None and future.status == "finished":
        return future
    # A fresh key each broadcast: scattering again under a key whose previous future is being
    # released races with that release and can lose the data ("lost dependencies").
    fresh = f"{key}-{uuid.uuid4().hex[:12]}"
    future = client.scatter({fresh: ens}, broadcast=True)[fresh]
    _SCATTERED[cache_key] = future
    return future


def _check_numeric_columns(meta: Any) -> None:
    """Reject string / datetime columns eagerly (object columns are converted per block)."""
    from pandas.api import types

    for col, dtype in meta.dtypes.items():
        if not (types.is_numeric_dtype(dtype) or types.is_bool_dtype(dtype)
                or types.is_object_dtype(dtype) or isinstance(dtype, types.CategoricalDtype)):
            raise TypeError(
                f"X: DataFrame columns must be numeric; column {col!r} has dtype {dtype}"
            )


def _as_dask_matrix(X: Any, ens: TreeEnsemble) -> Tuple[da.Array, Optional[List[str]], ColumnOrder]:
    """X as a 2-D dask array with the d used columns in one chunk, in X's own order.

    For a dask DataFrame, also the names of those columns (the blocks become pandas frames
    again) and how they map to the model's features.
    """
    d = ens.n_features
    names: Optional[List[str]] = None
    order = identity_order(ens.feature_names)
    if _is_dask_dataframe(X):
        meta = X._meta
        _, order = as_matrix_ordered(meta, ens)  # the in-memory name / column-count checks
        _check_numeric_columns(meta)
        if order.names is not None and len(order.names) == d:
            names = list(order.names)
            wanted = set(names)
            X = X[[c for c in X.columns if str(c) in wanted]]
        meta_out = _frame_to_float64(X._meta.astype({c: np.float64 for c in X._meta.columns}))
        X = X.map_partitions(_frame_to_float64, ens, meta=meta_out).to_dask_array(lengths=True)
    elif is_dask_collection(X) and not isinstance(X, da.Array):
        raise TypeError(
            f"X: expected a 2-D dask.array.Array or a dask DataFrame, got {type(X).__name__}"
        )
    elif not isinstance(X, da.Array):
        raise TypeError(
            f"X: expected a dask.array.Array or a dask DataFrame, got {type(X).__name__}; "
            "for numpy arrays or pandas DataFrames use the in-memory pgexact functions"
        )
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-D array of shape (n_rows, {d}), got {X.ndim}-D")
    if X.shape[1] != d:
        raise ValueError(f"X: expected {d} columns (the model's features), got {X.shape[1]}")
    as_matrix(np.empty((0, d), dtype=X.dtype), ens)  # dtype checks (complex, strings)
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: -1})
    return cast(da.Array, X), names, order


class _Rows:
    """Collects the per-row arguments, chunked like X's rows, and the shared ones."""

    def __init__(self, X: da.Array, d: int) -> None:
        self.X, self.d = X, d
        self.n = X.shape[0]
        self.names: List[str] = []
        self.arrays: List[da.Array] = []
        self.shared: Dict[str, Any] = {}

    def _known(self, name: str) -> int:
        if np.isnan(self.n):
            raise ValueError(
                f"{name}: per-row values need X's row chunk sizes; call X.compute_chunk_sizes() "
                "(or to_dask_array(lengths=True)) first"
            )
        return int(self.n)

    def add_dask(self, name: str, value: Any) -> bool:
        """A dask argument: (d,) is computed and shared, (n, d) is rechunked to X's rows."""
        if _is_dask_dataframe(value):
            value = value.to_dask_array(lengths=True)
        if not is_dask_collection(value):
            return False
        if not isinstance(value, da.Array):
            raise TypeError(f"{name}: expected a numpy or dask array, got {type(value).__name__}")
        if value.ndim == 1:
            self.shared[name] = value.compute()
            return True
        n = self._known(name)
        if value.ndim != 2 or value.shape != (n, self.d):
            raise ValueError(
                f"{name}: expected shape ({self.d},) or ({n}, {self.d}), got {value.shape}"
            )
        self.names.append(name)
        self.arrays.append(value.rechunk((self.X.chunks[0], (self.d,))))
        return True

    def add_numpy(self, name: str, arr: np.ndarray) -> None:
        """A validated (n, d) numpy argument, split into X's row chunks."""
        self.names.append(name)
        self.arrays.append(da.from_array(arr, chunks=(self.X.chunks[0], (self.d,))))


def _features(rows: _Rows, ens: TreeEnsemble, features: Any, order: ColumnOrder) -> None:
    if rows.add_dask("features", features):
        return
    n = -1 if np.isnan(rows.n) else int(rows.n)
    if np.ndim(features) == 2:
        n = rows._known("features")
    mask = as_feature_mask(features, ens, n, order)  # raises for bad names / indices / shapes
    mask = order.columns_out(mask)  # the blocks read masks in X's column order
    if mask.ndim == 2:
        rows._known("features")
        rows.add_numpy("features", mask.astype(bool))
    else:
        rows.shared["features"] = features


def _ranking(rows: _Rows, ranking: Any, name: str = "ranking") -> None:
    if rows.add_dask(name, ranking):
        return
    d = rows.d
    n = -1 if np.isnan(rows.n) else int(rows.n)
    if np.ndim(ranking) == 2:
        n = rows._known(name)
    rk = as_ranking(ranking, d, n, name)
    if rk.ndim == 2:
        rows.add_numpy(name, rk)
    else:
        rows.shared[name] = rk


def _attributions(rows: _Rows, attributions: Any, order: ColumnOrder) -> None:
    if rows.add_dask("attributions", attributions):
        return
    if hasattr(attributions, "values") and hasattr(attributions, "base_values"):
        attributions = attributions.values  # a shap.Explanation
    attributions = order.in_x_order().by_name(attributions, "attributions")  # X's column order
    d = rows.d
    if np.ndim(attributions) == 1:
        rows.shared["attributions"] = as_attributions(attributions, d, 1)[0]
        return
    n = rows._known("attributions")
    rows.add_numpy("attributions", as_attributions(attributions, d, n))


#: the functions with a ``tol`` (:mod:`pgexact._exact._tolerance`)
_TAKES_TOL = ("pg2", "pg2_curve", "pgi2", "pgu2", "rank")


def _build(func: str, model: Any, X: Any, *, sigma: Any, noise: Any, n_jobs: Any,
           output: Optional[int], features: Any = None, ranking: Any = None,
           attributions: Any = None, uses: Tuple[str, ...] = (),
           progress: Optional[bool] = None, tol: Optional[float] = None) -> da.Array:
    if check_progress(progress):
        raise ValueError("progress: a lazy dask array has no bar of its own; watch its computation "
                         "with dask's diagnostics instead: `with dask.diagnostics.ProgressBar(): "
                         "result.compute()`, or `distributed.progress(result.persist())` on a "
                         "cluster")
    refuse_all(output, f"pgexact.dask.{func}")
    ens = load(model, output=output)
    d = ens.n_features
    as_n_jobs(n_jobs)
    Xd, columns, order = _as_dask_matrix(X, ens)
    as_noise(noise, sigma, ens, order)
    rows = _Rows(Xd, d)
    if "features" in uses:
        _features(rows, ens, features, order)
    if "ranking" in uses:
        if ranking is not None and attributions is not None:
            raise ValueError("ranking: give either ranking or attributions, not both")
        if ranking is not None or func == "pg2_curve":
            _ranking(rows, ranking)
        elif attributions is not None:
            _attributions(rows, attributions, order)
    # no bars inside the tasks: dask's diagnostics show the blocks
    options = dict(rows.shared, sigma=sigma, noise=noise, n_jobs=n_jobs, progress=False)
    if func in _TAKES_TOL:
        options["tol"] = as_tol(tol)  # checked here, before any task runs
    wide = func in ("pg2_curve", "rank")
    dtype = np.int64 if func == "rank" else np.float64
    return cast(da.Array, da.map_blocks(
        _run_block,
        _model_handle(ens),
        Xd,
        *rows.arrays,
        metric=func,
        row_names=tuple(rows.names),
        options=options,
        columns=columns,
        n_rows=None if np.isnan(Xd.shape[0]) else int(Xd.shape[0]),
        token=f"pgexact-{func}",
        dtype=dtype,
        chunks=(Xd.chunks[0], (d,)) if wide else (Xd.chunks[0],),
        drop_axis=None if wide else 1,
        meta=np.empty((0, 0) if wide else (0,), dtype=dtype),
    ))


# ----------------------------------------------------------------------------- public API



def pg2(model: Any, X: Any, features: Any, *, sigma: Any = 0.3, noise: Any = "normal",
        n_jobs: Optional[int] = 1, output: Optional[int] = None,
        progress: Optional[bool] = None, tol: Optional[float] = None) -> da.Array:
    """Lazy :func:`pgexact.pg2` over the row blocks of a dask array / DataFrame, (n,) float64."""
    return _build("pg2", model, X, features=features, sigma=sigma, noise=noise, n_jobs=n_jobs,
                  output=output, uses=("features",), progress=progress, tol=tol)


def pg2_curve(model: Any, X: Any, ranking: Any, *, sigma: Any = 0.3, noise: Any = "normal",
              n_jobs: Optional[int] = 1, output: Optional[int] = None,
              progress: Optional[bool] = None, tol: Optional[float] = None) -> da.Array:
    """Lazy :func:`pgexact.pg2_curve`: PG² of every prefix of the ranking, (n, d) float64."""
    return _build("pg2_curve", model, X, ranking=ranking, sigma=sigma, noise=noise,
                  n_jobs=n_jobs, output=output, uses=("ranking",), progress=progress, tol=tol)


def pgi2(model: Any, X: Any, ranking: Any = None, *, attributions: Any = None, sigma: Any = 0.3,
         noise: Any = "normal", n_jobs: Optional[int] = 1, output: Optional[int] = None,
         progress: Optional[bool] = None, tol: Optional[float] = None) -> da.Array:
    """Lazy :func:`pgexact.pgi2`, (n,) float64; greedy ranking when neither argument is given."""
    return _build("pgi2", model, X, ranking=ranking, attributions=attributions, sigma=sigma,
                  noise=noise, n_jobs=n_jobs, output=output, uses=("ranking",), progress=progress,
                  tol=tol)


def pgu2(model: Any, X: Any, ranking: Any = None, *, attributions: Any = None, sigma: Any = 0.3,
         noise: Any = "normal", n_jobs: Optional[int] = 1, output: Optional[int] = None,
         progress: Optional[bool] = None, tol: Optional[float] = None) -> da.Array:
    """Lazy :func:`pgexact.pgu2`, (n,) float64; greedy ranking when neither argument is given."""
    return _build("pgu2", model, X, ranking=ranking, attributions=attributions, sigma=sigma,
                  noise=noise, n_jobs=n_jobs, output=output, uses=("ranking",), progress=progress,
                  tol=tol)


def rank(model: Any, X: Any, *, sigma: Any = 0.3, noise: Any = "normal",
         n_jobs: Optional[int] = 1, output: Optional[int] = None,
         progress: Optional[bool] = None, tol: Optional[float] = None) -> da.Array:
    """Lazy :func:`pgexact.rank`: the greedy PG² ranking per row, (n, d) int64."""
    return _build("rank", model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                  progress=progress, tol=tol)


def expected(model: Any, X: Any, features: Any, *, sigma: Any = 0.3, noise: Any = "normal",
             n_jobs: Optional[int] = 1, output: Optional[int] = None,
        progress: Optional[bool] = None) -> da.Array:
    """Lazy :func:`pgexact.expected`: ``E[f(x')]`` with ``features`` perturbed, (n,) float64."""
    return _build("expected", model, X, features=features, sigma=sigma, noise=noise,
                  n_jobs=n_jobs, output=output, uses=("features",), progress=progress)
