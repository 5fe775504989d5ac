"""All-feature PG2 against a 10^5-sample Monte Carlo through XGBoost's own predict."""

import numpy as np
import pytest

import pgexact
from _oracle import monte_carlo_pg2

N_MC = 100_000
ROWS = [0, 1, 4, 5]  # two random rows, one with a NaN, one with two NaNs


@pytest.mark.parametrize("sigma", [0.3, np.array([0.2, 0.5, 0.05, 1.0, 0.3])], ids=["scalar", "vector"])
@pytest.mark.parametrize("name", ["reg", "base_score", "binary", "multi1", "lossguide", "dart", "nan", "rf"])
def test_all_feature_pg2_vs_monte_carlo(cases, name, sigma):
    c = cases(name)
    X = c.X[ROWS]
    got = pgexact.pg2(c.pg_model(), X, list(range(c.d)), sigma=sigma)
    rng = np.random.default_rng(2024)
    for r, x in enumerate(X):
        mc, se = monte_carlo_pg2(c.oracle, x, sigma, N_MC, rng, c.output)
        fx = c.oracle.xgb_margin(x[None, :], c.output)[0]
        slack = 1e-6 * (1.0 + abs(fx)) ** 2  # float32 rounding of XGBoost's predictions
        assert abs(got[r] - mc) <= 5 * se + slack, (name, r, got[r], mc, se)
