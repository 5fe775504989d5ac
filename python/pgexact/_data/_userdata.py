"""Rows as users hold them, read as the model's own library reads them.

One place, used by :func:`pgexact._data._rows.as_matrix_ordered` (so by the exact functions,
``pgexact.mc``, ``pgexact.openxai``, the ``Explainer``, ``pgexact.dask`` and the command line):

* **pandas ``category`` columns** become the numbers the library's predict would route:
  XGBoost re-codes a frame's categories to the ones stored in the model (an unseen category is
  an error there, and here); LightGBM maps the frame's category columns, in order, onto its
  ``pandas_categorical`` (an unseen category becomes missing); scikit-learn's
  HistGradientBoosting runs its fitted ``OrdinalEncoder`` (numeric categories keep their
  values, string categories become their position in the encoder; unseen ones are missing).
  A category column for a feature the model does not read by category is refused.
* **``xgboost.DMatrix``** (its feature names, its missing value) and **SciPy sparse matrices**:
  an entry absent from a sparse matrix or a ``DMatrix`` is *missing* for XGBoost; LightGBM and
  scikit-learn's trees read it as 0 (as their own predict does); HistGradientBoosting and
  CatBoost refuse sparse input, and so does pgexact.
* **Missing values**: a model whose own predict refuses NaN (scikit-learn's GradientBoosting,
  and its trees and forests where the installed scikit-learn does not route NaN) has NaN in
  ``X`` refused, naming the column and the row.

The facts about a model live in a :class:`DataPolicy`, computed once when the model is read
(:func:`data_policy`) and kept in the TreeEnsemble's metadata; a Monte Carlo target asks the
library object it wraps.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

__all__ = ["DataPolicy", "FeatureCategories", "check_missing", "data_policy", "policy_of",
           "read_rows", "xgboost_json_categories"]


class FeatureCategories(NamedTuple):
    """How one feature's pandas categories become the numbers the model routes."""

    #: the categories in code order (XGBoost's stored categories, LightGBM's
    #: ``pandas_categorical`` entry, HistGradientBoosting's encoder categories)
    categories: Tuple[Any, ...]
    #: True: a category becomes its position (code); False: its own numeric value
    #: (HistGradientBoosting with numeric categories, whose splits name the values)
    codes: bool
    #: what an unseen category does: "missing" (NaN) or "refuse" (XGBoost raises)
    unseen: str


class DataPolicy(NamedTuple):
    """How a model's library reads rows: categories, sparse entries, missing values."""

    #: the library, as messages name it ("XGBoost", "LightGBM", "HistGradientBoostingRegressor")
    library: str
    #: model feature index -> its categories (features read by category from a DataFrame)
    categories: Dict[int, FeatureCategories]
    #: LightGBM: its ``pandas_categorical``, matched in order to the frame's category columns
    lightgbm_positional: Optional[List[List[Any]]]
    #: None when the model routes NaN, else why it does not (for the error message)
    no_missing: Optional[str]
    #: what an entry absent from a sparse matrix is: "missing", "zero", or "refuse"
    sparse_absent: str
    #: XGBoost read by category from the frame's own codes (a model that stores no categories)
    frame_codes: bool = False


_NO_POLICY = DataPolicy("model", {}, None, None, "zero")


# ----------------------------------------------------------------------------- the libraries
def xgboost_json_categories(raw: bytes) -> Optional[Dict[int, List[Any]]]:
    """The categories an XGBoost JSON model stores (``cats.enc``), by feature; None when it
    stores none (an older model, a UBJSON file, or one trained without pandas categories)."""
    if not raw[:1] == b"{" and not raw.lstrip()[:1] == b"{":
        return None
    at = raw.find(b'"cats"')
    if at < 0:
        return None
    try:
        text = raw[at + len(b'"cats"'):].decode("utf-8", errors="replace").lstrip().lstrip(":")
        obj, _ = json.JSONDecoder().raw_decode(text.lstrip())
        enc = obj.get("enc") or []
    except (ValueError, AttributeError):
        return None
    out: Dict[int, List[Any]] = {}
    for j, entry in enumerate(enc):
        values = entry.get("values") or []
        if not values:
            continue
        if "offsets" in entry and entry.get("offsets"):
            off = entry["offsets"]
            data = bytes(values)
            out[j] = [data[off[i]:off[i + 1]].decode("utf-8") for i in range(len(off) - 1)]
        else:
            out[j] = list(values)
    return out or None


