"""Plots keep long feature names inside the figure and name the output they
show, a bad ``kind`` is reported as ``kind``, and every warning points at the user's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pgexact
import pgexact._exact._perturbation as _v

xgb = pytest.importorskip("xgboost")
pytest.importorskip("matplotlib")
pd = pytest.importorskip("pandas")

LONG = ["median_income_of_the_block_group", "fixed acidity of the wine sample", "x",
        "total_bedrooms_in_the_block"]


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 4)), columns=LONG)
    y = X.iloc[:, 0] + X.iloc[:, 1] * X.iloc[:, 3]
    labels = np.digitize(y, [-0.5, 0.5])  # three classes
    reg = xgb.XGBRegressor(n_estimators=5, max_depth=3, nthread=1).fit(X, y)
    clf = xgb.XGBClassifier(n_estimators=5, max_depth=3, nthread=1).fit(X, labels)
    return X, reg, clf


def _inside(ax):
    """Everything the axes draw (tick labels, axis labels, title) lies inside the figure."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.canvas.get_width_height()
    texts = [ax.title, ax.xaxis.label, ax.yaxis.label]
    for axis in (ax.xaxis, ax.yaxis):
        lo, hi = sorted(axis.get_view_interval())
        pad = 1e-9 * max(abs(lo), abs(hi), 1.0)
        texts += [t.label1 for t in axis.get_major_ticks() if lo - pad <= t.get_loc() <= hi + pad]
    for text in texts:
        if not text.get_visible() or not text.get_text():
            continue
        box = text.get_window_extent(renderer)
        assert box.x0 >= -0.5 and box.x1 <= width + 0.5, (text.get_text(), box, width)
        assert box.y0 >= -0.5 and box.y1 <= height + 0.5, (text.get_text(), box, height)


@pytest.mark.parametrize("kind", ["bar", "ranks", "beeswarm", "waterfall"])
def test_long_feature_names_are_not_cut_off(frames, kind, tmp_path):
    import matplotlib.pyplot as plt

    X, reg, _ = frames
    ex = pgexact.Explainer(reg, sigma=0.3)(X.iloc[:12])
    ax = (ex[0] if kind == "waterfall" else ex).plot(kind)
    try:
        ax.figure.savefig(tmp_path / f"{kind}.png")  # no bbox_inches: the layout must fit
        _inside(ax)
    finally:
        plt.close(ax.figure)


@pytest.mark.parametrize("kind", ["bar", "ranks", "beeswarm", "waterfall"])
def test_each_plot_names_the_class_it_shows(frames, kind):
    import matplotlib.pyplot as plt

    X, _, clf = frames
    ex = pgexact.Explainer(clf, sigma=0.3)(X.iloc[:10])
    ax = (ex[3] if kind == "waterfall" else ex).plot(kind, output=2)
    try:
        assert "class 2" in ax.get_title()
    finally:
        plt.close(ax.figure)


def test_bad_kind_is_a_kind_error_even_without_output(frames):
    X, _, clf = frames
    ex = pgexact.Explainer(clf, sigma=0.3)(X.iloc[:5])
    with pytest.raises(ValueError, match=r"^kind: unknown value 'pie'"):
        ex.plot("pie")
    with pytest.raises(TypeError, match=r"^kind:"):
        ex.plot(3, output=0)


def _reset_sigma_warning():
    _v._warned_large_sigma = False


def test_sigma_warning_of_mc_points_at_the_callers_line(frames):
    X, reg, _ = frames
    _reset_sigma_warning()
    with pytest.warns(UserWarning, match="^sigma:") as rec:
        pgexact.mc.pgi2(reg, X.to_numpy()[:3], np.arange(4), sigma=50.0, n_samples=4, seed=0)
    assert [w.filename for w in rec if "sigma:" in str(w.message)] == [__file__]


def test_sigma_warning_of_the_exact_functions_points_at_the_callers_line(frames):
    X, reg, _ = frames
    for call in (lambda: pgexact.pgi2(reg, X.iloc[:3], sigma=50.0),
                 lambda: pgexact.Explainer(reg, sigma=50.0)(X.iloc[:3])):
        _reset_sigma_warning()
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            call()
        got = [w.filename for w in rec if str(w.message).startswith("sigma:")]
        assert got == [__file__], [str(w.message) for w in rec]


def test_compare_warning_points_at_the_callers_line(frames):
    pytest.importorskip("shap")
    X, reg, _ = frames
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        pgexact.metrics.compare(pgexact.load(reg), X.iloc[:3], sigma_rank=0.3, sigma_eval=[0.3])
    got = [w.filename for w in rec if "'shap' column" in str(w.message)]
    assert got == [__file__]
