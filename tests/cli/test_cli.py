"""pgexact-bench: every subcommand in-process on tiny settings, its JSON and figures, and the
one-line errors (exit code 2, no traceback) for input a user can fix."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("xgboost")
pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")
pytest.importorskip("shap")

from pgexact import cli  # noqa: E402

DATA_DIR = "/work/shared/datasets"
PNG = b"\x89PNG\r\n\x1a\n"


def run(tmp_path, *argv):
    out = tmp_path / "out"
    code = cli.main([*argv, "--out", str(out), "--quiet", "--n-jobs", "1"])
    assert code == 0
    return out, json.loads((out / "results.json").read_text())


def assert_png(path):
    assert path.is_file(), path
    with open(path, "rb") as fh:
        assert fh.read(8) == PNG


def usage_error(capsys, argv):
    """Run argv, expect exit code 2 and a one-line message without a traceback."""
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("pgexact-bench: error: ")
    return lines[0]


# ------------------------------------------------------------------------------- accuracy
def test_accuracy_fields_png_and_nmae_falls_with_iterations(tmp_path):
    iters = [4, 64, 1024]
    out, res = run(tmp_path, "accuracy", "--dataset", "diabetes", "--model", "single",
                   "--samples", "60", "--sigma", "0.3", "1.0", "--iterations",
                   *map(str, iters))
    assert res["command"] == "accuracy"
    assert res["pairs"] == 60
    assert len(res["rows"]) == 2 * len(iters)
    for r in res["rows"]:
        assert set(r) >= {"sigma", "iterations", "nmae", "time_exact_s", "time_mc_s"}
        assert r["sigma"] in (0.3, 1.0) and r["iterations"] in iters
        assert r["nmae"] >= 0 and r["time_exact_s"] > 0 and r["time_mc_s"] > 0
    assert [m["sigma"] for m in res["time_matched"]] == [0.3, 1.0]
    for m in res["time_matched"]:
        assert set(m) >= {"sigma", "iterations", "nmae", "time_exact_s", "time_mc_s"}
        assert m["iterations"] >= 1
    # the Monte Carlo error shrinks like 1/sqrt(k): averaged over the sigmas it falls at every
    # 16-fold step, and by far over the whole range
    mean = [np.mean([r["nmae"] for r in res["rows"] if r["iterations"] == k]) for k in iters]
    assert mean[0] > mean[1] > mean[2]
    assert mean[2] < 0.35 * mean[0]
    assert res["model"]["n_trees"] == 1 and res["model"]["max_depth"] == 4
    assert res["data"]["n_features"] == 10
    assert_png(out / "accuracy.png")


def test_own_csv_with_a_text_column(tmp_path):
    rng = np.random.default_rng(1)
    n = 200
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + np.sin(X[:, 1]) + 0.1 * rng.normal(size=n)
    path = tmp_path / "mine.csv"
    with open(path, "w") as fh:
        fh.write("a;b;c;colour;y\n")
        for i in range(n):
            fh.write(f"{X[i, 0]};{X[i, 1]};{X[i, 2]};{'red' if i % 2 else 'blue'};{y[i]}\n")
    out, res = run(tmp_path, "accuracy", "--data", str(path), "--target", "y", "--model",
                   "single", "--samples", "12", "--sigma", "0.5", "--iterations", "8", "32")
    assert res["data"]["feature_names"] == ["a", "b", "c"]
    assert any("colour" in note for note in res["data"]["notes"])
    assert_png(out / "accuracy.png")


def test_model_file(tmp_path):
    import xgboost as xgb

    data = cli._load_named("diabetes", None, seed=0)
    model = xgb.XGBRegressor(n_estimators=3, max_depth=3).fit(data.Xtr, data.ytr)
    path = tmp_path / "m.json"
    model.save_model(path)
    out, res = run(tmp_path, "accuracy", "--dataset", "diabetes", "--model-file", str(path),
                   "--samples", "10", "--sigma", "0.3", "--iterations", "8", "32")
    assert res["model"]["kind"] == "file" and res["model"]["n_trees"] == 3


def test_grid_search(tmp_path):
    _, res = run(tmp_path, "accuracy", "--dataset", "diabetes", "--model", "single",
                 "--grid-search", "--samples", "8", "--sigma", "0.3", "--iterations", "8")
    gs = res["model"]["grid_search"]
    assert gs["cv_folds"] == 5 and set(gs["best"]) == {"learning_rate", "subsample"}
    assert gs["best"]["learning_rate"] in gs["grid"]["learning_rate"]
    assert res["model"]["learning_rate"] == gs["best"]["learning_rate"]


# -------------------------------------------------------------------------------- ranking
def test_ranking_fields_png_and_values(tmp_path):
    import pgexact
    from pgexact import metrics

    out, res = run(tmp_path, "ranking", "--dataset", "diabetes", "--model", "single",
                   "--samples", "30", "--sigma-rank", "0.3", "1.0", "--sigma-eval", "0.1", "0.3")
    assert res["methods"] == ["SHAP", "PG σ=0.3", "PG σ=1"]
    assert res["sigma_eval"] == [0.1, 0.3] and res["rows"] == 30
    for c in res["methods"]:
        assert len(res["mean_pgi2"][c]) == 2 and all(v > 0 for v in res["mean_pgi2"][c])
    for c in ("PG σ=0.3", "PG σ=1"):
        assert res["ratio_to_shap"][c] == pytest.approx(
            [a / b for a, b in zip(res["mean_pgi2"][c], res["mean_pgi2"]["SHAP"])])
    assert_png(out / "ranking.png")

    # the same numbers straight from the API: same data, model and rows as the CLI
    import argparse

    args = argparse.Namespace(grid_search=False, seed=0, n_jobs=1, quiet=True)
    data = cli._load_named("diabetes", None, seed=0)
    model, _ = cli._fit_recipe(args, data, "single")
    X = cli._eval_rows(data, 30, 1)
    for s_rank, col in ((0.3, "PG σ=0.3"), (1.0, "PG σ=1")):
        R = pgexact.rank(model, X, sigma=s_rank)
        want = [float(pgexact.pgi2(model, X, R, sigma=s).mean()) for s in (0.1, 0.3)]
        assert res["mean_pgi2"][col] == pytest.approx(want, rel=1e-9)
    S = metrics.shap_ranking(model, X)
    want = [float(pgexact.pgi2(model, X, S, sigma=s).mean()) for s in (0.1, 0.3)]
    assert res["mean_pgi2"]["SHAP"] == pytest.approx(want, rel=1e-9)


# ---------------------------------------------------------------------------- conciseness
def test_conciseness_fields_and_png(tmp_path):
    out, res = run(tmp_path, "conciseness", "--dataset", "friedman", "--model", "single",
                   "--samples", "40", "--sigma", "0.1", "1.0")
    assert res["schemes"] == ["geom", "top1", "top2", "top3"]
    assert res["columns"] == ["SHAP", "PG σ=0.1", "PG σ=1"]
    for c in res["columns"]:
        for sc in res["schemes"]:
            assert 0.0 <= res["entropy"][c][sc] <= res["max_entropy_bits"] + 1e-12
        assert len(res["top_features_geom"][c]) == 3
    assert res["max_entropy_bits"] == pytest.approx(np.log2(10))
    assert_png(out / "conciseness.png")


# ---------------------------------------------------------------------------------- speed
def test_speed_fields_png_and_reference_agrees(tmp_path):
    out, res = run(tmp_path, "speed", "--dataset", "diabetes", "--samples", "4",
                   "--max-leaves", "400", "--mc-iterations", "50")
    ms = res["models"]
    assert len(ms) >= 2 and ms[0]["leaves"] == 16
    assert all(a["leaves"] < b["leaves"] for a, b in zip(ms, ms[1:]))
    for m in ms:
        assert m["time_exact_s"] > 0 and m["time_mc_s"] > 0 and m["mc_iterations"] == 50
        assert m["time_reference_s"] > 0 and m["reference_pairs"] == 4
        assert m["reference_max_rel_diff"] < 1e-9  # same values as the fast kernel
    assert_png(out / "speed.png")


def test_speed_skips_the_reference_past_its_budget(tmp_path):
    _, res = run(tmp_path, "speed", "--dataset", "diabetes", "--samples", "3",
                 "--max-leaves", "400", "--mc-iterations", "10", "--reference-budget", "1e-9")
    first, second = res["models"][:2]
    assert first["reference_pairs"] == 1 and "1 of 3" in first["note"]
    assert second["time_reference_s"] is None and "skipped" in second["note"]


# ---------------------------------------------------------------------------------- paper
@pytest.mark.skipif(not os.path.isdir(DATA_DIR), reason="paper datasets not present")
def test_paper_tiny_run_and_report_only(tmp_path):
    out, res = run(tmp_path, "paper", "--data-dir", DATA_DIR, "--samples", "12", "--rows", "10",
                   "--iterations", "4", "32", "--sigma", "0.3", "--sigma-rank", "0.3",
                   "--sigma-eval", "0.3", "1.0", "--speed-samples", "2", "--max-leaves", "100",
                   "--mc-iterations", "20")
    assert set(res["runs"]) == {"wine/single", "wine/bigger", "housing/single", "housing/bigger"}
    assert set(res["speed"]) == {"wine", "housing"}
    assert res["data"]["housing"]["n_features"] == 8 and res["data"]["wine"]["n_features"] == 11
    assert any("207" in note for note in res["data"]["housing"]["notes"])
    for key, r in res["runs"].items():
        assert {"accuracy", "ranking", "conciseness", "model"} <= set(r)
        assert r["model"]["max_depth"] == 4
        assert r["model"]["n_trees"] == (1 if key.endswith("single") else 40)
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    for png in ("accuracy.png", "ranking.png", "conciseness.png", "speed.png"):
        assert_png(out / png)
        assert f"({png})" in report
    for heading in ("## 1. Accuracy", "## 2. Greedy", "## 3. Conciseness", "## 4. Speed",
                    "published Tables 1-9 are compared with ours"):
        assert heading in report
    # a hand-written reading is picked up by --report-only
    (out / "NOTES.md").write_text("## Notes\n\nhand-written reading\n", encoding="utf-8")
    assert cli.main(["paper", "--report-only", "--out", str(out), "--quiet"]) == 0
    assert "hand-written reading" in (out / "REPORT.md").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------------- demo
def test_demo(tmp_path):
    _, res = run(tmp_path, "demo", "--rows", "5", "--iterations", "10")
    assert res["command"] == "demo" and res["n_rows"] == 5
    assert [r["method"] for r in res["rows"]] == ["exact", "monte_carlo"]


# --------------------------------------------------------------------------------- errors
def test_unknown_dataset(capsys, tmp_path):
    msg = usage_error(capsys, ["accuracy", "--dataset", "iris", "--out", str(tmp_path)])
    assert "unknown dataset 'iris'" in msg


def test_unknown_model(capsys, tmp_path):
    msg = usage_error(capsys, ["ranking", "--model", "huge", "--out", str(tmp_path)])
    assert "unknown model 'huge'" in msg


def test_missing_csv(capsys, tmp_path):
    msg = usage_error(capsys, ["accuracy", "--data", str(tmp_path / "nope.csv"), "--target",
                               "y", "--out", str(tmp_path)])
    assert "file not found" in msg


def test_missing_model_file(capsys, tmp_path):
    msg = usage_error(capsys, ["accuracy", "--model-file", str(tmp_path / "m.json"),
                               "--out", str(tmp_path)])
    assert "--model-file" in msg and "not found" in msg


def test_missing_data_dir(capsys, tmp_path):
    msg = usage_error(capsys, ["conciseness", "--dataset", "wine", "--data-dir",
                               str(tmp_path / "none"), "--out", str(tmp_path)])
    assert "--data-dir" in msg


def test_bad_column(capsys, tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i * 2}\n" for i in range(30)))
    msg = usage_error(capsys, ["accuracy", "--data", str(path), "--target", "z",
                               "--out", str(tmp_path)])
    assert "no column 'z'" in msg and "a, b, y" in msg


def test_model_file_with_the_wrong_features(capsys, tmp_path):
    import xgboost as xgb

    rng = np.random.default_rng(0)
    model = xgb.XGBRegressor(n_estimators=2, max_depth=2).fit(rng.normal(size=(50, 3)),
                                                              rng.normal(size=50))
    path = tmp_path / "m.json"
    model.save_model(path)
    msg = usage_error(capsys, ["accuracy", "--dataset", "diabetes", "--model-file", str(path),
                               "--out", str(tmp_path)])
    assert "3 features" in msg and "10" in msg


def test_report_only_without_results(capsys, tmp_path):
    msg = usage_error(capsys, ["paper", "--report-only", "--out", str(tmp_path)])
    assert "results.json" in msg


def test_progress_bars_only_on_a_terminal(monkeypatch):
    import argparse

    class Tty:
        def isatty(self):
            return True

    monkeypatch.setattr(cli.sys, "stderr", Tty())
    assert cli._bars_enabled(argparse.Namespace(quiet=False))
    assert not cli._bars_enabled(argparse.Namespace(quiet=True))
    monkeypatch.setattr(cli.sys, "stderr", object())
    assert not cli._bars_enabled(argparse.Namespace(quiet=False))
