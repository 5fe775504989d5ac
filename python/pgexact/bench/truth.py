"""Datasets with a known ground truth for ``pgexact-bench rankers``.

Each generator returns a :class:`TruthData`: the standardised 80:20 split of
:mod:`~pgexact.bench.data`, the task, the relevant features and, where the generator defines
them, per-feature importances. Real data (``--dataset wine`` etc. or ``--data CSV``) comes with
no ground truth: ``relevant`` and ``importances`` are None and the ground-truth metrics are
skipped.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional

import numpy as np

from .common import Args, Json, UsageError
from .data import DATASETS, Dataset, load_data, split_and_standardise

__all__ = ["TRUTH_DATASETS", "TruthData", "additive", "classification", "friedman1",
           "friedman1_importances", "load_truth"]


class TruthData:
    """A split dataset, its task, and its ground truth (None for real data)."""

    def __init__(self, data: Dataset, task: str, relevant: Optional[np.ndarray],
                 importances: Optional[np.ndarray], truth_note: str) -> None:
        self.data, self.task, self.truth_note = data, task, truth_note
        self.relevant, self.importances = relevant, importances

    @property
    def has_truth(self) -> bool:
        """Whether the relevant features are known."""
        return self.relevant is not None

    def describe(self) -> Json:
        """The dataset's entry in results.json."""
        out = self.data.describe()
        out.update(task=self.task, truth=self.truth_note,
                   relevant=None if self.relevant is None else self.relevant.tolist(),
                   true_importances=None if self.importances is None
                   else self.importances.tolist())
        return out


def friedman1_importances(n_grid: int = 2001) -> np.ndarray:
    """Variance contributed by each feature of Friedman #1 (x ~ U(0, 1)^d, d >= 5).

    ``y = 10 sin(π x0 x1) + 20 (x2 - 1/2)² + 10 x3 + 5 x4 + ε``: the four terms are
    independent, so their variances add. ``Var 10 x3 = 100/12``, ``Var 5 x4 = 25/12``,
    ``Var 20 (x2 - 1/2)² = 400/180``; the variance of the interaction ``10 sin(π x0 x1)``
    (by the midpoint rule on an ``n_grid``² grid) is split equally between x0 and x1.
    """
    u = (np.arange(n_grid) + 0.5) / n_grid
    s = 10.0 * np.sin(np.pi * np.outer(u, u))
    v_sin = float(np.mean(s ** 2) - np.mean(s) ** 2)
    return np.array([v_sin / 2, v_sin / 2, 400.0 / 180.0, 100.0 / 12.0, 25.0 / 12.0])


def friedman1(n: int, d: int, seed: int) -> TruthData:
    """scikit-learn's ``make_friedman1``: features 0-4 relevant, the rest noise (noise 1.0)."""
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=n, n_features=d, noise=1.0, random_state=seed)
    imp = np.zeros(d)
    imp[:5] = friedman1_importances()
    data = split_and_standardise("friedman1", X, y, [f"x{i}" for i in range(d)],
                                 [f"{n:,} rows of make_friedman1 ({d} features, 5 relevant, "
                                  "noise 1.0)"], "sklearn.datasets.make_friedman1", seed=seed)
    return TruthData(data, "regression", np.arange(5), imp,
                     "features 0-4 relevant; importance = the variance each contributes to y "
                     "(10 sin(π x0 x1) split equally between x0 and x1)")


#: the additive design: coefficients of x0..x3, and the x4 * x5 interaction's
ADDITIVE_BETA = (3.0, 2.0, 1.5, 1.0)
ADDITIVE_GAMMA = 2.0


def additive(n: int, d: int, seed: int) -> TruthData:
    """``y = 3 x0 + 2 x1 + 1.5 x2 + x3 + 2 x4 x5 + ε``, x ~ N(0, I_d), ε ~ N(0, 1), d >= 6.

    The terms are uncorrelated with zero mean, so each contributes its own variance:
    ``β_j²`` for the linear ones and ``γ² = 4`` for the interaction, split equally between
    x4 and x5 (2 each). Features 6.. are noise.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    beta = np.asarray(ADDITIVE_BETA)
    y = X[:, :4] @ beta + ADDITIVE_GAMMA * X[:, 4] * X[:, 5] + rng.standard_normal(n)
    imp = np.zeros(d)
    imp[:4] = beta ** 2
    imp[4:6] = ADDITIVE_GAMMA ** 2 / 2
    data = split_and_standardise("additive", X, y, [f"x{i}" for i in range(d)],
                                 [f"{n:,} rows of 3 x0 + 2 x1 + 1.5 x2 + x3 + 2 x4 x5 + N(0, 1) "
                                  f"({d} features)"], "built in", seed=seed)
    return TruthData(data, "regression", np.arange(6), imp,
                     "features 0-5 relevant; importance = the variance each contributes to y "
                     "(β² for x0-x3, γ²/2 = 2 each for x4 and x5)")


def classification(n: int, d: int, seed: int) -> TruthData:
    """scikit-learn's ``make_classification`` (binary, unshuffled columns): features 0-2
    informative, 3-4 redundant (linear combinations of the informative ones), the rest noise.

    Only the informative features count as relevant (importance 1 each); a ranker that picks a
    redundant feature is penalised although the model may use it.
    """
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n, n_features=d, n_informative=3, n_redundant=2,
                               n_repeated=0, n_classes=2, shuffle=False, random_state=seed)
    imp = np.zeros(d)
    imp[:3] = 1.0
    data = split_and_standardise("classification", X, y.astype(np.float64),
                                 [f"x{i}" for i in range(d)],
                                 [f"{n:,} rows of make_classification (binary, {d} features: "
                                  "3 informative, 2 redundant, the rest noise)"],
                                 "sklearn.datasets.make_classification", seed=seed)
    return TruthData(data, "classification", np.arange(3), imp,
                     "features 0-2 (informative) relevant, importance 1 each; 3-4 are redundant "
                     "combinations of them and count as irrelevant")


#: name -> generator(n rows, d features, seed)
TRUTH_DATASETS: Dict[str, Callable[[int, int, int], TruthData]] = {
    "friedman1": friedman1,
    "additive": additive,
    "classification": classification,
}
#: the smallest number of features each generator needs
MIN_FEATURES = {"friedman1": 5, "additive": 6, "classification": 5}


def load_truth(args: Args, *, n: int, d: int) -> TruthData:
    """The data chosen by ``--dataset`` / ``--data``: a ground-truth generator, or real data
    (the names of :data:`~pgexact.bench.data.DATASETS` and CSVs) with no ground truth."""
    name = getattr(args, "dataset", None) or "friedman1"
    if name == "friedman":  # the other subcommands' name for the same generator
        name = "friedman1"
    if getattr(args, "data", None) is None and name not in (*TRUTH_DATASETS, *DATASETS):
        raise UsageError(f"--dataset: unknown dataset {name!r} (choose from "
                         f"{', '.join((*TRUTH_DATASETS, *DATASETS))}, or give --data CSV "
                         "--target COLUMN)")
    if getattr(args, "data", None) is None and name in TRUTH_DATASETS:
        if d < MIN_FEATURES[name]:
            raise UsageError(f"--features: {name} needs at least {MIN_FEATURES[name]} features")
        return TRUTH_DATASETS[name](n, d, args.seed)
    data = load_data(args)
    return TruthData(data, "regression", None, None, "no ground truth (real data): R², log loss and "
                     "precision/recall are skipped")
