"""scikit-learn Pipelines: one behaviour everywhere.

Every metric, :class:`pgexact.Explainer` and :mod:`pgexact.mc` accept a fitted ``Pipeline``
whose last step is a supported tree model: the earlier steps **transform X**
(``pipeline[:-1].transform(X)``) and the final model is evaluated on the transformed features.
Perturbation, positions and names all refer to that transformed space; its columns are named by
``pipeline[:-1].get_feature_names_out()`` when the steps provide names.
:func:`pgexact.load` returns a model, not a function of raw rows, so it refuses a Pipeline and
says what to pass instead.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

__all__ = ["is_pipeline", "split_pipeline", "unwrap"]


def is_pipeline(model: Any) -> bool:
    """True for a scikit-learn ``Pipeline`` (or a subclass)."""
    return any(c.__name__ == "Pipeline" and (c.__module__ or "").startswith("sklearn.")
               for c in type(model).__mro__)


def split_pipeline(model: Any) -> Tuple[Optional[Any], Any]:
    """``(preprocessing or None, final estimator)`` of a Pipeline; ``(None, model)`` otherwise."""
    if not is_pipeline(model):
        return None, model
    steps = list(getattr(model, "steps", None) or [])
    if not steps:
        raise TypeError("model: the scikit-learn Pipeline has no steps; pass a fitted Pipeline whose "
                        "last step is a tree model")
    step_name, last = steps[-1]
    if last is None or isinstance(last, str):
        raise TypeError(f"model: the last step of the Pipeline ({step_name!r}) is {last!r}; "
                        "pgexact needs a tree model there")
    pre = model[:-1] if len(steps) > 1 else None
    if pre is not None and all(s is None or s == "passthrough" for _, s in steps[:-1]):
        pre = None
    return pre, last


def _feature_names_out(pre: Any, n_columns: int) -> Optional[List[str]]:
    try:
        names = [str(n) for n in pre.get_feature_names_out()]
    except Exception:  # steps without feature names out: positional
        return None
    return names if len(names) == n_columns else None


def transform(pre: Any, X: Any) -> Any:
    """X through a Pipeline's preprocessing steps, as a DataFrame named by the steps when they
    name their output (pandas installed), else as the steps return it."""
    try:
        out = pre.transform(X)
    except Exception as exc:
        raise ValueError(
            f"X: the Pipeline's preprocessing steps could not transform X ({type(exc).__name__}: "
            f"{exc}); pass the raw rows the Pipeline was fitted on, or pass pipeline[-1] as the "
            "model with X = pipeline[:-1].transform(X_raw)"
        ) from None
    if hasattr(out, "columns") or not hasattr(out, "shape") or len(out.shape) != 2:
        return out
    names = _feature_names_out(pre, int(out.shape[1]))
    if names is None:
        return out
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is optional
        return out
    if hasattr(out, "toarray"):
        return out  # sparse: refused later with its own message
    return pd.DataFrame(out, columns=names)


def unwrap(model: Any, X: Any) -> Tuple[Any, Any]:
    """The tree model and the rows it sees: a Pipeline's final step on the transformed X."""
    pre, final = split_pipeline(model)
    if pre is None:
        return final, X
    return final, transform(pre, X)
