"""Noise families: pgexact.noise objects, noise= / sigma= resolution, and the kernels' CDFs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

import pgexact
from pgexact import _core
from pgexact._exact._perturbation import as_noise
from pgexact.ensemble import TreeEnsemble
from pgexact.noise import Laplace, Normal, Uniform

CLASSES = {"normal": Normal, "uniform": Uniform, "laplace": Laplace}


def scipy_dist(name, s):
    if name == "normal":
        return st.norm(scale=s)
    if name == "uniform":
        a = s * math.sqrt(3)
        return st.uniform(loc=-a, scale=2 * a)
    return st.laplace(scale=s / math.sqrt(2))


# ------------------------------------------------------------------------------ the objects
@pytest.mark.parametrize("name", list(CLASSES))
@pytest.mark.parametrize("s", [0.05, 0.3, 2.0])
def test_cdf_matches_scipy(name, s):
    u = np.concatenate([np.linspace(-6 * s, 6 * s, 241), [-np.inf, np.inf, 0.0]])
    ref = scipy_dist(name, s).cdf(u)
    np.testing.assert_allclose(CLASSES[name]().cdf(u, s), ref, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(CLASSES[name](sigma=s).cdf(u), ref, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(CLASSES[name]().sf(u, s), scipy_dist(name, s).sf(u), rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("name", list(CLASSES))
def test_sigma_is_the_standard_deviation(name):
    """E[delta^2] = sigma^2 from the CDF alone (fine Riemann-Stieltjes sum), and scipy agrees."""
    s = 0.7
    fam = CLASSES[name]()
    edges = np.linspace(-25 * s, 25 * s, 400001)
    mass = np.diff(fam.cdf(edges, s))
    mid = (edges[:-1] + edges[1:]) / 2
    assert abs(np.sum(mid ** 2 * mass) - s * s) < 1e-6
    assert abs(np.sum(mid * mass)) < 1e-12
    assert math.isclose(scipy_dist(name, s).var(), s * s, rel_tol=1e-12)


def test_uniform_and_laplace_parameters():
    s = 0.5
    a = s * math.sqrt(3)
    assert Uniform().cdf(-a, s) == 0.0 and Uniform().cdf(a, s) == 1.0
    assert 0.0 < Uniform().cdf(-a + 1e-9, s) < 1e-8
    b = s / math.sqrt(2)
    assert math.isclose(Laplace().cdf(-b, s), 0.5 * math.exp(-1), rel_tol=1e-15)


def test_cdf_broadcasts():
    u = np.linspace(-1, 1, 6).reshape(2, 3)
    s = np.array([0.1, 0.2, 0.3])
    out = Normal().cdf(u, s)
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out, st.norm.cdf(u / s), rtol=1e-13)
    assert isinstance(Normal().cdf(0.0, 1.0), np.ndarray) and float(Normal().cdf(0.0, 1.0)) == 0.5


@pytest.mark.parametrize("name", list(CLASSES))
def test_sample_has_unit_variance(name):
    draws = CLASSES[name]().sample(np.random.default_rng(0), (200000,))
    assert abs(np.mean(draws ** 2) - 1.0) < 0.02
    assert abs(np.mean(draws)) < 0.01


def test_object_validation():
    with pytest.raises(ValueError, match="sigma"):
        Normal(sigma=0.0)
    with pytest.raises(ValueError, match="sigma"):
        Laplace(sigma=[0.1, -1])
    with pytest.raises(ValueError, match="sigma"):
        Uniform(sigma=np.inf)
    with pytest.raises(TypeError, match="sigma"):
        Normal(sigma="big")
    with pytest.raises(ValueError, match="sigma"):
        Normal().cdf(0.0)  # no sigma anywhere
    assert Normal(0.3) == Normal(sigma=0.3) and Normal(0.3) != Normal(0.4) and Normal() != Laplace()
    assert "Laplace(sigma=0.5)" in repr(Laplace(0.5))
    assert pgexact.noise.get("normal") == Normal()
    for alias in ("Gaussian", "gaussian", "Normal"):  # issue 16: names are exact
        with pytest.raises(ValueError, match=r"^noise: unknown family"):
            pgexact.noise.get(alias)
    with pytest.raises(ValueError, match="noise"):
        pgexact.noise.get("cauchy")


# ------------------------------------------------------------------------------ noise= / sigma=
def test_as_noise_names_objects_and_lists():
    sig, fam = as_noise("laplace", 0.3, 3)[:2]
    np.testing.assert_array_equal(fam, [2, 2, 2])
    np.testing.assert_array_equal(sig, [0.3, 0.3, 0.3])
    assert fam.dtype == np.uint8 and sig.dtype == np.float64
    sig, fam = as_noise(Uniform(), [0.1, 0.2, 0.3], 3)[:2]
    np.testing.assert_array_equal(fam, [1, 1, 1])
    np.testing.assert_array_equal(sig, [0.1, 0.2, 0.3])
    sig, fam = as_noise(Uniform, 0.2, 3)[:2]  # the class itself
    np.testing.assert_array_equal(fam, [1, 1, 1])
    sig, fam = as_noise(["normal", Laplace(0.7), Uniform], [0.1, 0.2, 0.3], 3)[:2]
    np.testing.assert_array_equal(fam, [0, 2, 1])
    np.testing.assert_array_equal(sig, [0.1, 0.7, 0.3])  # the object's sigma wins for its feature


def test_object_sigma_overrides_argument():
    sig, _ = as_noise(Normal(0.9), 0.3, 2)[:2]
    np.testing.assert_array_equal(sig, [0.9, 0.9])
    sig, _ = as_noise(Normal([0.4, 0.6]), 0.3, 2)[:2]
    np.testing.assert_array_equal(sig, [0.4, 0.6])
    sig, _ = as_noise(Normal(0.9), None, 2)[:2]  # sigma=None: the objects give every feature its own
    np.testing.assert_array_equal(sig, [0.9, 0.9])
    sig, _ = as_noise([Normal(0.1), Laplace(0.2)], None, 2)[:2]
    np.testing.assert_array_equal(sig, [0.1, 0.2])


@pytest.mark.parametrize(
    "noise, sigma, exc, msg",
    [
        ("cauchy", 0.3, ValueError, "noise: unknown family"),
        (["normal"], 0.3, ValueError, "one family per feature"),
        (["normal", "bogus"], 0.3, ValueError, r"noise\[1\]"),
        (3, 0.3, TypeError, "noise"),
        (st.norm(), 0.3, TypeError, "arbitrary CDFs"),
        (lambda u: u, 0.3, TypeError, "noise"),
        (Normal([0.1, 0.2, 0.3]), 0.3, ValueError, "noise: the object's sigma has shape"),
        ([Normal([0.1, 0.2]), "normal"], 0.3, ValueError, r"noise\[0\].*scalar"),
        ("normal", None, TypeError, "sigma"),
        ([Normal(0.1), Normal()], None, TypeError, "sigma"),
        ("normal", -1.0, ValueError, "sigma"),
        ("normal", [0.1, 0.2, 0.3], ValueError, "sigma"),
    ],
)
def test_as_noise_errors(noise, sigma, exc, msg):
    with pytest.raises(exc, match=msg):
        as_noise(noise, sigma, 2)


# ------------------------------------------------------------------------------ through the kernels
def stump(threshold=0.25, left=1.0, right=3.0):
    """f = left if x0 <= t else right (double `<=`), second feature unused."""
    tree = dict(children_left=[1, -1, -1], children_right=[2, -1, -1], feature=[0, 0, 0],
                threshold=[threshold, 0, 0], value=[0.0, left, right])
    arena = _core.build_arena_from_arrays([tree], np.zeros(1), 2, "<=", False, "none")
    return TreeEnsemble(arena, source="stump")


@pytest.mark.parametrize("name", list(CLASSES))
def test_kernel_cdf_matches_noise_object(name):
    """PG² of a stump is (right - left)^2 P(the split flips): closed form from pgexact.noise."""
    m = stump()
    x0 = np.array([-3.0, -0.7, -0.1, 0.2, 0.25, 0.3, 1.0, 4.0])
    X = np.column_stack([x0, np.zeros_like(x0)])
    for s in (0.1, 0.5, 2.0):
        got = pgexact.pg2(m, X, [0], sigma=s, noise=name)
        u = 0.25 - x0
        flip = np.where(x0 <= 0.25, CLASSES[name]().sf(u, s), CLASSES[name]().cdf(u, s))
        np.testing.assert_allclose(got, 4.0 * flip, rtol=1e-12, atol=1e-300)


def test_metrics_accept_noise_objects():
    m = stump()
    X = np.array([[0.1, 0.0], [0.4, 1.0], [np.nan, 0.0]])
    for fam, name in [(Laplace(0.5), "laplace"), (Uniform(0.5), "uniform"), (Normal(0.5), "normal")]:
        np.testing.assert_array_equal(pgexact.pg2(m, X, [0], noise=fam), pgexact.pg2(m, X, [0], sigma=0.5, noise=name))
        np.testing.assert_array_equal(pgexact.pg2_curve(m, X, [0, 1], noise=fam, sigma=None),
                                      pgexact.pg2_curve(m, X, [0, 1], sigma=0.5, noise=name))
        np.testing.assert_array_equal(pgexact.rank(m, X, noise=fam), pgexact.rank(m, X, sigma=0.5, noise=name))
        np.testing.assert_array_equal(pgexact.pgi2(m, X, noise=[fam, "normal"]),
                                      pgexact.pgi2(m, X, sigma=[0.5, 0.3], noise=[name, "normal"]))
    assert pgexact.pg2(m, X, [0], noise=Normal(0.5))[2] == 0.0  # NaN stays missing
    with pytest.raises(TypeError, match="noise"):
        pgexact.pg2(m, X, [0], noise=st.norm())
