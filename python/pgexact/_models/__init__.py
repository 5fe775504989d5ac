"""The model room: from a user's model object or file to parsed :class:`~pgexact.TreeEnsemble` s.

``_adapters`` is the registry (``load``, ``load_outputs``, ``predictor``) with one module per
library (``_xgboost``, ``_lightgbm``, ``_catboost``, ``_sklearn``); ``_parsers`` is the one
module calling the extension's parsers and arena; ``_outputs`` is the ``output=`` argument and
a parsed model's selectable outputs; ``_pipeline`` unwraps scikit-learn Pipelines and
``_target`` wraps a library's own predict for Monte Carlo. Nothing here imports the exact
kernels or the evaluation rooms.
"""

__all__: list[str] = []
