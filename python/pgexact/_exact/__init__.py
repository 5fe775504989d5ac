"""The exact room: one validated call into the C++ kernels, and the public exact functions.

``_prepare`` validates a call once into a ``PreparedCall`` (``_kernels``, the one module
calling the extension's kernels); ``_perturbation`` turns ``sigma`` / ``noise`` into what the
kernels read; ``_progress`` and ``_estimate`` are the long-call bar, warning and estimate;
``_api`` and ``_moments`` are the public exact functions (``pg2`` ... ``infidelity``).
"""

__all__: list[str] = []
