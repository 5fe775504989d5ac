"""A benchmark's child process run on another checkout's build (the before/after scripts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional


def run_in_checkout(checkout: Path, code: str, case_file: Path, timeout: float,
                    env: Optional[Mapping[str, Optional[str]]] = None) -> dict:
    """Run ``code`` (a Python script reading ``case_file`` from ``sys.argv[1]``) with
    ``checkout``'s ``python/`` first on the path, and return the JSON its last line prints.

    ``env`` sets variables for the child, or removes those given as None (an inherited
    ``PGEXACT_PASSES`` would otherwise cap the level of every run)."""
    child_env = dict(os.environ, PYTHONPATH=str(checkout / "python"))
    for name, value in (env or {}).items():
        if value is None:
            child_env.pop(name, None)
        else:
            child_env[name] = value
    out = subprocess.run([sys.executable, "-c", code, str(case_file)], env=child_env, capture_output=True,
                         text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{checkout} {dict(env or {})}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])
