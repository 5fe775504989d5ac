"""Differential fuzzing: seeded mutations of real model files (XGBoost JSON and UBJSON, LightGBM
text, CatBoost JSON) are loaded by pgexact and by the library that wrote them, each in a child
process (tests/_differential_driver.py). Every file that both load must predict the same on
fixed rows: within XGBoost's float32 accumulation for XGBoost, to 1e-14 for LightGBM and
CatBoost; pgexact must refuse every other file with a ValueError, and never crash or hang.

The mutator edits fields, not only bytes: enum values (split types, decision types, NaN
treatments), counts (num_nodes, num_class, num_tree_per_iteration, tree sizes, indices),
lengths of lists, a scalar for a list and a list for a scalar, and bytes that are not UTF-8;
besides the byte-level and structure-aware edits of tests/_mutation_driver.py.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import subprocess
import sys
from typing import Any, Dict, List

import numpy as np
import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/: the driver
sys.path.insert(0, HERE)
from _mutation_driver import (BYTE_MUTATORS, Pairs, containers, dumps_pairs, lightgbm_mutant,  # noqa: E402
                              loads_pairs, mutate_tree, ubj)

pytest.importorskip("xgboost")
pytest.importorskip("lightgbm")
pytest.importorskip("catboost")

# a longer hunt: PGEXACT_FUZZ_SEED=7 PGEXACT_FUZZ_SCALE=10 python -m pytest tests/test_differential_fuzz.py
SEED = int(os.environ.get("PGEXACT_FUZZ_SEED", "2027"))
_SCALE = float(os.environ.get("PGEXACT_FUZZ_SCALE", "1"))
PER_FORMAT = {k: int(v * _SCALE) for k, v in {"xgb_json": 260, "xgb_ubj": 140, "lightgbm": 300, "catboost": 300}.items()}
CHILD_TIMEOUT = 300  # seconds for one child process (a file's hang ends it sooner: the child's alarm)

# ----------------------------------------------------------------------------- seeds
def _data(seed: int, n: int = 200, d: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0] - 0.5 * np.nan_to_num(X[:, 1]) ** 2 + 0.1 * rng.normal(size=n))
    return X, y


def xgboost_seeds() -> Dict[str, Any]:
    import xgboost as xgb

    X, y = _data(0)
    common = dict(max_depth=2, nthread=1, seed=0)
    lab3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    Xc = X.copy()
    Xc[:, 2] = np.abs(np.round(np.nan_to_num(Xc[:, 2]) * 3)) % 6
    dm = xgb.DMatrix(Xc, label=y + Xc[:, 2], feature_types=["q", "q", "c", "q"], enable_categorical=True)
    return {
        "reg": xgb.train(dict(common, eta=0.5), xgb.DMatrix(X, label=y), num_boost_round=3),
        "binary": xgb.train(dict(common, objective="binary:logistic"),
                            xgb.DMatrix(X, label=(y > np.median(y)).astype(int)), num_boost_round=2),
        "multi": xgb.train(dict(common, objective="multi:softprob", num_class=3), xgb.DMatrix(X, label=lab3),
                           num_boost_round=2),
        "dart": xgb.train(dict(common, booster="dart", rate_drop=0.5, skip_drop=0.0), xgb.DMatrix(X, label=y),
                          num_boost_round=3),
        "categorical": xgb.train(dict(common, tree_method="hist", max_cat_to_onehot=1), dm, num_boost_round=3),
    }


def lightgbm_seeds() -> Dict[str, str]:
    import lightgbm as lgb

    X, y = _data(1)
    common = dict(num_leaves=4, min_data_in_leaf=5, verbose=-1, seed=0, num_threads=1)
    lab3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    Xc = np.nan_to_num(X.copy())
    Xc[:, 2] = np.abs(np.round(Xc[:, 2] * 3)) % 8
    texts = {
        "reg": lgb.train(common, lgb.Dataset(X, y), num_boost_round=3).model_to_string(),
        "multi": lgb.train(dict(common, objective="multiclass", num_class=3), lgb.Dataset(X, lab3),
                           num_boost_round=2).model_to_string(),
        "zero_missing": lgb.train(dict(common, zero_as_missing=True), lgb.Dataset(np.nan_to_num(X), y),
                                  num_boost_round=2).model_to_string(),
        "categorical": lgb.train(dict(common, min_data_per_group=5, cat_smooth=1.0),
                                 lgb.Dataset(Xc, y + Xc[:, 2], categorical_feature=[2]),
                                 num_boost_round=3).model_to_string(),
    }
    # The training parameters after the trees are most of the text; LightGBM's reader crashes on
    # many edits of them, which costs a child restart each; neither side predicts with them but
    # for linear_tree, which is kept.
    return {name: re.sub(r"parameters:\n.*?end of parameters\n", "parameters:\n[linear_tree: 0]\nend of parameters\n",
                         text, flags=re.S) for name, text in texts.items()}


def catboost_seeds(folder: str) -> Dict[str, bytes]:
    import catboost as cb

    X, y = _data(3)
    common = dict(iterations=3, depth=2, verbose=False, thread_count=1, allow_writing_files=False, random_seed=0)
    lab3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    scaled = cb.CatBoostRegressor(**common).fit(X, y)
    scaled.set_scale_and_bias(0.7, -1.25)
    models = {
        "scaled": scaled,
        "nan_max": cb.CatBoostRegressor(nan_mode="Max", **common).fit(X, y),
        "multi": cb.CatBoostClassifier(loss_function="MultiClass", **common).fit(X, lab3),
        "binary": cb.CatBoostClassifier(**common).fit(X, lab3 > 0),
        "depthwise": cb.CatBoostRegressor(grow_policy="Depthwise", **common).fit(X, y),
        "lossguide": cb.CatBoostRegressor(grow_policy="Lossguide", max_leaves=5, **common).fit(X, y),
    }
    out = {}
    for name, model in models.items():
        path = os.path.join(folder, f"seed_{name}.json")
        model.save_model(path, format="json")
        with open(path, "rb") as fh:
            raw = fh.read()
        # model_info (training logs, parameters) is most of the file and read by neither side
        # for prediction; keep class_params, the part that is
        doc = json.loads(raw)
        info = doc.get("model_info", {})
        doc["model_info"] = {k: v for k, v in info.items() if k in ("class_params", "params")}
        if "params" in doc["model_info"]:
            doc["model_info"]["params"] = {"loss_function": info["params"].get("loss_function", {})}
        out[name] = json.dumps(doc).encode()
    return out


# ----------------------------------------------------------------------------- field-level edits
ENUMS = {
    "split_type": [0, 1, 2, 3, -1, 255, 257, "OneHotFeature", "OnlineCtr", "FloatFeature", "Bogus"],
    "default_left": [0, 1, 2, -1],
    "nan_value_treatment": ["AsIs", "AsFalse", "AsTrue", "Bogus", ""],
    "has_nans": [True, False, 0, 1, None, "true"],
    "name": ["gbtree", "dart", "gblinear", "reg:squarederror", "binary:logistic", "multi:softprob", "x"],
    "class_label_type": ["Integer", "String", "Boolean", "Float"],
}
COUNT_KEYS = {"num_nodes", "num_feature", "num_class", "num_target", "num_trees", "num_parallel_tree",
              "size_leaf_vector", "num_deleted", "split_index", "float_feature_index", "feature_index",
              "flat_feature_index", "classes_count", "tree_info", "iteration_indptr", "split_indices",
              "left_children", "right_children", "categories_nodes", "categories_segments",
              "categories_sizes", "categories", "class_to_label", "class_names", "base_score"}
NON_UTF8 = [b"\x91", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82", b"\xc0\xaf", b"\xf4\x90\x80\x80"]


def _nudge(rng: random.Random, v: Any) -> Any:
    """A nearby or boundary count (keeping XGBoost's string-encoded numbers strings)."""
    if isinstance(v, str):
        try:
            return str(int(v) + rng.choice([-1, 1, 2, -100]))
        except ValueError:
            return rng.choice(["0", "-1", "1", "[1,2]", "[5E-1,5E-1]"])
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return rng.choice([0, 1, -1])
    return rng.choice([v + 1, v - 1, 0, -1, 2 * v + 3, 2**31, 2**53 + 1, 2**63])


def _field_edit(rng: random.Random, doc: Any) -> Any:
    """One edit of a field by its meaning; the document is edited in place and returned."""
    objects = [b for b in containers(doc, []) if isinstance(b, Pairs) and b]
    lists = [b for b in containers(doc, []) if isinstance(b, list) and not isinstance(b, Pairs) and b]
    op = rng.randrange(5)
    if op == 0:  # enum value
        hits = [(o, i) for o in objects for i, (k, _) in enumerate(o) if k in ENUMS]
        if hits:
            o, i = rng.choice(hits)
            k, v = o[i]
            if isinstance(v, list) and v:
                v = list(v)
                v[rng.randrange(len(v))] = rng.choice([x for x in ENUMS[k] if isinstance(x, int)] or [2])
                o[i] = (k, v)
            else:
                o[i] = (k, rng.choice(ENUMS[k]))
            return doc
    if op == 1:  # a count or an index
        hits = [(o, i) for o in objects for i, (k, _) in enumerate(o) if k in COUNT_KEYS]
        if hits:
            o, i = rng.choice(hits)
            k, v = o[i]
            if isinstance(v, list) and v:
                v = list(v)
                j = rng.randrange(len(v))
                v[j] = _nudge(rng, v[j])
                o[i] = (k, v)
            else:
                o[i] = (k, _nudge(rng, v))
            return doc
    if op == 2 and lists:  # a list one longer or one shorter
        box = rng.choice(lists)
        if rng.random() < 0.5:
            del box[rng.randrange(len(box))]
        else:
            box.insert(rng.randrange(len(box) + 1), box[rng.randrange(len(box))])
        return doc
    if op == 3 and objects:  # a scalar for a list, or a list for a scalar
        o = rng.choice(objects)
        i = rng.randrange(len(o))
        k, v = o[i]
        if isinstance(v, list) and not isinstance(v, Pairs):
            o[i] = (k, v[0] if v else 0)
        elif isinstance(v, (int, float, str)) and not isinstance(v, bool):
            o[i] = (k, [v])
        return doc
    return mutate_tree(rng, doc)


def _non_utf8(rng: random.Random, raw: bytes) -> bytes:
    """A byte sequence that is not UTF-8 inside a random string (key or value) of a JSON text."""
    spans = [m.span() for m in re.finditer(rb'"[^"\\]{1,40}"', raw)]
    if not spans:
        return raw + rng.choice(NON_UTF8)
    s, e = rng.choice(spans)
    at = rng.randrange(s + 1, e)
    if rng.random() < 0.5:
        return raw[:at] + rng.choice(NON_UTF8) + raw[at + 1:]
    return raw[:at] + rng.choice(NON_UTF8) + raw[at:]


def json_mutant(rng: random.Random, raw: bytes, binary: bool) -> bytes:
    """``raw``: the JSON text (for UBJSON, the same model as JSON; byte-level edits then apply
    to its UBJSON form)."""
    r = rng.random()
    if r < 0.12 and not binary:
        return _non_utf8(rng, raw)
    if r < 0.30:
        return rng.choice(BYTE_MUTATORS)(rng, ubj(loads_pairs(raw)) if binary else raw)
    doc = loads_pairs(raw)
    for _ in range(rng.choice([1, 1, 1, 2])):
        doc = _field_edit(rng, doc) if rng.random() < 0.75 else mutate_tree(rng, doc)
    if binary:
        out = ubj(doc)
        if rng.random() < 0.1:  # a key that is not UTF-8
            keys = [m.start() for m in re.finditer(rb"[a-z_]{4,}", out)]
            if keys:
                at = rng.choice(keys) + 2
                out = out[:at] + b"\x91" + out[at + 1:]
        return out
    return dumps_pairs(doc).encode()


LGB_COUNTS = ("num_class", "num_tree_per_iteration", "num_leaves", "num_cat", "max_feature_idx", "tree_sizes",
              "cat_boundaries", "left_child", "right_child", "split_feature", "Tree")
LGB_ENUMS = {"decision_type": ["0", "1", "2", "3", "8", "9", "10", "11", "12", "16", "-1"],
             "objective": ["regression", "binary sigmoid:1", "multiclass num_class:3", "poisson", "x"],
             "is_linear": ["0", "1"], "shrinkage": ["1", "0.5", "nan"]}


def lightgbm_field_mutant(rng: random.Random, raw: bytes) -> bytes:
    lines = raw.split(b"\n")
    op = rng.randrange(5)
    keyed = [i for i, line in enumerate(lines) if b"=" in line]
    if op == 0:  # enum values
        hits = [i for i in keyed if lines[i].split(b"=")[0].decode("latin-1") in LGB_ENUMS]
        if hits:
            i = rng.choice(hits)
            key, _, value = lines[i].partition(b"=")
            items = value.split(b" ")
            j = rng.randrange(len(items))
            items[j] = rng.choice(LGB_ENUMS[key.decode("latin-1")]).encode()
            lines[i] = key + b"=" + b" ".join(items)
            return b"\n".join(lines)
    if op == 1:  # counts, sizes, indices
        hits = [i for i in keyed if lines[i].split(b"=")[0].decode("latin-1") in LGB_COUNTS]
        if hits:
            i = rng.choice(hits)
            key, _, value = lines[i].partition(b"=")
            items = value.split(b" ")
            j = rng.randrange(len(items))
            try:
                n = int(items[j])
                items[j] = str(rng.choice([n + 1, n - 1, n + 2, 0, -1, 2 * n])).encode()
            except ValueError:
                items[j] = b"1"
            lines[i] = key + b"=" + b" ".join(items)
            return b"\n".join(lines)
    if op == 2 and keyed:  # a list one longer or shorter; a scalar for a list
        i = rng.choice(keyed)
        key, _, value = lines[i].partition(b"=")
        items = value.split(b" ")
        r = rng.random()
        if r < 0.35 and len(items) > 1:
            del items[rng.randrange(len(items))]
        elif r < 0.7:
            items.insert(rng.randrange(len(items) + 1), rng.choice(items))
        else:
            items = items[:1]
        lines[i] = key + b"=" + b" ".join(items)
        return b"\n".join(lines)
    if op == 3:  # not UTF-8
        i = rng.randrange(len(lines))
        at = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:at] + rng.choice(NON_UTF8) + lines[i][at:]
        return b"\n".join(lines)
    return lightgbm_mutant(rng, raw)


