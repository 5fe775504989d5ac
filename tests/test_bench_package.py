"""The pgexact.bench subpackage's seams: its data file ships with the package, ``python -m
pgexact.bench`` and the old ``pgexact.cli`` entry point both work, and only the kernel seam
module touches the C++ extension."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from importlib import metadata, resources

import pytest

import pgexact

PACKAGE_DIR = os.path.dirname(os.path.abspath(pgexact.__file__))


def test_paper_reference_ships_with_the_package_and_loads():
    from pgexact.bench.reference import REFERENCE_FILE, load_reference

    assert resources.files("pgexact.bench").joinpath(REFERENCE_FILE).is_file()
    ref = load_reference()
    assert set(ref) == {"source", "models", "accuracy", "entropy", "pgi2_ratio"}
    assert set(ref["models"]) == {"wine/single", "wine/bigger", "housing/single",
                                  "housing/bigger"}
    acc = ref["accuracy"]["housing/bigger"]["0.01"]
    assert acc["matched_iterations"] == 1027 and acc["extrapolated"] is False
    # keys of the per-method tables are the CLI's column labels
    from pgexact.bench.common import pg_column

    assert pg_column(0.3) in ref["pgi2_ratio"]["wine/single"]
    # callers get their own copy
    ref["models"].clear()
    assert load_reference()["models"]


def test_float_key_matches_by_value():
    from pgexact.bench.common import float_key

    table = {"0.1": 1, "1.0": 2}
    assert float_key(1.0, table) == "1.0" and float_key(0.1, table) == "0.1"
    assert float_key(0.3, table) is None


def test_python_m_pgexact_bench_help():
    out = subprocess.run([sys.executable, "-m", "pgexact.bench", "--help"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for command in ("demo", "accuracy", "ranking", "conciseness", "speed", "paper"):
        assert command in out.stdout


def test_old_cli_module_is_the_same_entry_point():
    from pgexact import bench, cli

    assert cli.main is bench.main is bench.cli.main


def test_console_script_points_at_the_subpackage():
    try:
        scripts = metadata.entry_points(group="console_scripts")
    except TypeError:  # pragma: no cover - Python 3.9's entry_points() takes no arguments
        scripts = metadata.entry_points().get("console_scripts", [])
    values = {ep.name: ep.value for ep in scripts if ep.name == "pgexact-bench"}
    if not values:
        pytest.skip("pgexact-bench is not installed as a console script")
    assert values["pgexact-bench"] in ("pgexact.bench.cli:main", "pgexact.cli:main")


def _uses_core(code):
    """True when the module imports pgexact._core or reads an attribute of a name ``_core``."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names]
            if "_core" in names or (node.module or "").endswith("_core"):
                return True
        elif isinstance(node, ast.Import):
            if any(alias.name.endswith("._core") for alias in node.names):
                return True
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "_core"):
            return True
    return False


#: the two seams: the model side (parsers, arena) and the kernels
SEAMS = (os.path.join("_models", "_parsers.py"), os.path.join("_exact", "_kernels.py"))


def test_only_the_seams_touch_the_extension():
    """Every call into pgexact._core goes through pgexact/_models/_parsers.py (parsers, arena)
    or pgexact/_exact/_kernels.py (kernels)."""
    offenders = []
    for root, _dirs, files in os.walk(PACKAGE_DIR):
        for name in files:
            path = os.path.join(root, name)
            if not name.endswith(".py") or os.path.relpath(path, PACKAGE_DIR) in SEAMS:
                continue
            with open(path, encoding="utf-8") as fh:
                if _uses_core(fh.read()):
                    offenders.append(os.path.relpath(path, PACKAGE_DIR))
    assert offenders == []
    for seam in SEAMS:
        with open(os.path.join(PACKAGE_DIR, seam), encoding="utf-8") as fh:
            assert _uses_core(fh.read()), seam  # the check itself works


def test_noise_codes_come_from_the_noise_classes():
    from pgexact import noise
    from pgexact._exact._perturbation import NOISE_FAMILIES

    assert NOISE_FAMILIES == {name: cls.code for name, cls in noise.FAMILIES.items()}
    assert sorted({noise.Normal.code, noise.Uniform.code, noise.Laplace.code}) == [0, 1, 2]
