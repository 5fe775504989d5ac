"""TreeEnsemble: one output column of a parsed tree model, ready for the exact kernels."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from ._data._rows import as_matrix
from ._models import _parsers


class TreeEnsemble:
    """A tree model reduced to one output column, held in an immutable C++ node arena.

    Create it with :func:`pgexact.load`. ``predict`` reproduces the library's own raw output
    (regression value, margin / log-odds, or forest probability) for that column.
    """

    __slots__ = ("_arena", "_feature_names", "_output", "_n_outputs", "_source", "_meta")

    def __init__(
        self,
        arena: "_parsers.Arena",
        *,
        feature_names: Optional[List[str]] = None,
        output: int = 0,
        n_outputs: int = 1,
        source: str = "",
        meta: Optional[Dict[str, Any]] = None,
    ) -> None:
        if arena.n_outputs != 1:
            raise ValueError("arena: expected a single-output arena (use Arena.select_output)")
        if feature_names is not None:
            feature_names = [str(n) for n in feature_names]
            if len(feature_names) != arena.n_features:
                raise ValueError(
                    f"feature_names: expected {arena.n_features} names, got {len(feature_names)}"
                )
        self._arena = arena
        self._feature_names = feature_names
        self._output = int(output)
        self._n_outputs = int(n_outputs)
        self._source = source
        self._meta = dict(meta or {})

    # -- structure -------------------------------------------------------------------------
    @property
    def n_trees(self) -> int:
        """Number of trees that contribute to this output."""
        return int(self._arena.n_trees)

    @property
    def n_nodes(self) -> int:
        """Total number of nodes (inner nodes and leaves) over those trees."""
        return int(self._arena.n_nodes)

    @property
    def n_leaves(self) -> int:
        """Total number of leaves over those trees."""
        return int(self._arena.n_leaves)

    @property
    def n_features(self) -> int:
        """Number of input columns the model expects."""
        return int(self._arena.n_features)

    @property
    def feature_names(self) -> Optional[List[str]]:
        """Feature names recorded by the model, or None."""
        return None if self._feature_names is None else list(self._feature_names)

    @property
    def output(self) -> int:
        """Which output column of the original model this ensemble computes."""
        return self._output

    @property
    def n_outputs(self) -> int:
        """Number of output columns of the original model."""
        return self._n_outputs

    @property
    def categorical_features(self) -> List[int]:
        """Features the model splits on categorically (model order)."""
        return [int(j) for j in self._arena.categorical_features]

    def split_categories(self, j: int) -> np.ndarray:
        """The category codes the model names for feature ``j`` (``noise.categorical``'s default).

        HistGradientBoosting: the categories its encoder learned. Otherwise: every code that
        is a member of some categorical split's set on ``j`` (empty for a numeric feature).
        """
        known = self._meta.get("categories", {}).get(int(j))
        if known is not None:
            return np.asarray(known, dtype=np.float64)
        return np.asarray(self._arena.split_categories(int(j)), dtype=np.float64)

    @property
    def base_score(self) -> float:
        """The intercept, in raw-output (margin) space."""
        return float(self._arena.base_score[0])

    @property
    def max_depth(self) -> int:
        return int(self._arena.max_depth)

    @property
    def source(self) -> str:
        """What the model was loaded from (library and type)."""
        return self._source

    # -- prediction ------------------------------------------------------------------------
    def predict(self, X: Any) -> np.ndarray:
        """Raw output for every row of X, shape (n,), float64."""
        return self._arena.predict(as_matrix(X, self), 0)

    def apply(self, X: Any) -> np.ndarray:
        """Arena id of the leaf each tree reaches for each row, shape (n, n_trees)."""
        return self._arena.apply(as_matrix(X, self))

    # -- pickling: the arena travels as its compact binary form and is validated on arrival --
    def __getstate__(self) -> Dict[str, Any]:
        return {
            "arena": self._arena.to_bytes(),
            "feature_names": self._feature_names,
            "output": self._output,
            "n_outputs": self._n_outputs,
            "source": self._source,
            "meta": self._meta,
        }

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._arena = _parsers.Arena.from_bytes(state["arena"])
        self._feature_names = state["feature_names"]
        self._output = state["output"]
        self._n_outputs = state["n_outputs"]
        self._source = state["source"]
        self._meta = state["meta"]

    def __repr__(self) -> str:
        out = f", output={self._output}" if self._n_outputs > 1 else ""
        return (
            f"<pgexact.TreeEnsemble from {self._source or 'arena'}: {self.n_trees} trees, "
            f"{self.n_leaves} leaves, {self.n_features} features{out}>"
        )
