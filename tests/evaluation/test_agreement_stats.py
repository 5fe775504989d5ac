"""The statistics of metrics.agreement against independent computations: loops over the
definitions, enumeration of every bootstrap resample of tiny data, textbook values (the normal
flip probability, Sheppard's formula, Spearman of a bivariate normal) and scipy."""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pgexact.metrics import _agreement_instances as I, _agreement_stats as S

# small integer-valued scores, so that ties and NaN are common
_score = st.one_of(st.integers(-2, 2).map(float), st.just(math.nan))


def _scores(max_rows: int = 6, max_k: int = 4):
    return st.integers(1, max_rows).flatmap(lambda n: st.integers(2, max_k).flatmap(
        lambda k: hnp.arrays(np.float64, (n, k), elements=_score)))


def _verdicts(max_m: int = 5, max_q: int = 6):
    v = st.sampled_from([-1.0, 0.0, 1.0, math.nan])
    return st.integers(1, max_m).flatmap(lambda m: st.integers(1, max_q).flatmap(
        lambda q: hnp.arrays(np.float64, (m, q), elements=v)))


def _same(a, b):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12, equal_nan=True)


# ----------------------------------------------------------------- pairs, wins, verdicts
@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(_scores())
def test_pairwise_win_rate_and_verdict_by_loops(Y):
    n, k = Y.shape
    D = S.pairwise_differences(Y)
    win = S.win_rates(D)
    mean, verdict = S.mean_verdicts(D)
    for col, (i, j) in enumerate(itertools.combinations(range(k), 2)):
        rows = [r for r in range(n) if not (math.isnan(Y[r, i]) or math.isnan(Y[r, j]))]
        if not rows:
            assert math.isnan(win[col]) and math.isnan(mean[col]) and math.isnan(verdict[col])
            continue
        points = sum(1.0 if Y[r, i] > Y[r, j] else 0.5 if Y[r, i] == Y[r, j] else 0.0 for r in rows)
        assert win[col] == pytest.approx(points / len(rows))
        m = sum(Y[r, i] - Y[r, j] for r in rows) / len(rows)
        assert mean[col] == pytest.approx(m, abs=1e-12)
        assert verdict[col] == (0.0 if abs(m) < 1e-12 else math.copysign(1.0, m))


def test_square_mirrors_the_upper_triangle():
    k = 4
    values = np.arange(1.0, 7.0) / 10
    p = S.pair_indices(k)
    for kind, lower in (("symmetric", lambda v: v), ("antisymmetric", lambda v: -v),
                        ("complement", lambda v: 1 - v)):
        M = S.square(values, k, kind)
        for col, (i, j) in enumerate(p):
            assert M[i, j] == values[col] and M[j, i] == pytest.approx(lower(values[col]))
        assert np.all(np.isnan(np.diag(M)))
    iv = np.stack([values, values + 1], axis=1)
    M = S.square(iv, k, "interval")
    for col, (i, j) in enumerate(p):
        assert list(M[j, i]) == [-(values[col] + 1), -values[col]]


# ------------------------------------------------------------------------ the bootstrap
def _enumerated_means(d: np.ndarray, size: int) -> np.ndarray:
    """The mean of every one of the n^size equally likely resamples (the exact bootstrap), over
    the resample's non-NaN rows; resamples with none are left out."""
    out = []
    for idx in itertools.product(range(d.size), repeat=size):
        drawn = [d[i] for i in idx if not math.isnan(d[i])]
        if drawn:
            out.append(sum(drawn) / len(drawn))
    return np.array(out)


# irrational-looking values: no resample sums to 0 but by rounding; the integers tie exactly;
# a NaN row is left out of every resample that draws it
@pytest.mark.parametrize("d", [[0.31, -1.07, 0.53, 0.41], [2.03, -1.01, -1.57, 0.23, 0.11],
                               [1.0, -1.0, 0.0], [0.31, math.nan, -0.52, 0.44]])
def test_flip_curve_matches_the_enumerated_bootstrap(d):
    d = np.asarray(d)
    n, B = d.size, 20000
    sizes = list(range(1, n + 1))
    boot = S.bootstrap(d[:, None], sizes, B, 0.95, np.random.default_rng(1))
    verdict = np.sign(np.nanmean(d))
    for t, size in enumerate(sizes):
        exact = float(np.mean(np.sign(_enumerated_means(d, size)) != verdict))
        se = math.sqrt(max(exact * (1 - exact), 1e-4) / B)
        assert abs(boot.flip_curve[0, t] - exact) < 5 * se, (size, exact)
    assert boot.flip_probability[0] == boot.flip_curve[0, -1]


