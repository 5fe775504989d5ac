"""The one validation pass of the exact functions: model, rows, sigma, noise and threads.

Every public function that calls the exact kernels starts with :func:`prepare_call` and then
uses the :class:`~pgexact._exact._kernels.PreparedCall` it returns, so each argument is checked once
and the C++ core receives exactly the arrays it expects.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from .._models._adapters import load_outputs
from ._kernels import PreparedCall
from .._models._outputs import refuse_all
from .._models._pipeline import unwrap
from ._progress import Progress
from .._data._rows import as_matrix_ordered
from .._data._scalars import as_n_jobs
from ._perturbation import as_noise, warn_large_sigma
from ..ensemble import TreeEnsemble

__all__ = ["calls_for", "prepare_call", "prepare_calls"]


def prepare_calls(model: Any, X: Any, *, sigma: Any = 0.3, noise: Any = "normal",
                  n_jobs: Optional[int] = None, output: Any = None,
                  progress: Optional[bool] = False, desc: str = "pgexact",
                  stages: int = 1) -> List[PreparedCall]:
    """Load ``model`` and validate ``X``, ``sigma``, ``noise`` and ``n_jobs`` against it.

    Parameters
    ----------
    model : model object, path or TreeEnsemble
        Anything :func:`pgexact.load` accepts, or a scikit-learn Pipeline ending in one: its
        earlier steps transform ``X`` and its last step is evaluated (:mod:`pgexact._models._pipeline`).
    X : array_like or DataFrame
        The rows, ``(n, d)``; DataFrame columns are matched by name.
    sigma : float or array_like, default 0.3
        Standard deviation of the noise, scalar or ``(d,)`` in X's column order (a named
        Series is matched by name; see ``docs/columns.md``).
    noise : str, NoiseFamily, Categorical or sequence, default "normal"
        The perturbation, for all features or one per feature (None: unperturbed); see
        :mod:`pgexact.noise`.
    n_jobs : int, optional
        OpenMP threads; None or -1 for all cores.
    output : int, class label, ClassLabel, ClassPosition or "all", optional
        The model's output column (see :func:`pgexact.load`); ``"all"``: every output.
    progress : bool or None, default False
        The user's ``progress`` (:mod:`pgexact._exact._progress`); the caller closes the bar with
        ``with calls[0].progress:`` (the calls share it).
    desc : str
        The bar's label and the warning's subject: the public function's name.
    stages : int, default 1
        Kernel runs the call makes one after the other, per output.

    Returns
    -------
    list of PreparedCall
        One validated call per selected output (one unless ``output="all"``), ready for the
        kernels. The model is parsed once and the rows validated once; each output's call is
        the one ``output=k`` alone would make, so its results are bit for bit the same.
    """
    model, X = unwrap(model, X)  # a Pipeline: its final model on the transformed rows
    return calls_for(load_outputs(model, output), X, sigma=sigma, noise=noise, n_jobs=n_jobs,
                     progress=progress, desc=desc, stages=stages)


def calls_for(ensembles: Sequence[TreeEnsemble], X: Any, *, sigma: Any, noise: Any,
              n_jobs: Optional[int], progress: Optional[bool], desc: str,
              stages: int = 1) -> List[PreparedCall]:
    """:func:`prepare_calls` for outputs already loaded (the Explainer parses its model once).

    Parameters
    ----------
    ensembles : sequence of TreeEnsemble
        Outputs of one model (the same features).
    X, sigma, noise, n_jobs, progress, desc, stages
        As in :func:`prepare_calls`.

    Returns
    -------
    list of PreparedCall
        One per ensemble, sharing the validated rows and the progress bar.
    """
    Xa, order = as_matrix_ordered(X, ensembles[0])
    # the perturbation of each output as a call for that output alone resolves it (a default
    # that depends on the model's splits is that output's own)
    noises = [as_noise(noise, sigma, ens, order) for ens in ensembles]
    warn_large_sigma(Xa, noises[0], order)
    bar = Progress(progress, Xa.shape[0], desc, stages * len(ensembles))
    threads = as_n_jobs(n_jobs)
    return [PreparedCall(ens, Xa, kn, threads, order, bar) for ens, kn in zip(ensembles, noises)]


def prepare_call(model: Any, X: Any, *, sigma: Any = 0.3, noise: Any = "normal",
                 n_jobs: Optional[int] = None, output: Any = None,
                 progress: Optional[bool] = False, desc: str = "pgexact",
                 stages: int = 1) -> PreparedCall:
    """:func:`prepare_calls` for one output: ``output="all"`` is refused, naming ``desc``.

    Parameters
    ----------
    model, X, sigma, noise, n_jobs, output, progress, desc, stages
        As in :func:`prepare_calls`.

    Returns
    -------
    PreparedCall
        The validated call, ready for the kernels.
    """
    refuse_all(output, desc)
    return prepare_calls(model, X, sigma=sigma, noise=noise, n_jobs=n_jobs, output=output,
                         progress=progress, desc=desc, stages=stages)[0]
