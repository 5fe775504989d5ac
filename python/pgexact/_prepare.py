"""The one validation pass of the exact functions: model, rows, sigma, noise and threads.

Every public function that calls the exact kernels starts with :func:`prepare_call` and then
uses the :class:`~pgexact._kernels.PreparedCall` it returns, so each argument is checked once
and the C++ core receives exactly the arrays it expects.
"""

from __future__ import annotations

from typing import Any, Optional

from ._adapters import load
from ._kernels import PreparedCall
from ._pipeline import unwrap
from ._progress import Progress
from ._validation import as_matrix_ordered, as_n_jobs, as_noise, warn_large_sigma

__all__ = ["prepare_call"]


def prepare_call(model: Any, X: Any, *, sigma: Any = 0.3, noise: Any = "normal",
                 n_jobs: Optional[int] = None, output: Optional[int] = None,
                 progress: Optional[bool] = False, desc: str = "pgexact",
                 stages: int = 1) -> PreparedCall:
    """Load ``model`` and validate ``X``, ``sigma``, ``noise`` and ``n_jobs`` against it.

    Parameters
    ----------
    model : model object, path or TreeEnsemble
        Anything :func:`pgexact.load` accepts, or a scikit-learn Pipeline ending in one: its
        earlier steps transform ``X`` and its last step is evaluated (:mod:`pgexact._pipeline`).
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
    output : int, optional
        The model's output column (see :func:`pgexact.load`).
    progress : bool or None, default False
        The user's ``progress`` (:mod:`pgexact._progress`); the caller closes the bar with
        ``with call.progress:``.
    desc : str
        The bar's label and the warning's subject: the public function's name.
    stages : int, default 1
        Kernel runs the call makes one after the other.

    Returns
    -------
    PreparedCall
        The validated call, ready for the kernels.
    """
    model, X = unwrap(model, X)  # a Pipeline: its final model on the transformed rows
    ens = load(model, output=output)
    Xa, order = as_matrix_ordered(X, ens)
    kernel_noise = as_noise(noise, sigma, ens, order)
    warn_large_sigma(Xa, kernel_noise, order)
    bar = Progress(progress, Xa.shape[0], desc, stages)
    return PreparedCall(ens, Xa, kernel_noise, as_n_jobs(n_jobs), order, bar)
