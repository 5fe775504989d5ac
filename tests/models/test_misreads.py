"""Model files that pgexact once read differently from the library (issue 27): each is refused
with a ValueError starting ``model:`` that names the field, or read exactly as the library reads
it. The libraries' own behaviour on the same file is checked alongside where it is cheap, so
the tests say why a file is refused."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest

import pgexact

catboost = pytest.importorskip("catboost")
lightgbm = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")


def _data(seed=0, n=300, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, 0] - 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    return X, y


def _write(tmp_path, name, data):
    path = os.path.join(str(tmp_path), name)
    with open(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)
    return path


def _refused(path, *words):
    with pytest.raises(ValueError) as info:
        pgexact.load(path, output=0)
    message = str(info.value)
    assert message.startswith("model:"), message
    for word in words:
        assert word in message, message
    return message


# ----------------------------------------------------------------------------- XGBoost
def _xgb_categorical():
    X, y = _data()
    X[:, 2] = np.abs(np.round(X[:, 2] * 3)) % 6
    dm = xgb.DMatrix(X, label=y + X[:, 2], feature_types=["q", "q", "c"], enable_categorical=True)
    booster = xgb.train(dict(max_depth=3, nthread=1, seed=0, tree_method="hist", max_cat_to_onehot=1), dm,
                        num_boost_round=3)
    return booster, X


@pytest.mark.parametrize("value", [2, 3, -1, 255, 257])
def test_xgboost_split_type_outside_0_1_refused(tmp_path, value):
    booster, _ = _xgb_categorical()
    doc = json.loads(bytes(booster.save_raw(raw_format="json")))
    trees = doc["learner"]["gradient_booster"]["model"]["trees"]
    tree = next(t for t in trees if 1 in t["split_type"])
    node = tree["split_type"].index(1)
    tree["split_type"][node] = value
    _refused(_write(tmp_path, "m.json", json.dumps(doc)), "split_type", f"node {node}", "0 (numeric) or 1")


def test_xgboost_split_type_refused_in_ubjson(tmp_path):
    booster, _ = _xgb_categorical()
    raw = bytearray(booster.save_raw(raw_format="ubj"))
    # split_type is a typed uint8 array: "split_type" [$U#L <count> <bytes>; make a 1 a 2
    key = raw.index(b"split_type")
    header = raw.index(b"[$U#", key)
    start = header + 4 + 1 + 8
    count = int.from_bytes(raw[header + 5:header + 13], "big")
    values = raw[start:start + count]
    if 1 not in values:
        pytest.skip("the first tree has no categorical split")
    raw[start + values.index(1)] = 2
    _refused(_write(tmp_path, "m.ubj", bytes(raw)), "split_type")


@pytest.mark.parametrize("enc", [5, 1.5, [5], [{"values": 3}], [{"values": [97], "offsets": 7}]])
def test_xgboost_malformed_category_encoding_refused(tmp_path, enc):
    booster, _ = _xgb_categorical()
    doc = json.loads(bytes(booster.save_raw(raw_format="json")))
    cats = doc["learner"]["gradient_booster"]["model"].setdefault("cats", {})
    cats["enc"] = enc
    path = _write(tmp_path, "m.json", json.dumps(doc))
    try:
        pgexact.load(path)
    except ValueError as exc:
        assert str(exc).startswith("model:"), exc


def _xgb_with_leaves(tmp_path, leaf):
    """Three depth-1 trees whose leaves are all +-leaf (alternating signs per side)."""
    X, y = _data(1)
    booster = xgb.train(dict(max_depth=1, nthread=1, seed=0, base_score=0.0), xgb.DMatrix(X, label=y),
                        num_boost_round=3)
    doc = json.loads(bytes(booster.save_raw(raw_format="json")))
    for k, tree in enumerate(doc["learner"]["gradient_booster"]["model"]["trees"]):
        for n, left in enumerate(tree["left_children"]):
            if left == -1:
                tree["split_conditions"][n] = leaf if (n + k) % 2 else -leaf
                tree["base_weights"][n] = tree["split_conditions"][n]
    path = _write(tmp_path, "m.json", json.dumps(doc))
    return path, X


def test_xgboost_leaves_near_float32_limit_refused(tmp_path):
    path, X = _xgb_with_leaves(tmp_path, 3e38)
    ref = xgb.Booster(model_file=path).predict(xgb.DMatrix(X[:50]), output_margin=True)
    assert np.any(np.isinf(ref))  # XGBoost's float32 sum overflows on some rows
    _refused(path, "float32", "overflow")


def test_xgboost_large_leaves_that_cannot_overflow_still_read(tmp_path):
    path, X = _xgb_with_leaves(tmp_path, 1e38)  # 3 trees x 1e38 stays below 3.4e38
    ref = xgb.Booster(model_file=path).predict(xgb.DMatrix(X[:50]), output_margin=True).astype(np.float64)
    ours = pgexact.load(path).predict(X[:50])
    assert np.all(np.isfinite(ref))
    np.testing.assert_allclose(ours, ref, rtol=1e-6)


@pytest.mark.parametrize("where,token", [("base_score", "18446744073709551616"),
                                         ("base_score", "[9223372036854775808]"),
                                         ("split_conditions", "18446744073709551616"),
                                         ("split_conditions", "9007199254740993")])
def test_xgboost_integer_beyond_2_53_refused(tmp_path, where, token):
    """XGBoost reads an integer token as an int64 (base_score '18446744073709551616' reads as 0):
    refused rather than guessed."""
    X, y = _data(8)
    booster = xgb.train(dict(max_depth=2, nthread=1), xgb.DMatrix(X, label=y), num_boost_round=2)
    doc = json.loads(bytes(booster.save_raw(raw_format="json")))
    if where == "base_score":
        doc["learner"]["learner_model_param"]["base_score"] = token
        text = json.dumps(doc)
    else:
        doc["learner"]["gradient_booster"]["model"]["trees"][0]["split_conditions"][-1] = 1234.5
        text = json.dumps(doc).replace("1234.5", token, 1)
    _refused(_write(tmp_path, "m.json", text), where, "2^53")


@pytest.mark.parametrize("fmt", ["json", "ubj"])
def test_xgboost_invalid_utf8_refused(tmp_path, fmt):
    # in the key of an optional field: read without it, the file would load
    booster, _ = _xgb_categorical()
    raw = bytes(booster.save_raw(raw_format=fmt))
    assert b"split_type" in raw
    _refused(_write(tmp_path, f"m.{fmt}", raw.replace(b"split_type", b"split_typ\x91", 1)), "UTF-8")
    # in a feature name
    X, y = _data(2)
    named = xgb.train(dict(max_depth=2, nthread=1), xgb.DMatrix(X, label=y, feature_names=["a", "bb", "c"]),
                      num_boost_round=2)
    raw = bytes(named.save_raw(raw_format=fmt)).replace(b"bb", b"b\x91", 1)
    _refused(_write(tmp_path, f"n.{fmt}", raw), "UTF-8")


# ----------------------------------------------------------------------------- CatBoost
def _cb_json(tmp_path, **params):
    X, y = _data(3)
    kw = dict(iterations=3, depth=2, verbose=False, thread_count=1, allow_writing_files=False, random_seed=0)
    kw.update(params)
    if kw.get("loss_function") == "MultiClass" or "class_names" in kw:
        model = catboost.CatBoostClassifier(**kw).fit(X, np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])))
    else:
        model = catboost.CatBoostRegressor(**kw).fit(X, y)
    path = os.path.join(str(tmp_path), "cb.json")
    model.save_model(path, format="json")
    with open(path, "rb") as fh:
        return fh.read(), X


_CB_CHILD = """
import signal, sys, numpy as np, catboost
signal.signal(signal.SIGINT, signal.SIG_DFL)
m = catboost.CatBoost()
m.load_model(sys.argv[1], format="json")
np.save(sys.argv[3], np.asarray(m.predict(np.load(sys.argv[2]), prediction_type="RawFormulaVal"), dtype=np.float64))
np.save(sys.argv[3] + ".leaves.npy", np.asarray(m.get_leaf_values(), dtype=np.float64))
"""


def _catboost_child(path, X):
    """CatBoost's raw prediction and leaf values, read in a child process (its reader crashes on
    some malformed files); None when CatBoost refuses the file."""
    folder = os.path.dirname(path)
    rows, out = os.path.join(folder, "rows.npy"), os.path.join(folder, "out.npy")
    np.save(rows, np.asarray(X, dtype=np.float64))
    proc = subprocess.run([sys.executable, "-c", _CB_CHILD, path, rows, out], capture_output=True, timeout=120)
    if proc.returncode != 0:
        return None
    return np.load(out), np.load(out + ".leaves.npy")


def _catboost_predict(path, X):
    result = _catboost_child(path, X)
    assert result is not None, f"CatBoost could not read {path}"
    return result[0]


def test_catboost_scalar_bias_refused(tmp_path):
    raw, X = _cb_json(tmp_path)
    doc = json.loads(raw)
    doc["scale_and_bias"] = [1, 5.0]
    path = _write(tmp_path, "m.json", json.dumps(doc))
    doc["scale_and_bias"] = [1, [0.0]]
    plain = _write(tmp_path, "plain.json", json.dumps(doc))
    # CatBoost 1.2 ignores a bare-number bias: the file predicts as one without a bias
    np.testing.assert_array_equal(_catboost_predict(path, X[:5]), _catboost_predict(plain, X[:5]))
    _refused(path, "scale_and_bias", "bias")


@pytest.mark.parametrize("grow_policy,key", [("Lossguide", b'"weight"'), ("SymmetricTree", b'"leaf_weights"'),
                                             ("SymmetricTree", b'"leaf_values"')])
def test_catboost_invalid_utf8_refused(tmp_path, grow_policy, key):
    params = dict(grow_policy=grow_policy, max_leaves=4) if grow_policy == "Lossguide" else {}
    raw, _ = _cb_json(tmp_path, **params)
    assert key in raw
    bad = raw.replace(key, key[:-3] + b"\x91" + key[-2:], 1)
    _refused(_write(tmp_path, "m.json", bad), "UTF-8")
    # inside a string value too
    bad = raw.replace(b'"FloatFeature"', b'"FloatFeatur\xe9"', 1)
    _refused(_write(tmp_path, "m2.json", bad), "UTF-8")


@pytest.mark.parametrize("token", ["9007199254740993", "9223372036854775807", "-9223372036854775808",
                                   "18446744073709551615"])
def test_catboost_integer_beyond_2_53_refused(tmp_path, token):
    raw, X = _cb_json(tmp_path)
    doc = json.loads(raw)
    doc["oblivious_trees"][0]["leaf_values"][0] = 1234.5
    text = json.dumps(doc).replace("1234.5", token, 1)
    path = _write(tmp_path, "m.json", text)
    result = _catboost_child(path, X[:2])
    assert result is None or result[1][0] != float(token)  # CatBoost does not read it as its value
    _refused(path, "integer", "2^53")


def test_catboost_integer_within_2_53_read(tmp_path):
    raw, X = _cb_json(tmp_path)
    doc = json.loads(raw)
    doc["oblivious_trees"][0]["leaf_values"][0] = 1234.5
    path = _write(tmp_path, "m.json", json.dumps(doc).replace("1234.5", "9007199254740992", 1))
    np.testing.assert_allclose(pgexact.load(path).predict(X[:20]), _catboost_predict(path, X[:20]),
                               rtol=1e-14, atol=1e-14)


def _class_params_case(tmp_path, edit):
    raw, X = _cb_json(tmp_path, loss_function="MultiClass")
    doc = json.loads(raw)
    edit(doc["model_info"]["class_params"])
    return _write(tmp_path, "m.json", json.dumps(doc)), X


@pytest.mark.parametrize("edit,word", [
    (lambda cp: cp.update(class_names=[0, 1, 2, 3]), "class_names"),
    (lambda cp: cp.update(class_names=list(range(8))), "class_names"),
    (lambda cp: cp.update(class_names=[0, 1]), "class_names"),
    (lambda cp: cp.update(class_to_label=[2, 1, 0]), "class_to_label"),
    (lambda cp: cp.update(class_to_label=[0, 1, 1]), "class_to_label"),
    (lambda cp: cp.update(classes_count=5), "classes_count"),
])
def test_catboost_class_params_that_remap_outputs_refused(tmp_path, edit, word):
    path, X = _class_params_case(tmp_path, edit)
    result = _catboost_child(path, X[:3])
    if result is not None:  # CatBoost predicts something other than the trees' three outputs
        ref = result[0]
        raw, _ = _cb_json(tmp_path, loss_function="MultiClass")
        trees = _catboost_predict(_write(tmp_path, "plain.json", raw), X[:3])
        assert ref.shape != trees.shape or not np.array_equal(ref, trees)
    _refused(path, "class_params", word)


def test_catboost_declared_class_without_output_refused(tmp_path):
    """A file CatBoost itself writes: class_names names a class the data never had; CatBoost's
    predict gives it a column of -inf, which no sum of leaves is."""
    raw, X = _cb_json(tmp_path, loss_function="MultiClass", class_names=[0, 1, 2, 3])
    path = _write(tmp_path, "m.json", raw)
    assert np.all(np.isneginf(np.asarray(_catboost_predict(path, X[:3]))[:, 3]))
    _refused(path, "class_names", "4 classes", "3 outputs")


def test_catboost_binary_class_names_read(tmp_path):
    X, y = _data(4)
    model = catboost.CatBoostClassifier(iterations=3, depth=2, verbose=False, thread_count=1,
                                        allow_writing_files=False).fit(X, np.where(y > 0, "y", "n"))
    path = os.path.join(str(tmp_path), "b.json")
    model.save_model(path, format="json")
    np.testing.assert_allclose(pgexact.load(path).predict(X[:20]), _catboost_predict(path, X[:20]),
                               rtol=1e-14, atol=1e-14)


# ----------------------------------------------------------------------------- LightGBM
def _lgb_text(multi=False):
    X, y = _data(5)
    params = dict(num_leaves=4, min_data_in_leaf=5, verbose=-1, seed=0, num_threads=1)
    if multi:
        params.update(objective="multiclass", num_class=2)
        y = (y > np.median(y)).astype(int)
    return lightgbm.train(params, lightgbm.Dataset(X, y), num_boost_round=3).model_to_string(), X


@pytest.mark.parametrize("multi,edit", [(True, ("num_class=2", "num_class=1")),
                                        (True, ("num_tree_per_iteration=2", "num_tree_per_iteration=1"))])
def test_lightgbm_num_class_contradicting_trees_per_iteration_refused(tmp_path, multi, edit):
    text, _ = _lgb_text(multi)
    assert edit[0] in text
    path = _write(tmp_path, "m.txt", text.replace(edit[0], edit[1], 1))
    _refused(path, "num_class", "num_tree_per_iteration")


def test_lightgbm_two_trees_per_iteration_one_class_refused(tmp_path):
    X, y = _data(6)
    text = lightgbm.train(dict(num_leaves=4, verbose=-1, seed=0, num_threads=1), lightgbm.Dataset(X, y),
                          num_boost_round=4).model_to_string()
    text = text.replace("num_tree_per_iteration=1", "num_tree_per_iteration=2", 1)
    _refused(_write(tmp_path, "m.txt", text), "num_class=1", "num_tree_per_iteration=2")


@pytest.mark.parametrize("change", ["shift", "swap", "last"])
def test_lightgbm_tree_sizes_mismatch_refused(tmp_path, change):
    text, _ = _lgb_text()
    line = re.search(r"^tree_sizes=(.*)$", text, re.M)
    sizes = [int(s) for s in line.group(1).split()]
    if change == "shift":
        sizes[0] += 1
    elif change == "swap":
        sizes[0], sizes[1] = sizes[1] + 5, sizes[0] - 5
    else:
        sizes[-1] -= 3
    bad = text.replace(line.group(0), "tree_sizes=" + " ".join(map(str, sizes)), 1)
    _refused(_write(tmp_path, "m.txt", bad), "tree_sizes")


def test_lightgbm_tree_sizes_as_written_read(tmp_path):
    text, X = _lgb_text()
    path = _write(tmp_path, "m.txt", text)
    ref = lightgbm.Booster(model_file=path).predict(X[:20], raw_score=True)
    np.testing.assert_array_equal(pgexact.load(path).predict(X[:20]), ref)


# ----------------------------------------------------------------------------- DataFrames
def _named_xgb():
    X, y = _data(7)
    booster = xgb.train(dict(max_depth=2, nthread=1), xgb.DMatrix(X, label=y, feature_names=["f0", "f1", "f2"]),
                        num_boost_round=2)
    return booster, X


def test_dataframe_with_an_extra_repeated_column_refused():
    import pandas as pd

    booster, X = _named_xgb()
    frame = pd.DataFrame(np.c_[X[:5], X[:5, 1]], columns=["f0", "f1", "f2", "f0"])
    with pytest.raises(Exception):  # XGBoost refuses such a frame  # noqa: B017
        xgb.DMatrix(frame)
    with pytest.raises(ValueError, match=r"^X: DataFrame column 'f0' appears twice \(columns 0 and 3\)"):
        pgexact.load(booster).predict(frame)
    with pytest.raises(ValueError, match=r"^X: DataFrame column 'f0' appears twice"):
        pgexact.pg2(booster, frame, [0])


def test_dataframe_repeated_name_standing_in_for_a_missing_one_named():
    import pandas as pd

    booster, X = _named_xgb()
    frame = pd.DataFrame(X[:5], columns=["f0", "f0", "f2"])
    with pytest.raises(ValueError, match=r"^X: DataFrame column 'f0' appears twice") as info:
        pgexact.load(booster).predict(frame)
    assert "missing" not in str(info.value)


def test_dataframe_unique_columns_in_any_order_still_read():
    import pandas as pd

    booster, X = _named_xgb()
    frame = pd.DataFrame(X[:5, ::-1], columns=["f2", "f1", "f0"])
    np.testing.assert_array_equal(pgexact.load(booster).predict(frame), pgexact.load(booster).predict(X[:5]))


# ----------------------------------------------------------------------------- HistGradientBoosting
def _hgb_models():
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    X[:, 1] = rng.integers(0, 6, 400)
    X[:, 3] = rng.choice([2, 5, 9, 11], 400)
    y = X[:, 0] + 2.0 * np.isin(X[:, 1], [1, 3]) + (X[:, 3] == 5)
    reg = HistGradientBoostingRegressor(max_iter=3, max_depth=3, categorical_features=[1, 3], random_state=0)
    clf = HistGradientBoostingClassifier(max_iter=2, max_depth=3, categorical_features=[1, 3], random_state=0)
    rows = np.c_[rng.normal(size=(20, 1)), np.r_[np.arange(-1, 8), [np.nan, 2.5], rng.integers(0, 6, 9)],
                 rng.normal(size=(20, 1)), np.r_[[2, 5, 9, 11, 0, 3, np.nan, -1, 12, 5], rng.choice([2, 5, 9, 11], 10)]]
    return [reg.fit(X, y), clf.fit(X, np.digitize(y, [0.0, 1.5]))], rows


def _hgb_raw(model, X):
    return np.asarray(model._raw_predict(X), dtype=np.float64).reshape(len(X), -1)


def _all_outputs(model):
    try:
        from pgexact._models._adapters import load_outputs
    except ImportError:  # before the modules moved (issue 26)
        from pgexact._adapters import load_outputs
    return load_outputs(model, "all")


def test_hgb_numeric_split_on_a_categorical_column_routes_as_sklearn():
    import copy

    models, X = _hgb_models()
    model = copy.deepcopy(models[0])
    nodes = model._predictors[0][0].nodes
    node = next(v for v in range(len(nodes)) if nodes["is_categorical"][v] and not nodes["is_leaf"][v])
    nodes["is_categorical"][node] = False
    nodes["num_threshold"][node] = 1.5  # codes 0, 1 go left; an unknown value (-1, 6, 2.5) the missing way
    ours = np.array([e.predict(X) for e in _all_outputs(model)]).T
    np.testing.assert_allclose(ours, _hgb_raw(model, X), rtol=1e-12, atol=1e-12)


def test_hgb_corrupted_models_refused_by_name_or_read_as_sklearn():
    """Seeded edits of node fields and category bitsets: each model is refused with a ValueError
    starting 'model:' (never a bare KeyError / IndexError) or predicts as scikit-learn does."""
    import copy

    models, X = _hgb_models()
    rng = random.Random(27)
    loaded = refused = 0
    for t in range(240):
        model = copy.deepcopy(models[t % 2])
        fields = set()
        for _ in range(rng.randint(1, 2)):
            predictor = rng.choice(rng.choice(model._predictors))
            nodes = predictor.nodes
            field = rng.choice(["feature_idx", "bitset_idx", "is_categorical", "num_threshold", "missing_go_to_left",
                                "left", "right", "is_leaf"])
            fields.add(field)
            try:
                nodes[field][rng.randrange(len(nodes))] = rng.choice([0, 1, 2, 3, 4, -1, 7, 100, 255])
            except (OverflowError, ValueError):  # -1 in an unsigned field
                nodes[field][rng.randrange(len(nodes))] = np.iinfo(nodes.dtype[field]).max
            if rng.random() < 0.2 and len(predictor.raw_left_cat_bitsets):
                predictor.raw_left_cat_bitsets[rng.randrange(len(predictor.raw_left_cat_bitsets))][rng.randrange(8)] = \
                    rng.getrandbits(32)
        try:
            outputs = _all_outputs(model)
        except ValueError as exc:
            assert str(exc).startswith("model:"), exc
            refused += 1
            continue
        loaded += 1
        if fields & {"left", "right", "is_leaf", "bitset_idx"}:
            continue  # scikit-learn's own predict does not check these: it may read out of bounds
        ours = np.array([e.predict(X) for e in outputs]).T
        np.testing.assert_allclose(ours, _hgb_raw(model, X), rtol=1e-12, atol=1e-12, err_msg=f"mutant {t}")
    assert loaded > 50 and refused > 20


# ----------------------------------------------------------------------------- Monte Carlo seed
@pytest.mark.parametrize("seed,error", [(-1, ValueError), (np.int64(-3), ValueError), (1.5, TypeError),
                                        ("a", TypeError), (True, TypeError)])
def test_mc_seed_named(seed, error):
    import pgexact.mc

    booster, X = _named_xgb()
    with pytest.raises(error, match=r"^seed: expected None or a non-negative integer"):
        pgexact.mc.pgi2(booster, X[:2], ranking=[0, 1, 2], seed=seed, n_samples=10)


@pytest.mark.parametrize("token", ["1e999", "-1e999", "1e-400"])
def test_catboost_number_beyond_double_range_refused(tmp_path, token):
    """CatBoost never writes one; its reader goes astray on one even in a field pgexact does
    not use (a 1e999 leaf weight makes it read one tree of 4 outputs)."""
    raw, X = _cb_json(tmp_path)
    doc = json.loads(raw)
    doc["oblivious_trees"][0]["leaf_weights"] = 1234.5
    path = _write(tmp_path, "m.json", json.dumps(doc).replace("1234.5", token, 1))
    _refused(path, "beyond the double range")