def make_mutants(folder: str) -> Dict[str, List[str]]:
    """Writes the seeds and their mutants; returns {library: [paths]}."""
    rng = random.Random(SEED)
    seeds: Dict[str, List[bytes]] = {"xgb_json": [], "xgb_ubj": [], "lightgbm": [], "catboost": []}
    for booster in xgboost_seeds().values():
        seeds["xgb_json"].append(bytes(booster.save_raw(raw_format="json")))
        seeds["xgb_ubj"].append(bytes(booster.save_raw(raw_format="json")))  # mutated, written as UBJSON
    seeds["lightgbm"] = [t.encode() for t in lightgbm_seeds().values()]
    seeds["catboost"] = list(catboost_seeds(folder).values())
    files: Dict[str, List[str]] = {"xgboost": [], "lightgbm": [], "catboost": []}
    for fmt, raws in seeds.items():
        library = "xgboost" if fmt.startswith("xgb") else fmt
        ext = {"xgb_json": ".json", "xgb_ubj": ".ubj", "lightgbm": ".txt", "catboost": ".json"}[fmt]
        # the seeds themselves must agree too
        mutants = [ubj(loads_pairs(r)) for r in raws] if fmt == "xgb_ubj" else list(raws)
        for k in range(PER_FORMAT[fmt]):
            raw = raws[k % len(raws)]
            if fmt == "lightgbm":
                r = rng.random()
                m = (lightgbm_field_mutant(rng, raw) if r < 0.6 else lightgbm_mutant(rng, raw) if r < 0.85
                     else rng.choice(BYTE_MUTATORS)(rng, raw))
            else:
                m = json_mutant(rng, raw, binary=fmt == "xgb_ubj")
            mutants.append(m)
        for k, m in enumerate(mutants):
            path = os.path.join(folder, f"{fmt}_{k:04d}{ext}")
            with open(path, "wb") as fh:
                fh.write(m)
            files[library].append(path)
    return files


