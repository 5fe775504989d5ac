# Type stubs for the C++ extension pgexact._core (built from cpp/bindings), one per submodule:
#
#   _core.model  (model.pyi)  the parsers, their metadata and the node arena; only
#                             pgexact/_models/_parsers.py imports it;
#   _core.exact  (exact.pyi)  the perturbation, the kernel choice and the kernels; only
#                             pgexact/_exact/_kernels.py imports it.
#
# Keep these files in step with cpp/bindings when a binding's signature changes.

from . import exact as exact
from . import model as model

openmp: bool
