"""Issue 16: positions follow X as passed, names are matched by name, Pipelines transform X.

Every test compares a DataFrame whose columns are a permutation of the model's with the
model-ordered frame and the positional arguments permuted accordingly; on the code before
issue 16 the positional arguments were read in the model's order and these differed.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import pgexact
import pgexact.mc
import pgexact.openxai

xgboost = pytest.importorskip("xgboost")
datasets = pytest.importorskip("sklearn.datasets")


@pytest.fixture(scope="module")
def diabetes():
    X, y = datasets.load_diabetes(return_X_y=True, as_frame=True)
    model = xgboost.XGBRegressor(n_estimators=30, max_depth=4, nthread=2).fit(X, y)
    rows = X.iloc[:6]
    rev = rows[rows.columns[::-1]]
    rng = np.random.default_rng(16)
    phi = rng.normal(size=rows.shape)  # attributions, one column per feature of `rows`
    return model, rows, rev, phi


def test_attributions_follow_the_reversed_frame(diabetes):
    model, rows, rev, phi = diabetes
    ref = pgexact.pgi2(model, rows, attributions=phi)
    np.testing.assert_allclose(pgexact.pgi2(model, rev, attributions=phi[:, ::-1]), ref, rtol=1e-12)
    np.testing.assert_allclose(pgexact.pgu2(model, rev, attributions=phi[:, ::-1]),
                               pgexact.pgu2(model, rows, attributions=phi), rtol=1e-12)
    # a DataFrame of attributions is matched by column name, whatever its order
    named = pd.DataFrame(phi, columns=rows.columns)
    np.testing.assert_allclose(pgexact.pgi2(model, rev, attributions=named), ref, rtol=1e-12)
    np.testing.assert_allclose(pgexact.infidelity(model, rev, named, sigma=0.05),
                               pgexact.infidelity(model, rows, phi, sigma=0.05), rtol=1e-10)


def test_features_ranking_and_rank_follow_the_frame(diabetes):
    model, rows, rev, _ = diabetes
    d = rows.shape[1]
    assert rev.columns[0] == "s6"
    np.testing.assert_array_equal(pgexact.pg2(model, rev, features=[0], sigma=0.05),
                                  pgexact.pg2(model, rows, features=["s6"], sigma=0.05))
    R = np.array([3, 0, 9, 1, 2, 8, 4, 7, 6, 5])
    flip = d - 1 - R  # the same features as positions of the reversed frame
    np.testing.assert_array_equal(pgexact.pg2_curve(model, rev, flip, sigma=0.05),
                                  pgexact.pg2_curve(model, rows, R, sigma=0.05))
    np.testing.assert_array_equal(d - 1 - pgexact.rank(model, rev, sigma=0.05),
                                  pgexact.rank(model, rows, sigma=0.05))


def test_sigma_and_noise_follow_the_frame(diabetes):
    model, rows, rev, _ = diabetes
    sig = np.linspace(0.01, 0.1, rows.shape[1])
    ref = pgexact.pgi2(model, rows, sigma=sig)
    np.testing.assert_allclose(pgexact.pgi2(model, rev, sigma=sig[::-1]), ref, rtol=1e-12)
    series = pd.Series(sig, index=rows.columns)  # named: matched by name in any order
    np.testing.assert_allclose(pgexact.pgi2(model, rev, sigma=series), ref, rtol=1e-12)
    np.testing.assert_allclose(pgexact.pgi2(model, rev, sigma=series.iloc[::-1]), ref, rtol=1e-12)
    noise = ["uniform"] + ["normal"] * (rows.shape[1] - 1)
    np.testing.assert_allclose(pgexact.pgi2(model, rev, sigma=0.05, noise=noise[::-1]),
                               pgexact.pgi2(model, rows, sigma=0.05, noise=noise), rtol=1e-12)
    with pytest.raises(ValueError, match=r"^sigma: .*names"):
        pgexact.pgi2(model, rev, sigma=pd.Series(sig, index=[f"z{j}" for j in range(len(sig))]))


def test_monte_carlo_and_openxai_follow_the_frame(diabetes):
    model, rows, rev, phi = diabetes
    kw = dict(sigma=0.05, n_samples=200, seed=3)
    np.testing.assert_array_equal(pgexact.mc.pgi2(model, rev, attributions=phi[:, ::-1], **kw),
                                  pgexact.mc.pgi2(model, rows, attributions=phi, **kw))
    np.testing.assert_array_equal(pgexact.mc.pg2(model, rev, [0], **kw),
                                  pgexact.mc.pg2(model, rows, ["s6"], **kw))
    np.testing.assert_allclose(pgexact.mc.pgi2(model, rev, **kw), pgexact.mc.pgi2(model, rows, **kw),
                               rtol=1e-12)
    for exact in (True, False):
        a = pgexact.openxai.pgi(model, rev, phi[:, ::-1], k=3, sigma=0.05, seed=1, exact=exact)
        b = pgexact.openxai.pgi(model, rows, phi, k=3, sigma=0.05, seed=1, exact=exact)
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_explainer_follows_the_frame(diabetes):
    model, rows, rev, _ = diabetes
    a = pgexact.Explainer(model, sigma=0.05)(rows)
    b = pgexact.Explainer(model, sigma=0.05)(rev)
    assert b.feature_names == list(rev.columns)
    np.testing.assert_array_equal(b.values, a.values[:, ::-1])
    np.testing.assert_array_equal(b.data, rev.to_numpy())
    assert not np.any(np.signbit(a.values) & (a.values == 0))  # no -0.0


# ------------------------------------------------------------------------------ Pipelines
def test_pipeline_transforms_x_everywhere(diabetes):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    _, rows, _, _ = diabetes
    X, y = datasets.load_diabetes(return_X_y=True, as_frame=True)
    pipe = make_pipeline(StandardScaler(), xgboost.XGBRegressor(n_estimators=20, max_depth=3,
                                                                 nthread=2)).fit(X, y)
    ex = pgexact.Explainer(pipe)(rows)
    np.testing.assert_allclose(ex.base_values, pipe.predict(rows), rtol=1e-5)
    assert ex.feature_names == list(X.columns)  # get_feature_names_out of the scaler
    Xt = pipe[:-1].transform(rows)
    for name in ("pgi2", "pgu2", "rank"):
        np.testing.assert_array_equal(getattr(pgexact, name)(pipe, rows),
                                      getattr(pgexact, name)(pipe[-1], Xt), err_msg=name)
    np.testing.assert_array_equal(pgexact.pg2(pipe, rows, ["bmi"]), pgexact.pg2(pipe[-1], Xt, [2]))
    np.testing.assert_array_equal(pgexact.mc.pgi2(pipe, rows, n_samples=50),
                                  pgexact.mc.pgi2(pipe[-1], Xt, n_samples=50))
    with pytest.raises(TypeError, match=r"^model: .*pipeline\[-1\].*transform"):
        pgexact.load(pipe)
    with pytest.raises(ValueError, match=r"^X: .*transform"):
        pgexact.pgi2(pipe, rows.iloc[:, :4])


def test_refused_model_message_is_short():
    with pytest.raises(TypeError) as info:
        pgexact.load(object())
    msg = str(info.value)
    assert msg.startswith("model: unsupported type builtins.object") and len(msg) < 300


# ------------------------------------------------------------------------------ LightGBM names
def test_lightgbm_accepts_the_frame_it_was_fitted_on():
    lightgbm = pytest.importorskip("lightgbm")
    X, y = datasets.load_breast_cancer(return_X_y=True, as_frame=True)
    assert " " in X.columns[0]
    model = lightgbm.LGBMClassifier(n_estimators=10, num_leaves=8, verbose=-1, n_jobs=1).fit(X, y)
    rows = X.iloc[:4]
    ref = model.predict(rows, raw_score=True)
    np.testing.assert_allclose(pgexact.load(model).predict(rows), ref, rtol=1e-12)
    rev = rows[rows.columns[::-1]]
    np.testing.assert_allclose(pgexact.load(model).predict(rev), ref, rtol=1e-12)
    np.testing.assert_array_equal(pgexact.pg2(model, rows, ["mean radius"]),
                                  pgexact.pg2(model, rows, ["mean_radius"]))
    np.testing.assert_array_equal(pgexact.pg2(model, rev, [rows.shape[1] - 1]),
                                  pgexact.pg2(model, rows, [0]))
    assert pgexact.mc.pg2(model, rows, [0], n_samples=20).shape == (4,)


# ------------------------------------------------------------------------------ strict input
def test_strict_input_is_refused_with_the_arguments_name(diabetes, tmp_path):
    model, rows, _, _ = diabetes
    d = rows.shape[1]
    with pytest.raises(ValueError, match=r"^features: .*negative"):
        pgexact.pg2(model, rows, [-1])
    with pytest.raises(TypeError, match=r"^ranking: .*integer"):
        pgexact.pgi2(model, rows, np.arange(d).astype(float))
    with pytest.raises(TypeError, match=r"^X: contains text"):
        pgexact.pgi2(model, rows.to_numpy().astype(str))
    with pytest.raises(TypeError, match=r"^X: contains text"):
        pgexact.pgi2(model, rows.astype(str))
    for name in ("gaussian", "Normal"):
        with pytest.raises(ValueError, match=r"^noise: unknown family"):
            pgexact.pgi2(model, rows, noise=name)
    bad = tmp_path / "broken.json"
    bad.write_text('{"learner": 3}')
    with pytest.raises(ValueError, match=r"^model: file .*broken\.json"):
        pgexact.load(str(bad))


def test_multi_output_regressor_says_outputs():
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    model = RandomForestRegressor(n_estimators=2, max_depth=2, random_state=0).fit(X, X[:, :2])
    with pytest.raises(ValueError) as info:
        pgexact.load(model)
    assert str(info.value).startswith("output:") and "class" not in str(info.value)


# ------------------------------------------------------------------------------ noise scale
def test_noise_scaled_and_the_large_sigma_warning(diabetes, monkeypatch):
    from pgexact._exact import _perturbation

    model, rows, rev, _ = diabetes
    X, _ = datasets.load_diabetes(return_X_y=True, as_frame=True)
    sigma = pgexact.noise.scaled(X, 0.3)
    assert list(sigma.index) == list(X.columns)
    np.testing.assert_allclose(sigma.to_numpy(), 0.3 * X.to_numpy().std(axis=0), rtol=1e-12)
    np.testing.assert_allclose(pgexact.noise.scaled(X.to_numpy(), 0.3), sigma.to_numpy(), rtol=1e-12)
    # a named Series: the same numbers on the reversed frame
    np.testing.assert_allclose(pgexact.pgi2(model, rev, sigma=sigma),
                               pgexact.pgi2(model, rows, sigma=sigma), rtol=1e-12)
    with pytest.raises(ValueError, match=r"^X_background: no spread"):
        pgexact.noise.scaled(np.ones((5, 2)), 0.3)
    with pytest.raises(ValueError, match=r"^scale:"):
        pgexact.noise.scaled(X, -1.0)
    monkeypatch.setattr(_perturbation, "_warned_large_sigma", False)
    with pytest.warns(UserWarning, match=r"^sigma: .*standard deviations.*noise.scaled"):
        pgexact.pg2(model, X.iloc[:50], ["bmi"], sigma=0.3)  # diabetes features: std 0.048
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per session: no second warning
        pgexact.pg2(model, X.iloc[:50], ["bmi"], sigma=0.3)


def test_readme_quick_start_runs_as_written():
    pytest.importorskip("shap")
    import os
    import re

    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
    if not os.path.isfile(readme):
        pytest.skip("not run from a source checkout")
    text = open(readme, encoding="utf-8").read()
    section = text[text.index("## Quick start"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # scaled sigma: no large-sigma warning
        exec(compile(code, "README Quick start", "exec"), {})


# ------------------------------------------------------------------------------ shap interop
def test_to_shap_adds_up_in_pg2_units_and_plots_are_labelled(diabetes):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model, rows, _, _ = diabetes
    ex = pgexact.Explainer(model, sigma=0.05)(rows)
    s = ex.to_shap()
    np.testing.assert_allclose(s.values.sum(axis=1) + s.base_values, ex.pg2, rtol=1e-9)
    assert not np.any(np.signbit(s.values) & (s.values == 0))
    gi = ex.global_importance()
    assert not np.any(np.signbit(gi.to_numpy()) & (gi.to_numpy() == 0))
    for kind in ("bar", "beeswarm", "ranks"):
        ax = ex.plot(kind)
        assert "SHAP" not in ax.get_xlabel()
        plt.close("all")
    bar = ex.plot("bar")  # the same default score as global_importance()
    ticks = sorted(zip(bar.get_yticks(), (t.get_text() for t in bar.get_yticklabels())), reverse=True)
    assert [name for _, name in ticks] == list(gi.index[: len(ticks)])  # top bar first
    assert "PG²" in ex.plot("beeswarm").get_xlabel()
    ax = ex[0].plot("waterfall")
    assert "PG²" in ax.get_xlabel()
    with pytest.raises(ValueError, match=r"^kind: 'waterfall' shows one row"):
        ex.plot("waterfall")
    plt.close("all")


def test_xgboost_file_field_outside_what_xgboost_writes_is_refused(diabetes, tmp_path):
    import json

    model, rows, _, _ = diabetes
    path = tmp_path / "m.json"
    model.save_model(path)
    doc = json.loads(path.read_text())
    tree = doc["learner"]["gradient_booster"]["model"]["trees"][0]
    tree["default_left"][0] = 9
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"^model: file .*bad\.json.*default_left holds 9"):
        pgexact.load(str(bad))
    assert pgexact.load(str(path)).n_trees == model.get_booster().num_boosted_rounds()
