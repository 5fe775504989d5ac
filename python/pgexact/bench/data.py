"""Data for ``pgexact-bench``: the named datasets, a user's CSV, the 80:20 split with
standardisation, and the rows / (row, S) pairs the experiments evaluate."""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .common import Args, Json, UsageError, first_line

__all__ = [
    "DATASETS", "DATA_FILES", "Dataset", "default_data_dir", "eval_rows", "load_data",
    "missing_rows_rule",
    "load_named", "random_pairs", "read_table", "split_and_standardise", "standardise_features",
    "wants_standardise",
]

DATASETS = ("diabetes", "friedman", "wine", "housing")

#: the files the paper's datasets are read from (``--data-dir``): name, separator, target,
#: columns dropped (the paper drops the categorical ``ocean_proximity``)
DATA_FILES = {
    "wine": ("winequality_red.csv", ";", "quality", ()),
    "housing": ("california_housing.csv", ",", "median_house_value", ("ocean_proximity",)),
}


class Dataset:
    """A standardised 80:20 split: ``Xtr, Xte, ytr, yte`` and the feature names."""

    def __init__(self, name: str, Xtr: np.ndarray, Xte: np.ndarray, ytr: np.ndarray,
                 yte: np.ndarray, names: Sequence[str], notes: Sequence[str], source: str,
                 text: Optional[Tuple[Any, Any]] = None) -> None:
        self.name, self.names, self.notes, self.source = name, list(names), list(notes), source
        self.Xtr, self.Xte, self.ytr, self.yte = Xtr, Xte, ytr, yte
        #: the non-numeric columns set aside, (train, test) DataFrames of pandas categories: a
        #: --model-file model that reads one by category gets it coded as its library codes it
        self.text = text

    @property
    def d(self) -> int:
        """Number of features."""
        return int(self.Xtr.shape[1])

    def describe(self) -> Json:
        """The dataset's entry in results.json."""
        return dict(name=self.name, source=self.source, n_train=int(self.Xtr.shape[0]),
                    n_test=int(self.Xte.shape[0]), n_features=self.d, feature_names=self.names,
                    notes=self.notes)


def default_data_dir() -> Optional[str]:
    """``../shared/datasets`` next to the repository (or the working directory), if present."""
    here = os.path.dirname(os.path.abspath(__file__))
    # python/pgexact/bench -> the repository root
    repo = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    for base in (repo, os.getcwd()):
        cand = os.path.normpath(os.path.join(base, "..", "shared", "datasets"))
        if os.path.isdir(cand):
            return cand
    return None


def read_table(path: str, *, sep: Optional[str], target: str, drop: Sequence[str] = (),
               what: str = "--data") -> Tuple[np.ndarray, np.ndarray, List[str], List[str], Any]:
    """Read a CSV into (X float64, y float64, names, notes, text); problems become UsageError.

    ``text`` holds the non-numeric columns (and those in ``drop``) as pandas categories, row for
    row with X, or None: they are not features unless a model file reads them by category."""
    import pandas as pd

    if not os.path.isfile(path):
        raise UsageError(f"{what}: file not found: {path}")
    try:
        if sep is None:  # sniff ',' / ';' / tab from the file itself
            df = pd.read_csv(path, sep=None, engine="python")
        else:
            df = pd.read_csv(path, sep=sep)
    except Exception as e:  # noqa: BLE001 - any parse problem is the user's file
        raise UsageError(f"{what}: cannot read {path}: {first_line(e)}") from None
    df.columns = [str(c).strip() for c in df.columns]
    if target not in df.columns:
        cols = ", ".join(df.columns[:12]) + (", ..." if len(df.columns) > 12 else "")
        raise UsageError(f"--target: no column {target!r} in {path} (columns: {cols})")
    notes = []
    y = pd.to_numeric(df.pop(target), errors="coerce")
    if not y.notna().any():
        raise UsageError(f"--target: column {target!r} in {path} is not numeric")
    if y.isna().any():
        notes.append(f"dropped {int(y.isna().sum())} rows with a missing or non-numeric "
                     f"{target!r}")
        keep = y.notna().to_numpy()
        df, y = df[keep], y[keep]
    aside = [c for c in drop if c in df.columns]
    dropped = [c for c in df.columns if c not in aside and not pd.api.types.is_numeric_dtype(df[c])]
    text = (df[aside + dropped].astype("category").reset_index(drop=True)
            if aside or dropped else None)
    df = df.drop(columns=aside + dropped)
    if dropped:
        notes.append("dropped non-numeric columns: " + ", ".join(dropped))
    if df.shape[1] == 0:
        raise UsageError(f"{what}: {path} has no numeric feature columns besides {target!r}")
    if len(df) < 10:
        raise UsageError(f"{what}: {path} has only {len(df)} usable rows (need at least 10)")
    X = df.to_numpy(dtype=np.float64)
    return X, y.to_numpy(dtype=np.float64), list(df.columns), notes, text


