"""Helpers shared by the ``pgexact-bench`` subcommands.

Errors a user can fix, status lines and progress bars, timing, text and markdown tables,
figures and JSON output.  Nothing here knows about a particular experiment.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, TypeVar, cast

import numpy as np

from .._optional import install_hint, optional

__all__ = [
    "Args", "Json", "PROG", "UsageError", "bar", "bars_enabled", "call_progress", "best_time", "echo", "finish_command",
    "finish_outputs", "median_time", "output_axes",
    "first_line", "float_key",
    "fmt_time", "join_floats", "json_default", "load_average", "log", "markdown_table",
    "pg_column", "progress", "require_matplotlib", "require_xgboost", "save_figure",
    "text_table", "timed", "versions", "write_json",
]

PROG = "pgexact-bench"

#: the parsed command line every subcommand receives
Args = argparse.Namespace
#: a JSON object: results.json payloads, their parts, the reference numbers
Json = Dict[str, Any]
T = TypeVar("T")


class UsageError(Exception):
    """A problem with the user's input: reported in one line, exit code 2, no traceback."""


def log(args: Args, msg: str) -> None:
    """Status line on stderr (suppressed by --quiet)."""
    if not args.quiet:
        print(msg, file=sys.stderr, flush=True)


def bars_enabled(args: Args) -> bool:
    """Progress bars only on a terminal and without --quiet (never into a log file)."""
    return not args.quiet and bool(getattr(sys.stderr, "isatty", lambda: False)())


def call_progress(args: Args) -> Optional[bool]:
    """``progress=`` for the library calls a command makes: their own bars under the same
    conditions as the command's (None: for calls projected to take more than ~2 s), else none."""
    return None if bars_enabled(args) else False


class NoBar:
    """Stands in for a tqdm bar when bars are off or tqdm is not installed."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def close(self) -> None:
        pass


def bar(args: Args, *, total: int, desc: str) -> Any:
    """A tqdm bar on stderr when stderr is a terminal and not --quiet, else a no-op bar."""
    tqdm = optional("tqdm.auto") if bars_enabled(args) else None
    if tqdm is None:
        return NoBar()
    return tqdm.tqdm(total=total, desc=desc, file=sys.stderr, leave=False)


def progress(args: Args, iterable: Iterable[T], *, total: Optional[int] = None,
             desc: Optional[str] = None) -> Iterable[T]:
    """Wrap ``iterable`` in a tqdm bar under the same conditions as :func:`bar`."""
    tqdm = optional("tqdm.auto") if bars_enabled(args) else None
    if tqdm is None:
        return iterable
    return cast(Iterable[T], tqdm.tqdm(iterable, total=total, desc=desc, file=sys.stderr,
                                       leave=False))


def timed(fn: Callable[..., T], *a: Any, **kw: Any) -> Tuple[T, float]:
    """``(fn(*a, **kw), seconds it took)``."""
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t0


def fmt_time(seconds: float, micro: str = "us") -> str:
    """``12.3 us`` / ``4.56 ms`` / ``7.89 s``; ``-`` for a time that was not measured (NaN).

    ``micro`` spells the microsecond unit: ``us`` for terminals that may lack UTF-8, ``µs``
    in markdown.
    """
    if not np.isfinite(seconds):
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} {micro}"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
               align: Optional[str] = None) -> str:
    """Plain-text table; ``align`` is a string of 'l'/'r' per column."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    align = align or "l" + "r" * (len(headers) - 1)

    def line(r: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(r, widths, align))

    return "\n".join([line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in cells])


def versions() -> Dict[str, str]:
    """Versions of Python and the libraries that produced a result, for its JSON."""
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("pgexact", "xgboost", "sklearn", "lightgbm"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - optional, only informational
            pass
    return out


def write_json(args: Args, name: str, payload: Json) -> str:
    """Write ``payload`` to ``<--out>/name`` (numpy scalars and arrays as JSON numbers / lists)."""
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, name)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2, default=json_default)
        fh.write("\n")
    return path


