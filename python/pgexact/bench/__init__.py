"""``pgexact-bench``: exact perturbation metrics against Monte Carlo, from one command.

Subcommands (each prints a readable table and writes ``results.json`` into ``--out``):

``demo``
    Trains a paper-style "Bigger" XGBoost regressor (40 trees, depth 4) on scikit-learn's
    built-in diabetes data (standardised features, 80:20 split) and compares, on the test rows,
    the exact PGI² of the greedy ranking with Monte Carlo estimates at a few sample counts:
    time per row and NMAE against the exact value.

``accuracy``
    Paper §4.3: NMAE of Monte Carlo against the exact PG² over random (row, S) pairs, per noise
    level and iteration count, the time per pair of both, and the iteration count at which Monte
    Carlo takes as long as the exact computation (``accuracy.png``).
``ranking``
    Paper §5.1: mean exact PGI² of the greedy PG² ranking and of SHAP's ranking over a grid of
    evaluation noise levels sigma' (``ranking.png``).
``conciseness``
    Paper §5.2: entropy (bits) of the aggregated rankings, schemes geom / top1 / top2 / top3,
    for SHAP and the greedy ranking at each sigma (``conciseness.png``).
``speed``
    Time per (row, S) pair of the exact kernel, the paper's unpruned O(n²) pair walk (kept in
    the core as the reference) and Monte Carlo, over XGBoost models from 16 to 10,000+ leaves
    (``speed.png``).
``paper``
    All of the above on the wine and California housing data, single-tree and "Bigger" models,
    and ``REPORT.md`` with every table and figure next to the paper authors' own numbers.
``rankers``
    Feature rankers (greedy PG², SHAP, the model's own importances, permutation importance, a
    user's attributions) judged as feature-selection benchmarks judge them — R² / log loss
    against a known ground truth, top-k precision/recall, stability over bootstrap refits,
    validation curves, run time — next to their exact PGI² and PGU² (four PNGs).
``agreement``
    Which explainer is most faithful, and how sure is that verdict: several explainers scored
    per row by exact and Monte Carlo metrics (:func:`pgexact.metrics.agreement`) on one or more
    datasets x model families — win rates, bootstrap flip probabilities, rows needed, seed
    flips, metric agreement, hard rows — and across datasets the dataset x explainer rank heat
    map and how often a verdict on a random subset of datasets and metrics differs from the
    verdict on all of them (:mod:`pgexact.metrics._agreement_across`).

Data (``--dataset`` diabetes / friedman / wine / housing, or ``--data CSV --target COLUMN``) is
split 80:20 and standardised with the training statistics; models are XGBoost regressors
(``--model single``: one tree of depth 4; ``bigger``: 40 trees of depth 4), or ``--model-file``.

Layout: :mod:`~pgexact.bench.cli` parses the arguments (also ``python -m pgexact.bench``);
:mod:`~pgexact.bench.data` and :mod:`~pgexact.bench.models` build the data and models; one
module per subcommand (``accuracy``, ``ranking``, ``conciseness``, ``speed``, ``demo``,
``paper``, ``rankers`` with :mod:`~pgexact.bench.truth` (ground-truth datasets),
:mod:`~pgexact.bench.ranker_models` (models and rankers) and
:mod:`~pgexact.bench.ranker_plots`, ``agreement`` with ``agreement_args`` (its options),
``agreement_setup`` (setups and explainers) and ``agreement_plots``) runs it, prints its table and draws its figure; :mod:`~pgexact.bench.report` writes
REPORT.md with the paper authors' numbers from ``paper_reference.json``
(:mod:`~pgexact.bench.reference`); :mod:`~pgexact.bench.common` holds the shared helpers.
Input problems a user can fix raise :class:`~pgexact.bench.common.UsageError`, which
:func:`main` turns into a one-line message and exit code 2, like argparse's own errors.
"""

from __future__ import annotations

from .cli import main

__all__ = ["main"]
