"""``--model-file`` matches CSV columns by the names stored in the file, does not
standardise unless asked, prints every dropped column, and ``demo`` writes a PNG."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("xgboost")
pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")
pytest.importorskip("shap")
pd = pytest.importorskip("pandas")

from pgexact import cli  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def _run(tmp_path, *argv):
    out = tmp_path / "out"
    assert cli.main([*argv, "--out", str(out), "--quiet", "--n-jobs", "1"]) == 0
    return out, json.loads((out / "results.json").read_text())


def _diabetes_csv(tmp_path):
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    df = X.assign(note=["n"] * len(X), y=y)
    path = tmp_path / "diabetes.csv"
    df.to_csv(path, index=False)
    return X, y, path


def _xgb_file(tmp_path, X, y, name="m.json"):
    import xgboost as xgb

    model = xgb.XGBRegressor(n_estimators=5, max_depth=3, nthread=1).fit(X, y)
    path = tmp_path / name
    model.save_model(path)
    return path


def test_model_file_columns_matched_by_name_raw_data(tmp_path, capsys):
    X, y, csv = _diabetes_csv(tmp_path)
    rev = X[X.columns[::-1]]
    model_path = _xgb_file(tmp_path, rev, y)  # the file's features are in reverse order
    _, res = _run(tmp_path, "ranking", "--data", str(csv), "--target", "y", "--model-file",
                  str(model_path), "--samples", "20", "--sigma-rank", "0.01",
                  "--sigma-eval", "0.01")
    assert res["data"]["feature_names"] == list(rev.columns)
    out = capsys.readouterr().out
    assert "note: dropped non-numeric columns: note" in out  # on screen, with the reason
    assert "not standardised" in out
    # evaluated on the raw features it was trained on: PGI² of a sensible size, not ~1e-90
    assert min(min(v) for v in res["mean_pgi2"].values()) > 1e-3


def test_model_file_with_missing_names_is_refused(tmp_path, capsys):
    X, y, csv = _diabetes_csv(tmp_path)
    model_path = _xgb_file(tmp_path, X.rename(columns={"bmi": "weight"}), y)
    with pytest.raises(SystemExit) as exc:
        cli.main(["ranking", "--data", str(csv), "--target", "y", "--model-file", str(model_path),
                  "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--model-file" in err and "weight" in err


def test_standardise_is_opt_in_for_model_files(tmp_path, capsys):
    X, y, csv = _diabetes_csv(tmp_path)
    model_path = _xgb_file(tmp_path, X, y)
    _run(tmp_path, "ranking", "--data", str(csv), "--target", "y", "--model-file", str(model_path),
         "--samples", "10", "--standardise", "--sigma-rank", "0.3", "--sigma-eval", "0.3")
    assert "not standardised" not in capsys.readouterr().out


def test_demo_writes_a_png(tmp_path):
    out, res = _run(tmp_path, "demo", "--rows", "5", "--iterations", "10", "20")
    assert res["figures"] == ["demo.png"]
    with open(out / "demo.png", "rb") as fh:
        assert fh.read(8) == PNG
