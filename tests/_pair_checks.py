"""Checks shared by the tests of the leaf-pair kernel (tests/exact/test_pair_kernel.py and
test_projection.py): a result against the unpruned reference, and random noise."""

from __future__ import annotations

import numpy as np

from pgexact._core.exact import Perturbation

#: fast paths against the unpruned reference, relative
RTOL = 1e-12


def close_to_reference(fast, ref) -> None:
    """``fast`` is never negative and within RTOL of ``ref`` (relative; exact zeros stay zero)."""
    fast = np.asarray(fast)
    assert np.all(fast >= 0.0)
    np.testing.assert_allclose(fast, np.asarray(ref), rtol=RTOL, atol=1e-300)


def random_noise(d: int, seed: int) -> Perturbation:
    """Per feature a σ in [0.1, 1.2] and a family drawn from normal, uniform and Laplace."""
    rng = np.random.default_rng(seed)
    return Perturbation(rng.uniform(0.1, 1.2, size=d), rng.choice(np.array([0, 1, 2], np.uint8), size=d))
