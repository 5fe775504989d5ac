#!/usr/bin/env python3
"""The import graph of ``python/pgexact``: modules, arrows, arrows pointing back up, circles.

Usage::

    python scripts/import_graph.py               # the working tree
    python scripts/import_graph.py --rev 69205ed # a commit (read with git, nothing checked out)
    python scripts/import_graph.py -v            # also list the arrows that point up and the circles

Standard library only. A *module* is every ``.py`` file under ``python/pgexact`` (a package is
its ``__init__.py``) plus the extension ``pgexact._core`` (its ``.pyi`` stubs); an *arrow* is
one module importing another, counted once per pair, wherever the import statement is
(top level, inside a function, under ``if TYPE_CHECKING``). Arrows *point back up* when a module
imports one of a higher layer in the direction data flows (``LAYERS`` below, top first); a
*circle* is a set of two or more modules that reach each other through arrows (a strongly
connected component).
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from typing import Dict, Iterable, List, Optional, Set, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "python/pgexact"

#: The layers, top first: a module may import its own layer or any layer below it. Each layer
#: lists module names or prefixes (``"pgexact.bench."`` covers the subpackage); the names of
#: the flat layout before issue 26 are listed too, so that an old commit can be measured.
LAYERS: List[Tuple[str, List[str]]] = [
    ("application", ["pgexact", "pgexact.cli", "pgexact.bench", "pgexact.bench."]),
    ("explain", ["pgexact.explain", "pgexact.explain.",
                 "pgexact.explainer", "pgexact.explanation", "pgexact._plotting"]),
    ("evaluation", ["pgexact.metrics", "pgexact.metrics.", "pgexact.mc", "pgexact.openxai",
                    "pgexact.dask", "pgexact._ranking_stats", "pgexact._comparison",
                    "pgexact._selection_metrics"]),
    ("exact", ["pgexact._exact", "pgexact._exact.",
               "pgexact._prepare", "pgexact._kernels", "pgexact._progress", "pgexact._estimate",
               "pgexact._moments", "pgexact._api"]),
    ("model", ["pgexact._models", "pgexact._models.", "pgexact.ensemble",
               "pgexact._adapters", "pgexact._xgboost", "pgexact._lightgbm", "pgexact._catboost",
               "pgexact._sklearn", "pgexact._pipeline", "pgexact._target", "pgexact._outputs"]),
    ("arguments", ["pgexact._data", "pgexact._data.", "pgexact.noise", "pgexact._typing",
                   "pgexact._validation", "pgexact._columns"]),
    ("base", ["pgexact._core", "pgexact._core.", "pgexact._optional", "pgexact._warnings"]),
]


def layer_of(module: str) -> Optional[int]:
    """Index in :data:`LAYERS` (0 is the top), or None for a module no layer names."""
    for i, (_name, names) in enumerate(LAYERS):
        for entry in names:
            if module == entry or (entry.endswith(".") and module.startswith(entry)):
                return i
    return None


def read_tree(rev: Optional[str]) -> Dict[str, str]:
    """Path (relative to the checkout) -> source of every file under :data:`PACKAGE`."""
    if rev is None:
        out: Dict[str, str] = {}
        for root, _dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
            for name in files:
                if name.endswith((".py", ".pyi")):
                    path = os.path.join(root, name)
                    with open(path, encoding="utf-8") as fh:
                        out[os.path.relpath(path, ROOT).replace(os.sep, "/")] = fh.read()
        return out
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "--", PACKAGE], cwd=ROOT,
                           check=True, capture_output=True, text=True).stdout.split()
    return {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
            for n in names if n.endswith((".py", ".pyi"))}


def module_name(path: str) -> Tuple[str, bool]:
    """``python/pgexact/a/b.py`` -> (``pgexact.a.b``, is a package ``__init__``)."""
    rel = path[len("python/"):].rsplit(".", 1)[0]
    parts = rel.split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def imported(tree: ast.AST, module: str, is_package: bool, known: Set[str]) -> Set[str]:
    """The pgexact modules a module's source imports (anywhere in the file)."""
    package = module if is_package else module.rsplit(".", 1)[0]
    out: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    out.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:
                    out.add(sub)
                elif target in known:
                    out.add(target)
    out.discard(module)
    return out


def graph(files: Dict[str, str]) -> Dict[str, Set[str]]:
    """Module -> the modules it imports."""
    parsed: Dict[str, Tuple[ast.AST, bool]] = {}
    for path, source in files.items():
        name, is_package = module_name(path)
        if path.endswith(".pyi"):
            if name not in parsed and not any(p.startswith(path[:-1]) for p in files if p.endswith(".py")):
                parsed[name] = (ast.parse(""), is_package)  # the extension: a leaf
            continue
        parsed[name] = (ast.parse(source), is_package)
    known = set(parsed)
    return {m: imported(tree, m, pkg, known) for m, (tree, pkg) in parsed.items()}


def circles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with two or more modules (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work: List[Tuple[str, Iterable[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def points_up(a: str, b: str) -> bool:
    """Whether the arrow ``a -> b`` points from a lower layer to a higher one."""
    la, lb = layer_of(a), layer_of(b)
    return la is not None and lb is not None and lb < la


def summary(edges: Dict[str, Set[str]]) -> Dict[str, int]:
    """The counts the script prints for one graph."""
    flat = [m for m in edges if m.count(".") == 1 and not any(o.startswith(m + ".") for o in edges)]
    arrows = [(a, b) for a in edges for b in edges[a]]
    return {"modules": len(edges), "modules directly in pgexact/": len(flat),
            "import arrows": len(arrows), "arrows pointing back up": sum(points_up(a, b) for a, b in arrows),
            "circles": len(circles(edges))}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", help="a git commit to measure instead of the working tree")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="list the arrows that point back up, the circles and the unlayered modules")
    args = parser.parse_args(argv)
    edges = graph(read_tree(args.rev))
    without_bench = {m: {t for t in e if not t.startswith("pgexact.bench")}
                     for m, e in edges.items() if not m.startswith("pgexact.bench")}
    print(f"import graph of {PACKAGE}" + (f" at {args.rev}" if args.rev else " (working tree)"))
    print(f"  {'':32} {'all':>6} {'without bench/':>15}")
    rows = [summary(edges), summary(without_bench)]
    for key in ("modules", "modules directly in pgexact/", "import arrows", "arrows pointing back up",
                "circles"):
        print(f"  {key + ':':32} {rows[0][key]:>6} {rows[1][key]:>15}")
    arrows = [(a, b) for a in sorted(edges) for b in sorted(edges[a])]
    up = [(a, b) for a, b in arrows if points_up(a, b)]
    loops = circles(edges)
    unlayered = sorted(m for m in edges if layer_of(m) is None)
    if args.verbose:
        print("layers, top first: " + " > ".join(name for name, _ in LAYERS))
        for a, b in up:
            print(f"  up: {a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})")  # type: ignore[index]
        for loop in loops:
            print("  circle: " + " <-> ".join(loop))
        for m in unlayered:
            print(f"  no layer: {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
