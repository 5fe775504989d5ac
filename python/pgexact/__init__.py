"""pgexact: exact perturbation-based faithfulness metrics for tree ensembles.

>>> import pgexact
>>> pgexact.pgi2(model, X, sigma=0.3)          # exact PGI² of the greedy ranking, per row
>>> pgexact.pg2(model, X, features=[0, 3])     # exact E[(f(x') - f(x))²], features 0 and 3 noised
"""

from __future__ import annotations

from . import mc, metrics, noise, openxai
from ._exact._api import pg2, pg2_curve, pgi2, pgu2, rank
from ._exact._estimate import estimate
from ._exact._moments import expected, infidelity
from ._exact._pair_cache import clear_pair_cache, pair_cache_info, set_pair_cache_limit
from ._exact._progress import PerformanceWarning
from ._models._adapters import load
from ._models._outputs import ClassLabel, ClassPosition
from .ensemble import TreeEnsemble
from .explain import Explainer, Explanation

__version__ = "0.1.0"

__all__ = [
    "ClassLabel",
    "ClassPosition",
    "Explainer",
    "Explanation",
    "PerformanceWarning",
    "TreeEnsemble",
    "__version__",
    "clear_pair_cache",
    "estimate",
    "expected",
    "infidelity",
    "load",
    "mc",
    "metrics",
    "noise",
    "openxai",
    "pair_cache_info",
    "pg2",
    "pg2_curve",
    "pgi2",
    "pgu2",
    "rank",
    "set_pair_cache_limit",
]
