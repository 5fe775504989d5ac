"""Which output column(s) of a model a call explains: the ``output=`` argument.

``output`` is, in every public function:

* ``None`` -- the model's default (its only output; the probability of class 1 for a binary
  forest classifier); a multi-class model needs one of the others;
* an ``int`` -- a *position* in the model's outputs, or a *class label* of an estimator with
  ``classes_`` (scikit-learn, the XGBoost / LightGBM / CatBoost scikit-learn wrappers);
* any other value -- a class label, matched against ``classes_``;
* ``"all"`` -- every output, as an extra axis of length K in the results;
* :class:`ClassLabel` / :class:`ClassPosition` -- say which of the two an int means.

An int that is both a label and a position with different meanings (``classes_ == [1, 2, 3]``
and ``output=1``) is never guessed: it is refused, naming the two wrappers. Labels name outputs
only when the model has one output per class (multi-class models, binary forest classifiers).

A parsed model offers its outputs as :class:`ModelOutputs` (built by each library adapter),
so that ``"all"`` parses the model once and selects every output from it.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Callable, List, NamedTuple, Optional, Sequence, Union

import numpy as np


if TYPE_CHECKING:  # pragma: no cover
    from ..ensemble import TreeEnsemble

__all__ = ["ALL", "ClassLabel", "ClassPosition", "ModelOutputs", "arena_outputs", "as_output", "class_labels", "is_all",
           "per_output", "positions", "refuse_all", "single_position", "stack_outputs"]

#: ``output="all"``: every output of the model
ALL = "all"


class ClassLabel(NamedTuple):
    """``output=pgexact.ClassLabel(v)``: the output of the class whose label (in ``classes_``) is v."""

    label: Any


class ClassPosition(NamedTuple):
    """``output=pgexact.ClassPosition(k)``: output column k, whatever the class labels are."""

    position: int


class ModelOutputs(NamedTuple):
    """A parsed model's output columns, each selectable without parsing the model again.

    Parameters
    ----------
    n_outputs : int
        Number of output columns.
    what : str
        The model as error messages name it (``"XGBoost model"``).
    default : int or None
        The output used when ``output`` is None; None when a multi-output model needs one.
    select : callable
        ``select(k) -> TreeEnsemble`` of output k (a valid position).
    """

    n_outputs: int
    what: str
    default: Optional[int]
    select: Callable[[int], "TreeEnsemble"]


def arena_outputs(full: Any, what: str, check: Optional[Callable[["TreeEnsemble"], None]],
                  always_select: bool = False, **ensemble: Any) -> ModelOutputs:
    """The outputs of a parsed multi-output arena, output k selected by ``Arena.select_output``.

    Parameters
    ----------
    full : Arena
        The parser's arena, every output.
    what : str
        The model as error messages name it.
    check : callable, optional
        ``check(ensemble)`` on every selected output (the comparison with the library's predict).
    always_select : bool, default False
        Select even a single-output arena's output 0 (XGBoost's adapter always did).
    **ensemble
        The :class:`~pgexact.TreeEnsemble` keywords shared by every output (feature names,
        source, metadata).
    """
    from ..ensemble import TreeEnsemble

    def select(k: int) -> TreeEnsemble:
        arena = full.select_output(k) if always_select or full.n_outputs > 1 else full
        ens = TreeEnsemble(arena, output=k, n_outputs=int(full.n_outputs), **ensemble)
        if check is not None:
            check(ens)
        return ens

    return ModelOutputs(int(full.n_outputs), what, None, select)


def is_all(output: Any) -> bool:
    """``output`` asks for every output (the string ``"all"``)."""
    return isinstance(output, str) and output == ALL


def refuse_all(output: Any, what: str) -> None:
    """``output="all"`` where a function computes one output at a time."""
    if is_all(output):
        raise ValueError(f"output: {what} computes one output at a time; loop over the classes "
                         "instead, e.g. [f(..., output=k) for k in range(n_outputs)]")


def class_labels(estimator: Any) -> Optional[List[Any]]:
    """The class labels of a fitted classifier (``classes_``) as Python values, else None."""
    try:
        classes = getattr(estimator, "classes_", None)
    except Exception:  # an unfitted wrapper may raise instead of returning None
        return None
    if classes is None or isinstance(classes, (str, bytes)):
        return None
    try:
        labels = list(np.asarray(classes).tolist())
    except Exception:  # pragma: no cover - exotic label containers
        return None
    return labels if labels and all(not isinstance(v, list) for v in labels) else None


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _comparable(value: Any, label: Any) -> bool:
    """Whether ``value`` may name ``label``: a bool only a bool label, an int an int or float
    label (classes_ of float targets hold 1.0 for the class 1), a float only a float label, any
    other value a label of its own type."""
    if isinstance(value, (bool, np.bool_)) or isinstance(label, (bool, np.bool_)):
        return isinstance(value, (bool, np.bool_)) and isinstance(label, (bool, np.bool_))
    if _is_int(value):
        return isinstance(label, (numbers.Integral, float, np.floating))
    if isinstance(value, (float, np.floating)):
        return isinstance(label, (float, np.floating))
    return isinstance(label, type(value)) or isinstance(value, type(label))


def _label_position(value: Any, labels: Sequence[Any]) -> Optional[int]:
    """Where ``value`` sits in ``labels`` (first match), or None."""
    for p, label in enumerate(labels):
        try:
            if _comparable(value, label) and bool(label == value):
                return p
        except Exception:  # pragma: no cover - labels that cannot be compared
            continue
    return None


def _show(labels: Sequence[Any]) -> str:
    shown = ", ".join(repr(v) for v in labels[:10])
    return f"[{shown}{', ...' if len(labels) > 10 else ''}]"


def single_position(output: Any, n_outputs: Optional[int], labels: Optional[Sequence[Any]],
                    what: str = "model", default: Optional[int] = None) -> Optional[int]:
    """The position ``output`` names, or None for ``output=None`` without a default.

    Parameters
    ----------
    output : None, int, label, ClassLabel or ClassPosition
        The user's ``output`` (not ``"all"``).
    n_outputs : int or None
        The model's number of outputs; None when not known yet (Monte Carlo: the library's
        predict tells, and :func:`pgexact._models._target.select_output` checks the range).
    labels : sequence or None
        The estimator's ``classes_``; they name outputs only when there is one per class.
    what : str
        The model as error messages name it.
    default : int, optional
        The output of ``output=None``.
    """
    labels_apply = labels is not None and (n_outputs is None or len(labels) == n_outputs)
    if output is None:
        if default is not None or n_outputs is None:
            return default
        if labels_apply and n_outputs > 1:
            assert labels is not None
            raise ValueError(f"output: this {what} has {n_outputs} outputs; pass output=k with k in "
                             f"0..{n_outputs - 1} or a class label in {_show(labels)}, or "
                             "output='all' for every output")
        return as_output(None, n_outputs, what)
    if isinstance(output, ClassPosition):
        k = output.position
        if not _is_int(k):
            raise TypeError(f"output: ClassPosition expects an integer, got {k!r}")
        return as_output(int(k), n_outputs, what) if n_outputs is not None else _nonnegative(int(k))
    if isinstance(output, ClassLabel):
        if labels is None:
            raise ValueError(f"output: ClassLabel({output.label!r}) needs a classifier with classes_; "
                             f"this {what} has no class labels: pass a position, output=k")
        if not labels_apply:
            raise ValueError(f"output: this {what} has {n_outputs} output(s) for {len(labels)} classes "
                             f"{_show(labels)}, so class labels do not name its outputs; pass a "
                             "position (a binary boosted model's one output is the margin of "
                             f"class {labels[-1]!r})")
        p = _label_position(output.label, labels)
        if p is None:
            raise ValueError(f"output: {output.label!r} is not one of the class labels {_show(labels)}")
        return p
    if labels_apply:
        assert labels is not None
        p = _label_position(output, labels)
        n = n_outputs if n_outputs is not None else len(labels)
        if _is_int(output):
            k = int(output)
            if p is not None and 0 <= k < n and p != k:
                raise ValueError(
                    f"output: {k} is both a class label (classes_[{p}]) and a position (the output "
                    f"of class {labels[k]!r}) in classes_ {_show(labels)}; pass "
                    f"output=pgexact.ClassLabel({k}) or output=pgexact.ClassPosition({k})")
            if p is not None:
                return p
            return as_output(k, n_outputs, what) if n_outputs is not None else _nonnegative(k)
        if p is not None:
            return p
        raise TypeError(f"output: expected a position (int), a class label in {_show(labels)} or "
                        f"'all', got {output!r}")
    if n_outputs is None:
        if not _is_int(output):
            raise TypeError(f"output: expected an integer position or 'all', got {output!r}")
        return _nonnegative(int(output))
    return as_output(output, n_outputs, what)


def _nonnegative(k: int) -> int:
    if k < 0:
        raise ValueError(f"output: {k} is out of range; positions start at 0")
    return k


def positions(output: Any, outputs: ModelOutputs, labels: Optional[Sequence[Any]]) -> List[int]:
    """Every position ``output`` selects: all of them for ``"all"``, else one."""
    if is_all(output):
        return list(range(outputs.n_outputs))
    k = single_position(output, outputs.n_outputs, labels, outputs.what, outputs.default)
    assert k is not None  # with n_outputs known, None resolves or raises
    return [k]


def stack_outputs(output: Any, results: Sequence[np.ndarray]) -> np.ndarray:
    """One result per output -> the result of ``output``: axis 1 of length K for ``"all"``.

    ``(n,)`` per output becomes ``(n, K)``, ``(n, d)`` becomes ``(n, K, d)``.
    """
    if not is_all(output):
        return results[0]
    return np.stack(list(results), axis=1)


def per_output(value: Any, n_outputs: int, output: Any, name: str,
               layout: str = "attributions") -> List[Any]:
    """A ranking or attributions argument, one per output of an ``output="all"`` call.

    With ``output="all"``: a ranking of shape ``(n, K, d)`` (what :func:`pgexact.rank` returns
    for ``"all"``), attributions of shape ``(n, d, K)`` (shap's multi-output layout, an array or
    a ``shap.Explanation``) or a list of K ``(n, d)`` arrays (older shap's layout) give one per
    output; anything else (``(d,)``, ``(n, d)``, a DataFrame) applies to every output.
    Otherwise the value is passed on unchanged (one output). ``layout`` is ``"ranking"`` or
    ``"attributions"``; ``name`` is the argument's name in error messages.
    """
    if value is None or not is_all(output):
        return [value] * (n_outputs if is_all(output) else 1)
    if layout == "attributions" and hasattr(value, "values") and hasattr(value, "base_values"):
        value = value.values  # a shap.Explanation
    if layout == "attributions" and isinstance(value, (list, tuple)):
        try:
            stacked = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: expected a numeric array, or a list of {n_outputs} (n, d) "
                            "arrays (one per output)") from None
        if stacked.ndim == 3:
            if stacked.shape[0] != n_outputs:
                raise ValueError(f"{name}: a list of {stacked.shape[0]} arrays, but the model has "
                                 f"{n_outputs} outputs; pass one (n, d) array per output")
            return [stacked[k] for k in range(n_outputs)]
        return [value] * n_outputs
    if _is_dataframe(value):
        return [value] * n_outputs
    try:
        arr = np.asarray(value)
    except Exception:  # the single-output validators say what is wrong
        return [value] * n_outputs
    if arr.ndim != 3:
        return [value] * n_outputs
    if layout == "attributions":
        if arr.shape[2] != n_outputs:
            raise ValueError(f"{name}: expected shape (n, d, {n_outputs}) (one (n, d) slice per "
                             f"output, shap's multi-output layout), got {arr.shape}")
        return [arr[:, :, k] for k in range(n_outputs)]
    if arr.shape[1] != n_outputs:
        raise ValueError(f"{name}: expected shape (n, {n_outputs}, d) (one ranking per output, as "
                         f"rank(..., output='all') returns), got {arr.shape}")
    return [arr[:, k, :] for k in range(n_outputs)]


def _is_dataframe(value: Any) -> bool:
    return hasattr(value, "columns") and hasattr(value, "to_numpy") and hasattr(value, "iloc")


def as_output(output: Optional[Union[int, np.integer]], n_outputs: int, what: str) -> int:
    """Which output column of a model; required when it has several."""
    if output is None:
        if n_outputs > 1:
            raise ValueError(
                f"output: this {what} has {n_outputs} outputs; "
                f"pass output=k with k in 0..{n_outputs - 1}, or output='all' "
                "for every output"
            )
        return 0
    if isinstance(output, (bool, np.bool_)) or not isinstance(output, numbers.Integral):
        raise TypeError(f"output: expected an integer, got {output!r}")
    k = int(output)
    if not 0 <= k < n_outputs:
        raise ValueError(f"output: {k} is out of range; this {what} has {n_outputs} output(s)")
    return k
