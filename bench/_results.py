"""One section of bench/RESULTS.md per benchmark script, replaced in place on every run."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
# The shipped datasets beside the checkout (the benchmarks' --data-dir default).
DATA_DIR = str(Path(__file__).resolve().parents[2] / "shared" / "datasets")


def write_section(text: str, begin: str, end: str, path: Path = RESULTS) -> None:
    """Put ``text`` (which starts with ``begin`` and ends with ``end``) where the section between
    those markers is, or at the end of the file when it has none."""
    old = path.read_text() if path.exists() else ""
    if begin in old and end in old:
        new = old[: old.index(begin)] + text + old[old.index(end) + len(end):]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    path.write_text(new)
