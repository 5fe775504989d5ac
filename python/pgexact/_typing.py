"""Type aliases of the public signatures (for readers and type checkers; no runtime checks)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Sequence, Type, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:  # pragma: no cover
    from .noise import Categorical, NoiseFamily

__all__ = ["ArrayLike", "FloatArray", "IntArray", "ModelLike", "NoiseLike", "NoiseName",
           "OutputLike", "SigmaLike"]

#: an XGBoost / LightGBM / scikit-learn model object, a path to a model file, or a
#: :class:`pgexact.TreeEnsemble` (the libraries are optional, so this cannot be narrower)
ModelLike = Any
#: the noise families the exact kernels support, by name
NoiseName = Literal["normal", "uniform", "laplace", "categorical"]
#: a family name or object for every feature, or a sequence with one per feature (None: that
#: feature is not perturbed)
NoiseLike = Union[NoiseName, str, "NoiseFamily", Type["NoiseFamily"], "Categorical",
                  Sequence[Union[NoiseName, str, "NoiseFamily", "Categorical", None]]]
#: which output: None (the default), a position, a class label, ``pgexact.ClassLabel`` /
#: ``pgexact.ClassPosition``, or ``"all"`` (:mod:`pgexact._models._outputs`)
OutputLike = Any
#: a positive standard deviation, or one per feature
SigmaLike = Union[float, ArrayLike, None]
#: float64 results
FloatArray = NDArray[np.float64]
#: int64 rankings
IntArray = NDArray[np.int64]
