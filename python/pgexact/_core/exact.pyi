# Stubs of pgexact._core.exact (cpp/bindings/register_perturbation.cpp, register_kernels.cpp,
# register_pair_store.cpp):
# the perturbation, validated once when built; the kernel choice; the kernels over rows.

from collections.abc import Callable
from typing import ClassVar, Optional, SupportsIndex, SupportsInt, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .model import Arena

_Int = Union[SupportsInt, SupportsIndex]

class _Enum:
    # a pybind11 enum: members are class attributes, int(member) is the C++ value
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...

class NoiseFamily(_Enum):
    """The family code of each feature's perturbation."""

    normal: ClassVar[NoiseFamily]  # 0
    uniform: ClassVar[NoiseFamily]  # 1
    laplace: ClassVar[NoiseFamily]  # 2
    categorical: ClassVar[NoiseFamily]  # 3
    fixed: ClassVar[NoiseFamily]  # 4

#: family name -> code, the C++ enum as pgexact._exact._kernels checks its table against it
NOISE_FAMILIES: dict[str, int]

class Kernel(_Enum):
    """Which exact kernel computes PG²."""

    pairs: ClassVar[Kernel]  # the default: enumerated leaf pairs where they apply (the walks for one or two rows where those are faster: the union walk for one row's sets and curves), else shared walks
    leaf_pairs: ClassVar[Kernel]  # pairs without the few-row choice (pgexact.dask's blocks of a larger call)
    walks: ClassVar[Kernel]  # the node-pair walks shared between rows and sets
    separate_walks: ClassVar[Kernel]  # the node-pair walks without sharing
    reference: ClassVar[Kernel]  # the paper's unpruned pair walk

class FewRowsCall(_Enum):
    """The kinds of call :func:`few_rows_on_walks` tells apart."""

    set: ClassVar[FewRowsCall]
    curve: ClassVar[FewRowsCall]
    greedy: ClassVar[FewRowsCall]

class Perturbation:
    """The perturbation of every feature, validated once; kernels take it as it is.

    ``sigma`` (d,) float64 standard deviations (unused but positive where the family is not
    additive), ``family`` (d,) uint8 codes (:class:`NoiseFamily`); categorical features (code
    3) need ``change`` (d,), ``cat_begin`` (d + 1,) int64 offsets into ``cat_value`` and
    ``cat_weight``.
    """

    def __init__(self, sigma: ArrayLike, family: ArrayLike, change: Optional[ArrayLike] = None,
                 cat_begin: Optional[ArrayLike] = None, cat_value: Optional[ArrayLike] = None,
                 cat_weight: Optional[ArrayLike] = None) -> None: ...
    @property
    def n_features(self) -> int: ...
    @property
    def sigma(self) -> NDArray[np.float64]: ...
    @property
    def family(self) -> NDArray[np.uint8]: ...
    @property
    def change(self) -> NDArray[np.float64]: ...
    @property
    def cat_begin(self) -> NDArray[np.int64]: ...
    @property
    def cat_value(self) -> NDArray[np.float64]: ...
    @property
    def cat_weight(self) -> NDArray[np.float64]: ...

# The kernels run on a worker thread; every 100 ms the calling thread checks for signals
# (Ctrl-C raises KeyboardInterrupt after stopping the work) and calls progress(done, total).
_Progress = Callable[[int, int], object]

# Rows X (n, d) float64, masks uint8 (d,) or (n, d), rankings int64; n_threads 0 = all cores.
def pg2(arena: Arena, X: ArrayLike, mask: ArrayLike, perturbation: Perturbation,
        n_threads: _Int = 0, kernel: Kernel = Kernel.pairs,
        progress: Optional[_Progress] = None, tol: float = 1e-13,
        calibration: bool = False) -> NDArray[np.float64]: ...
def pg2_curve(arena: Arena, X: ArrayLike, ranking: ArrayLike, n_steps: _Int,
              perturbation: Perturbation, n_threads: _Int = 0, kernel: Kernel = Kernel.pairs,
              progress: Optional[_Progress] = None, tol: float = 1e-13,
              calibration: bool = False) -> NDArray[np.float64]: ...
def greedy_rank(arena: Arena, X: ArrayLike, perturbation: Perturbation, n_threads: _Int = 0,
                kernel: Kernel = Kernel.pairs, progress: Optional[_Progress] = None,
                tol: float = 1e-13,
                calibration: bool = False) -> tuple[NDArray[np.int64], NDArray[np.float64]]: ...
def expected(arena: Arena, X: ArrayLike, mask: ArrayLike, perturbation: Perturbation,
             n_threads: _Int = 0, progress: Optional[_Progress] = None) -> NDArray[np.float64]: ...
def first_moments(arena: Arena, X: ArrayLike, perturbation: Perturbation, n_threads: _Int = 0,
                  progress: Optional[_Progress] = None) -> NDArray[np.float64]: ...
def max_threads() -> int: ...
# Whether Kernel.pairs runs a call of n_rows rows of this kind on the walks.
def few_rows_on_walks(arena: Arena, perturbation: Perturbation, n_rows: _Int,
                      call: FewRowsCall) -> bool: ...
def pg2_planning_share(arena: Arena, perturbation: Perturbation, n_rows: _Int) -> float: ...
def pg2_block_rows(arena: Arena, n_rows: _Int) -> int: ...

# The pair store (cpp/bindings/register_pair_store.cpp): leaf-pair lists kept across calls.
DEFAULT_PAIR_STORE_BYTES: int

def set_pair_store_budget(max_bytes: int) -> None: ...
def pair_store_info() -> dict[str, int]: ...
def clear_pair_store() -> None: ...
def pause_pair_store(pause: bool) -> None: ...