def test_interval_is_a_quantile_pair_of_the_enumerated_bootstrap():
    d = np.array([0.8, -0.3, 1.7, 0.1, -1.2])
    exact = _enumerated_means(d, d.size)  # 3125 resamples
    lo, hi = S.bootstrap(d[:, None], [d.size], 40000, 0.9, np.random.default_rng(2)).interval[0]
    # lo is a 5 % quantile of the exact distribution and hi a 95 % one, up to resampling error
    tol = 0.006
    assert np.mean(exact < lo) <= 0.05 + tol and np.mean(exact <= lo) >= 0.05 - tol
    assert np.mean(exact < hi) <= 0.95 + tol and np.mean(exact <= hi) >= 0.95 - tol


def test_flip_curve_and_rows_needed_follow_the_normal_textbook_value():
    # a large sample of N(mu, 1) differences: a resample of m rows has a mean close to
    # N(dbar, s^2/m), so P(flip) = Phi(-dbar sqrt(m) / s), below 5 % from m = (1.645 s/dbar)^2
    rng = np.random.default_rng(3)
    d = rng.normal(0.3, 1.0, size=1000)
    sizes = list(range(1, 61)) + [d.size]
    boot = S.bootstrap(d[:, None], sizes, 4000, 0.95, np.random.default_rng(4))
    dbar, s = d.mean(), d.std()
    for t, m in enumerate(sizes):
        if m >= 10:
            assert boot.flip_curve[0, t] == pytest.approx(NormalDist().cdf(-dbar * math.sqrt(m) / s),
                                                          abs=0.02)
    want = (NormalDist().inv_cdf(0.95) * s / dbar) ** 2
    assert abs(S.rows_needed(sizes, boot.flip_curve)[0] - want) <= 5


def test_interval_covers_the_true_mean_at_its_level():
    # a simulation with a known answer: 95 % percentile intervals of N(0.3, 1) samples of 40
    rng = np.random.default_rng(5)
    data = rng.normal(0.3, 1.0, size=(40, 400))  # 400 independent samples side by side
    boot = S.bootstrap(data, [40], 1000, 0.95, np.random.default_rng(6))
    cover = np.mean((boot.interval[:, 0] <= 0.3) & (0.3 <= boot.interval[:, 1]))
    assert 0.90 <= cover <= 0.985


def test_bootstrap_of_undefined_and_constant_columns():
    D = np.array([[np.nan, 1.0, 0.0], [np.nan, 2.0, 0.0], [np.nan, np.nan, 0.0]])
    boot = S.bootstrap(D, [1, 2, 3], 200, 0.95, np.random.default_rng(0))
    assert np.all(np.isnan(boot.flip_curve[0])) and np.all(np.isnan(boot.interval[0]))
    assert np.all(boot.flip_curve[1] == 0)  # every defined resample agrees
    assert np.all(boot.flip_curve[2] == 0) and list(boot.interval[2]) == [0.0, 0.0]  # a tie stays
    _same(S.rows_needed([1, 2, 3], boot.flip_curve), [np.nan, 1.0, 1.0])
    with pytest.raises(ValueError, match="^sizes"):
        S.bootstrap(D, [1, 2], 10, 0.95, np.random.default_rng(0))


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(math.nan)), min_size=1, max_size=8))
def test_rows_needed_by_its_definition(curve):
    sizes = [2 * t + 1 for t in range(len(curve))]
    got = S.rows_needed(sizes, np.array([curve]))[0]
    if all(math.isnan(c) for c in curve):
        assert math.isnan(got)
        return
    stays = [t for t in range(len(curve)) if all(c < 0.05 for c in curve[t:])]
    assert got == (sizes[stays[0]] if stays else math.inf)


def test_default_sizes():
    assert list(S.default_sizes(5)) == [1, 2, 3, 4, 5]
    big = S.default_sizes(1000)
    assert big[0] == 1 and big[-1] == 1000 and np.all(np.diff(big) > 0) and 16 <= big.size <= 25


# ------------------------------------------------------------------------- seed flips
@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(_verdicts(max_m=7, max_q=4))
def test_seed_flip_rate_is_the_share_of_disagreeing_seed_pairs(V):
    got = S.seed_flip_rate(V)
    for c in range(V.shape[1]):
        runs = [v for v in V[:, c] if not math.isnan(v)]
        pairs = list(itertools.combinations(runs, 2))
        if not pairs:
            assert math.isnan(got[c])
        else:
            assert got[c] == pytest.approx(sum(a != b for a, b in pairs) / len(pairs))


def test_seed_flip_rate_of_coin_flips_is_2p_1_minus_p():
    rng = np.random.default_rng(7)
    p = np.array([0.0, 0.1, 0.3, 0.5])
    V = np.where(rng.random((20000, p.size)) < p, -1.0, 1.0)
    np.testing.assert_allclose(S.seed_flip_rate(V), 2 * p * (1 - p), atol=0.015)
    assert S.seed_flip_rate(V)[0] == 0.0  # a verdict that never changes: exactly 0


