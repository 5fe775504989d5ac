"""Argument parsing of ``pgexact-bench`` and its entry point :func:`main`."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional, Sequence

from .accuracy import cmd_accuracy
from .agreement_args import add_agreement
from .arguments import (DATA_DIR_HELP, n_jobs_arg, positive_float, positive_int,
                        truth_data_options)
from .common import PROG, UsageError
from .conciseness import cmd_conciseness
from .data import DATASETS
from .demo import cmd_demo
from .models import GRID, RECIPES, output_arg
from .paper import cmd_paper
from .ranker_models import LIBRARIES
from .rankers import QUICK, cmd_rankers
from .ranking import cmd_ranking
from .speed import cmd_speed

__all__ = ["build_parser", "main", "n_jobs_arg", "positive_float", "positive_int",
           "truth_data_options"]

#: what ``ArgumentParser.add_subparsers`` returns (its class is private in argparse)
Subparsers = Any


def _common_options() -> argparse.ArgumentParser:
    """Options every subcommand takes: --out, --seed, --n-jobs, --quiet."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("common options")
    group.add_argument("--out", default="pgexact-bench-out", metavar="DIR",
                       help="directory for results.json and figures (default: %(default)s)")
    group.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    group.add_argument("--n-jobs", type=n_jobs_arg, default=None, metavar="N",
                       help="threads for pgexact and the model library (default: all cores)")
    group.add_argument("--quiet", action="store_true", help="no progress bars or status lines")
    return common


def _data_options() -> argparse.ArgumentParser:
    """The data: --dataset or --data/--target, --data-dir, --(no-)standardise, --samples."""
    data = argparse.ArgumentParser(add_help=False)
    group = data.add_argument_group("data")
    group.add_argument("--dataset", default=None, metavar="NAME",
                       help=f"{', '.join(DATASETS)} (default: diabetes); wine and housing are read "
                            "from --data-dir")
    group.add_argument("--data-dir", default=None, metavar="DIR",
                       help=DATA_DIR_HELP)
    group.add_argument("--data", default=None, metavar="CSV",
                       help="your own CSV (separator sniffed) instead of --dataset; needs --target")
    group.add_argument("--target", default=None, metavar="COLUMN", help="target column of --data")
    group.add_argument("--no-standardise", action="store_true",
                       help="keep raw feature values (sigma is then in raw units); the default "
                            "with --model-file")
    group.add_argument("--standardise", action="store_true",
                       help="standardise the features with the training rows' mean and std; "
                            "the default with --model, off with --model-file unless given")
    group.add_argument("--samples", type=positive_int, default=None, metavar="N",
                       help="random (row, S) pairs (accuracy: 200, speed: 50) or test rows "
                            "(ranking, conciseness: 200)")
    return data


def _model_options() -> argparse.ArgumentParser:
    """The model: --model (a paper recipe) or --model-file, --grid-search."""
    model = argparse.ArgumentParser(add_help=False)
    group = model.add_argument_group("model")
    group.add_argument("--model", default="bigger", metavar="KIND",
                       help="single (1 tree, depth 4) or bigger (40 trees, depth 4), XGBoost, "
                            "trained on the training split (default: %(default)s)")
    group.add_argument("--model-file", default=None, metavar="PATH",
                       help="a saved XGBoost .json/.ubj, LightGBM .txt or CatBoost .json/.cbm "
                            "model instead of --model; data columns are matched by the feature "
                            "names stored in the file "
                            "(by position only when it stores none); no standardisation unless "
                            "--standardise")
    group.add_argument("--grid-search", action="store_true",
                       help="choose eta and subsample by 5-fold CV over the paper-style grid "
                            f"eta {GRID['learning_rate']} x subsample {GRID['subsample']}")
    group.add_argument("--output", type=output_arg, default=None, metavar="OUT",
                       help="which output of a model with several (a multi-class classifier): a "
                            "position 0..K-1 (a model file records no class labels), a class "
                            "label of a model that records them, or 'all' for every output (one "
                            "table, one panel and one results.json entry each); required for a "
                            "model with several outputs (default: its only output)")
    return model


def _speed_options() -> argparse.ArgumentParser:
    """The speed ladder: --mc-iterations, --reference-budget, --max-leaves."""
    speed = argparse.ArgumentParser(add_help=False)
    group = speed.add_argument_group("speed")
    group.add_argument("--mc-iterations", type=positive_int, default=1000, metavar="K",
                       help="Monte Carlo samples per pair (default: %(default)s)")
    group.add_argument("--reference-budget", type=positive_float, default=20.0, metavar="SEC",
                       help="time allowed for the unpruned reference per model; skipped when one "
                            "pair is predicted to take longer (default: %(default)s)")
    group.add_argument("--max-leaves", type=positive_int, default=20000, metavar="N",
                       help="stop the model ladder past this many leaves (default: %(default)s)")
    return speed


