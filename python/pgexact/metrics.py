"""Comparing explanations: estimation error, the SHAP ranking, global scores, conciseness.

>>> from pgexact import metrics
>>> metrics.nmae(exact, estimate)                 # sum|y - y_hat| / sum|y|
>>> R = metrics.shap_ranking(model, X)            # (n, d) SHAP ranking, most important first
>>> metrics.global_scores(R, "geom")              # the paper's aggregate R_i per feature
>>> metrics.conciseness(R, "top1")                # entropy (bits) of the normalised R_i
>>> metrics.compare(model, X, sigma_rank=0.3)     # mean PGI² per sigma': greedy vs SHAP vs yours

Only numpy is needed at import; shap and pandas are imported by the functions that use them.
The ranking statistics live in ``_ranking_stats`` (numpy only), the comparisons with SHAP in
``_comparison``; this module is their public face.
"""

from __future__ import annotations

from ._comparison import compare, shap_ranking, shap_values
from ._ranking_stats import conciseness, global_scores, nmae, rank_counts

__all__ = ["nmae", "shap_ranking", "shap_values", "global_scores", "conciseness", "compare", "rank_counts"]
