"""metrics.agreement: the scores are the library's own functions (PGI² and hardness also from
PG² of every prefix set, by brute force), the statistics agree with loops over the per-row
scores, exact metrics never flip with the seed, Monte Carlo flips fall with the sample count,
and the result converts to tables and strict JSON and back."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

import pgexact
from pgexact import mc, metrics, openxai
from conftest import NTHREAD

D, N = 5, 24
TRUTH = np.array([1.0, 1.0, 1.0, 0.5, 0.0])
NAMES = [f"f{j}" for j in range(D)]


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, D))
    y = 2 * np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] + 0.25 * X[:, 4] ** 2
    # feature names, so that a DataFrame's columns are matched by name (numpy X: by position)
    model = xgb.XGBRegressor(n_estimators=10, max_depth=3, nthread=NTHREAD, random_state=0)
    model.fit(pd.DataFrame(X, columns=NAMES), y)
    Xt = np.ascontiguousarray(X[:N])
    explanations = {
        # (n, d) attributions: XGBoost's own TreeSHAP (without the bias column)
        "shap": model.get_booster().predict(xgb.DMatrix(Xt, feature_names=NAMES),
                                            pred_contribs=True)[:, :D],
        "greedy": pgexact.rank(model, Xt, n_jobs=NTHREAD),         # (n, d) rankings
        "global": np.array([0.1, 0.4, 0.3, 0.9, 0.2]),             # (d,) importances
        "order": np.array([4, 3, 2, 1, 0]),                        # (d,) ranking
    }
    return model, Xt, explanations


@pytest.fixture(scope="module")
def result(setup):
    model, X, explanations = setup
    return metrics.agreement(model, X, explanations, ground_truth=TRUTH, n_samples=32,
                             n_seeds=5, n_bootstraps=200, seed=3, n_jobs=NTHREAD)


def _ranking(value):
    v = np.asarray(value)
    if np.issubdtype(v.dtype, np.integer):
        return np.broadcast_to(v, (N, D))
    return np.argsort(-np.abs(np.broadcast_to(v, (N, D))), axis=1, kind="stable")


def _score(result, metric):
    return result.scores[result.metrics.index(metric)]


# ---------------------------------------------------------------------------- the scores
def test_metrics_and_their_orientation(result):
    assert result.explainers == ("shap", "greedy", "global", "order")
    assert result.metrics == ("pgi2", "pgu2", "infidelity", "pgi_mc", "pgi2_mc", "truth_r2",
                              "truth_topk")  # ground truth adds its metrics to the default
    assert result.higher_is_better == {"pgi2": True, "pgu2": False, "infidelity": False,
                                       "pgi_mc": True, "pgi2_mc": True, "truth_r2": True,
                                       "truth_topk": True}
    assert [a for a, v in result.monte_carlo.items() if v] == ["pgi_mc", "pgi2_mc"]
    assert result.scores.shape == (7, N, 4) and result.n_rows == N


def test_exact_scores_are_the_library_functions(setup, result):
    model, X, explanations = setup
    for e, (name, value) in enumerate(explanations.items()):
        R = _ranking(value)
        np.testing.assert_array_equal(_score(result, "pgi2")[:, e], pgexact.pgi2(model, X, R))
        np.testing.assert_array_equal(_score(result, "pgu2")[:, e], pgexact.pgu2(model, X, R))
        if np.issubdtype(np.asarray(value).dtype, np.integer):
            assert np.all(np.isnan(_score(result, "infidelity")[:, e]))
        else:
            np.testing.assert_array_equal(_score(result, "infidelity")[:, e],
                                          pgexact.infidelity(model, X, np.broadcast_to(value, (N, D))))
    assert any("infidelity of 'greedy'" in note for note in result.notes)


def test_pgi2_and_hardness_by_brute_force_over_prefix_sets(setup, result):
    # PG² of every top-k set, one pg2 call per set (not the curve kernel), then the definitions
    model, X, explanations = setup
    pgi2 = np.empty((N, len(explanations)))
    everything = pgexact.pg2(model, X, np.ones(D, dtype=bool))
    for e, value in enumerate(explanations.values()):
        R = _ranking(value)
        prefix = [pgexact.pg2(model, X, np.arange(D)[None, :] == R[:, :1] if k == 1 else
                              (np.argsort(R, axis=1) < k)) for k in range(1, D + 1)]
        pgi2[:, e] = np.mean(prefix, axis=0)
    np.testing.assert_allclose(_score(result, "pgi2"), pgi2, rtol=1e-12)
    want = [1 - max(pgi2[r]) / everything[r] if everything[r] > 0 else math.nan for r in range(N)]
    np.testing.assert_allclose(result.hardness, want, rtol=1e-10, atol=1e-12)
    order = sorted((r for r in range(N) if not math.isnan(want[r])), key=lambda r: (-want[r], r))
    assert list(result.hardest_rows) == order[:10]


def test_monte_carlo_scores_are_the_library_functions_with_the_seed(setup, result):
    model, X, explanations = setup
    for e, value in enumerate(explanations.values()):
        R = _ranking(value)
        np.testing.assert_allclose(_score(result, "pgi2_mc")[:, e],
                                   mc.pgi2(model, X, R, n_samples=32, seed=3), rtol=1e-12)
        v = np.asarray(value)
        a = np.broadcast_to(v, (N, D)) if v.dtype.kind == "f" else \
            np.take_along_axis(np.broadcast_to(np.arange(D, 0, -1.0), (N, D)), np.argsort(R, axis=1), 1)
        np.testing.assert_allclose(_score(result, "pgi_mc")[:, e],
                                   openxai.pgi(model, X, a, k=0.25, sigma=0.3, n_samples=32, seed=3),
                                   rtol=1e-12)


def test_ground_truth_scores_are_the_library_functions(setup, result):
    _, _, explanations = setup
    for e, value in enumerate(explanations.values()):
        v = np.asarray(value)
        R = _ranking(value)
        for r in range(N):
            if v.dtype.kind == "f":
                a = np.abs(np.broadcast_to(v, (N, D))[r])
                assert _score(result, "truth_r2")[r, e] == pytest.approx(metrics.importance_r2(a, TRUTH))
            else:
                assert math.isnan(_score(result, "truth_r2")[r, e])
                a = np.empty(D)
                a[R[r]] = np.arange(D, 0, -1)
            p, _ = metrics.top_k_precision_recall(a, TRUTH > 0, 4)
            assert _score(result, "truth_topk")[r, e] == pytest.approx(p)


# ------------------------------------------------------------------------ the statistics
def test_pairwise_statistics_by_loops_over_the_scores(result):
    m, n, k = result.scores.shape
    for a, metric in enumerate(result.metrics):
        sign = 1 if result.higher_is_better[metric] else -1
        s = result.scores[a] * sign
        for i, j in itertools.permutations(range(k), 2):
            if np.isnan(s[:, i]).all() or np.isnan(s[:, j]).all():
                assert math.isnan(result.verdict[a, i, j]) and math.isnan(result.win_rate[a, i, j])
                continue
            ok = ~np.isnan(s[:, i]) & ~np.isnan(s[:, j])
            wins = sum(1.0 if x > y else 0.5 if x == y else 0.0 for x, y in zip(s[ok, i], s[ok, j]))
            assert result.win_rate[a, i, j] == pytest.approx(wins / ok.sum())
            diff = float(np.mean(s[ok, i] - s[ok, j]))
            assert result.mean_difference[a, i, j] == pytest.approx(diff, abs=1e-14)
            assert result.verdict[a, i, j] == np.sign(diff)
            lo, hi = result.interval[a, i, j]
            assert lo <= hi and result.interval[a, j, i].tolist() == [-hi, -lo]
            assert result.flip_probability[a, i, j] == result.flip_probability[a, j, i]
            assert result.flip_probability[a, i, j] == result.flip_curve["probability"][a, i, j, -1]
        better = result.mean_scores[a] * sign
        for i in range(k):
            if not math.isnan(better[i]):
                above = sum(better[j] > better[i] for j in range(k) if not math.isnan(better[j]))
                ties = sum(better[j] == better[i] for j in range(k) if not math.isnan(better[j]))
                assert result.ranks[a, i] == 1 + above + (ties - 1) / 2
    assert list(result.flip_curve["sizes"]) == list(range(1, N + 1)) or result.flip_curve["sizes"][-1] == N


def test_metric_agreement_by_loops_over_the_verdicts(result):
    m, k = len(result.metrics), len(result.explainers)
    pairs = list(itertools.combinations(range(k), 2))
    for a, b in itertools.product(range(m), repeat=2):
        both = [(i, j) for i, j in pairs if not (math.isnan(result.verdict[a, i, j])
                                                 or math.isnan(result.verdict[b, i, j]))]
        same = sum(result.verdict[a, i, j] == result.verdict[b, i, j] for i, j in both)
        want = same / len(both) if both else math.nan
        np.testing.assert_allclose(result.metric_agreement[a, b], want, equal_nan=True)
    assert result.error_case_rate.shape == (m,)


def test_similarity_is_spearman_and_median_split_of_the_scores(result):
    import scipy.stats

    a = result.metrics.index("pgu2")
    s = -result.scores[a]  # lower is better: the median split is of the oriented scores
    k = len(result.explainers)
    for i, j in itertools.combinations(range(k), 2):
        rho = scipy.stats.spearmanr(s[:, i], s[:, j])[0]
        assert result.similarity_correlation[a, i, j] == pytest.approx(rho)
        well_i, well_j = s[:, i] >= np.median(s[:, i]), s[:, j] >= np.median(s[:, j])
        assert result.verdict_agreement[a, i, j] == pytest.approx(np.mean(well_i == well_j))


def test_exact_metrics_never_flip_with_the_seed(setup, result):
    model, X, explanations = setup
    other = metrics.agreement(model, X, explanations, metrics=("pgi2", "pgu2", "infidelity"),
                              n_seeds=5, n_bootstraps=20, seed=11, n_jobs=NTHREAD)
    for a, metric in enumerate(other.metrics):
        b = result.metrics.index(metric)
        np.testing.assert_array_equal(other.scores[a], result.scores[b])  # no seed in them
        off = ~np.eye(len(result.explainers), dtype=bool)
        assert np.all(other.seed_flip_rate[a][off] == 0)
        assert np.all(result.seed_flip_rate[b][off] == 0)


def test_monte_carlo_flip_rate_falls_as_the_sample_count_grows(setup):
    # three rankings that differ in their second and third places: close in PGI²
    model, X, _ = setup
    close = {"a": np.array([0, 1, 2, 3, 4]), "b": np.array([0, 2, 1, 3, 4]),
             "c": np.array([1, 0, 2, 3, 4])}
    rates = []
    for n_samples in (1, 4, 64):
        res = metrics.agreement(model, X[:20], close, metrics=("pgi2", "pgi_mc", "pgi2_mc"),
                                n_samples=n_samples, n_seeds=30, n_bootstraps=20, top_k=1.0,
                                n_jobs=NTHREAD)
        off = ~np.eye(3, dtype=bool)
        assert np.all(res.seed_flip_rate[0][off] == 0)
        rates.append(res.seed_flip_rate[1:][:, off].mean())
    assert rates[0] > rates[1] >= rates[2] and rates[0] > 0.05 and rates[2] <= 0.02


# --------------------------------------------------------------------------- the output
def test_frames_json_and_repr(result):
    frame = result.to_frame()
    m, k = len(result.metrics), len(result.explainers)
    assert len(frame) == m * k * (k - 1)
    row = frame[(frame.metric == "pgu2") & (frame.explainer == "shap") & (frame.other == "order")]
    a, i, j = 1, 0, 3
    assert row.win_rate.item() == result.win_rate[a, i, j]
    assert row.lower.item() == result.interval[a, i, j, 0]
    scores = result.scores_frame()
    assert len(scores) == result.scores.size
    pick = scores[(scores.metric == "pgi2_mc") & (scores.row == 7) & (scores.explainer == "global")]
    assert pick.score.item() == result.scores[4, 7, 2]

    text = result.to_json()
    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    data = json.loads(text, parse_constant=refuse)  # strict JSON: no NaN or Infinity literals
    back = metrics.AgreementResult.from_dict(data)
    for name in ("scores", "win_rate", "interval", "rows_needed", "seed_flip_rate", "hardness"):
        np.testing.assert_array_equal(getattr(back, name), getattr(result, name))
    np.testing.assert_array_equal(back.flip_curve["probability"], result.flip_curve["probability"])
    assert back.explainers == result.explainers and back.settings == json.loads(json.dumps(data["settings"]))

    summary = repr(result)
    for word in ("shap vs greedy", "pgi2_mc", "metric agreement", "hardest rows", "(no seed)"):
        assert word in summary


def test_a_dataframe_with_reordered_columns_gives_the_same_scores(setup, result):
    model, X, explanations = setup
    perm = [3, 0, 4, 1, 2]
    frame = pd.DataFrame(X, columns=NAMES).iloc[:, perm]
    phi = explanations["shap"]
    ex_plain = {"shap": phi, "order": np.array([4, 3, 2, 1, 0])}
    ex_perm = {"shap": phi[:, perm], "order": np.argsort(perm)[np.array([4, 3, 2, 1, 0])]}
    kw = dict(metrics=("pgi2", "pgu2", "infidelity", "pgi2_mc"), n_seeds=2, n_bootstraps=10,
              n_samples=8, n_jobs=NTHREAD)
    plain = metrics.agreement(model, X, ex_plain, **kw)
    moved = metrics.agreement(model, frame, ex_perm, **kw)
    np.testing.assert_allclose(moved.scores, plain.scores, rtol=1e-12)


def test_progress_true_shows_one_bar(setup, capsys):
    pytest.importorskip("tqdm")
    model, X, explanations = setup
    metrics.agreement(model, X, explanations, metrics=("pgi2",), n_bootstraps=5,
                      progress=True, n_jobs=NTHREAD)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("agreement") >= 1 and "pg2_curve" not in captured.err


# ---------------------------------------------------------------------------- the errors
@pytest.mark.parametrize("kwargs, error, start", [
    (dict(explanations=[1, 2]), TypeError, "explanations"),
    (dict(explanations={"a": np.zeros(D)}), ValueError, "explanations"),
    (dict(explanations={"a": np.zeros(D), "": np.zeros(D)}), TypeError, "explanations"),
    (dict(explanations={"a": np.zeros(D), "b": np.zeros((3, D))}), ValueError, "explanations"),
    (dict(explanations={"a": np.zeros(D), "b": np.zeros(D, dtype=bool)}), TypeError, "explanations"),
    (dict(explanations={"a": np.zeros(D), "b": np.array([0, 0, 1, 2, 3])}), ValueError, "explanations"),
    (dict(metrics=("pgi2", "pgi3")), ValueError, "metrics"),
    (dict(metrics=("pgi2", "pgi2")), ValueError, "metrics"),
    (dict(metrics=("truth_r2",)), ValueError, "metrics"),
    (dict(metrics=("pgi2",), ground_truth=np.ones(D + 1)), ValueError, "ground_truth"),
    (dict(metrics=("truth_r2",), ground_truth=np.ones(D)), ValueError, "ground_truth"),
    (dict(ground_truth=-np.ones(D)), ValueError, "ground_truth"),
    (dict(level=1.5), ValueError, "level"),
    (dict(n_bootstraps=0), ValueError, "n_bootstraps"),
    (dict(n_samples=1.5), TypeError, "n_samples"),
    (dict(n_seeds=0), ValueError, "n_seeds"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(output="all"), ValueError, "output"),
    (dict(progress="yes"), TypeError, "progress"),
])
def test_errors_name_the_argument(setup, kwargs, error, start):
    model, X, explanations = setup
    kwargs = dict(kwargs)
    ex = kwargs.pop("explanations", {"a": explanations["shap"][:4], "b": explanations["greedy"][:4]})
    with pytest.raises(error, match=f"^{start}"):
        metrics.agreement(model, X[:4], ex, n_bootstraps=kwargs.pop("n_bootstraps", 5), **kwargs)


def test_explicit_metrics_are_kept_with_a_ground_truth(setup):
    model, X, explanations = setup
    res = metrics.agreement(model, X, explanations, metrics=("pgi2",), ground_truth=TRUTH > 0,
                            n_bootstraps=5, n_jobs=NTHREAD)
    assert res.metrics == ("pgi2",)
    res = metrics.agreement(model, X, explanations, metrics=("truth_topk",),
                            ground_truth=TRUTH > 0, n_bootstraps=5, n_jobs=NTHREAD)
    assert res.metrics == ("truth_topk",) and np.all(res.seed_flip_rate[0][0, 1:] == 0)


def test_a_model_split_by_category_has_no_infidelity_but_every_other_score():
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": pd.Categorical(rng.integers(0, 3, 200)),
                      "c": rng.normal(size=200)})
    y = X.a + 2.0 * (X.b.cat.codes == 1) + X.c ** 2
    model = xgb.XGBRegressor(n_estimators=5, max_depth=3, enable_categorical=True,
                             tree_method="hist", nthread=NTHREAD).fit(X, y)
    rows = X.iloc[:8]
    res = metrics.agreement(model, rows, {"x": np.array([[1.0, 0.5, 0.2]] * 8), "y": np.array([2, 0, 1])},
                            n_seeds=1, n_bootstraps=10, n_samples=4, n_jobs=NTHREAD)
    assert np.all(np.isnan(_score(res, "infidelity")))
    assert any("additive noise" in note for note in res.notes)
    for metric in ("pgi2", "pgu2", "pgi_mc", "pgi2_mc"):
        assert np.all(np.isfinite(_score(res, metric)))
    assert np.isnan(res.seed_flip_rate[res.metrics.index("pgi2_mc"), 0, 1])  # one run: no rate