# ----------------------------------------------------------------------------- running the children
def run_children(kind: str, paths: List[str], folder: str) -> Dict[int, Dict[str, Any]]:
    """Both readers' outcome per file; a library crash or hang is that file's refusal, a
    pgexact one a failure."""
    listing = os.path.join(folder, f"{kind}.list")
    with open(listing, "w") as fh:
        fh.write("\n".join(paths) + "\n")
    results: Dict[int, Dict[str, Any]] = {}
    start = 0
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    while start < len(paths):
        timed_out = False
        try:
            proc = subprocess.run([sys.executable, os.path.join(HERE, "_differential_driver.py"), kind, listing,
                                   str(start)], capture_output=True, timeout=CHILD_TIMEOUT, env=env)
            out, code = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as exc:
            out, code, timed_out = exc.stdout or b"", None, True
        last_stage = None
        done = False
        for line in out.decode("utf-8", "replace").splitlines():
            if not line.startswith("{"):
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("done"):
                done = True
                continue
            entry = results.setdefault(msg["i"], {})
            if "stage" in msg:
                last_stage = (msg["i"], msg["stage"])
            else:
                entry.update({k: v for k, v in msg.items() if k != "i"})
        if done:
            break
        if code == -signal.SIGALRM:
            timed_out = True  # the child's per-file alarm
        if last_stage is None:
            raise AssertionError(f"the {kind} child printed nothing (exit {code}): {proc.stderr[-2000:]!r}")
        i, stage = last_stage
        what = "hung" if timed_out else f"crashed (exit {code})"
        if stage == "pgexact":
            results[i]["pgexact"] = "refused"
            results[i]["valueerror"] = False
            results[i]["why_pgexact"] = f"pgexact {what} on {paths[i]}"
            results[i]["library"] = "not run"
        else:
            results[i]["library"] = "refused"
            results[i]["why_library"] = f"the library {what}"
        start = i + 1
    return results