def json_default(o: Any) -> Any:
    """``json.dump``'s fallback for numpy scalars and arrays."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def require_xgboost() -> None:
    """Fail with a one-line message naming the extra when xgboost or scikit-learn is missing."""
    for module in ("xgboost", "sklearn"):
        if optional(module) is None:
            raise UsageError(f"this subcommand needs xgboost and scikit-learn ({module} is not "
                             "installed); pip install 'pgexact[all]'")


def best_time(fn: Callable[[], T], *, min_total: float = 0.25,
              max_repeat: int = 3) -> Tuple[T, float]:
    """(result of the first call, the fastest of up to ``max_repeat`` calls), in seconds.

    A call is repeated only while the calls so far took less than ``min_total`` together: the
    machine may be busy, and the fastest run is the least disturbed one.
    """
    out, best = timed(fn)
    total, runs = best, 1
    while runs < max_repeat and total < min_total:
        _, t = timed(fn)
        best, total, runs = min(best, t), total + t, runs + 1
    return out, best


def median_time(fn: Callable[[], T], *, runs: int = 5, min_runs: int = 3,
                budget: float = 2.0) -> Tuple[T, float, int]:
    """(result of the first call, the median of its timed calls, how many were timed).

    ``min_runs`` calls always, then more up to ``runs`` while the calls so far took less than
    ``budget`` seconds together: one noisy timing (a busy machine, a cold cache) never decides
    a comparison on its own.
    """
    out, t = timed(fn)
    times = [t]
    while len(times) < min_runs or (len(times) < runs and sum(times) < budget):
        times.append(timed(fn)[1])
    return out, float(np.median(times)), len(times)


def first_line(exc: BaseException) -> str:
    """The first line of an exception message, for one-line errors."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def require_matplotlib() -> None:
    """Select the Agg backend, or fail with a one-line message when matplotlib is missing."""
    matplotlib = optional("matplotlib")
    if matplotlib is None:
        raise UsageError(f"figures need matplotlib: {install_hint('matplotlib')}")
    matplotlib.use("Agg")


def save_figure(args: Args, fig: Any, name: str) -> str:
    """Write ``fig`` to ``<--out>/name`` as a small palette PNG, close it, return the path."""
    import matplotlib.pyplot as plt

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, name)
    try:  # a 128-colour palette PNG: a fraction of the size, same look for line plots
        import io

        from PIL import Image

        buf = io.BytesIO()
        fig.savefig(buf, dpi=90, format="png", bbox_inches="tight")
        buf.seek(0)
        with Image.open(buf) as im:
            im.convert("RGB").quantize(colors=128).save(path, optimize=True)
    except Exception:  # noqa: BLE001 - no Pillow, or it failed: matplotlib's own PNG
        fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    log(args, f"wrote {path}")
    return path


def echo(text: str = "") -> None:
    """print() that survives a terminal without UTF-8 (σ, ², ≈ become '?') and a closed pipe
    (``| head``: the tables stop, the results and figures are still written)."""
    try:
        try:
            print(text, flush=True)
        except UnicodeEncodeError:
            enc = getattr(sys.stdout, "encoding", None) or "ascii"
            print(text.encode(enc, "replace").decode(enc), flush=True)
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the rest of the process


def load_average() -> Optional[List[float]]:
    """The 1 / 5 / 15 minute load averages, or None where the platform has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):  # pragma: no cover - not Unix
        return None


def join_floats(values: Iterable[float]) -> str:
    """``0.1, 0.3, 1`` for a list of floats."""
    return ", ".join(f"{v:g}" for v in values)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def pg_column(s: float) -> str:
    """Column label of the greedy PG² ranking at noise level ``s`` (also the reference keys)."""
    return f"PG σ={s:g}"


def float_key(x: float, mapping: Iterable[str]) -> Optional[str]:
    """The key of ``mapping`` (strings like '0.1', '1.0') whose float value is ``x``, or None.

    The paper's reference numbers are keyed by the sigma as written in its file names; a sigma
    given on the command line is matched by value, not by spelling.
    """
    for k in mapping:
        if float(k) == x:
            return k
    return None


def output_axes(n_outputs: int, ncols: int, size: Tuple[float, float]) -> Tuple[Any, Any]:
    """A figure with one row of ``ncols`` panels per output: ``(fig, axes[output][col])``."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(n_outputs, ncols, figsize=(size[0], size[1] * n_outputs),
                             squeeze=False)
    return fig, axes


def finish_outputs(args: Args, fig: Any, png_name: str, head: Json, setups: Sequence[Any],
                   results: Sequence[Json]) -> int:
    """:func:`finish_command` for one result per output of the model (``--output``).

    One output: results.json as always, the output named in ``model``. Several (``--output
    all``): ``model`` describes the model and ``outputs`` holds each output's results next to
    its name and model description.
    """
    if len(results) == 1:
        return finish_command(args, fig, png_name, dict(head, model=setups[0].info), results[0])
    model = {k: v for k, v in setups[0].info.items()
             if k not in ("output", "output_name", "n_trees", "n_leaves", "n_nodes", "test_rmse")}
    per = [dict(output=s.info.get("output"), output_name=s.output_name, model=s.info, **r)
           for s, r in zip(setups, results)]
    return finish_command(args, fig, png_name, dict(head, model=model), dict(outputs=per))


def finish_command(args: Args, fig: Any, png_name: str, head: Json, res: Json) -> int:
    """Save ``fig`` as ``png_name`` and write results.json (``head``, the figure, ``res``).

    The JSON's keys keep the order every subcommand has always written: its own header fields,
    ``figures``, ``versions``, then the experiment's results.  Returns the exit code 0.
    """
    fig.tight_layout()
    png = save_figure(args, fig, png_name)
    payload = dict(head, figures=[os.path.basename(png)], versions=versions(), **res)
    log(args, f"wrote {write_json(args, 'results.json', payload)}")
    return 0
