"""The command line of ``pgexact-bench agreement`` (registered by :mod:`~pgexact.bench.cli`)."""

from __future__ import annotations

import argparse
from typing import Any

from .agreement import QUICK, cmd_agreement
from .agreement_setup import EXPLAINERS
from .arguments import positive_float, positive_int, truth_data_options
from .models import output_arg
from .ranker_models import LIBRARIES

__all__ = ["add_agreement"]


def _unit_float(s: str) -> float:
    """argparse type of --level: a float strictly between 0 and 1."""
    v = positive_float(s)
    if v >= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1: {s!r}")
    return v


def add_agreement(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register the ``agreement`` subcommand on ``sub`` (``add_subparsers``' result)."""
    q = QUICK
    p = sub.add_parser(
        "agreement", parents=[common],
        help="which explainer is most faithful, by several metrics, with how much certainty",
        description="Score several explainers (greedy PG2, SHAP per row and mean |phi|, the "
                    "model's gain importance, permutation importance, a random baseline) with "
                    "exact PGI2/PGU2/infidelity, Monte Carlo PGI/PGI2 and, where known, the "
                    "ground truth, on one or more datasets and model families: per-row scores, "
                    "win rates, bootstrap flip probabilities and the rows a verdict needs, "
                    "Monte Carlo seed flips, metric agreement, hard rows; across datasets the "
                    "dataset x explainer rank heat map and how often a verdict on a random "
                    "subset of datasets and metrics differs from the verdict on all. Writes "
                    "results.json and PNGs into --out; see docs/agreement.md.",
    )
    g = truth_data_options(p, q["n_samples"], several=True)
    g.add_argument("--standardise", action="store_true",
                   help="with --model-file: standardise the features (off by default there)")
    g.add_argument("--no-standardise", action="store_true",
                   help="keep raw feature values (sigma is then in raw units)")
    g = p.add_argument_group("models and explainers")
    g.add_argument("--library", nargs="+", choices=LIBRARIES, default=["xgboost"],
                   help="model families, each trained on each dataset: 40 trees of depth 4, "
                        "learning rate 0.3 (--quick: 10 trees) (default: xgboost)")
    g.add_argument("--model-file", default=None, metavar="PATH",
                   help="a saved XGBoost / LightGBM / CatBoost model instead of --library, for "
                        "one real dataset or --data")
    g.add_argument("--output", type=output_arg, default=None, metavar="OUT",
                   help="with --model-file: which output of a multi-output model (or 'all')")
    g.add_argument("--explainers", nargs="+", choices=list(EXPLAINERS), default=list(EXPLAINERS),
                   metavar="NAME", help=f"at least two of {', '.join(EXPLAINERS)} "
                                        "(default: all)")
    g.add_argument("--permutation-repeats", type=positive_int, default=None, metavar="N",
                   help=f"shuffles per feature of permutation importance (default: 5; --quick: "
                        f"{q['permutation_repeats']})")
    g = p.add_argument_group("evaluation")
    g.add_argument("--metrics", nargs="+", default=None, metavar="NAME",
                   help="metrics (default: pgi2 pgu2 infidelity pgi_mc pgi2_mc, and the "
                        "ground-truth metrics where the dataset has ground truth)")
    g.add_argument("--sigma", type=positive_float, default=0.3, metavar="S",
                   help="noise level of the metrics and the greedy ranking (default: "
                        "%(default)s)")
    g.add_argument("--rows", type=positive_int, default=None, metavar="N",
                   help=f"test rows explained per setup (default: 200; --quick: {q['rows']})")
    g.add_argument("--bootstraps", type=positive_int, default=None, metavar="B",
                   help=f"bootstrap resamples of the rows (default: 1000; --quick: "
                        f"{q['bootstraps']})")
    g.add_argument("--mc-samples", type=positive_int, default=None, metavar="K",
                   help=f"samples of the Monte Carlo metrics (default: 100; --quick: "
                        f"{q['mc_samples']})")
    g.add_argument("--seeds", type=positive_int, default=None, metavar="N",
                   help=f"Monte Carlo seeds for the seed-flip rate (default: 20; --quick: "
                        f"{q['seeds']})")
    g.add_argument("--level", type=_unit_float, default=0.95, metavar="P",
                   help="bootstrap interval level (default: %(default)s)")
    g.add_argument("--rule", choices=("mean_rank", "majority"), default="mean_rank",
                   help="cross-dataset verdict of a pair on a set of (dataset, metric) cells: "
                        "the sign of the mean rank difference, or the majority of cells "
                        "(default: %(default)s)")
    g.add_argument("--details", action="store_true",
                   help="print every setup's full summary (every pair, every metric); by "
                        "default only with a single setup")
    g.add_argument("--quick", action="store_true",
                   help="tiny settings (seconds): 10 trees and the --quick defaults above")
    p.set_defaults(func=cmd_agreement)
