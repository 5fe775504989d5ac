"""The cross-dataset statistics of ``pgexact-bench agreement`` (metrics._agreement_across),
each against an independent computation: brute force over every subset, scipy's ranks and
Friedman test, the hypergeometric distribution, and the null expectation of Kendall's W by
enumerating every ranking."""

from __future__ import annotations

from itertools import combinations, permutations, product
from math import comb

import numpy as np
import pytest

from pgexact.metrics._agreement_across import (cell_ranks, dataset_ranks, kendall_w,
                                               pair_verdicts, subset_flip_probability)


def random_ranks(D, M, K, seed, nan_share=0.0):
    """Cell ranks of a random integer score table (ties likely), some cells undefined."""
    rng = np.random.default_rng(seed)
    S = rng.integers(0, 4, size=(D, M, K)).astype(float)
    S[rng.random(S.shape) < nan_share] = np.nan
    return cell_ranks(S, rng.random(M) < 0.5)


# ----------------------------------------------------------------------------- brute force
def brute_verdict(R, i, j, ds, ms, rule):
    """The verdict of i over j on cells ds x ms, by loops over the cells."""
    votes = []
    for d in ds:
        for m in ms:
            ri, rj = R[d, m, i], R[d, m, j]
            if np.isnan(ri) or np.isnan(rj):
                continue
            votes.append(rj - ri if rule == "mean_rank" else np.sign(rj - ri))
    if not votes:
        return None
    total = sum(votes)
    return 0.0 if abs(total) < 1e-9 else float(np.sign(total))


def brute_winners(R, ds, ms):
    """The set of explainers with the lowest mean rank over their own cells in ds x ms."""
    means = {}
    for k in range(R.shape[2]):
        v = [R[d, m, k] for d in ds for m in ms if not np.isnan(R[d, m, k])]
        if v:
            means[k] = sum(v) / len(v)
    best = min(means.values())
    return {k for k, v in means.items() if v <= best + 1e-9}


def brute_flip(R, rule):
    """Every subset of every size: (pair probabilities (K, K, D, M), winner flips (D, M))."""
    D, M, K = R.shape
    alld, allm = range(D), range(M)
    pair = np.full((K, K, D, M), np.nan)
    winner = np.zeros((D, M))
    full_win = brute_winners(R, alld, allm)
    for a in range(1, D + 1):
        for b in range(1, M + 1):
            cells = list(product(combinations(alld, a), combinations(allm, b)))
            winner[a - 1, b - 1] = np.mean([brute_winners(R, ds, ms) != full_win
                                            for ds, ms in cells])
            for i in range(K):
                for j in range(K):
                    full = brute_verdict(R, i, j, alld, allm, rule)
                    got = [brute_verdict(R, i, j, ds, ms, rule) for ds, ms in cells]
                    got = [g for g in got if g is not None]
                    if got:
                        pair[i, j, a - 1, b - 1] = np.mean([g != full for g in got])
    return pair, winner


@pytest.mark.parametrize("rule", ["mean_rank", "majority"])
@pytest.mark.parametrize("seed, nan_share", [(0, 0.0), (1, 0.0), (2, 0.25)])
def test_subset_flip_probability_is_brute_force_enumeration(rule, seed, nan_share):
    R = random_ranks(4, 3, 4, seed, nan_share)
    got = subset_flip_probability(R, rule=rule)
    pair, winner = brute_flip(R, rule)
    np.testing.assert_allclose(got["pair"], pair, atol=1e-12)
    np.testing.assert_allclose(got["winner"], winner, atol=1e-12)
    assert got["exact"].all()
    assert got["n_subsets"].tolist() == [[comb(4, a) * comb(3, b) for b in (1, 2, 3)]
                                         for a in (1, 2, 3, 4)]
    iu = np.triu_indices(4, 1)
    np.testing.assert_allclose(got["mean"], np.nanmean(pair[iu[0], iu[1]], axis=0), atol=1e-12)
    # on all cells the verdict is the verdict on all cells
    assert np.nan_to_num(got["pair"][:, :, -1, -1]).max() == 0 and got["winner"][-1, -1] == 0


@pytest.mark.parametrize("rule", ["mean_rank", "majority"])
def test_pair_verdicts_are_brute_force(rule):
    R = random_ranks(5, 3, 4, 7, 0.2)
    for ds, ms in [((0, 1, 2, 3, 4), (0, 1, 2)), ((1, 3), (2,)), ((0, 4), (0, 1))]:
        V = pair_verdicts(R, rule=rule, datasets=ds, metrics=ms)
        for i in range(4):
            for j in range(4):
                want = brute_verdict(R, i, j, ds, ms, rule)
                assert (np.isnan(V[i, j]) if want is None else V[i, j] == want), (ds, ms, i, j)
        np.testing.assert_array_equal(np.nan_to_num(V), -np.nan_to_num(V.T))  # antisymmetric


