"""Loads seeded mutations of real model files; run in a subprocess by test_robustness.py.

    python tests/_mutation_driver.py SEED_DIR N_PER_FILE SEED

SEED_DIR holds xgb_json/*.json, xgb_ubj/*.ubj, lightgbm/*.txt and arena/*.bin (written by
tests/fuzz/make_corpus.py). For every seed file, N_PER_FILE mutants are made with a seeded RNG
(byte flips, deletions, truncations, garbage, number replacements with huge / negative / NaN /
infinite values, duplicated keys and lines, structure-aware edits of the parsed JSON written
back as text or UBJSON) plus the empty file, and each is loaded with ``pgexact.load`` (model
files) or unpickled (arenas). A mutant must either load, and then predict and pickle, or raise
ValueError. Anything else is printed and makes the exit code 1; a crash kills the process,
which the test sees as a negative return code. The last line is a JSON summary.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import random
import re
import struct
import sys
import tempfile
import traceback
from typing import Any, Callable, List

import numpy as np

import pgexact
from pgexact._core import model as core_model

SPECIAL_NUMBERS = [
    "1e308", "-1e308", "1e999", "-1e999", "1e-400", "NaN", "nan", "inf", "-inf", "Infinity", "-1", "-2",
    "0", "2147483647", "2147483648", "-2147483649", "4294967296", "9223372036854775807",
    "18446744073709551616", "1.5", "-0", "3.4e38", "3.5e38", "16777216", "99999999999999999999",
]
SPECIAL_FLOATS = [1e308, -1e308, float("inf"), float("-inf"), float("nan"), -1.0, -2.0, 0.0, 2.0**31,
                  -(2.0**31) - 1, 2.0**32, 2.0**63, 0.5, 3.5e38, 2.0**24, 1e-320]
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


# ----------------------------------------------------------------------------- byte-level
def flip(rng: random.Random, b: bytes) -> bytes:
    a = bytearray(b)
    for _ in range(rng.randint(1, 4)):
        if a:
            a[rng.randrange(len(a))] ^= 1 << rng.randrange(8)
    return bytes(a)


def set_byte(rng: random.Random, b: bytes) -> bytes:
    a = bytearray(b)
    for _ in range(rng.randint(1, 3)):
        if a:
            a[rng.randrange(len(a))] = rng.choice([0, 0xFF, 0x7F, 0x80, ord("["), ord("{"), ord("#"), ord("$"),
                                                    ord("L"), ord("l"), ord("d"), ord("-"), ord("9")])
    return bytes(a)


def delete(rng: random.Random, b: bytes) -> bytes:
    if len(b) < 2:
        return b
    i = rng.randrange(len(b))
    return b[:i] + b[i + rng.randint(1, min(64, len(b) - i)):]


def truncate(rng: random.Random, b: bytes) -> bytes:
    return b[: rng.randrange(len(b))] if b else b


def insert_garbage(rng: random.Random, b: bytes) -> bytes:
    i = rng.randrange(len(b) + 1)
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    return b[:i] + junk + b[i:]


def duplicate_chunk(rng: random.Random, b: bytes) -> bytes:
    if len(b) < 2:
        return b
    i = rng.randrange(len(b))
    j = min(len(b), i + rng.randint(1, 200))
    return b[:j] + b[i:j] + b[j:]


def replace_numbers(rng: random.Random, b: bytes) -> bytes:
    spans = [m.span() for m in NUMBER.finditer(b)]
    if not spans:
        return flip(rng, b)
    out = b
    for s, e in sorted(rng.sample(spans, min(len(spans), rng.randint(1, 3))), reverse=True):
        out = out[:s] + rng.choice(SPECIAL_NUMBERS).encode() + out[e:]
    return out


BYTE_MUTATORS: List[Callable[[random.Random, bytes], bytes]] = [
    flip, set_byte, delete, truncate, insert_garbage, duplicate_chunk, replace_numbers,
]


# ----------------------------------------------------------------------------- JSON structure
class Pairs(list):
    """A JSON object as a list of (key, value) pairs, so duplicated keys survive."""


def loads_pairs(text: bytes) -> Any:
    return json.loads(text, object_pairs_hook=Pairs, parse_constant=float)


def dumps_pairs(v: Any) -> str:
    if isinstance(v, Pairs):
        return "{" + ",".join(json.dumps(k) + ":" + dumps_pairs(x) for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ",".join(dumps_pairs(x) for x in v) + "]"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"  # not JSON: the parser must refuse it cleanly
        if math.isinf(v):
            return "1e999" if v > 0 else "-1e999"
        return repr(v)
    return json.dumps(v)


def ubj(v: Any) -> bytes:
    """Minimal UBJSON writer (the subset XGBoost uses, plus typed numeric arrays)."""
    if isinstance(v, Pairs):
        return b"{" + b"".join(ubj_key(k) + ubj(x) for k, x in v) + b"}"
    if isinstance(v, list):
        if v and all(isinstance(x, float) for x in v):
            if all(not math.isfinite(x) or abs(x) <= 3.4e38 for x in v):
                return b"[$d#L" + struct.pack(">q", len(v)) + b"".join(struct.pack(">f", x) for x in v)
            return b"[$D#L" + struct.pack(">q", len(v)) + b"".join(struct.pack(">d", x) for x in v)
        if v and all(isinstance(x, int) and not isinstance(x, bool) and -2**31 <= x < 2**31 for x in v):
            return b"[$l#L" + struct.pack(">q", len(v)) + b"".join(struct.pack(">i", x) for x in v)
        return b"[" + b"".join(ubj(x) for x in v) + b"]"
    if isinstance(v, bool):
        return b"T" if v else b"F"
    if v is None:
        return b"Z"
    if isinstance(v, int):
        if -2**63 <= v < 2**63:
            return b"L" + struct.pack(">q", v)
        return b"D" + struct.pack(">d", float(v))
    if isinstance(v, float):
        return b"D" + struct.pack(">d", v)
    return b"S" + ubj_count(len(str(v).encode())) + str(v).encode()


def ubj_count(n: int) -> bytes:
    return b"L" + struct.pack(">q", n)


def ubj_key(k: str) -> bytes:
    return ubj_count(len(k.encode())) + k.encode()


def containers(v: Any, out: List[Any]) -> List[Any]:
    if isinstance(v, Pairs):
        out.append(v)
        for _, x in v:
            containers(x, out)
    elif isinstance(v, list):
        out.append(v)
        for x in v:
            containers(x, out)
    return out


def mutate_tree(rng: random.Random, doc: Any) -> Any:
    boxes = containers(doc, [])
    for _ in range(rng.randint(1, 3)):
        box = rng.choice(boxes)
        if not box:
            continue
        i = rng.randrange(len(box))
        op = rng.randrange(6)
        if isinstance(box, Pairs):
            k, x = box[i]
            if op == 0:
                box.insert(i + 1, (k, x))  # duplicated key
            elif op == 1:
                del box[i]  # missing field
            elif op == 2:
                box[i] = (k, rng.choice(SPECIAL_FLOATS))
            elif op == 3:
                box[i] = (k, rng.choice([[], Pairs(), "", "x", None, True, [1, 2]]))
            elif op == 4 and isinstance(x, str):
                box[i] = (k, rng.choice(SPECIAL_NUMBERS))  # XGBoost keeps parameters as strings
            else:
                box[i] = (k, rng.randint(-3, 10))
        else:
            x = box[i]
            if op == 0:
                box[i] = rng.choice(SPECIAL_FLOATS)
            elif op == 1:
                del box[i]
            elif op == 2:
                box.append(x)
            elif op == 3 and isinstance(x, (int, float)) and not isinstance(x, bool):
                box[i] = int(rng.choice([-1, 0, 1, 2, 3, len(box), len(box) - 1, 2**31]))
            elif op == 4:
                j = rng.randrange(len(box))
                box[i], box[j] = box[j], box[i]
            else:
                box[i] = rng.choice([-1, 0, 1, 6, 1 << 24, (1 << 24) - 1])
    return doc


def structure_mutant(rng: random.Random, raw: bytes, kind: str) -> bytes:
    text = raw if kind == "xgb_json" else None
    if text is None:
        return rng.choice(BYTE_MUTATORS)(rng, raw)
    doc = mutate_tree(rng, loads_pairs(text))
    if rng.random() < 0.5:
        return dumps_pairs(doc).encode()
    return ubj(doc)


# ----------------------------------------------------------------------------- LightGBM lines
def lightgbm_mutant(rng: random.Random, raw: bytes) -> bytes:
    lines = raw.split(b"\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        line = lines[i]
        op = rng.randrange(6)
        if op == 0:
            lines.insert(i, line)  # duplicated key
        elif op == 1:
            del lines[i]
        elif op == 2 and b"=" in line:
            key, _, value = line.partition(b"=")
            items = value.split(b" ")
            j = rng.randrange(len(items))
            items[j] = rng.choice(SPECIAL_NUMBERS).encode()
            lines[i] = key + b"=" + b" ".join(items)
        elif op == 3 and b"=" in line:
            key, _, value = line.partition(b"=")
            items = value.split(b" ")
            if rng.random() < 0.5 and len(items) > 1:
                del items[rng.randrange(len(items))]
            else:
                items.append(rng.choice(items))
            lines[i] = key + b"=" + b" ".join(items)
        elif op == 4 and b"=" in line:
            key, _, value = line.partition(b"=")
            items = value.split(b" ")
            rng.shuffle(items)
            lines[i] = key + b"=" + b" ".join(items)
        else:
            lines[i] = replace_numbers(rng, line)
    return b"\n".join(lines)


# ----------------------------------------------------------------------------- arena bytes
def arena_mutant(rng: random.Random, raw: bytes) -> bytes:
    if rng.random() < 0.5:
        return rng.choice(BYTE_MUTATORS[:6])(rng, raw)
    a = bytearray(raw)
    for _ in range(rng.randint(1, 3)):
        if len(a) < 8:
            break
        i = rng.randrange(len(a) - 4)
        a[i:i + 4] = struct.pack("<i", rng.choice([-1, 0, 1, 2, 3, 7, 2**31 - 1, -2**31, 1 << 24]))
    return bytes(a)


# ----------------------------------------------------------------------------- checks
ROWS = None


def check_ensemble(ens: Any) -> None:
    d = ens.n_features
    rows = np.zeros((3, d))
    rows[1] = np.nan
    rows[2] = np.linspace(-1.0, 1.0, d)
    out = ens.predict(rows)
    assert out.shape == (3,)
    again = pickle.loads(pickle.dumps(ens))
    assert np.array_equal(again.predict(rows), out, equal_nan=True)


def load_model(path: str) -> None:
    try:
        ens = pgexact.load(path)
    except ValueError as exc:
        if "outputs" in str(exc):  # a multi-output model: fine, pick the first output
            ens = pgexact.load(path, output=0)
        else:
            raise
    check_ensemble(ens)


def load_arena(blob: bytes) -> None:
    arena = core_model.Arena.from_bytes(blob)
    if arena.n_outputs != 1:
        arena = arena.select_output(0)
    check_ensemble(pgexact.TreeEnsemble(arena))


def main(argv: List[str]) -> int:
    seed_dir, n_per_file, seed = argv[0], int(argv[1]), int(argv[2])
    rng = random.Random(seed)
    tally = {"loaded": 0, "refused": 0, "failed": 0}
    tmp = tempfile.mkdtemp(prefix="pgx_mut_")
    for kind, ext in (("xgb_json", ".json"), ("xgb_ubj", ".ubj"), ("lightgbm", ".txt"), ("arena", ".bin")):
        folder = os.path.join(seed_dir, kind)
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), "rb") as fh:
                raw = fh.read()
            mutants = [b"", b"\x00", b"{", b"tree\n", raw[: len(raw) // 2], b"garbage \xff\xfe"]
            for _ in range(n_per_file):
                if kind == "lightgbm" and rng.random() < 0.6:
                    mutants.append(lightgbm_mutant(rng, raw))
                elif kind == "arena":
                    mutants.append(arena_mutant(rng, raw))
                elif kind == "xgb_json" and rng.random() < 0.6:
                    mutants.append(structure_mutant(rng, raw, kind))
                else:
                    mutants.append(rng.choice(BYTE_MUTATORS)(rng, raw))
            for k, m in enumerate(mutants):
                try:
                    if kind == "arena":
                        load_arena(m)
                    else:
                        path = os.path.join(tmp, f"m{ext}")
                        with open(path, "wb") as fh:
                            fh.write(m)
                        load_model(path)
                    tally["loaded"] += 1
                except ValueError:
                    tally["refused"] += 1
                except Exception:  # noqa: BLE001 - anything but ValueError is a finding
                    tally["failed"] += 1
                    print(f"FAILED {kind}/{name} mutant {k}:", file=sys.stderr)
                    traceback.print_exc()
                    bad = os.path.join(tmp, f"failed_{kind}_{name}_{k}{ext}")
                    with open(bad, "wb") as fh:
                        fh.write(m)
                    print(f"  saved as {bad}", file=sys.stderr)
    print(json.dumps(tally))
    return 1 if tally["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
