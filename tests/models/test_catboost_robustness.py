"""Hostile CatBoost JSON models: hand-made malformed documents are refused with a ValueError that
says what is wrong, and seeded mutations of real CatBoost files either load (and then predict
and pickle) or raise ValueError, never crash. The mutations run in a child process (this file
run as a script), so a crash shows as a signal instead of killing the test run."""

from __future__ import annotations

import copy
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import traceback

import numpy as np
import pytest

import pgexact
from pgexact._core import model as core_model

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/, with the helpers


def _split(f, border, index):
    """A float split; ``index`` is CatBoost's split_index, the border's number across features."""
    return {"border": border, "float_feature_index": f, "split_index": index, "split_type": "FloatFeature"}


def _float(index, borders, treatment="AsIs", name=""):
    return {"borders": borders, "feature_id": name, "feature_index": index, "flat_feature_index": index,
            "has_nans": treatment != "AsIs", "nan_value_treatment": treatment}


def _doc():
    """Two features; one depth-2 oblivious tree, leaf = 1 + bit0 + 2 bit1; scale 2, bias 0.5."""
    return {
        "features_info": {"float_features": [_float(0, [-1.0, 0.5]), _float(1, [0.0], "AsTrue")]},
        "oblivious_trees": [{"leaf_values": [1.0, 2.0, 3.0, 4.0], "leaf_weights": [1, 1, 1, 1],
                             "splits": [_split(0, 0.5, 1), _split(1, 0.0, 2)]}],
        "scale_and_bias": [2.0, [0.5]],
    }


def _parse(doc):
    text = doc if isinstance(doc, (str, bytes)) else json.dumps(doc).replace("Infinity", "1e999")
    return core_model.parse_catboost_json(text, -1)


def test_handmade_baseline():
    arena, meta = _parse(_doc())
    X = np.array([[0.0, 0.0], [0.6, 0.0], [0.0, 0.1], [0.6, 0.1], [0.5, np.nan], [np.nan, -5.0],
                  [float(np.nextafter(np.float32(0.5), np.float32(1))), 0.0]])
    # 2 * leaf + 0.5; NaN in feature 1 is AsTrue (bit set), in feature 0 AsIs (bit clear)
    np.testing.assert_array_equal(arena.predict(X, 0), [2.5, 4.5, 6.5, 8.5, 6.5, 2.5, 4.5])
    assert meta.n_outputs == 1 and meta.scale == 2.0 and meta.tree_kind == "oblivious"
    assert meta.nan_treatment == ["AsIs", "AsTrue"]


def test_handmade_file_loads_through_pgexact_load(tmp_path):
    doc = _doc()
    doc["features_info"]["float_features"][0]["feature_id"] = "height"
    doc["features_info"]["float_features"][1]["feature_id"] = "weight"
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc, indent=2))
    ens = pgexact.load(str(path))
    assert ens.feature_names == ["height", "weight"] and ens.source == "CatBoost file model.json"