def _add_demo(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """The ``demo`` subcommand."""
    p = sub.add_parser(
        "demo", parents=[common],
        help="exact PGI2 vs Monte Carlo on built-in data (about 10 seconds)",
        description="Train a 40-tree depth-4 XGBoost regressor on scikit-learn's diabetes data "
                    "and compare exact PGI2 with Monte Carlo at several sample counts.",
    )
    p.add_argument("--rows", type=positive_int, default=None,
                   help="test rows to evaluate, the first N of the 89 in the 80:20 split "
                        "(default: all 89)")
    p.add_argument("--sigma", type=positive_float, default=0.3,
                   help="noise standard deviation, in standardised units (default: %(default)s)")
    p.add_argument("--iterations", type=positive_int, nargs="+", default=[10, 100, 1000],
                   metavar="K", help="Monte Carlo samples per prefix (default: 10 100 1000)")
    p.set_defaults(func=cmd_demo)


def _add_experiments(sub: Subparsers, common: argparse.ArgumentParser,
                     data: argparse.ArgumentParser, model: argparse.ArgumentParser) -> None:
    """The ``accuracy``, ``ranking`` and ``conciseness`` subcommands."""
    sigmas = dict(type=positive_float, nargs="+", metavar="S")
    p = sub.add_parser(
        "accuracy", parents=[common, data, model],
        help="NMAE of Monte Carlo vs exact PG2 by iterations; time-matched (paper 4.3)",
        description="For each noise level and Monte Carlo iteration count: NMAE of Monte Carlo "
                    "PG2 against the exact value over random (row, S) test pairs with |S| spread "
                    "evenly over 1..d, time per pair of both, and the iteration count at which "
                    "Monte Carlo takes as long as the exact computation.",
    )
    p.add_argument("--sigma", default=[0.1, 0.3, 1.0], **sigmas,
                   help="noise standard deviations (default: 0.1 0.3 1.0)")
    p.add_argument("--iterations", type=positive_int, nargs="+", default=[10, 100, 1000, 10000],
                   metavar="K", help="Monte Carlo samples per pair (default: 10 100 1000 10000)")
    p.set_defaults(func=cmd_accuracy)

    p = sub.add_parser(
        "ranking", parents=[common, data, model],
        help="mean PGI2 of the greedy PG2 ranking vs SHAP over sigma' (paper 5.1)",
        description="Mean exact PGI2 over test rows of the greedy PG2 ranking (computed at each "
                    "--sigma-rank) and of SHAP's ranking, evaluated at each --sigma-eval.",
    )
    p.add_argument("--sigma-rank", default=[0.3], **sigmas,
                   help="noise level(s) of the greedy ranking (default: 0.3)")
    p.add_argument("--sigma-eval", default=[0.01, 0.03, 0.1, 0.3, 1.0], **sigmas,
                   help="evaluation noise levels sigma' (default: 0.01 0.03 0.1 0.3 1.0)")
    p.set_defaults(func=cmd_ranking)

    p = sub.add_parser(
        "conciseness", parents=[common, data, model],
        help="entropy of aggregated rankings: SHAP vs greedy PG2 (paper 5.2)",
        description="Entropy (bits) of the aggregated rankings under the geom, top1, top2 and "
                    "top3 schemes, for SHAP and for the greedy PG2 ranking at each --sigma.",
    )
    p.add_argument("--sigma", default=[0.1, 0.3, 1.0], **sigmas,
                   help="noise levels of the greedy rankings (default: 0.1 0.3 1.0)")
    p.set_defaults(func=cmd_conciseness)


def _add_speed(sub: Subparsers, common: argparse.ArgumentParser,
               data: argparse.ArgumentParser, speed: argparse.ArgumentParser) -> None:
    """The ``speed`` subcommand."""
    p = sub.add_parser(
        "speed", parents=[common, data, speed],
        help="exact vs the unpruned O(n^2) reference vs Monte Carlo, 16 to 10,000+ leaves",
        description="Time per (row, S) pair of pgexact's exact kernel, the paper's unpruned "
                    "pre-order pair walk and Monte Carlo, over XGBoost models of growing size "
                    "trained on the chosen data (--model is not used).",
    )
    p.set_defaults(func=cmd_speed)


def _add_paper(sub: Subparsers, common: argparse.ArgumentParser,
               speed: argparse.ArgumentParser) -> None:
    """The ``paper`` subcommand."""
    sigmas = dict(type=positive_float, nargs="+", metavar="S")
    p = sub.add_parser(
        "paper", parents=[common, speed],
        help="all experiments on wine and housing, with REPORT.md",
        description="accuracy, ranking, conciseness and speed on the wine and California housing "
                    "data, single-tree and Bigger models; writes results.json, four figures "
                    "and REPORT.md (next to the paper authors' numbers) into --out. With the "
                    "defaults and --n-jobs 1 it takes several minutes (5-8 on a busy 2-core "
                    "machine when each timing was taken once; the accuracy timings are now the "
                    "median of at least three runs, so expect that part to take about three "
                    "times as long).",
    )
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help=DATA_DIR_HELP)
    p.add_argument("--grid-search", action="store_true",
                   help="choose eta and subsample by 5-fold CV (see accuracy --help)")
    p.add_argument("--samples", type=positive_int, default=1000, metavar="N",
                   help="(row, S) pairs for accuracy (default: %(default)s)")
    p.add_argument("--rows", type=positive_int, default=500, metavar="N",
                   help="test rows for ranking and conciseness, at most the test set "
                        "(default: %(default)s)")
    p.add_argument("--speed-samples", type=positive_int, default=30, metavar="N",
                   help="(row, S) pairs for speed (default: %(default)s)")
    p.add_argument("--sigma", default=[0.01, 0.03, 0.1, 0.3, 1.0], **sigmas,
                   help="accuracy noise levels (default: 0.01 0.03 0.1 0.3 1.0)")
    p.add_argument("--iterations", type=positive_int, nargs="+", default=[10, 100, 1000, 10000],
                   metavar="K", help="accuracy Monte Carlo samples (default: 10 100 1000 10000)")
    p.add_argument("--sigma-rank", default=[0.1, 0.3, 1.0], **sigmas,
                   help="greedy ranking noise levels (default: 0.1 0.3 1.0)")
    p.add_argument("--sigma-eval", default=[0.01, 0.03, 0.1, 0.3, 1.0], **sigmas,
                   help="PGI2 evaluation noise levels (default: 0.01 0.03 0.1 0.3 1.0)")
    p.add_argument("--report-only", action="store_true",
                   help="only redraw the figures and rewrite REPORT.md from --out/results.json "
                        "(and --out/NOTES.md, a hand-written reading, when present)")
    p.set_defaults(func=cmd_paper)


