"""The paper authors' reference numbers for ``pgexact-bench paper`` (``paper_reference.json``).

Source: https://github.com/rapicki/prediction-gap at commit 31af1fc (the code and raw results
behind Gajewski, Karczmarz, Rapicki, Sankowski, "Accurate Estimation of Feature Importance
Faithfulness for Tree Models", AAAI 2025, arXiv:2404.03426).  These are not the published
Tables 1-9 (bench/paper/REPORT.md's hand-written reading compares those with ours); they are
what the authors' committed raw files give, summarised by us, and add what the tables do not
give (exact timings, negative exact values, per-row PGI² ratios):

``accuracy``  from ``results/<model>/precision_comparision_std_<s>_iterations_<k>.npy`` (about
    20,000 random (row, S) pairs each; columns MC, exact, QMC, |S|, t_MC, t_exact, t_QMC):
    NMAE of MC (and QMC) against their exact value, the mean exact time per pair, and the
    iteration count at which MC takes as long as exact (linear interpolation of t_MC in k;
    ``extrapolated`` when that count lies outside their grid 100..35,000, where the NMAE is
    extrapolated with the 1/sqrt(k) law).  ``negative_exact``: pairs where their exact value was
    below zero (floating-point cancellation in their implementation).
``entropy``   ``results/<model>/<data>_entropy.csv`` as is (bits), rounded to 3 decimals.
``pgi2_ratio``  mean PGI² of the greedy ranking at sigma over mean PGI² of SHAP's ranking, per
    evaluation sigma', from the per-row ``pgi_std_<s'>_mean.npy`` files (results/ for housing,
    new_results_mr/ for the single wine tree; the wine Bigger files hold 3 numbers whose meaning
    we could not establish, so that model has no entry).

Their models (not ours): single = 1 tree with 8 leaves; wine Bigger = 32 trees / 453 leaves;
housing Bigger = 40 trees / 525 leaves.  Their housing target is in dollars, wine in points.

The numbers are data, shipped as ``paper_reference.json`` next to this module; its top-level
keys are ``source`` and ``models`` (where the numbers come from, the authors' models) and the
three tables above.  Per-method keys (``"SHAP"``, ``"PG σ=0.3"``) are the column labels of
:func:`pgexact.bench.common.pg_column`; sigma keys are strings as in the authors' file names.
"""

from __future__ import annotations

import json
from typing import cast
from functools import lru_cache
from importlib import resources

from .common import Json

__all__ = ["REFERENCE_FILE", "load_reference"]

#: the data file, inside the installed ``pgexact.bench`` package
REFERENCE_FILE = "paper_reference.json"


@lru_cache(maxsize=1)
def _load() -> Json:
    text = resources.files(__package__).joinpath(REFERENCE_FILE).read_text(encoding="utf-8")
    return cast(Json, json.loads(text))


def load_reference() -> Json:
    """The reference numbers as a dict: ``source``, ``models``, ``accuracy``, ``entropy``,
    ``pgi2_ratio`` (a fresh copy: callers may change it)."""
    return cast(Json, json.loads(json.dumps(_load())))
