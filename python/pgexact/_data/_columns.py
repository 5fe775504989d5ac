"""Positions and names follow ``X`` as the user passed it.

The rule (documented in ``docs/columns.md`` and pointed to by every docstring):

* a DataFrame ``X`` is matched to the model's features **by name** (LightGBM's own renaming of
  spaces to underscores included); columns the model does not use are dropped;
* every **integer position** the user gives (``features``, the entries of ``ranking``, the
  columns of an ``attributions`` array, the entries of a per-feature ``sigma`` / ``noise``
  list) refers to the columns of ``X`` in the order given (after dropping unused columns);
* every **name** (``features=["age"]``, a named ``sigma`` Series, an ``attributions``
  DataFrame) is matched by name;
* every per-feature **output** (``rank``, ``Explanation.values`` ...) is in ``X``'s order.

The kernels work in the model's own feature order; :class:`ColumnOrder` is the one place that
translates between the two.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["ColumnOrder", "identity_order", "lightgbm_name", "match_frame", "uses_lightgbm_names"]


def lightgbm_name(name: str) -> str:
    """The name LightGBM records for a column: its C++ ``Dataset::set_feature_names``
    replaces every space by an underscore (it refuses JSON special characters outright)."""
    return name.replace(" ", "_")


def uses_lightgbm_names(columns: Any) -> bool:
    """True for a LightGBM model (a TreeEnsemble from LightGBM, or its Monte Carlo target)."""
    source = getattr(columns, "source", None)
    if isinstance(source, str) and source.lower().startswith("lightgbm"):
        return True
    exact = getattr(columns, "exact_model", None)
    if exact is not None and exact is not columns:
        return uses_lightgbm_names(exact) or (type(exact).__module__ or "").startswith("lightgbm")
    return False


class ColumnOrder:
    """How the columns of ``X`` (as passed, unused ones dropped) map to the model's features.

    Parameters
    ----------
    x_of : numpy.ndarray or None
        ``x_of[j]`` is the position in ``X`` of the model's feature ``j``; None when they agree.
    names : list of str or None
        The names of ``X``'s used columns in ``X``'s order (the model's names for an array).
    """

    __slots__ = ("x_of", "model_of", "names")

    def __init__(self, x_of: Optional[np.ndarray], names: Optional[List[str]]) -> None:
        if x_of is not None and np.array_equal(x_of, np.arange(x_of.size)):
            x_of = None
        self.x_of = x_of
        self.model_of: Optional[np.ndarray] = None
        if x_of is not None:
            self.model_of = np.empty_like(x_of)
            self.model_of[x_of] = np.arange(x_of.size)
        self.names = names

    @property
    def identity(self) -> bool:
        """True when ``X``'s positions are the model's."""
        return self.x_of is None

    # -- user (X order) -> model ---------------------------------------------------------------
    def ranking(self, ranking: np.ndarray) -> np.ndarray:
        """Feature positions in ``X`` -> the model's feature indices (any shape)."""
        if self.model_of is None:
            return ranking
        return np.ascontiguousarray(self.model_of[ranking], dtype=ranking.dtype)

    def columns(self, values: np.ndarray) -> np.ndarray:
        """A per-feature last axis in ``X``'s order -> the model's order."""
        if self.x_of is None:
            return values
        return np.ascontiguousarray(values[..., self.x_of])

    # -- model -> user (X order) ---------------------------------------------------------------
    def ranking_out(self, ranking: np.ndarray) -> np.ndarray:
        """The model's feature indices -> positions in ``X``."""
        if self.x_of is None:
            return ranking
        return np.ascontiguousarray(self.x_of[ranking], dtype=ranking.dtype)

    def columns_out(self, values: np.ndarray) -> np.ndarray:
        """A per-feature last axis in the model's order -> ``X``'s order."""
        if self.model_of is None:
            return values
        return np.ascontiguousarray(values[..., self.model_of])

    def in_x_order(self) -> "ColumnOrder":
        """The same names with no reordering: values stay in ``X``'s order."""
        return ColumnOrder(None, self.names)

    # -- names ---------------------------------------------------------------------------------
    def position(self, name: str) -> Optional[int]:
        """Position in ``X`` of a column name, or None."""
        if self.names is None:
            return None
        try:
            return self.names.index(name)
        except ValueError:
            return None

    def by_name(self, value: Any, what: str) -> Any:
        """A pandas Series / DataFrame whose labels are names -> plain values in ``X``'s order.

        A Series (per-feature ``sigma``) is matched on its index, a DataFrame (``attributions``)
        on its columns; labels that are the positions 0..d-1 (pandas' default) are positional.
        Anything else is returned unchanged.
        """
        is_frame = hasattr(value, "columns") and hasattr(value, "iloc")
        is_series = not is_frame and hasattr(value, "index") and hasattr(value, "iloc")
        if not (is_frame or is_series):
            return value
        labels = [str(c) for c in (value.columns if is_frame else value.index)]
        d = len(labels)
        if labels == [str(i) for i in range(d)]:
            return value.to_numpy()
        if self.names is None:
            raise ValueError(f"{what}: labelled by names {labels[:3]}..., but neither X nor the model "
                             "has feature names; pass a plain array in X's column order")
        where = [self.position(c) for c in labels]
        missing = [c for c, p in zip(labels, where) if p is None]
        absent = sorted(set(self.names) - set(labels))
        if missing or absent or len(set(labels)) != d:
            raise ValueError(f"{what}: its names must be X's columns, each once; unknown {missing[:5]}, "
                             f"missing {absent[:5]}")
        order = np.argsort(np.asarray(where))
        data = value.to_numpy()
        return data[:, order] if is_frame else data[order]


def identity_order(names: Optional[Sequence[str]]) -> ColumnOrder:
    """The order of a numpy ``X``: positions are the model's, names the model's."""
    return ColumnOrder(None, None if names is None else list(names))


def match_frame(columns: List[str], model_names: Optional[List[str]], d: int, lightgbm: bool,
                name: str) -> Tuple[Optional[List[int]], ColumnOrder]:
    """Match DataFrame column names to the model's feature names.

    Returns the positions in the DataFrame of the model's features (in the model's order; None
    to use the frame as is) and the :class:`ColumnOrder` of the used columns.
    """
    if model_names is None:
        return None, ColumnOrder(None, list(columns) if len(columns) == d else None)
    lookup: dict[str, int] = {}
    for i, c in enumerate(columns):
        lookup.setdefault(c, i)  # a repeated name: its first column
    if lightgbm:
        for i, c in enumerate(columns):
            lookup.setdefault(lightgbm_name(c), i)
    found = [lookup.get(n) for n in model_names]
    if any(p is None for p in found):
        if len(columns) == d and columns == [str(i) for i in range(d)]:
            return None, identity_order(model_names)  # pandas' default labels: positional
        missing = [n for n, p in zip(model_names, found) if p is None]
        raise ValueError(
            f"{name}: DataFrame columns do not match the model's feature names; "
            f"missing {missing[:5]}{'...' if len(missing) > 5 else ''}; pass a DataFrame with "
            "these columns, or a numpy array in the model's feature order"
        )
    pos = [int(p) for p in found if p is not None]
    used = sorted(pos)  # the used columns, in X's order
    x_of = np.searchsorted(np.asarray(used), np.asarray(pos)).astype(np.int64)
    return pos, ColumnOrder(x_of, [columns[p] for p in used])
