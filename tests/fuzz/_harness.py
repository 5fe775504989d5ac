"""Shared machinery of the atheris harnesses in this directory (see README.md).

A harness calls one parser of pgexact's C++ core on the fuzzer's bytes. The parser must either
return a valid arena or raise ValueError (pgexact's ModelError); anything else (another
exception, a crash, a sanitizer report, a hang past -timeout, memory past -rss_limit_mb) is a
finding. A parsed arena is exercised further: serialised and parsed back (the bytes must
round-trip), every output selected, a few rows predicted, and, when the model is small, the
exact kernels run once, so that a malformed arena that slipped through validation shows up.

Which core is fuzzed: $PGEXACT_CORE, a path to a `_core*.so` built with coverage
instrumentation (see README.md), or else the installed `pgexact._core` (no native coverage:
atheris then mutates blindly, which still finds shallow bugs).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from typing import Any, Callable

import numpy as np

_core: Any = None


def load_core() -> Any:
    path = os.environ.get("PGEXACT_CORE")
    if not path:
        from pgexact import _core as core

        return core
    loader = importlib.machinery.ExtensionFileLoader("_core", path)
    spec = importlib.util.spec_from_file_location("_core", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def exercise(arena: Any) -> None:
    """Use a parsed arena the way pgexact would; raises on any inconsistency."""
    blob = arena.to_bytes()
    again = _core.model.Arena.from_bytes(blob)
    if again.to_bytes() != blob:
        raise AssertionError("arena does not round-trip through to_bytes / from_bytes")
    d = arena.n_features
    if d > 4096 or arena.n_nodes > 1 << 16:
        return  # keep each execution fast; big models are checked by their structure alone
    rows = np.zeros((3, d))
    rows[1] = np.nan
    rows[2] = np.linspace(-2.0, 2.0, d)
    for k in range(min(arena.n_outputs, 4)):
        single = arena.select_output(k) if arena.n_outputs > 1 else arena
        out = single.predict(rows, 0)
        if out.shape != (3,):
            raise AssertionError("predict returned a wrong shape")
        single.apply(rows)
        if k == 0 and d <= 16 and single.n_nodes <= 256 and _values_in_range(single):
            cats = set(single.categorical_features)
            mask = np.array([j not in cats for j in range(d)], dtype=np.uint8)
            sigma = np.full(d, 0.5)
            family = np.zeros(d, dtype=np.uint8)
            pg = _core.exact.pg2(single, rows, mask, _core.exact.Perturbation(sigma, family), 1)
            if not np.all(np.isnan(pg) | (pg >= 0.0)):
                raise AssertionError("pg2 returned a negative value")
            if cats:
                _categorical(single, rows, sorted(cats))


def _values_in_range(arena: Any) -> bool:
    """Whether the kernels take the arena: leaf values beyond 1e100 are refused by name (their
    products overflow), which is the outcome to check for such a model."""
    try:
        d = arena.n_features
        _core.exact.pg2(arena, np.zeros((1, d)), np.zeros(d, dtype=np.uint8),
                        _core.exact.Perturbation(np.ones(d), np.zeros(d, dtype=np.uint8)), 1)
    except ValueError as error:
        if str(error).startswith("model: a leaf value of"):
            return False
        raise
    return True


def _categorical(arena: Any, rows: np.ndarray, cats: list) -> None:
    """Categorical noise on the features split by category: the leaf-pair kernel (cells and
    category sets) against the unpruned reference, every feature perturbed."""
    d = arena.n_features
    family = np.zeros(d, dtype=np.uint8)
    change = np.zeros(d)
    begin = np.zeros(d + 1, dtype=np.int64)
    values, weights = [], []
    for j in range(d):
        named = np.asarray(arena.split_categories(j), dtype=np.float64)[:64] if j in cats else np.zeros(0)
        if j in cats:
            family[j], change[j] = (3, 0.5) if named.size else (4, 0.0)
        values.append(named)
        weights.append(np.full(named.size, 1.0 / max(named.size, 1)))
        begin[j + 1] = begin[j] + named.size
    noise = _core.exact.Perturbation(np.full(d, 0.5), family, change, begin, np.concatenate(values),
                                     np.concatenate(weights))
    mask = np.ones(d, dtype=np.uint8)
    fast = _core.exact.pg2(arena, rows, mask, noise, 1)
    ref = _core.exact.pg2(arena, rows, mask, noise, 1, _core.exact.Kernel.reference)
    finite = np.isfinite(ref)
    if not np.all(np.isnan(fast) | (fast >= 0.0)):
        raise AssertionError("pg2 with categorical noise returned a negative value")
    scale = np.maximum(np.abs(ref), 1e-300)
    if np.any(finite & (np.abs(fast - ref) > 1e-9 * scale + 1e-12)):
        raise AssertionError("pg2 with categorical noise differs from the unpruned reference")


def make_target(parse: Callable[[bytes], Any]) -> Callable[[bytes], None]:
    def test_one_input(data: bytes) -> None:
        try:
            arena = parse(data)
        except ValueError:
            return  # a refused model: the expected outcome for most mutations
        exercise(arena)

    return test_one_input


def run(parse_factory: Callable[[Any], Callable[[bytes], Any]]) -> None:
    """Start atheris on `parse_factory(core)`; the core is loaded after libFuzzer is set up."""
    import atheris

    global _core
    holder: dict = {}

    def target(data: bytes) -> None:
        holder["fn"](data)

    atheris.Setup(sys.argv, target)
    _core = load_core()
    holder["fn"] = make_target(parse_factory(_core))
    atheris.Fuzz()