def _xgboost_policy(cats: Optional[Dict[int, List[Any]]], categorical: Sequence[int]) -> DataPolicy:
    table = {j: FeatureCategories(tuple(v), True, "refuse") for j, v in (cats or {}).items()}
    # a model with categorical features but no stored categories reads a frame's own codes
    return DataPolicy("XGBoost", table, None, None, "missing",
                      frame_codes=not table and bool(categorical))


def _lightgbm_policy(pandas_categorical: Any) -> DataPolicy:
    cats = pandas_categorical
    if isinstance(cats, str):
        raw = cats.strip()
        try:
            cats = json.loads(raw) if raw not in ("", "null") else None
        except ValueError:
            cats = None
    if not isinstance(cats, list) or not cats:
        cats = None
    return DataPolicy("LightGBM", {}, cats, None, "zero")


def _hist_policy(model: Any) -> DataPolicy:
    name = type(model).__name__
    table: Dict[int, FeatureCategories] = {}
    prep = getattr(model, "_preprocessor", None)
    is_cat = getattr(model, "is_categorical_", None)
    if prep is not None and is_cat is not None:
        encoder = prep.named_transformers_["encoder"]
        for col, cats in zip(np.flatnonzero(np.asarray(is_cat, dtype=bool)), encoder.categories_):
            values = [v for v in np.asarray(cats).tolist() if not (isinstance(v, float) and np.isnan(v))]
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            table[int(col)] = FeatureCategories(tuple(values), not numeric, "missing")
    return DataPolicy(name, table, None, None, "refuse")


def _sklearn_refuses_nan(model: Any) -> bool:
    """Whether the estimator's own predict refuses a row of NaN (asked of the estimator)."""
    import warnings

    d = int(getattr(model, "n_features_in_", 0) or 0)
    if d <= 0:
        return False
    probe = np.full((1, d), np.nan)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.predict(probe)
    except ValueError as exc:
        return "nan" in str(exc).lower() or "missing" in str(exc).lower()
    except Exception:  # noqa: BLE001 - anything else is not about NaN
        return False
    return False


def data_policy(model: Any, ensemble: Any = None) -> DataPolicy:
    """The :class:`DataPolicy` of a library model object (or of a parsed model file, from the
    ``ensemble``'s metadata)."""
    module = type(model).__module__ or ""
    meta = dict(getattr(ensemble, "_meta", None) or {})
    if module.startswith("xgboost"):
        booster = model.get_booster() if hasattr(model, "get_booster") else model
        cats = meta.get("xgboost_categories")
        if "xgboost_categories" not in meta:
            try:
                cats = xgboost_json_categories(bytes(booster.save_raw(raw_format="json")))
            except Exception:  # noqa: BLE001 - an unfitted or exotic booster: no categories
                cats = None
        types = list(getattr(booster, "feature_types", None) or [])
        return _xgboost_policy(cats, [j for j, t in enumerate(types) if t == "c"])
    if module.startswith("lightgbm"):
        booster = model if hasattr(model, "model_to_string") else getattr(model, "booster_", None)
        return _lightgbm_policy(getattr(booster, "pandas_categorical", None))
    if module.startswith("catboost"):
        return DataPolicy("CatBoost", {}, None, None, "refuse")
    if module.startswith("sklearn"):
        name = type(model).__name__
        if name.startswith("HistGradientBoosting"):
            return _hist_policy(model)
        why = (f"{name}'s own predict refuses NaN (it has no missing-value routing)"
               if _sklearn_refuses_nan(model) else None)
        return DataPolicy(name, {}, None, why, "zero")
    if ensemble is not None:
        return _ensemble_policy(ensemble)
    return _NO_POLICY


def _ensemble_policy(ens: Any) -> DataPolicy:
    """A TreeEnsemble's policy: stored when read from a library object, else from its file."""
    meta = getattr(ens, "_meta", None) or {}
    stored = meta.get("data_policy")
    if isinstance(stored, DataPolicy):
        return stored
    source = str(getattr(ens, "source", "") or "").lower()
    if source.startswith("xgboost"):
        cats = meta.get("xgboost_categories")
        return _xgboost_policy({int(k): v for k, v in cats.items()} if cats else None,
                               list(getattr(ens._arena, "categorical_features", []) or []))
    if source.startswith("lightgbm"):
        return _lightgbm_policy(meta.get("pandas_categorical"))
    if source.startswith("catboost"):
        return DataPolicy("CatBoost", {}, None, None, "refuse")
    return _NO_POLICY


