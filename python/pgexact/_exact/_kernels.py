"""The kernel seam: every call into the C++ kernels (:mod:`pgexact._core.exact`) is here.

A public function validates its arguments once, into a :class:`PreparedCall`
(:func:`pgexact._exact._prepare.prepare_call`): the ensemble, the rows as a C-contiguous float64
array, the perturbation of every feature and the thread count. The perturbation is bound once
per call as the extension's :class:`Perturbation` (validated by the C++ core when it is built)
and handed as it is to every kernel the call runs; :class:`Kernel` says which exact kernel
computes PG² (the default, ``Kernel.pairs``, is the fastest). The kernels' wrappers below trust
what the prepared call holds, so nothing is checked twice on the way down, and no other module
needs to know the extension's positional argument order.

The model-side entry points (the parsers and ``Arena``) are the other seam,
:mod:`pgexact._models._parsers`.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional, Tuple

import numpy as np

from .. import _core
from .._data._columns import ColumnOrder, identity_order
from .._data._features import as_feature_mask, as_ranking, ranking_from_attributions
from ._perturbation import NOISE_FAMILIES, KernelNoise
from ._progress import Progress
from ._tolerance import DEFAULT_TOL

if TYPE_CHECKING:  # pragma: no cover
    from ..ensemble import TreeEnsemble

__all__ = ["Kernel", "Perturbation", "PreparedCall", "bind", "block_of_call", "clear_pair_store",
           "pair_store_info", "pair_store_paused", "set_pair_store_budget"]

#: which exact kernel computes PG²: ``pairs`` (the default), ``leaf_pairs``, ``walks``,
#: ``separate_walks``, ``reference`` (the paper's unpruned pair walk; the values agree up to
#: rounding)
Kernel = _core.exact.Kernel
#: the perturbation of every feature as the kernels read it (built by :func:`bind`)
Perturbation = _core.exact.Perturbation
_FewRowsCall = _core.exact.FewRowsCall

# The rows of the whole call that the calls made in this context are blocks of (None: each call
# is a whole call). ``Kernel.pairs`` runs calls of one or two rows on the walks where those are
# faster (kernels.hpp's few_rows_on_walks: a one-row set or curve on the union walk, but for a
# curve of CatBoost's depth-6 trees; a greedy ranking of few rows on a union walk per row and
# step); a block of a larger call must take the kernel that call takes, so that its rows get
# the same bits.
_WHOLE_CALL_ROWS: ContextVar[Optional[int]] = ContextVar("pgexact_whole_call_rows", default=None)


@contextmanager
def block_of_call(n_rows: Optional[int]) -> Iterator[None]:
    """Calls made inside are blocks of a call on ``n_rows`` rows (:mod:`pgexact.dask`).

    Parameters
    ----------
    n_rows : int or None
        The rows of the whole call; None when unknown (a dask array whose chunk sizes are not
        known): the blocks then take the leaf pairs, as a call of many rows does.
    """
    token = _WHOLE_CALL_ROWS.set(-1 if n_rows is None else int(n_rows))
    try:
        yield
    finally:
        _WHOLE_CALL_ROWS.reset(token)


def bind(noise: KernelNoise) -> Perturbation:
    """The validated :class:`KernelNoise` bound once as the extension's :class:`Perturbation`."""
    return _core.exact.Perturbation(noise.sigma, noise.family, noise.change, noise.cat_begin,
                                    noise.cat_value, noise.cat_weight)


def _check_noise_codes() -> None:
    """The Python noise table must match the C++ enum.

    The codes cross the seam as bare integers, so a mismatch would silently change the noise
    family; the extension publishes its enum as ``_core.exact.NOISE_FAMILIES`` (name -> code).
    """
    for name, code in dict(_core.exact.NOISE_FAMILIES).items():
        if NOISE_FAMILIES.get(str(name).lower(), code) != int(code):
            raise ImportError(f"pgexact: noise code table out of sync with the C++ core for "
                              f"{name!r}: Python {NOISE_FAMILIES.get(str(name).lower())}, "
                              f"C++ {int(code)}; rebuild the extension")


_check_noise_codes()


