"""``pgexact-bench agreement --quick`` in-process: its JSON, tables and figures on datasets with
and without ground truth and two model families, a model file on a user's CSV, the numbers
recomputed from the public API, no matplotlib, and its one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("xgboost")
pytest.importorskip("sklearn")
pytest.importorskip("shap")
pytest.importorskip("matplotlib")

from pgexact.bench.cli import main  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
#: a run of a few seconds: two datasets (one with ground truth) x two families, four explainers
SMALL = ["--quick", "--quiet", "--n-jobs", "1", "--rows", "8", "--bootstraps", "30",
         "--seeds", "2", "--mc-samples", "10"]
SETUP_FIELDS = {"label", "data", "model", "explained_rows", "explainers", "agreement"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("agreement")
    assert main(["agreement", *SMALL, "--dataset", "friedman1", "diabetes", "--library",
                 "xgboost", "sklearn", "--explainers", "greedy", "shap", "gain", "random",
                 "--out", str(out)]) == 0
    return out, json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_json_fields_setups_and_figures(run):
    out, res = run
    assert res["command"] == "agreement" and res["settings"]["rows"] == 8
    labels = [s["label"] for s in res["setups"]]
    assert labels == ["friedman1/xgboost", "friedman1/sklearn", "diabetes/xgboost",
                      "diabetes/sklearn"]
    for s in res["setups"]:
        assert set(s) == SETUP_FIELDS
        a = s["agreement"]
        assert a["explainers"] == ["PG² greedy", "SHAP per row", "gain", "random"]
        assert a["n_rows"] == 8 and a["settings"]["n_bootstraps"] == 30
        assert np.asarray(a["win_rate"], dtype=float).shape == (len(a["metrics"]), 4, 4)
    # ground-truth metrics only where the dataset has ground truth
    truth = [m for m in res["setups"][0]["agreement"]["metrics"]
             if m not in res["setups"][2]["agreement"]["metrics"]]
    assert truth and res["setups"][0]["data"]["relevant"] == [0, 1, 2, 3, 4]
    assert res["setups"][2]["data"]["relevant"] is None
    assert sorted(res["figures"]) == sorted(
        ["win_" + lab.replace("/", "_") + ".png" for lab in labels]
        + ["flip_by_rows.png", "metric_agreement.png", "heat_map.png", "subset_flip.png"])
    for f in res["figures"]:
        data = (out / f).read_bytes()
        assert data[:8] == PNG and len(data) < 200_000, f


def test_across_is_assembled_from_the_setups(run):
    """The cross-dataset score table holds each setup's mean scores (None where the setup has
    no such metric), the heat map ranks the mean cell ranks, and a subset of every setup and
    metric never flips."""
    _, res = run
    a = res["across"]
    assert a["datasets"] == [s["label"] for s in res["setups"]]
    S = np.array(a["mean_scores"], dtype=float)
    assert S.shape == (4, len(a["metrics"]), 4)
    for d, s in enumerate(res["setups"]):
        ag = s["agreement"]
        for m, name in enumerate(a["metrics"]):
            want = (np.array(ag["mean_scores"], dtype=float)[ag["metrics"].index(name)]
                    if name in ag["metrics"] else np.full(4, np.nan))
            np.testing.assert_allclose(S[d, m], want, rtol=1e-5)
    heat = np.array(a["heat_map"], dtype=float)
    assert heat.shape == (4, 4) and np.all(heat[:, 3] == 4)  # the random baseline is last
    sf = a["subset_flip"]
    D, M = 4, len(a["metrics"])
    assert np.array(sf["mean"], dtype=float).shape == (D, M) and all(map(all, sf["exact"]))
    assert sf["mean"][-1][-1] == 0 and sf["winner"][-1][-1] == 0
    assert 0 <= a["kendall_w"] <= 1


def test_pooled_summary_is_recomputed_from_the_setups(run):
    """Per metric: the median of rows needed and the share settled over every setup's pairs
    without the random baseline, read back from each setup's JSON arrays."""
    _, res = run
    for p in res["summary"]["per_metric"]:
        need = []
        for s in res["setups"]:
            a = s["agreement"]
            if p["metric"] not in a["metrics"]:
                continue
            m = a["metrics"].index(p["metric"])
            R = np.array(a["rows_needed"], dtype=object)[m]
            for i in range(3):  # explainers 0-2; 3 is the random baseline
                for j in range(i + 1, 3):
                    if a["flip_probability"][m][i][j] is not None:
                        need.append(float(R[i, j]))  # "inf" -> inf
        assert p["pairs"] == len(need)
        assert p["median_rows_needed"] in (float(np.median(need)), "inf")
        assert p["settled_share"] == pytest.approx(np.mean(np.isfinite(need)), abs=1e-6)
    assert len(res["summary"]["hardest"]) == 4