def _add_rankers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """The ``rankers`` subcommand."""
    p = sub.add_parser(
        "rankers", parents=[common],
        help="feature rankers vs ground truth, stability, validation curves, cost and exact PGI2",
        description="Compare feature rankers (greedy PG2, SHAP per row and mean |phi|, the "
                    "model's own importances, permutation importance, optionally yours) on one "
                    "model family and dataset: R2 and log loss against the ground truth "
                    "(fseval's definitions), precision/recall in the top k, stability over "
                    "bootstrap refits (Nogueira et al. 2018), validation curves, exact mean "
                    "PGI2/PGU2, and run time per row. Writes results.json, X_test.npy and four "
                    "PNGs into --out.",
    )
    truth_data_options(p, QUICK["n_samples"], several=False)
    g = p.add_argument_group("model and rankers")
    g.add_argument("--library", choices=LIBRARIES, default="xgboost",
                   help="model family: 40 trees of depth 4, learning rate 0.3, regressor or "
                        "binary classifier by the data (default: %(default)s)")
    g.add_argument("--sigma-rank", type=positive_float, default=0.3, metavar="S",
                   help="noise level of the greedy PG2 ranking (default: %(default)s)")
    g.add_argument("--sigma-eval", type=positive_float, default=None, metavar="S",
                   help="noise level of the exact PGI2/PGU2 (default: --sigma-rank)")
    g.add_argument("--attributions", default=None, metavar="FILE.npy",
                   help="your attributions: shape (d,) global, or (n_test, d) per row in the "
                        "order of the test split (written by a previous run as X_test.npy)")
    g.add_argument("--permutation-repeats", type=positive_int, default=None, metavar="N",
                   help=f"shuffles per feature of permutation importance (default: 5; --quick: "
                        f"{QUICK['permutation_repeats']})")
    g = p.add_argument_group("evaluation")
    g.add_argument("--rows", type=positive_int, default=None, metavar="N",
                   help=f"test rows explained (default: 200; --quick: {QUICK['rows']})")
    g.add_argument("--bootstraps", type=int, default=None, metavar="B",
                   help=f"bootstrap refits for stability, 0 to skip (default: 10; --quick: "
                        f"{QUICK['bootstraps']})")
    g.add_argument("--top-k", type=positive_int, default=None, metavar="K",
                   help="size of the selected set for precision/recall and stability (default: "
                        "the number of relevant features; without ground truth min(5, d-1))")
    g.add_argument("--quick", action="store_true",
                   help="tiny settings (a few seconds): 10 trees and the --quick defaults above")
    p.set_defaults(func=cmd_rankers)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: one sub-parser per subcommand, shared option groups as parents."""
    common = _common_options()
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Exact perturbation-gap metrics (PG2, PGI2) for tree ensembles, "
                    "compared with Monte Carlo.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_demo(sub, common)
    data, model, speed = _data_options(), _model_options(), _speed_options()
    _add_experiments(sub, common, data, model)
    _add_speed(sub, common, data, speed)
    _add_paper(sub, common, speed)
    _add_rankers(sub, common)
    add_agreement(sub, common)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``pgexact-bench`` with ``argv`` (default: the command line); returns the exit code.

    Input a user can fix raises :class:`~pgexact.bench.common.UsageError` inside a subcommand;
    it becomes a one-line message and exit code 2, like argparse's own errors.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if getattr(args, "model", None) not in (None, *RECIPES):
            raise UsageError(f"unknown model {args.model!r} (choose from "
                             f"{', '.join(RECIPES)}, or give --model-file PATH)")
        return int(args.func(args) or 0)
    except UsageError as e:
        parser.exit(2, f"{PROG}: error: {e}\n")
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
