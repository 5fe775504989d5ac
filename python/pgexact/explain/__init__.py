"""The explainer room: :class:`Explainer` (``explainer``), the :class:`Explanation` it returns
(``explanation``) and its figures (``plotting``)."""

from __future__ import annotations

from .explainer import Explainer
from .explanation import Explanation

__all__ = ["Explainer", "Explanation"]