def test_scores_are_pgexacts_exact_values(run):
    """Recompute a per-row exact PGI² from the public API: the friedman1 split and model the
    run used (seeded), its evaluated rows, the library's gain importance as attributions."""
    import pgexact
    from pgexact.bench.data import eval_rows
    from pgexact.bench.ranker_models import fit_model, model_recipe
    from pgexact.bench.truth import friedman1

    _, res = run
    data = friedman1(400, 10, 0).data
    model = fit_model("xgboost", "regression", data.Xtr, data.ytr, model_recipe(True), seed=0,
                      n_jobs=1)
    X = eval_rows(data, 8, 1)
    score = model.get_booster().get_score(importance_type="gain")
    gain = np.array([score.get(f"f{j}", 0.0) for j in range(10)])
    want = pgexact.pgi2(model, X, attributions=np.tile(gain, (8, 1)), sigma=0.3)
    a = res["setups"][0]["agreement"]
    got = np.array(a["scores"], dtype=float)[a["metrics"].index("pgi2"), :, 2]
    np.testing.assert_allclose(got, want, rtol=1e-5)  # results.json keeps 6 digits


def test_tables_on_stdout(tmp_path, capsys):
    assert main(["agreement", *SMALL, "--dataset", "additive", "--explainers", "shap-mean",
                 "permutation", "--library", "lightgbm", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "additive/lightgbm" in text and "rows needed" in text
    assert "Kendall's W" in text and "P(a pairwise verdict on a random subset" in text


def test_model_file_on_a_users_csv(tmp_path):
    pd = pytest.importorskip("pandas")
    import xgboost as xgb

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 4)), columns=["a", "b", "c", "e"])
    y = 2 * X["a"] + X["b"] * X["c"] + 0.1 * rng.normal(size=300)
    pd.concat([X, y.rename("y")], axis=1).to_csv(tmp_path / "mine.csv", index=False)
    xgb.XGBRegressor(n_estimators=5, max_depth=3).fit(X, y).save_model(tmp_path / "m.json")
    out = tmp_path / "out"
    assert main(["agreement", *SMALL, "--data", str(tmp_path / "mine.csv"), "--target", "y",
                 "--model-file", str(tmp_path / "m.json"), "--explainers", "greedy", "shap",
                 "permutation", "gain", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    (s,) = res["setups"]
    assert s["label"] == "mine/m.json" and s["model"]["library"] == "xgboost"
    assert not any(m.startswith("truth") for m in s["agreement"]["metrics"])
    perm = np.array(s["agreement"]["mean_scores"], dtype=float)
    assert np.isfinite(perm[s["agreement"]["metrics"].index("pgi2")]).all()
    # the CSV next to a built-in dataset, each with a model trained here
    out2 = tmp_path / "both"
    assert main(["agreement", *SMALL, "--dataset", "diabetes", "--data",
                 str(tmp_path / "mine.csv"), "--target", "y", "--explainers", "gain", "random",
                 "--out", str(out2)]) == 0
    res = json.loads((out2 / "results.json").read_text(encoding="utf-8"))
    assert [s["label"] for s in res["setups"]] == ["diabetes/xgboost", "mine/xgboost"]


def test_without_matplotlib_still_tables_and_json(tmp_path, capsys, monkeypatch):
    import pgexact.bench.agreement as agreement

    real = agreement.optional
    monkeypatch.setattr(agreement, "optional",
                        lambda name: None if name == "matplotlib" else real(name))
    assert main(["agreement", *SMALL, "--explainers", "gain", "random", "--out",
                 str(tmp_path)]) == 0
    assert "figures skipped: matplotlib is not installed" in capsys.readouterr().out
    res = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert res["figures"] == [] and not list(tmp_path.glob("*.png"))


@pytest.mark.parametrize("argv, message", [
    (["--explainers", "gain", "gain"], "--explainers: give at least two"),
    (["--explainers", "nope", "gain"], "--explainers: invalid choice: 'nope'"),
    (["--dataset", "nope"], "--dataset: unknown dataset 'nope'"),
    (["--metrics", "nope"], "--metrics: "),
    (["--level", "1.5"], "--level: must be between 0 and 1"),
    (["--rows", "2"], "--rows: at least 4 rows"),
    (["--target", "y"], "--target goes with --data CSV"),
    (["--model-file", "m.json", "--dataset", "wine", "housing"], "--model-file: give one dataset"),
    (["--model-file", "m.json", "--dataset", "friedman1"], "--model-file: friedman1 is generated"),
    (["--model-file", "missing.json", "--dataset", "diabetes"], "--model-file: file not found"),
])
def test_usage_errors_are_one_line(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(["agreement", *SMALL, "--out", str(tmp_path)] + argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
