"""The feature-selection metrics of pgexact.metrics against textbook values and independent
re-implementations (Nogueira et al. 2018's pairwise form, scikit-learn's r2_score / log_loss,
set arithmetic)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgexact import metrics


# ---------------------------------------------------------------------------------- stability
def _pairwise_stability(Z: np.ndarray) -> float:
    """Nogueira et al. (2018)'s estimator written through pairwise symmetric differences
    (their Theorem 1): the mean per-feature unbiased variance equals
    Σ_{i≠j} |Z_i Δ Z_j| / (2 B (B-1) d), so no per-feature frequencies are involved."""
    B, d = Z.shape
    sym = [np.sum(Z[i] != Z[j]) for i, j in itertools.permutations(range(B), 2)]
    k_bar = Z.sum(axis=1).mean()
    # the unbiased variance of a 0/1 column equals (1 / (2 B (B-1))) Σ_{i≠j} (z_i - z_j)²
    mean_var = np.sum(sym) / (2.0 * B * (B - 1)) / d
    return 1.0 - mean_var / ((k_bar / d) * (1 - k_bar / d))


def test_identical_subsets_are_perfectly_stable():
    Z = np.tile([1, 0, 1, 1, 0, 0], (7, 1))
    assert metrics.stability(Z) == 1.0
    assert metrics.stability(Z.astype(bool)) == 1.0


def test_two_disjoint_halves_reach_the_lower_bound():
    # B = 2: the minimum is -1 / (B - 1) = -1
    assert metrics.stability([[1, 0], [0, 1]]) == pytest.approx(-1.0, abs=1e-15)
    assert metrics.stability([[1, 1, 0, 0], [0, 0, 1, 1]]) == pytest.approx(-1.0, abs=1e-15)


def test_hand_computed_value():
    # p = (1, 2/3, 1/3, 0); s² = 3/2 p (1-p) = (0, 1/3, 1/3, 0); mean 1/6; k̄ = 2, d = 4:
    # Φ = 1 - (1/6) / (1/2 · 1/2) = 1/3
    Z = [[1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 0]]
    assert metrics.stability(Z) == pytest.approx(1 / 3, abs=1e-15)


def test_hand_computed_value_with_unequal_sizes():
    # sizes 1, 2, 3 of d = 4: k̄ = 2; p = (1, 2/3, 1/3, 0) as above -> Φ = 1/3 again
    Z = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
    assert metrics.stability(Z) == pytest.approx(1 / 3, abs=1e-15)


def test_independent_random_subsets_are_near_zero():
    rng = np.random.default_rng(0)
    d, k, B = 50, 10, 400
    Z = np.zeros((B, d), dtype=int)
    for b in range(B):
        Z[b, rng.choice(d, k, replace=False)] = 1
    assert abs(metrics.stability(Z)) < 0.02


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 8), st.integers(2, 9), st.data())
def test_matches_pairwise_definition(B, d, data):
    Z = np.array(data.draw(st.lists(st.lists(st.integers(0, 1), min_size=d, max_size=d),
                                    min_size=B, max_size=B)))
    k_bar = Z.sum(axis=1).mean()
    if k_bar in (0, d):
        with pytest.raises(ValueError, match="^Z:"):
            metrics.stability(Z)
        return
    assert metrics.stability(Z) == pytest.approx(_pairwise_stability(Z), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("Z, match", [
    ([[1, 0, 1]], "at least 2 rows"),
    ([1, 0, 1], "expected a"),
    ([[1, 2], [0, 1]], "0 or 1"),
    ([[1, 1], [1, 1]], "undefined"),
    ([[0, 0], [0, 0]], "undefined"),
])
def test_stability_refuses_bad_input(Z, match):
    with pytest.raises(ValueError, match=f"^Z: .*{match}"):
        metrics.stability(Z)


def test_interval_of_identical_subsets_is_a_point_at_one():
    assert metrics.stability_interval(np.tile([1, 1, 0, 0, 0], (5, 1))) == (1.0, 1.0, 1.0)


def test_interval_variance_and_coverage_by_simulation():
    """Draw many (B, d) selection matrices from a known process (each feature selected
    independently with its own probability): the spread of the stability estimates matches
    the estimated variance, and the 95 % intervals cover the process's stability ~95 % of
    the time (the limit of the estimates, approximated by their mean over many draws)."""
    rng = np.random.default_rng(7)
    probs = np.array([0.95, 0.9, 0.8, 0.7, 0.5, 0.3, 0.2, 0.1, 0.1, 0.05])
    reps, B = 1500, 100
    Zs = rng.random((reps, B, probs.size)) < probs
    out = np.array([metrics.stability_interval(Z) for Z in Zs])
    est, lo, hi = out.T
    truth = est.mean()
    half = (hi - lo) / 2 / 1.959963984540054
    assert np.mean(half ** 2) == pytest.approx(est.var(ddof=1), rel=0.15)
    coverage = np.mean((lo <= truth) & (truth <= hi))
    assert 0.925 <= coverage <= 0.975


def test_interval_refuses_a_bad_level():
    with pytest.raises(ValueError, match="^level:"):
        metrics.stability_interval([[1, 0], [0, 1]], level=1.5)


# ------------------------------------------------------------------------- ground-truth scores
def test_r2_and_log_loss_match_scikit_learn():
    from sklearn.metrics import log_loss, r2_score

    rng = np.random.default_rng(1)
    for _ in range(20):
        truth = np.where(rng.random(8) < 0.5, rng.random(8), 0.0)
        truth[0] = 1.0
        est = rng.random(8) * 3
        t, e = truth / truth.sum(), est / est.sum()
        assert metrics.importance_r2(est, truth) == pytest.approx(r2_score(t, e), rel=1e-12)
        assert metrics.importance_log_loss(est, truth) == pytest.approx(
            log_loss((truth > 0).astype(int), e, labels=[0, 1]), rel=1e-12)


def test_r2_textbook_values():
    truth = [3.0, 1.0, 0.0, 0.0]
    assert metrics.importance_r2([6.0, 2.0, 0.0, 0.0], truth) == 1.0  # scale does not matter
    # predicting the mean share 1/d for every feature gives 0
    assert metrics.importance_r2([1.0, 1.0, 1.0, 1.0], truth) == pytest.approx(0.0, abs=1e-15)


def test_log_loss_of_a_zero_importance_on_a_relevant_feature_is_clipped_not_infinite():
    value = metrics.importance_log_loss([1.0, 0.0], [1.0, 1.0])
    assert np.isfinite(value) and value > 10


def test_ground_truth_scores_refuse_bad_input():
    with pytest.raises(ValueError, match="^importances: .*non-negative"):
        metrics.importance_r2([1.0, -1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="^importances: all importances are zero"):
        metrics.importance_log_loss([0.0, 0.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="^truth: has 3 features"):
        metrics.importance_r2([1.0, 1.0], [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="^truth: all ground-truth importances are equal"):
        metrics.importance_r2([1.0, 2.0], [1.0, 1.0])


# ------------------------------------------------------------------------------- top k, sets
def test_top_k_precision_recall_by_set_arithmetic():
    rng = np.random.default_rng(2)
    for _ in range(50):
        d = int(rng.integers(3, 12))
        scores = rng.permutation(d).astype(float)  # no ties
        relevant = rng.choice(d, int(rng.integers(1, d)), replace=False)
        k = int(rng.integers(1, d + 1))
        top = set(np.argsort(scores)[::-1][:k].tolist())
        hits = len(top & set(relevant.tolist()))
        p, r = metrics.top_k_precision_recall(scores, relevant, k)
        assert (p, r) == (hits / k, hits / len(relevant))
        mask = np.zeros(d, dtype=bool)
        mask[relevant] = True
        assert metrics.top_k_precision_recall(scores, mask, k) == (p, r)


def test_top_k_precision_recall_shares_ties_at_the_cut():
    # place 2 is shared by three tied features, one of them relevant: 1/3 of a hit
    p, r = metrics.top_k_precision_recall([1.0, 0.0, 0.0, 0.0], [1], 2)
    assert (p, r) == (pytest.approx(1 / 6), pytest.approx(1 / 3))
    # the average over every order of the ties, by brute force
    scores, relevant, k = np.array([3.0, 1.0, 1.0, 1.0, 1.0, 0.0]), {1, 2, 5}, 3
    hits = []
    for order in itertools.permutations([1, 2, 3, 4]):
        top = [0] + list(order)[: k - 1]
        hits.append(len(set(top) & relevant))
    assert metrics.top_k_precision_recall(scores, sorted(relevant), k)[0] == pytest.approx(
        np.mean(hits) / k, rel=1e-12)
    # ties wholly inside the top k change nothing
    assert metrics.top_k_precision_recall([2.0, 2.0, 0.0], [0, 1], 2) == (1.0, 1.0)


def test_top_k_mask_ties_go_to_the_lower_position():
    Z = metrics.top_k_mask([[1.0, 2.0, 2.0, 0.0], [5.0, 5.0, 5.0, 5.0]], 2)
    assert Z.tolist() == [[0, 1, 1, 0], [1, 1, 0, 0]]
    with pytest.raises(ValueError, match="^k: must be an integer in 1..4"):
        metrics.top_k_mask([1.0, 2.0, 3.0, 4.0], 5)
    with pytest.raises(ValueError, match="^relevant: the relevant set is empty"):
        metrics.top_k_precision_recall([1.0, 2.0], np.zeros(2, dtype=bool), 1)


def test_importance_variance_independent():
    rng = np.random.default_rng(3)
    M = rng.random((6, 5))
    shares = M / M.sum(axis=1, keepdims=True)
    by_hand = sum(np.sum((shares[:, j] - shares[:, j].mean()) ** 2) / 5 for j in range(5))
    assert metrics.importance_variance(M) == pytest.approx(by_hand, rel=1e-12)
    assert metrics.importance_variance(np.tile([1.0, 2.0, 3.0], (4, 1)) * [[1], [2], [3], [4]]) \
        == pytest.approx(0.0, abs=1e-30)  # same shares at any scale


# --------------------------------------------------------------------------- validation curve
def test_validation_curve_feeds_the_top_k_in_order_and_area_is_the_mean():
    seen = []

    def fit_score(cols):
        seen.append(list(cols))
        return float(len(cols)) / 4

    curve = metrics.validation_curve(fit_score, [0.1, 0.9, 0.5, 0.0])
    assert seen == [[1], [1, 2], [1, 2, 0], [1, 2, 0, 3]]
    assert curve.tolist() == [0.25, 0.5, 0.75, 1.0]
    assert metrics.curve_area(curve) == pytest.approx(0.625)
    assert metrics.validation_curve(fit_score, [0.1, 0.9, 0.5, 0.0], ks=[2]).tolist() == [0.5]


def test_holdout_scorer_matches_a_direct_fit():
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    rng = np.random.default_rng(4)
    X = rng.standard_normal((200, 4))
    y = 3 * X[:, 2] + X[:, 0] + 0.1 * rng.standard_normal(200)
    score = metrics.holdout_scorer(LinearRegression, X[:150], y[:150], X[150:], y[150:])
    direct = r2_score(y[150:], LinearRegression().fit(X[:150, [2]], y[:150]).predict(X[150:, [2]]))
    curve = metrics.validation_curve(score, [1.0, 0.0, 3.0, 0.5])
    assert curve[0] == pytest.approx(direct, rel=1e-12)
    assert curve[-1] > 0.99 and curve[0] < curve[1]
    with pytest.raises(ValueError, match="^task:"):
        metrics.holdout_scorer(LinearRegression, X, y, X, y, task="ranking")