def _set(path, value):
    """A change to the baseline document: ``path`` is a list of keys / indices."""

    def change(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        if value is _DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        return doc

    return change


_DELETE = object()
FF = ["features_info", "float_features"]
T0 = ["oblivious_trees", 0]
S0 = T0 + ["splits", 0]

HOSTILE = [
    ("leaf_count", _set(T0 + ["leaf_values"], [1.0, 2.0, 3.0]), r"leaf_values has 3 entries, expected 4"),
    ("leaf_inf", _set(T0 + ["leaf_values"], [1.0, float("inf"), 3.0, 4.0]), r"leaf value is not finite"),
    ("leaf_string", _set(T0 + ["leaf_values"], ["a", 2.0, 3.0, 4.0]), r"leaf_values is not a numeric array"),
    ("feature_out_of_range", _set(S0 + ["float_feature_index"], 2),
     r"split_index 1 is float feature 0's border 0.5, but the split names float feature 2, border 0.5"),
    ("feature_negative", _set(S0 + ["float_feature_index"], -1), r"names float feature -1"),
    ("feature_fraction", _set(S0 + ["float_feature_index"], 0.5), r"names float feature 0.5"),
    ("feature_other", _set(S0 + ["float_feature_index"], 1), r"names float feature 1, border 0.5"),
    ("border_not_the_indexed_one", _set(S0 + ["border"], -1.0), r"names float feature 0, border -1 "),
    ("border_not_listed", _set(S0 + ["border"], 0.25), r"names float feature 0, border 0.25"),
    ("border_inf", _set(S0 + ["border"], float("inf")), r"border inf"),
    ("border_string", _set(S0 + ["border"], "0.5"), r"border \?"),
    ("split_index_out_of_range", _set(S0 + ["split_index"], 3), r"split_index is not an integer in range"),
    ("split_index_negative", _set(S0 + ["split_index"], -1), r"split_index is not an integer in range"),
    ("split_index_missing", _set(S0 + ["split_index"], _DELETE), r"missing field"),
    ("has_nans_type", _set(FF + [1, "has_nans"], 1), r"has_nans is not true or false"),
    ("nan_treatment_missing", _set(FF + [1, "nan_value_treatment"], _DELETE), r"missing field"),
    ("borders_unsorted", _set(FF + [0, "borders"], [0.5, -1.0]), r"borders that are not increasing"),
    ("borders_repeated", _set(FF + [0, "borders"], [0.5, 0.5]), r"borders that are not increasing"),
    ("borders_float32_overflow", _set(FF + [0, "borders"], [-1.0, 0.5, 3.5e38]), r"not a finite float32"),
    ("nan_treatment", _set(FF + [1, "nan_value_treatment"], "AsMaybe"), r"unknown nan_value_treatment 'AsMaybe'"),
    ("nan_treatment_type", _set(FF + [1, "nan_value_treatment"], 3), r"nan_value_treatment is not a string"),
    ("feature_index_twice", _set(FF + [1, "feature_index"], 0), r"feature_index is not its position 1"),
    ("flat_index_twice", _set(FF + [1, "flat_feature_index"], 0), r"flat_feature_index is not increasing"),
    ("flat_index_huge", _set(FF + [1, "flat_feature_index"], 1 << 20), r"flat_feature_index is not an integer"),
    ("name_type", _set(FF + [0, "feature_id"], 7), r"feature_id is not a string"),
    ("split_type", _set(S0 + ["split_type"], "Magic"), r"split type 'Magic'"),
    ("one_hot_without_categories", _set(S0 + ["split_type"], "OneHotFeature"), r"split type 'OneHotFeature'"),
    ("no_features_info", _set(["features_info"], _DELETE), r"missing field"),
    ("no_trees", _set(["oblivious_trees"], _DELETE), r"exactly one of oblivious_trees and trees"),
    ("both_tree_kinds", _set(["trees"], []), r"exactly one of oblivious_trees and trees"),
    ("trees_not_array", _set(["oblivious_trees"], {"a": 1}), r"oblivious_trees is not an array"),
    ("splits_not_array", _set(T0 + ["splits"], 3), r"splits is not an array"),
    ("scale_inf", _set(["scale_and_bias", 0], float("inf")), r"scale is not finite"),
    ("bias_empty", _set(["scale_and_bias", 1], []), r"bias is empty"),
    ("bias_strings", _set(["scale_and_bias", 1], ["a"]), r"bias is not a list of numbers"),
    ("bias_inf", _set(["scale_and_bias", 1], [float("inf")]), r"base score is not finite"),
    ("scale_and_bias_shape", _set(["scale_and_bias"], [1.0]), r"scale_and_bias is not"),
    ("multi_output_leaf_count", _set(["scale_and_bias", 1], [0.0, 0.0]), r"expected 8 \(2\^depth leaves x 2"),
    ("text_feature", _set(["features_info", "text_features"], [{"feature_id": "review", "flat_feature_index": 2}]),
     r"text feature 'review' \(column 2\)"),
    ("embedding_feature", _set(["features_info", "embedding_features"], [{"flat_feature_index": 3}]),
     r"embedding feature column 3"),
    ("categorical_declared", _set(["features_info", "categorical_features"],
                                  [{"feature_id": "town", "feature_index": 0, "flat_feature_index": 2}]),
     r"declares categorical feature 'town' \(column 2\)"),
]


@pytest.mark.parametrize("name,change,match", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_document(name, change, match):
    with pytest.raises(ValueError, match=match):
        _parse(change(copy.deepcopy(_doc())))


def test_duplicate_feature_names_and_bad_utf8():
    doc = _doc()
    for f in doc["features_info"]["float_features"]:
        f["feature_id"] = "same"
    with pytest.raises(ValueError, match="feature_id 'same' names two features"):
        _parse(doc)
    text = json.dumps(_doc()).replace('"feature_id": ""', '"feature_id": "\udcff"', 1)
    with pytest.raises(ValueError, match="UTF-8"):
        _parse(text.encode("utf-8", "surrogateescape"))


def test_depth_limits():
    doc = _doc()
    doc["oblivious_trees"][0]["splits"] = [_split(0, 0.5, 1)] * 30
    with pytest.raises(ValueError, match="deeper than 29 levels"):
        _parse(doc)
    # a non-symmetric tree nested past the JSON reader's limit
    node = {"value": 1.0}
    for _ in range(200):
        node = {"split": _split(0, 0.5, 1), "left": node, "right": {"value": 0.0}}
    doc = {k: v for k, v in _doc().items() if k != "oblivious_trees"}
    doc["trees"] = [node]
    with pytest.raises(ValueError, match="nesting deeper than 128"):
        _parse(doc)


def test_hostile_non_symmetric_trees():
    base = {k: v for k, v in _doc().items() if k != "oblivious_trees"}
    good = {"split": _split(0, 0.5, 1), "left": {"value": 1.0}, "right": {"value": 2.0}}
    arena, meta = _parse(dict(base, trees=[good]))
    assert meta.tree_kind == "non_symmetric"
    np.testing.assert_array_equal(arena.predict(np.array([[0.5, 0.0], [0.6, 0.0]]), 0), [2.5, 4.5])
    for tree, match in [
        ({"split": _split(0, 0.5, 1), "left": {"value": 1.0}}, "missing field"),
        ({"split": _split(0, 0.5, 1), "left": {"value": 1.0}, "right": 3}, "not an object"),
        ({"split": _split(0, 0.5, 1), "left": {"value": [1.0, 2.0]}, "right": {"value": 2.0}}, "leaf value"),
        ({"split": _split(0, 0.3, 1), "left": {"value": 1.0}, "right": {"value": 2.0}}, "border 0.3"),
        ({"value": "x"}, "leaf value"),
        ({}, "missing field"),
    ]:
        with pytest.raises(ValueError, match=match):
            _parse(dict(base, trees=[tree]))


def test_n_trees_argument():
    doc = _doc()
    doc["oblivious_trees"] = doc["oblivious_trees"] * 3
    arena, meta = core_model.parse_catboost_json(json.dumps(doc), 2)
    assert arena.n_trees == 2 and meta.n_trees == 3 and meta.n_trees_used == 2
    with pytest.raises(ValueError, match="asked for 4 trees, the model has 3"):
        core_model.parse_catboost_json(json.dumps(doc), 4)
    with pytest.raises(TypeError, match="data"):
        core_model.parse_catboost_json(12, -1)
    for junk in ("", "[]", "{", "null", '{"features_info": 1}'):
        with pytest.raises(ValueError):
            core_model.parse_catboost_json(junk, -1)


# ----------------------------------------------------------------------------- mutated files (child process)
def _write_seeds(folder):
    catboost = pytest.importorskip("catboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    X[rng.random(200) < 0.1, 0] = np.nan
    y = X[:, 1] + np.nan_to_num(X[:, 0])
    common = dict(iterations=3, depth=2, thread_count=1, allow_writing_files=False, verbose=False, random_seed=0)
    models = {
        "reg_min": catboost.CatBoostRegressor(nan_mode="Min", **common).fit(X, y),
        "reg_max": catboost.CatBoostRegressor(nan_mode="Max", **common).fit(X, y),
        "multi": catboost.CatBoostClassifier(**common).fit(X, np.digitize(y, [-0.5, 0.5])),
        "depthwise": catboost.CatBoostRegressor(grow_policy="Depthwise", **common).fit(X, y),
    }
    models["reg_min"].set_scale_and_bias(0.5, 2.0)
    for name, model in models.items():
        model.save_model(os.path.join(folder, f"{name}.json"), format="json")


def test_mutated_catboost_files_never_crash(tmp_path):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    _write_seeds(str(seeds))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), str(seeds), "400", "1919"],
                          capture_output=True, text=True, timeout=300, env=env)
    if proc.returncode < 0:
        pytest.fail(f"mutation driver killed by signal {signal.Signals(-proc.returncode).name}:\n"
                    f"{proc.stderr[-4000:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    tally = json.loads(proc.stdout.strip().splitlines()[-1])
    assert tally["failed"] == 0
    assert tally["loaded"] > 200 and tally["refused"] > 600, tally


def _mutants(rng, raw, n):
    from _mutation_driver import BYTE_MUTATORS, dumps_pairs, loads_pairs, mutate_tree

    out = [b"", b"{", raw[: len(raw) // 2], b'{"features_info": {}, "oblivious_trees": []}']
    for _ in range(n):
        if rng.random() < 0.6:
            out.append(dumps_pairs(mutate_tree(rng, loads_pairs(raw))).encode())
        else:
            out.append(rng.choice(BYTE_MUTATORS)(rng, raw))
    return out


def _drive(seed_dir, n_per_file, seed):
    sys.path.insert(0, TESTS)
    from _mutation_driver import load_model

    rng = random.Random(seed)
    tally = {"loaded": 0, "refused": 0, "failed": 0}
    tmp = tempfile.mkdtemp(prefix="pgx_cb_mut_")
    for name in sorted(os.listdir(seed_dir)):
        with open(os.path.join(seed_dir, name), "rb") as fh:
            raw = fh.read()
        for k, m in enumerate(_mutants(rng, raw, n_per_file)):
            path = os.path.join(tmp, "m.json")
            with open(path, "wb") as fh:
                fh.write(m)
            try:
                load_model(path)  # loads (output 0 of a multi-output model), predicts, pickles
                tally["loaded"] += 1
            except ValueError:
                tally["refused"] += 1
            except Exception:  # noqa: BLE001 - anything but ValueError is a finding
                tally["failed"] += 1
                print(f"FAILED {name} mutant {k}:", file=sys.stderr)
                traceback.print_exc()
    print(json.dumps(tally))
    return 1 if tally["failed"] else 0


if __name__ == "__main__":
    sys.exit(_drive(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
