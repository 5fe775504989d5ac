"""Comparing explanations: estimation error, the SHAP ranking, global scores, conciseness.

>>> from pgexact import metrics
>>> metrics.nmae(exact, estimate)                 # sum|y - y_hat| / sum|y|
>>> R = metrics.shap_ranking(model, X)            # (n, d) SHAP ranking, most important first
>>> metrics.global_scores(R, "geom")              # the paper's aggregate R_i per feature
>>> metrics.conciseness(R, "top1")                # entropy (bits) of the normalised R_i
>>> metrics.compare(model, X, sigma_rank=0.3)     # mean PGI² per sigma': greedy vs SHAP vs yours
>>> metrics.stability(Z)                          # Nogueira et al. (2018), Z: (B, d) 0/1 selections
>>> metrics.importance_r2(imp, truth)             # fseval's scores against ground truth
>>> metrics.validation_curve(fit_score, imp)      # retrain on the top k, k = 1..d
>>> metrics.agreement(model, X, {"shap": phi, "greedy": R})  # which explainer, and how sure

Only numpy is needed at import; shap and pandas are imported by the functions that use them.
The ranking statistics live in ``_ranking_stats`` (numpy only), the comparisons with SHAP in
``_comparison``, the feature-selection benchmark metrics (ground truth, stability, validation
curve) in ``_selection_metrics``, the comparison of explainers across metrics and rows
(:func:`agreement`, :class:`AgreementResult`; docs/agreement.md) in ``_agreement`` with its
statistics in ``_agreement_stats``; this module is their public face.
"""

from __future__ import annotations

from ._agreement import AgreementResult, agreement
from ._comparison import compare, shap_ranking, shap_values
from ._ranking_stats import conciseness, global_scores, nmae, rank_counts
from ._selection_metrics import (curve_area, holdout_scorer, importance_log_loss, importance_r2,
                                 importance_variance, normalize_importances, stability,
                                 stability_interval, top_k_mask, top_k_precision_recall,
                                 validation_curve)

__all__ = ["nmae", "shap_ranking", "shap_values", "global_scores", "conciseness", "compare",
           "rank_counts", "stability", "stability_interval", "importance_r2",
           "importance_log_loss", "importance_variance", "normalize_importances", "top_k_mask",
           "top_k_precision_recall", "validation_curve", "holdout_scorer", "curve_area",
           "agreement", "AgreementResult"]
