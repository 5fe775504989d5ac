"""Independent brute-force oracles for the pgexact tests.

Nothing here imports pgexact: the oracles read XGBoost's own JSON dump and use
XGBoost's own routing (``pred_leaf``), so they check pgexact from the outside.

Exactness notes
---------------
* XGBoost stores thresholds, leaf values and DART weights as float32; the JSON
  dump prints them as shortest float32 decimals, so they are read back through
  ``np.float32`` and then widened to float64.
* XGBoost casts inputs to float32 and sends ``float32(v) < t`` left.  A real
  value ``v`` therefore goes left iff ``v < b(t)`` where ``b(t)`` is the midpoint
  between ``t`` and the next float32 below it (exact in float64).  Cells for the
  brute force are delimited by these ``b`` values.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import xgboost as xgb
from scipy.special import ndtr

from _cells import category_cells

F32_NEG_INF = np.float32(-np.inf)
F32_POS_INF = np.float32(np.inf)


def round_boundary(t32) -> np.ndarray:
    """Real values strictly below the result round (to nearest float32) below ``t32``."""
    t32 = np.asarray(t32, dtype=np.float32)
    below = np.nextafter(t32, F32_NEG_INF)
    return (below.astype(np.float64) + t32.astype(np.float64)) / 2.0


class XGBModel:
    """The trees of an XGBoost booster, parsed independently from its JSON dump."""

    def __init__(self, booster: xgb.Booster):
        self.booster = booster
        raw = json.loads(bytes(booster.save_raw("json")))
        learner = raw["learner"]
        gb = learner["gradient_booster"]
        if gb["name"] == "dart":
            model = gb["gbtree"]["model"]
            weights = np.asarray(gb["weight_drop"], dtype=np.float32).astype(np.float64)
        else:
            model = gb["model"]
            weights = np.ones(len(model["trees"]))
        self.is_dart = gb["name"] == "dart"
        self.weights = weights
        self.tree_info = np.asarray(model["tree_info"], dtype=np.int64)
        self.n_features = int(learner["learner_model_param"]["num_feature"])
        self.num_class = int(learner["learner_model_param"]["num_class"])
        self.feature_names = booster.feature_names
        self.feature_types = booster.feature_types
        self.trees = []
        for t in model["trees"]:
            left = np.asarray(t["left_children"], dtype=np.int64)
            cond = np.asarray(t["split_conditions"], dtype=np.float32)
            split_type = np.asarray(t.get("split_type", [0] * len(left)), dtype=np.int64)
            self.trees.append(
                dict(
                    left=left,
                    right=np.asarray(t["right_children"], dtype=np.int64),
                    feature=np.asarray(t["split_indices"], dtype=np.int64),
                    cond32=cond,
                    split_type=split_type,
                    value=cond.astype(np.float64),  # leaf value where left == -1
                    is_leaf=left == -1,
                    dl=np.asarray(t["default_left"], dtype=bool),
                )
            )

    # ------------------------------------------------------------------ structure
    @property
    def n_trees(self) -> int:
        return len(self.trees)

    @property
    def n_nodes(self) -> int:
        return int(sum(len(t["left"]) for t in self.trees))

    @property
    def n_leaves(self) -> int:
        return int(sum(int(t["is_leaf"].sum()) for t in self.trees))

    def trees_of(self, output) -> np.ndarray:
        k = 0 if output is None else int(output)
        return np.flatnonzero(self.tree_info == k)

    def thresholds(self, feature: int, output=None) -> np.ndarray:
        """Sorted distinct float32 numeric thresholds on ``feature`` (trees of ``output``)."""
        vals = []
        for ti in self.trees_of(output):
            t = self.trees[ti]
            sel = (~t["is_leaf"]) & (t["feature"] == feature) & (t["split_type"] == 0)
            vals.append(t["cond32"][sel])
        if not vals:
            return np.zeros(0, dtype=np.float32)
        return np.unique(np.concatenate(vals)).astype(np.float32)

    def all_splits(self):
        """Distinct (feature, float32 threshold) pairs of numeric splits over all trees."""
        out = set()
        for t in self.trees:
            sel = (~t["is_leaf"]) & (t["split_type"] == 0)
            for f, c in zip(t["feature"][sel], t["cond32"][sel]):
                out.add((int(f), np.float32(c)))
        return sorted(out, key=lambda p: (p[0], float(p[1])))

    def scale(self, output=None) -> float:
        """Sum over trees of max |leaf| (a bound on |f - base|)."""
        s = 0.0
        for ti in self.trees_of(output):
            t = self.trees[ti]
            s += float(np.max(np.abs(t["value"][t["is_leaf"]]))) * abs(self.weights[ti])
        return s

    # ------------------------------------------------------------------ evaluation
    def dmatrix(self, X, **kw) -> xgb.DMatrix:
        X = np.ascontiguousarray(X, dtype=np.float64)
        cat = self.feature_types is not None and "c" in self.feature_types
        return xgb.DMatrix(
            X,
            missing=np.nan,
            feature_names=self.feature_names,
            feature_types=self.feature_types,
            enable_categorical=cat,
            nthread=2,
            **kw,
        )

    def leaf_sum(self, X, output=None) -> np.ndarray:
        """float64 sum of the leaf values (times DART weights) XGBoost routes each row to."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if X.shape[0] == 0:
            return np.zeros(0)
        leaves = self.booster.predict(self.dmatrix(X), pred_leaf=True)
        leaves = np.asarray(leaves).reshape(X.shape[0], -1).astype(np.int64)
        assert leaves.shape[1] == self.n_trees, leaves.shape
        total = np.zeros(X.shape[0])
        for ti in self.trees_of(output):
            total += self.trees[ti]["value"][leaves[:, ti]] * self.weights[ti]
        return total

    def xgb_margin(self, X, output=None, base_margin_zero=False) -> np.ndarray:
        """XGBoost's own float32 margin for ``output`` (as float64)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        kw = {}
        if base_margin_zero:
            shape = (X.shape[0], self.num_class) if self.num_class > 1 else (X.shape[0],)
            kw["base_margin"] = np.zeros(shape)
        m = self.booster.predict(self.dmatrix(X, **kw), output_margin=True)
        m = np.asarray(m, dtype=np.float64)
        if m.ndim == 2:
            m = m[:, 0 if output is None else int(output)]
        return m


# ---------------------------------------------------------------------- Gaussian cells
def cell_probs(edges: np.ndarray, mu: float, s: float) -> np.ndarray:
    """P(lo <= mu + s Z < hi) for consecutive ``edges`` without needless cancellation."""
    lo = (edges[:-1] - mu) / s
    hi = (edges[1:] - mu) / s
    p = np.empty(len(lo))
    above = edges[:-1] >= mu
    below = edges[1:] <= mu
    mid = ~(above | below)
    p[above] = ndtr(-lo[above]) - ndtr(-hi[above])
    p[below] = ndtr(hi[below]) - ndtr(lo[below])
    p[mid] = 1.0 - ndtr(lo[mid]) - ndtr(-hi[mid])
    return p


def feature_cells(model: XGBModel, feature: int, x_i: float, sigma_i: float, output=None):
    """(representative values, probabilities) of the cells of one perturbed feature."""
    if np.isnan(x_i):
        return np.array([np.nan]), np.array([1.0])
    t32 = model.thresholds(feature, output)
    if len(t32) == 0:
        return np.array([x_i]), np.array([1.0])
    b = round_boundary(t32)
    assert np.all(np.diff(b) > 0)
    reps = np.concatenate([[b[0] - 1.0], t32.astype(np.float64)])
    edges = np.concatenate([[-np.inf], b, [np.inf]])
    return reps, cell_probs(edges, float(x_i), float(sigma_i))


def sigma_vector(sigma, d: int) -> np.ndarray:
    s = np.asarray(sigma, dtype=np.float64)
    return np.full(d, float(s)) if s.ndim == 0 else s


def pg2_bruteforce(model: XGBModel, X, S, sigma, output=None, categorical=None) -> np.ndarray:
    """Exact PG2 by enumerating the cells of every feature in ``S`` (intended |S| <= 2);
    ``categorical[j] = (p, categories, weights)`` for a feature perturbed by category."""
    categorical = categorical or {}
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    S = list(S)
    sig = sigma_vector(sigma, X.shape[1])
    f_x = model.leaf_sum(X, output)
    out = np.zeros(X.shape[0])
    if not S:
        return out
    pts_all, w_all, owner = [], [], []
    for r, x in enumerate(X):
        per = [category_cells(x[i], *categorical[i]) if i in categorical
               else feature_cells(model, i, x[i], sig[i], output) for i in S]
        grids = np.meshgrid(*[p[0] for p in per], indexing="ij")
        wgrid = np.ones_like(grids[0])
        for g, p in zip(np.meshgrid(*[p[1] for p in per], indexing="ij"), per):
            wgrid = wgrid * g
        pts = np.repeat(x[None, :], wgrid.size, axis=0)
        for col, g in zip(S, grids):
            pts[:, col] = g.ravel()
        pts_all.append(pts)
        w_all.append(wgrid.ravel())
        owner.append(np.full(wgrid.size, r))
    pts = np.concatenate(pts_all)
    w = np.concatenate(w_all)
    owner = np.concatenate(owner)
    vals = model.leaf_sum(pts, output)
    contrib = w * (vals - f_x[owner]) ** 2
    np.add.at(out, owner, contrib)
    return out


def monte_carlo_pg2(model: XGBModel, x, sigma, n_samples, rng, output=None, features=None):
    """(mean, standard error) of (f(x') - f(x))^2 through XGBoost's own float32 margin."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[0]
    sig = sigma_vector(sigma, d)
    feats = np.arange(d) if features is None else np.asarray(features)
    pts = np.repeat(x[None, :], n_samples, axis=0)
    noise = rng.standard_normal((n_samples, len(feats))) * sig[feats]
    pts[:, feats] += noise  # NaN + delta stays NaN
    f = model.xgb_margin(pts, output)
    fx = model.xgb_margin(x[None, :], output)[0]
    sq = (f - fx) ** 2
    return float(sq.mean()), float(sq.std(ddof=1) / np.sqrt(n_samples))


def ranking_from_attributions(A) -> np.ndarray:
    """Descending |a|, ties to the lower index."""
    A = np.asarray(A, dtype=np.float64)
    return np.argsort(-np.abs(A), axis=-1, kind="stable").astype(np.int64)


def greedy_rank_bruteforce(pg2_fn, d: int, rtol: float = 1e-9):
    """Greedy ranking from a callable ``pg2_fn(list_of_features) -> float``.

    Candidates within ``rtol`` of the best value are treated as tied; the tie goes to the
    lower feature index.
    """
    chosen: list[int] = []
    remaining = list(range(d))
    while remaining:
        vals = np.array([pg2_fn(chosen + [i]) for i in remaining])
        best = vals.max()
        tol = rtol * abs(best) + 1e-300
        pick = next(i for i, v in zip(remaining, vals) if v >= best - tol)
        chosen.append(pick)
        remaining.remove(pick)
    return np.array(chosen, dtype=np.int64)


def all_subsets_upto2(d: int):
    singles = [(i,) for i in range(d)]
    pairs = list(itertools.combinations(range(d), 2))
    return singles + pairs