def test_sampled_sizes_agree_with_enumeration_within_binomial_error():
    R = random_ranks(6, 3, 3, 3)
    exact = subset_flip_probability(R)
    draws = 3000
    sampled = subset_flip_probability(R, max_exact=1, n_draws=draws, seed=5)
    assert sampled["exact"].sum() == 1  # only the one subset of all cells is enumerated
    p, q = exact["pair"], sampled["pair"]
    ok = ~np.isnan(p)
    # 5 standard errors (a few hundred comparisons; each is off by more with probability 6e-7)
    tol = 5 * np.sqrt(p[ok] * (1 - p[ok]) / draws) + 1e-12
    assert np.all(np.abs(q[ok] - p[ok]) <= tol)
    w_tol = 5 * np.sqrt(exact["winner"] * (1 - exact["winner"]) / draws) + 1e-12
    assert np.all(np.abs(sampled["winner"] - exact["winner"]) <= w_tol)


@pytest.mark.parametrize("D, wins", [(7, 5), (9, 6), (8, 6)])
def test_majority_flip_is_the_hypergeometric_tail(D, wins):
    """One metric, explainer 0 beats explainer 1 on ``wins`` of D datasets: a random a-subset
    holds X ~ Hypergeometric(D, wins, a) of them; its verdict differs from the full one (0
    better) when X <= a / 2 (a tie, X = a/2, differs from a win)."""
    S = np.zeros((D, 1, 2))
    S[:wins, 0, 0] = 1.0
    S[wins:, 0, 1] = 1.0
    R = cell_ranks(S, [True])
    got = subset_flip_probability(R, rule="majority")["pair"][0, 1, :, 0]
    for a in range(1, D + 1):
        tail = sum(comb(wins, x) * comb(D - wins, a - x) for x in range(0, a + 1) if 2 * x <= a)
        assert got[a - 1] == pytest.approx(tail / comb(D, a), abs=1e-12), a


def test_identical_rankings_never_flip():
    S = np.tile(np.array([3.0, 2.0, 1.0, 0.5]), (5, 4, 1))
    R = cell_ranks(S, [True] * 4)
    out = subset_flip_probability(R)
    iu = np.triu_indices(4, 1)
    assert np.all(out["pair"][iu[0], iu[1]] == 0) and np.all(out["winner"] == 0)
    np.testing.assert_array_equal(dataset_ranks(R), np.tile([1.0, 2.0, 3.0, 4.0], (5, 1)))
    assert kendall_w(dataset_ranks(R)) == pytest.approx(1.0)


def test_cell_ranks_are_scipys_rankdata():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    S = rng.integers(0, 5, size=(3, 4, 6)).astype(float)
    S[0, 1, 2] = np.nan
    hib = [True, False, True, False]
    R = cell_ranks(S, hib)
    for d in range(3):
        for m in range(4):
            v = S[d, m]
            ok = ~np.isnan(v)
            want = stats.rankdata(-v[ok] if hib[m] else v[ok])  # average ranks of ties
            np.testing.assert_array_equal(R[d, m][ok], want)
            assert np.isnan(R[d, m][~ok]).all()


def test_dataset_ranks_rank_the_mean_cell_rank():
    # dataset 0: explainer 0 best on both metrics; dataset 1: metric 0 says 1, metric 1 says 2,
    # explainer 2 has no score under metric 0 there (its mean is over metric 1 alone)
    S = np.array([[[3.0, 2.0, 1.0], [3.0, 2.0, 1.0]],
                  [[1.0, 3.0, np.nan], [1.0, 2.0, 3.0]]])
    R = cell_ranks(S, [True, True])
    # dataset 1 means: explainer 0 (2 + 3) / 2 = 2.5, explainer 1 (1 + 2) / 2 = 1.5, 2: 1
    np.testing.assert_array_equal(dataset_ranks(R), [[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])


def test_kendall_w_is_friedmans_chi_square_over_m_n_minus_1():
    """W = chi²_F / (m (n - 1)), with scipy's tie-corrected Friedman statistic."""
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(4)
    for ties in (False, True):
        T = rng.integers(0, 3, size=(6, 5)).astype(float) if ties else rng.random((6, 5))
        chi2 = stats.friedmanchisquare(*T.T).statistic
        assert kendall_w(T) == pytest.approx(chi2 / (6 * 4), rel=1e-12)


def test_kendall_w_null_mean_is_one_over_m_by_enumeration():
    """Under independent uniformly random rankings E[W] = 1/m: every one of (n!)^m tables."""
    m, n = 4, 3
    perms = [np.array(p, dtype=float) for p in permutations(range(1, n + 1))]
    ws = [kendall_w(np.stack(rows)) for rows in product(perms, repeat=m)]
    assert np.mean(ws) == pytest.approx(1 / m, rel=1e-12)
    assert kendall_w(np.stack([perms[0], perms[0][::-1]])) == pytest.approx(0.0)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="rule: unknown rule 'vote'"):
        subset_flip_probability(np.ones((2, 2, 2)), rule="vote")
    with pytest.raises(ValueError, match="scores: expected shape"):
        cell_ranks(np.ones((2, 2)), [True, True])
    with pytest.raises(ValueError, match="higher_is_better: expected 2"):
        cell_ranks(np.ones((2, 2, 3)), [True])