class PreparedCall:
    """One validated call into the exact kernels.

    Parameters
    ----------
    ensemble : TreeEnsemble
        The model, one output column.
    X : numpy.ndarray
        ``(n, d)`` C-contiguous float64 rows in the model's feature order.
    noise : KernelNoise
        The perturbation of every feature in the model's order
        (:func:`pgexact._exact._perturbation.as_noise`).
    threads : int
        OpenMP threads, 0 for all cores.
    order : ColumnOrder, optional
        How the columns of the user's ``X`` map to the model's features: the user's positional
        arguments follow ``X`` (:mod:`pgexact._data._columns`); None when they are the model's.
    progress : Progress, optional
        The call's bar and slow-call warning: each kernel run is one of its stages. None: no
        bar and no warning (internal calls).
    perturbation : Perturbation, optional
        ``noise`` already bound (:func:`bind`); None binds it here, once for the call.

    Build it with :func:`pgexact._exact._prepare.prepare_call`, which validates everything once.
    """

    __slots__ = ("ensemble", "X", "noise", "perturbation", "threads", "order", "progress")

    def __init__(self, ensemble: "TreeEnsemble", X: np.ndarray, noise: KernelNoise,
                 threads: int, order: Optional[ColumnOrder] = None,
                 progress: Optional[Progress] = None,
                 perturbation: Optional[Perturbation] = None) -> None:
        self.ensemble = ensemble
        self.X = X
        self.noise = noise
        self.perturbation = perturbation if perturbation is not None else bind(noise)
        self.threads = threads
        self.order = order if order is not None else identity_order(ensemble.feature_names)
        self.progress = progress if progress is not None else \
            Progress(False, X.shape[0], "pgexact", warn=False)

    # -- shape and sub-calls -------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features ``d``."""
        return int(self.ensemble.n_features)

    def rows(self, start: int, stop: int) -> "PreparedCall":
        """The same call on rows ``start:stop`` (a view: no copy, no new validation)."""
        return PreparedCall(self.ensemble, self.X[start:stop], self.noise, self.threads, self.order,
                            self.progress, self.perturbation)

    @property
    def sigma(self) -> np.ndarray:
        """``(d,)`` standard deviations of the additive noise (1.0 where a feature has none)."""
        return self.noise.sigma

    def _stage(self) -> Callable[[int, int], None]:
        """The progress callback of the next kernel run."""
        return self.progress.stage()

    def greedy_on_walks(self) -> bool:
        """Whether the greedy ranking of these rows runs on the union walks (one or two rows;
        of CatBoost's complete trees one row of depth 4, none of depth 5 or 6: kernels.hpp's
        few_rows_on_walks)."""
        return self._kernel(Kernel.pairs, _FewRowsCall.greedy) == Kernel.pairs and \
            bool(_core.exact.few_rows_on_walks(self.ensemble._arena, self.perturbation, self.n_rows,
                                               _FewRowsCall.greedy))

    def planning_share(self) -> float:
        """The share of a leaf-pair ``pg2`` pass on these rows that plans its projected tree
        pairs (once per call: a greedy ranking plans them once for all its passes)."""
        return float(_core.exact.pg2_planning_share(self.ensemble._arena, self.perturbation, self.n_rows))

    def _kernel(self, kernel: Kernel, call: Any) -> Kernel:
        """``kernel``, or inside :func:`block_of_call` the one the whole call would run."""
        whole = _WHOLE_CALL_ROWS.get()
        if whole is None or kernel != Kernel.pairs:
            return kernel
        if whole == self.n_rows:
            return kernel  # the block is the whole call (one row ranks its sets in the lanes)
        if whole >= 0 and _core.exact.few_rows_on_walks(self.ensemble._arena, self.perturbation,
                                                        whole, call):
            return kernel  # the block has at most the whole call's rows: the same choice
        return Kernel.leaf_pairs

    # -- the user's positional arguments (X's order) -> the model's ------------------------------
    def feature_mask(self, features: Any) -> np.ndarray:
        """``features`` (positions in X, names or a boolean mask) as the kernels' uint8 mask."""
        return as_feature_mask(features, self.ensemble, self.n_rows, self.order)

    def ranking(self, ranking: Any, name: str = "ranking") -> np.ndarray:
        """A ranking of positions in X, validated, as the model's int64 feature indices."""
        return self.order.ranking(as_ranking(ranking, self.n_features, self.n_rows, name))

    def attribution_ranking(self, attributions: Any) -> np.ndarray:
        """The ranking of attributions whose columns follow X, as the model's indices."""
        return ranking_from_attributions(attributions, self.n_features, self.n_rows, self.order)

    # -- the kernels ---------------------------------------------------------------------------
    def pg2(self, mask: np.ndarray, *, kernel: Kernel = Kernel.pairs,
            tol: float = DEFAULT_TOL, calibration: bool = False) -> np.ndarray:
        """Exact PG² for a validated uint8 mask, ``(d,)`` or ``(n, d)``; ``(n,)`` float64.

        ``kernel=Kernel.reference`` runs the paper's unpruned O(n²) pair walk (kept for
        benchmarks and as a check on the fast kernel); the values agree up to rounding.
        ``tol``: a validated tolerance (:mod:`pgexact._exact._tolerance`). ``calibration``:
        a run :func:`pgexact.estimate` stops and discards, whose leaf-pair sweeps take each
        tile's second trees from halfway (``run_control.hpp``): not for results.
        """
        return _core.exact.pg2(self.ensemble._arena, self.X, mask, self.perturbation, self.threads,
                               self._kernel(kernel, _FewRowsCall.set), progress=self._stage(),
                               tol=tol, calibration=calibration)

    def pg2_curve(self, ranking: np.ndarray, *, kernel: Kernel = Kernel.pairs,
                  tol: float = DEFAULT_TOL, calibration: bool = False) -> np.ndarray:
        """PG² of every top-k prefix of a validated int64 ranking, ``(n, d)`` (``calibration``:
        as in :meth:`pg2`)."""
        return _core.exact.pg2_curve(self.ensemble._arena, self.X, ranking, self.n_features,
                                     self.perturbation, self.threads,
                                     self._kernel(kernel, _FewRowsCall.curve),
                                     progress=self._stage(), tol=tol, calibration=calibration)

    def greedy_rank(self, *, kernel: Kernel = Kernel.pairs, tol: float = DEFAULT_TOL,
                    calibration: bool = False) -> Tuple[np.ndarray, np.ndarray]:
        """The greedy PG² ranking ``(n, d)`` int64 and the PG² of its prefixes ``(n, d)``; the
        prefixes within ``tol``, the ranking the unpruned one whatever ``tol`` is
        (``calibration``: as in :meth:`pg2`)."""
        return _core.exact.greedy_rank(self.ensemble._arena, self.X, self.perturbation, self.threads,
                                       self._kernel(kernel, _FewRowsCall.greedy),
                                       progress=self._stage(), tol=tol, calibration=calibration)

    def expected(self, mask: np.ndarray) -> np.ndarray:
        """Exact ``E[f(x')]`` for a validated uint8 mask, ``(n,)``."""
        return _core.exact.expected(self.ensemble._arena, self.X, mask, self.perturbation, self.threads,
                                    progress=self._stage())

    def first_moments(self) -> np.ndarray:
        """``E[delta_j f(x + delta)]`` per feature with every feature perturbed, ``(n, d)``."""
        return _core.exact.first_moments(self.ensemble._arena, self.X, self.perturbation, self.threads,
                                         progress=self._stage())


# -- the pair store (cpp/bindings/register_pair_store.cpp), public as pgexact's pair cache ------
def pair_store_info() -> Dict[str, int]:
    """What the store of leaf-pair lists holds (see :mod:`pgexact._exact._pair_cache`)."""
    return {k: int(v) for k, v in _core.exact.pair_store_info().items()}


def set_pair_store_budget(max_bytes: int) -> None:
    """Sets the store's budget in bytes (validated by the caller)."""
    _core.exact.set_pair_store_budget(max_bytes)


def clear_pair_store() -> None:
    """Drops every kept list and resets the counters."""
    _core.exact.clear_pair_store()


@contextmanager
def pair_store_paused() -> Iterator[None]:
    """Calls inside neither read the store nor add to it (pgexact.estimate's calibrations: a
    call timed as on a fresh model, the store left as it was; pair_store.hpp)."""
    _core.exact.pause_pair_store(True)
    try:
        yield
    finally:
        _core.exact.pause_pair_store(False)