def standardise_features(Xtr: np.ndarray, Xte: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(Xtr, Xte)`` standardised with the training rows' mean and standard deviation.

    NaN (a missing value) is ignored in the statistics and stays NaN; a constant or all-missing
    column is only shifted, not divided by zero.
    """
    with np.errstate(all="ignore"):
        mu, sd = np.nanmean(Xtr, axis=0), np.nanstd(Xtr, axis=0)
    mu = np.where(np.isfinite(mu), mu, 0.0)
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
    return (Xtr - mu) / sd, (Xte - mu) / sd


def split_and_standardise(name: str, X: np.ndarray, y: np.ndarray, names: Sequence[str],
                          notes: Sequence[str], source: str, *, seed: int,
                          standardise: bool = True, text: Any = None) -> Dataset:
    """80:20 split; features standardised with the training rows' mean and std (NaN kept);
    ``text`` (the non-numeric columns, row for row) split alike."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(X.shape[0])
    Xtr, Xte, ytr, yte, itr, ite = train_test_split(X, y, idx, test_size=0.2, random_state=seed)
    split_text = None if text is None else (text.iloc[itr].reset_index(drop=True),
                                            text.iloc[ite].reset_index(drop=True))
    if standardise:
        Xtr, Xte = standardise_features(Xtr, Xte)
    else:
        notes = list(notes) + ["features not standardised (raw values; --standardise to change)"]
    return Dataset(name, np.ascontiguousarray(Xtr), np.ascontiguousarray(Xte), ytr, yte, names,
                   notes, source, split_text)


def load_named(name: str, data_dir: Optional[str], *, seed: int, standardise: bool = True,
               keep_missing: bool = True) -> Dataset:
    """One of DATASETS, split and standardised.

    Rows with a missing feature (housing's ``total_bedrooms``) are kept, as in a CSV read by
    ``--data``: :func:`missing_rows_rule` decides once the model is known (kept where it routes
    NaN). ``keep_missing=False`` drops them before the split, as the paper did (the ``paper``
    subcommand, whose numbers are compared with the paper's).
    """
    if name not in DATASETS:
        raise UsageError(f"unknown dataset {name!r} (choose from {', '.join(DATASETS)}, or give "
                         "--data CSV --target COLUMN)")
    if name == "diabetes":
        from sklearn.datasets import load_diabetes

        raw = load_diabetes()
        X, y = np.asarray(raw.data, dtype=np.float64), np.asarray(raw.target, dtype=np.float64)
        return split_and_standardise(name, X, y, list(raw.feature_names), [],
                                     "sklearn.datasets.load_diabetes", seed=seed,
                                     standardise=standardise)
    if name == "friedman":
        from sklearn.datasets import make_friedman1

        X, y = make_friedman1(n_samples=2000, n_features=10, noise=1.0, random_state=seed)
        return split_and_standardise(
            name, X, y, [f"x{i}" for i in range(10)],
            ["2,000 rows of make_friedman1 (10 features, 5 informative, noise 1.0)"],
            "sklearn.datasets.make_friedman1", seed=seed, standardise=standardise)
    data_dir = data_dir or default_data_dir()
    if not data_dir:
        raise UsageError(f"dataset {name!r} needs --data-dir (the directory holding "
                         f"{DATA_FILES[name][0]}); ../shared/datasets was not found")
    if not os.path.isdir(data_dir):
        raise UsageError(f"--data-dir: not a directory: {data_dir}")
    fname, sep, target, drop = DATA_FILES[name]
    path = os.path.join(data_dir, fname)
    X, y, names, notes, text = read_table(path, sep=sep, target=target, drop=drop,
                                          what="--data-dir")
    if name == "housing":
        bad = np.isnan(X).any(axis=1)
        if bad.any() and not keep_missing:
            cols = [names[j] for j in np.flatnonzero(np.isnan(X).any(axis=0))]
            notes.append(f"dropped {int(bad.sum())} rows with a missing {', '.join(cols)} "
                         f"({int((~bad).sum()):,} rows left) as the paper did; not imputed")
            X, y = X[~bad], y[~bad]
            text = None if text is None else text[~bad].reset_index(drop=True)
        notes.append("dropped the categorical ocean_proximity (as the paper)")
    return split_and_standardise(name, X, y, names, notes, path, seed=seed,
                                 standardise=standardise, text=text)


def wants_standardise(args: Args) -> bool:
    """Standardise the features? The paper's recipes: yes unless --no-standardise; a
    --model-file (trained on whatever the user trained it on): only with --standardise."""
    yes, no = bool(getattr(args, "standardise", False)), bool(getattr(args, "no_standardise", False))
    if yes and no:
        raise UsageError("give either --standardise or --no-standardise, not both")
    if getattr(args, "model_file", None):
        return yes
    return not no


def load_data(args: Args) -> Dataset:
    """The data chosen by --dataset / --data --target."""
    csv = getattr(args, "data", None)
    if csv is not None:
        if args.dataset is not None:
            raise UsageError("give either --dataset or --data, not both")
        if not args.target:
            raise UsageError("--data needs --target COLUMN")
        X, y, names, notes, text = read_table(csv, sep=None, target=args.target)
        return split_and_standardise(os.path.splitext(os.path.basename(csv))[0], X, y, names,
                                     notes, os.path.abspath(csv), seed=args.seed,
                                     standardise=wants_standardise(args), text=text)
    if getattr(args, "target", None):
        raise UsageError("--target goes with --data CSV")
    return load_named(args.dataset or "diabetes", args.data_dir, seed=args.seed,
                      standardise=wants_standardise(args))


def missing_rows_rule(data: Dataset, routes_missing: bool, model: str) -> Dataset:
    """The one rule for rows with a missing feature value (NaN), for every dataset and CSV.

    Kept when the model routes NaN (XGBoost, LightGBM, CatBoost, HistGradientBoosting and
    scikit-learn trees that accept NaN: each row goes where the library's own predict sends
    it), with a note; otherwise dropped from both splits, with a note saying how many and why.
    ``model`` names the model in the notes.
    """
    bad_tr, bad_te = np.isnan(data.Xtr).any(axis=1), np.isnan(data.Xte).any(axis=1)
    n_bad = int(bad_tr.sum() + bad_te.sum())
    if n_bad == 0:
        return data
    cols = [data.names[j] for j in np.flatnonzero(np.isnan(data.Xtr).any(axis=0)
                                                  | np.isnan(data.Xte).any(axis=0))]
    shown = ", ".join(cols[:6]) + (", ..." if len(cols) > 6 else "")
    if routes_missing:
        data.notes.append(f"kept {n_bad} rows with a missing {shown} ({int(bad_te.sum())} of "
                          f"them test rows): {model} routes NaN as its library does")
        return data
    notes = list(data.notes) + [
        f"dropped {n_bad} rows with a missing {shown} ({int(bad_tr.sum())} training, "
        f"{int(bad_te.sum())} test rows): {model} has no missing-value routing (its own "
        "predict refuses NaN); not imputed"]
    text = None if data.text is None else (data.text[0][~bad_tr].reset_index(drop=True),
                                           data.text[1][~bad_te].reset_index(drop=True))
    return Dataset(data.name, np.ascontiguousarray(data.Xtr[~bad_tr]),
                   np.ascontiguousarray(data.Xte[~bad_te]), data.ytr[~bad_tr], data.yte[~bad_te],
                   data.names, notes, data.source, text)


def eval_rows(data: Dataset, n: Optional[int], seed: int) -> np.ndarray:
    """Up to ``n`` test rows, a random subset in their original order (None: all)."""
    Xte = data.Xte
    if n is None or n >= Xte.shape[0]:
        return Xte
    rng = np.random.default_rng(seed)
    return np.ascontiguousarray(Xte[np.sort(rng.choice(Xte.shape[0], n, replace=False))])


def random_pairs(X: np.ndarray, n_pairs: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` random (row, S): rows with replacement, |S| spread evenly over 1..d."""
    rng = np.random.default_rng(seed)
    n, d = X.shape
    rows = rng.integers(0, n, n_pairs)
    sizes = rng.permutation(np.arange(n_pairs) % d + 1)
    mask = np.zeros((n_pairs, d), dtype=bool)
    for i, s in enumerate(sizes):
        mask[i, rng.choice(d, s, replace=False)] = True
    return np.ascontiguousarray(X[rows]), mask