def _is_ensemble(obj: Any) -> bool:
    """A pgexact TreeEnsemble (recognised without importing it: this room sits below it)."""
    return hasattr(obj, "_arena") and hasattr(obj, "_meta")


def policy_of(columns: Any) -> DataPolicy:
    """The policy of what the validators check rows against: a TreeEnsemble or a Monte Carlo
    Target (which asks the library object it wraps, or its TreeEnsemble)."""
    if _is_ensemble(columns):
        return _ensemble_policy(columns)
    exact = getattr(columns, "exact_model", None)
    if exact is not None and exact is not columns:
        if _is_ensemble(exact):
            return _ensemble_policy(exact)
        cached = getattr(columns, "_pgexact_policy", None)
        if isinstance(cached, DataPolicy):
            return cached
        final = exact[-1] if hasattr(exact, "steps") else exact
        return data_policy(final)
    return _NO_POLICY


def _missing_reason(columns: Any) -> Optional[str]:
    """``DataPolicy.no_missing`` of what the rows are checked against, asking a library object
    only what that needs (XGBoost, LightGBM, CatBoost and HistGradientBoosting route NaN)."""
    if _is_ensemble(columns):
        return _ensemble_policy(columns).no_missing
    exact = getattr(columns, "exact_model", None)
    if exact is None or exact is columns:
        return None
    if _is_ensemble(exact):
        return _ensemble_policy(exact).no_missing
    final = exact[-1] if hasattr(exact, "steps") else exact
    module, name = type(final).__module__ or "", type(final).__name__
    if module.startswith("sklearn") and not name.startswith("HistGradientBoosting"):
        return data_policy(final).no_missing
    return None


# --------------------------------------------------------------------------------- the rows
def _is_dmatrix(X: Any) -> bool:
    return type(X).__name__ in ("DMatrix", "QuantileDMatrix") and (
        type(X).__module__ or "").startswith("xgboost")


def _is_sparse(X: Any) -> bool:
    return hasattr(X, "tocsr") and hasattr(X, "nnz") and hasattr(X, "shape")


def _sparse_dense(S: Any, absent: float) -> np.ndarray:
    """A SciPy sparse matrix as a dense float64 array, absent entries set to ``absent``."""
    csr = S.tocsr()
    csr.sum_duplicates()
    out = np.full(csr.shape, absent, dtype=np.float64)
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    out[rows, csr.indices] = np.asarray(csr.data, dtype=np.float64)
    return out


def read_rows(X: Any, columns: Any, name: str = "X") -> Any:
    """``X`` as the validators read it: a DMatrix or a sparse matrix becomes dense rows (a
    DataFrame when the DMatrix names its features), read as the model's library reads them;
    anything else is returned unchanged."""
    if _is_dmatrix(X):
        policy = policy_of(columns)
        if policy.library != "XGBoost":
            raise TypeError(f"{name}: an xgboost.DMatrix is read by XGBoost models only; this is a "
                            f"{policy.library} model: pass the rows as a numpy array or DataFrame")
        if type(X).__name__ == "QuantileDMatrix":
            raise TypeError(f"{name}: a QuantileDMatrix holds binned rows, not values; pass the "
                            "xgboost.DMatrix (or the array) it was built from")
        dense = _sparse_dense(X.get_data(), np.nan)  # absent entries (its missing value): NaN
        names = X.feature_names
        if names:
            import pandas as pd

            return pd.DataFrame(dense, columns=list(names))
        return dense
    if _is_sparse(X):
        policy = policy_of(columns)
        if policy.sparse_absent == "refuse":
            raise TypeError(f"{name}: {policy.library} does not read sparse matrices; pass "
                            f"{name}.toarray() (absent entries are then zeros)")
        absent = np.nan if policy.sparse_absent == "missing" else 0.0
        if len(getattr(X, "shape", ())) != 2:
            raise ValueError(f"{name}: expected a 2-D sparse matrix, got shape {X.shape}")
        return _sparse_dense(X, absent)
    return X


