# %% [markdown]
# # Explaining an XGBoost model with pgexact and with SHAP
#
# pgexact drops in where a notebook calls `shap.TreeExplainer(model)(X)`:
# `pgexact.Explainer(model, sigma=...)(X)` returns exact PG² explanations (greedy gains whose
# row sums are `PG²(x, all features) = E[(f(x') - f(x))²]`), which plot with matplotlib and,
# through `to_shap()`, with shap's own plots.
#
# Run as a script (`python examples/explain_xgboost.py`) or cell by cell in an editor that
# understands `# %%`. PNGs go to `$PGEXACT_EXAMPLE_OUT` (default `./example-out`);
# `PGEXACT_EXAMPLE_SMALL=1` makes everything tiny (used by the test suite).

# %%
import os
import sys
import time

import matplotlib

if "ipykernel" not in sys.modules:  # as a script: no display needed, only PNG files
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import shap  # noqa: E402
import xgboost as xgb  # noqa: E402
from sklearn.datasets import load_diabetes  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import pgexact  # noqa: E402

SMALL = os.environ.get("PGEXACT_EXAMPLE_SMALL", "") not in ("", "0")
OUT = os.environ.get("PGEXACT_EXAMPLE_OUT", "example-out")
os.makedirs(OUT, exist_ok=True)
N_TREES, DEPTH, N_EXPLAIN = (15, 3, 24) if SMALL else (100, 3, 100)

# %% [markdown]
# ## Train XGBoost on scikit-learn's built-in diabetes data (ships with scikit-learn)

# %%
X, y = load_diabetes(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
model = xgb.XGBRegressor(n_estimators=N_TREES, max_depth=DEPTH, learning_rate=0.1,
                         n_jobs=2, random_state=0).fit(X_train, y_train)
X_explain = X_test.iloc[:N_EXPLAIN]
print(f"{N_TREES} trees of depth {DEPTH}; explaining {len(X_explain)} rows of {X.shape[1]} features")

# %% [markdown]
# ## Exact PG² explanations
#
# Features are standardised in this data set (each column has norm 1, std ≈ 0.048), so the
# noise scale is chosen on that scale.

# %%
sigma = 0.5 * float(X_train.std().mean())
t0 = time.perf_counter()
explainer = pgexact.Explainer(model, sigma=sigma)
ex = explainer(X_explain)
print(f"pgexact: {time.perf_counter() - t0:.3f} s")
print(ex)
print(ex.global_importance("geom").round(3))

# every row of values sums to PG²(x, all features), exactly up to rounding
assert np.allclose(ex.values.sum(axis=1), ex.pg2, rtol=1e-10, atol=0)

# %% [markdown]
# ## SHAP values of the same rows

# %%
t0 = time.perf_counter()
shap_values = shap.TreeExplainer(model)(X_explain)
print(f"shap.TreeExplainer: {time.perf_counter() - t0:.3f} s")

# How faithful is each ranking? Exact PGI² (higher = the ranking's top features move f more).
pgi2_shap = pgexact.pgi2(model, X_explain, attributions=shap_values.values, sigma=sigma)
print(f"mean PGI²: greedy PG² ranking {ex.pgi2.mean():.4g}, SHAP ranking {pgi2_shap.mean():.4g}")

# %% [markdown]
# ## Plots: pgexact's own, and shap's plots on both explanations

# %%
def save(fig, name):
    path = os.path.join(OUT, name)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    print("wrote", path)


save(ex.plot("bar").figure, "pgexact_bar.png")
save(ex.plot("ranks").figure, "pgexact_ranks.png")

for name, explanation in (("pgexact", ex.to_shap()), ("shap", shap_values)):
    shap.plots.beeswarm(explanation, show=False)
    if name == "pgexact":  # shap labels the axis "SHAP value"; here it is a greedy PG² gain
        plt.gca().set_xlabel("greedy PG² gain (row sums = PG²(x, all features))")
    save(plt.gcf(), f"{name}_beeswarm.png")

# %%
# Side by side: pgexact's mean greedy gain next to mean |SHAP|, on the same feature order.
gain = ex.global_importance("gain")
mean_abs_shap = np.abs(shap_values.values).mean(axis=0)
shap_imp = dict(zip(shap_values.feature_names, mean_abs_shap))
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
pos = np.arange(len(gain))[::-1]
axes[0].barh(pos, gain.to_numpy())
axes[0].set_title("pgexact: mean greedy PG² gain")
axes[1].barh(pos, [shap_imp[f] for f in gain.index], color="#ff0051")
axes[1].set_title("SHAP: mean |value|")
axes[0].set_yticks(pos)
axes[0].set_yticklabels(list(gain.index))
save(fig, "pgexact_vs_shap.png")