# ---------------------------------------------------------- agreement between metrics
@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(_verdicts())
def test_metric_agreement_and_error_cases_by_loops(V):
    m, q = V.shape
    agree, error = S.metric_agreement(V), S.error_case_rate(V)
    for a in range(m):
        for b in range(m):
            both = [c for c in range(q) if not (math.isnan(V[a, c]) or math.isnan(V[b, c]))]
            want = sum(V[a, c] == V[b, c] for c in both) / len(both) if both else math.nan
            _same(agree[a, b], want)
        counted = errors = 0
        for c in range(q):
            others = [V[b, c] for b in range(m) if b != a and not math.isnan(V[b, c])]
            if math.isnan(V[a, c]) or not others:
                continue
            counted += 1
            errors += sum(o != V[a, c] for o in others) > len(others) / 2
        _same(error[a], errors / counted if counted else math.nan)


def test_error_cases_by_hand():
    # three metrics on three comparisons; metric 2 is outvoted on the first two
    V = np.array([[1, 1, -1], [1, 1, 1], [-1, -1, -1]], dtype=float)
    np.testing.assert_allclose(S.error_case_rate(V), [0.0, 1 / 3, 2 / 3])
    np.testing.assert_allclose(S.metric_agreement(V), [[1, 2 / 3, 1 / 3], [2 / 3, 1, 0],
                                                       [1 / 3, 0, 1]])


# ------------------------------------------------------ similarity of explainers, ranks
@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(_scores(max_rows=9))
def test_rank_correlation_matches_scipy(Y):
    R = I.rank_correlation(Y)
    k = Y.shape[1]
    for i in range(k):
        for j in range(k):
            ok = ~np.isnan(Y[:, i]) & ~np.isnan(Y[:, j])
            a, b = Y[ok, i], Y[ok, j]
            if ok.sum() < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
                assert math.isnan(R[i, j])
            else:
                assert R[i, j] == pytest.approx(scipy.stats.spearmanr(a, b)[0], abs=1e-12)


def test_similarity_of_a_bivariate_normal_has_the_textbook_values():
    # Spearman's rho of a bivariate normal: (6/pi) asin(rho/2); P(both on the same side of
    # their medians) = 1/2 + asin(rho)/pi (Sheppard)
    rng = np.random.default_rng(8)
    for rho in (0.0, 0.5, 0.9):
        Y = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=20000)
        assert I.rank_correlation(Y)[0, 1] == pytest.approx(6 / math.pi * math.asin(rho / 2), abs=0.02)
        assert I.median_split_agreement(Y)[0, 1] == pytest.approx(0.5 + math.asin(rho) / math.pi,
                                                                  abs=0.015)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(_scores())
def test_median_split_agreement_by_loops(Y):
    n, k = Y.shape
    got = I.median_split_agreement(Y)
    for i in range(k):
        for j in range(k):
            rows = [r for r in range(n) if not (math.isnan(Y[r, i]) or math.isnan(Y[r, j]))]
            if not rows:
                assert math.isnan(got[i, j])
                continue
            med_i = float(np.median([v for v in Y[:, i] if not math.isnan(v)]))
            med_j = float(np.median([v for v in Y[:, j] if not math.isnan(v)]))
            same = sum((Y[r, i] >= med_i) == (Y[r, j] >= med_j) for r in rows)
            assert got[i, j] == pytest.approx(same / len(rows))


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(hnp.arrays(np.float64, st.integers(1, 7), elements=_score))
def test_average_ranks_match_scipy(x):
    got = I.average_ranks(x)
    ok = ~np.isnan(x)
    assert np.all(np.isnan(got[~ok]))
    if ok.any():
        np.testing.assert_allclose(got[ok], scipy.stats.rankdata(-x[ok], method="average"))


# --------------------------------------------------------------------------- hardness
def test_hardness_and_hardest_rows_by_loops():
    areas = np.array([[0.2, 0.5], [0.1, np.nan], [np.nan, np.nan], [0.3, 0.3], [0.4, 0.1]])
    total = np.array([1.0, 0.5, 1.0, 0.0, 0.8])
    want = []
    for r in range(len(total)):
        vals = [a for a in areas[r] if not math.isnan(a)]
        want.append(1 - max(vals) / total[r] if vals and total[r] > 0 else math.nan)
    h = I.hardness(areas, total)
    _same(h, want)
    assert list(I.hardest_rows(h)) == [1, 0, 4]  # 0.8, 0.5, 0.5: ties to the lower row
    assert list(I.hardest_rows(h, 1)) == [1]