def _is_category(series: Any) -> bool:
    import pandas as pd

    return isinstance(series.dtype, pd.CategoricalDtype)


def frame_categories(frame: Any, columns: Any, name: str = "X") -> Any:
    """A DataFrame in the model's feature order with its ``category`` columns replaced by the
    numbers the library's predict routes (see the module docstring); unchanged without any."""
    cat_cols = [i for i in range(frame.shape[1]) if _is_category(frame.iloc[:, i])]
    if not cat_cols:
        return frame  # numeric columns: a category feature holds its codes, as in a numpy X
    policy = policy_of(columns)
    import pandas as pd

    out = frame.copy()
    label = [str(c) for c in frame.columns]
    if policy.lightgbm_positional is not None:
        cats = policy.lightgbm_positional
        if len(cat_cols) != len(cats):
            raise ValueError(
                f"{name}: this LightGBM model was trained on {len(cats)} pandas category "
                f"column(s) and maps a frame's category columns onto them in order; {name} has "
                f"{len(cat_cols)} ({', '.join(repr(label[i]) for i in cat_cols) or 'none'}); pass "
                "the columns the model was trained on as dtype 'category', or a numpy array of "
                "their codes")
        for i, categories in zip(cat_cols, cats):
            col = frame.iloc[:, i].cat.set_categories(list(categories))
            codes = col.cat.codes.to_numpy().astype(np.float64)
            codes[codes < 0] = np.nan  # unseen or missing: NaN, as LightGBM's own predict
            out.isetitem(i, codes)
        return out
    for i in cat_cols:
        series = frame.iloc[:, i]
        feature = policy.categories.get(i)
        if feature is None and policy.frame_codes:
            codes = series.cat.codes.to_numpy().astype(np.float64)
            codes[codes < 0] = np.nan
            out.isetitem(i, codes)
            continue
        if feature is None:
            raise TypeError(
                f"{name}: column {label[i]!r} is a pandas category column, but this "
                f"{policy.library} model does not read feature {label[i]!r} by category; pass its "
                f"numeric values (e.g. {name}[{label[i]!r}].astype(float)) or its codes")
        values = series.to_numpy(dtype=object)
        present = ~pd.isna(series).to_numpy()
        if feature.codes:
            lookup = {v: k for k, v in enumerate(feature.categories)}
            mapped = np.full(len(values), np.nan)
            for r in np.flatnonzero(present):
                k = lookup.get(values[r])
                if k is None and isinstance(values[r], (int, float, np.integer, np.floating)):
                    k = lookup.get(float(values[r]))
                if k is None:
                    if feature.unseen == "refuse":
                        raise ValueError(
                            f"{name}: row {r}, column {label[i]!r}: category {values[r]!r} is not "
                            f"one of the model's categories {list(feature.categories)[:10]}; "
                            f"{policy.library}'s own predict refuses it too: pass a known "
                            "category or NaN (missing)")
                    continue  # unseen: missing, as the library's encoder does
                mapped[r] = k
        else:  # the categories' own numeric values (HistGradientBoosting, numeric categories)
            try:
                mapped = np.where(present, pd.to_numeric(series.astype(object), errors="raise"),
                                  np.nan).astype(np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"{name}: column {label[i]!r} holds non-numeric categories but the "
                                f"model's categories are numbers {list(feature.categories)[:10]}") from None
        out.isetitem(i, mapped)
    return out


def check_missing(arr: np.ndarray, columns: Any, x_names: Optional[List[str]],
                  to_x: Any, name: str = "X") -> None:
    """Refuse NaN in rows for a model whose own predict refuses NaN, naming the column (as in
    ``X``) and the row."""
    nan = np.isnan(arr)
    if not nan.any():
        return
    reason = _missing_reason(columns)
    if reason is None:
        return
    i, j = (int(v[0]) for v in np.nonzero(nan))
    jx = int(to_x(j))
    col = repr(x_names[jx]) if x_names is not None and jx < len(x_names) else str(jx)
    raise ValueError(
        f"{name}: row {i}, column {col} is missing (NaN), and {reason}; "
        f"{int(nan.any(axis=1).sum())} row(s) have NaN: impute them or drop those rows (or use a "
        "model that routes missing values, e.g. HistGradientBoosting)")