def _close(kind: str, ours: np.ndarray, ref: np.ndarray, tol: np.ndarray) -> np.ndarray:
    same = (ours == ref) | (np.isnan(ours) & np.isnan(ref))
    if kind == "xgboost":
        return same | (np.abs(ours - ref) <= tol)
    return same | (np.abs(ours - ref) <= 1e-14 * np.maximum(1.0, np.abs(ref)))


@pytest.mark.slow
def test_files_both_load_predict_the_same(tmp_path):
    folder = str(tmp_path)
    files = make_mutants(folder)
    problems: List[str] = []
    tally = {}
    for kind, paths in files.items():
        results = run_children(kind, paths, folder)
        both = refused = lib_only = 0
        for i, path in enumerate(paths):
            r = results.get(i, {})
            ours, theirs = r.get("pgexact"), r.get("library")
            if ours is None:
                problems.append(f"{path}: no pgexact outcome")
                continue
            if ours == "refused":
                if not r.get("valueerror", False):
                    problems.append(f"{path}: pgexact raised something other than ValueError: {r.get('why_pgexact')}")
                elif not r["why_pgexact"].split(": ", 1)[-1].startswith("model:"):
                    problems.append(f"{path}: pgexact's refusal does not start with 'model:': {r['why_pgexact']}")
                refused += 1
                continue
            if theirs == "refused" or theirs is None:
                lib_only += 1
                continue
            both += 1
            if ours["d"] != theirs["d"]:
                problems.append(f"{path}: pgexact reads {ours['d']} features, the library {theirs['d']}")
                continue
            a = np.array([[float(v) for v in col] for col in ours["pred"]])
            b = np.array([[float(v) for v in col] for col in theirs["pred"]])
            if a.shape != b.shape:
                problems.append(f"{path}: pgexact reads {a.shape[0]} outputs, the library {b.shape[0]}")
                continue
            tol = np.array([[float(v) for v in col] for col in ours["tol"]]) if "tol" in ours else None
            ok = _close(kind, a, b, tol)
            if not ok.all():
                k = np.argwhere(~ok)[0]
                problems.append(f"{path}: output {k[0]} row {k[1]}: pgexact {a[tuple(k)]!r}, "
                                f"the library {b[tuple(k)]!r}")
        tally[kind] = dict(files=len(paths), both=both, pgexact_refused=refused, library_only_refused=lib_only)
    print(json.dumps(tally))
    assert not problems, f"{len(problems)} files read differently:\n" + "\n".join(problems[:40])
    for kind, t in tally.items():  # the mutants exercise both outcomes
        assert t["both"] >= 20 and t["pgexact_refused"] >= 50, tally
