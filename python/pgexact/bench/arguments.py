"""Argument types and option groups that several ``pgexact-bench`` subcommands share.

A module of its own so that the subcommands' registrations (``cli.py``, ``agreement_args.py``)
import them without importing each other.
"""

from __future__ import annotations

import argparse
from typing import Any, Optional

import numpy as np

from .data import DATASETS
from .truth import TRUTH_DATASETS

__all__ = ["DATA_DIR_HELP", "n_jobs_arg", "positive_float", "positive_int", "truth_data_options"]

#: --data-dir's help, the same for every subcommand that reads the paper's datasets
DATA_DIR_HELP = ("directory with winequality_red.csv and california_housing.csv (default: "
                 "../shared/datasets next to the repository)")


def positive_int(s: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {s!r}")
    return v


def n_jobs_arg(s: str) -> Optional[int]:
    """argparse type of --n-jobs: a positive integer, or -1 (all cores) -> None."""
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v == 0 or v < -1:
        raise argparse.ArgumentTypeError("must be a positive integer or -1 (all cores)")
    return None if v == -1 else v


def positive_float(s: str) -> float:
    """argparse type: a positive finite float."""
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not (v > 0 and np.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive number: {s!r}")
    return v


def truth_data_options(p: argparse.ArgumentParser, quick_samples: int, *,
                       several: bool) -> Any:
    """The data group of ``rankers`` and ``agreement``: a ground-truth generator or real data
    (``--dataset``; several at once when ``several``), ``--data CSV --target``, the generators'
    ``--n-samples`` and ``--features``. Returns the group."""
    g = p.add_argument_group("data")
    real = ", ".join(n for n in DATASETS if n != "friedman")
    g.add_argument("--dataset", nargs="+" if several else None, default=None, metavar="NAME",
                   help=f"{'one or more of: ' if several else ''}with ground truth: "
                        f"{', '.join(TRUTH_DATASETS)} (default: friedman1; friedman is the "
                        f"same); without: {real} (wine and housing from --data-dir)")
    g.add_argument("--data-dir", default=None, metavar="DIR",
                   help=DATA_DIR_HELP)
    g.add_argument("--data", default=None, metavar="CSV",
                   help="your own CSV (regression, no ground truth) "
                        f"{'in addition to' if several else 'instead of'} --dataset; "
                        "needs --target")
    g.add_argument("--target", default=None, metavar="COLUMN", help="target column of --data")
    g.add_argument("--n-samples", type=positive_int, default=None, metavar="N",
                   help=f"rows generated for a ground-truth dataset (default: 2000; --quick: "
                        f"{quick_samples})")
    g.add_argument("--features", type=positive_int, default=10, metavar="D",
                   help="features of a ground-truth dataset (default: %(default)s)")
    return g
