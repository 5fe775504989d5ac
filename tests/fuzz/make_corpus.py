"""Write seed model files for the fuzz harnesses (and the mutation test) into a directory.

    python tests/fuzz/make_corpus.py OUTDIR [--small]

Creates OUTDIR/xgb_json, OUTDIR/xgb_ubj, OUTDIR/lightgbm, OUTDIR/catboost and OUTDIR/arena,
each holding real model files written by the libraries themselves: XGBoost regression / binary
/ multi-class / DART / random-forest / categorical / named-feature models (JSON and UBJSON),
LightGBM regression / multi-class / categorical / rf / missing-value models, CatBoost JSON
models (regression, nan_mode Max, multi-class, depthwise, scale and bias; when catboost is
installed), and serialised pgexact arenas of all of them plus scikit-learn trees and a
categorical HistGradientBoosting model.
Models are tiny (a few trees of depth <= 3) so that fuzzers mutate structure, not bulk.
``--small`` writes only the smallest variants (used by the test suite).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List


def _data(seed: int, n: int = 200, d: int = 4):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = X[:, 0] - 0.5 * np.nan_to_num(X[:, 1]) ** 2 + 0.1 * rng.normal(size=n)
    y = np.nan_to_num(y)
    return X, y


def xgboost_models(small: bool) -> Dict[str, object]:
    import numpy as np
    import xgboost as xgb

    X, y = _data(0)
    common = dict(max_depth=2, nthread=1, seed=0)
    out: Dict[str, object] = {}
    out["reg"] = xgb.train(dict(common, eta=0.5), xgb.DMatrix(X, label=y), num_boost_round=3)
    lab = (y > np.median(y)).astype(int)
    out["binary"] = xgb.train(dict(common, objective="binary:logistic"), xgb.DMatrix(X, label=lab),
                              num_boost_round=2)
    if small:
        return out
    lab3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    out["multi"] = xgb.train(dict(common, objective="multi:softprob", num_class=3),
                             xgb.DMatrix(X, label=lab3), num_boost_round=2)
    out["dart"] = xgb.train(dict(common, booster="dart", rate_drop=0.5, skip_drop=0.0),
                            xgb.DMatrix(X, label=y), num_boost_round=3)
    out["rf"] = xgb.train(dict(common, num_parallel_tree=2, subsample=0.8, colsample_bynode=0.8, eta=1.0),
                          xgb.DMatrix(X, label=y), num_boost_round=1)
    out["poisson"] = xgb.train(dict(common, objective="count:poisson"),
                               xgb.DMatrix(X, label=np.abs(np.round(y))), num_boost_round=2)
    names = ["a", "b", "c", "d"]
    out["named"] = xgb.train(dict(common), xgb.DMatrix(X, label=y, feature_names=names), num_boost_round=2)
    Xc = X.copy()
    Xc[:, 2] = np.abs(np.round(np.nan_to_num(Xc[:, 2]) * 3)) % 6
    dm = xgb.DMatrix(Xc, label=y + Xc[:, 2], feature_types=["q", "q", "c", "q"], enable_categorical=True)
    out["categorical"] = xgb.train(dict(common, tree_method="hist", max_cat_to_onehot=1), dm, num_boost_round=3)
    return out


def lightgbm_texts(small: bool) -> Dict[str, str]:
    import lightgbm as lgb
    import numpy as np

    X, y = _data(1)
    common = dict(num_leaves=4, min_data_in_leaf=5, verbose=-1, seed=0, num_threads=1)
    out: Dict[str, str] = {}
    out["reg"] = lgb.train(common, lgb.Dataset(X, y), num_boost_round=3).model_to_string()
    if small:
        return out
    lab3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    out["multi"] = lgb.train(dict(common, objective="multiclass", num_class=3), lgb.Dataset(X, lab3),
                             num_boost_round=2).model_to_string()
    Xz = np.nan_to_num(X)
    out["zero_missing"] = lgb.train(dict(common, zero_as_missing=True), lgb.Dataset(Xz, y),
                                    num_boost_round=2).model_to_string()
    out["rf"] = lgb.train(dict(common, boosting="rf", bagging_fraction=0.7, bagging_freq=1),
                          lgb.Dataset(X, y), num_boost_round=2).model_to_string()
    Xc = np.nan_to_num(X.copy())
    Xc[:, 2] = np.abs(np.round(Xc[:, 2] * 3)) % 8
    out["categorical"] = lgb.train(dict(common, min_data_per_group=5, cat_smooth=1.0),
                                   lgb.Dataset(Xc, y + Xc[:, 2], categorical_feature=[2]),
                                   num_boost_round=3).model_to_string()
    return out


def catboost_jsons(small: bool) -> Dict[str, str]:
    """CatBoost JSON models (empty without catboost, which is an optional dependency)."""
    try:
        import catboost as cb
    except ImportError:
        return {}
    import tempfile

    import numpy as np

    X, y = _data(3)
    common = dict(iterations=3, depth=2, verbose=False, thread_count=1, allow_writing_files=False, random_seed=0)
    models = {"reg": cb.CatBoostRegressor(**common).fit(X, y)}
    if not small:
        models["nan_max"] = cb.CatBoostRegressor(nan_mode="Max", **common).fit(X, y)
        lab3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
        models["multi"] = cb.CatBoostClassifier(loss_function="MultiClass", **common).fit(X, lab3)
        models["depthwise"] = cb.CatBoostRegressor(grow_policy="Depthwise", **common).fit(X, y)
        scaled = cb.CatBoostRegressor(**common).fit(X, y)
        scaled.set_scale_and_bias(0.7, -1.25)
        models["scaled"] = scaled
    out: Dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, model in models.items():
            path = os.path.join(tmp, f"{name}.json")
            model.save_model(path, format="json")
            with open(path) as fh:
                out[name] = fh.read()
    return out


def arena_blobs(xgb_models: Dict[str, object], lgb_texts: Dict[str, str], small: bool) -> Dict[str, bytes]:
    import numpy as np

    from pgexact import _core

    out: Dict[str, bytes] = {}
    for name, booster in xgb_models.items():
        arena, _ = _core.model.parse_xgboost_json(bytes(booster.save_raw(raw_format="json")), -1)
        out[f"xgb_{name}"] = arena.to_bytes()
    for name, text in lgb_texts.items():
        arena, _ = _core.model.parse_lightgbm_text(text, -1)
        out[f"lgb_{name}"] = arena.to_bytes()
    if small:
        return out
    import pgexact
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    X, y = _data(2)
    Xf = np.nan_to_num(X)
    out["sk_tree"] = pgexact.load(DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y))._arena.to_bytes()
    out["sk_forest"] = pgexact.load(
        RandomForestRegressor(n_estimators=2, max_depth=2, random_state=0).fit(Xf, y))._arena.to_bytes()
    Xc = Xf.copy()
    Xc[:, 1] = np.abs(np.round(Xc[:, 1] * 3)) % 5
    hgb = HistGradientBoostingRegressor(max_iter=2, max_depth=2, categorical_features=[1], random_state=0)
    out["sk_hgb_cat"] = pgexact.load(hgb.fit(Xc, y + Xc[:, 1]))._arena.to_bytes()
    return out


def write_corpus(outdir: str, small: bool = False) -> Dict[str, List[str]]:
    """Writes the seeds and returns {kind: [paths]}."""
    xgb_models = xgboost_models(small)
    lgb_texts = lightgbm_texts(small)
    cb_jsons = catboost_jsons(small)
    blobs = arena_blobs(xgb_models, lgb_texts, small)
    if cb_jsons:
        from pgexact import _core

        blobs.update({f"cb_{name}": _core.model.parse_catboost_json(text, -1)[0].to_bytes() for name, text in cb_jsons.items()})
    paths: Dict[str, List[str]] = {"xgb_json": [], "xgb_ubj": [], "lightgbm": [], "arena": [], "catboost": []}
    for kind in paths:
        os.makedirs(os.path.join(outdir, kind), exist_ok=True)
    for name, booster in xgb_models.items():
        for kind, fmt in (("xgb_json", "json"), ("xgb_ubj", "ubj")):
            p = os.path.join(outdir, kind, f"{name}.{fmt}")
            with open(p, "wb") as fh:
                fh.write(bytes(booster.save_raw(raw_format=fmt)))
            paths[kind].append(p)
    for name, text in lgb_texts.items():
        p = os.path.join(outdir, "lightgbm", f"{name}.txt")
        with open(p, "w") as fh:
            fh.write(text)
        paths["lightgbm"].append(p)
    for name, text in cb_jsons.items():
        p = os.path.join(outdir, "catboost", f"{name}.json")
        with open(p, "w") as fh:
            fh.write(text)
        paths["catboost"].append(p)
    for name, blob in blobs.items():
        p = os.path.join(outdir, "arena", f"{name}.bin")
        with open(p, "wb") as fh:
            fh.write(blob)
        paths["arena"].append(p)
    return paths


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--small", action="store_true", help="only the smallest models")
    args = ap.parse_args(argv)
    paths = write_corpus(args.outdir, args.small)
    for kind, ps in paths.items():
        print(f"{kind}: {len(ps)} files in {os.path.join(args.outdir, kind)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
