"""The result of :func:`pgexact.metrics.agreement`: the arrays, a summary, tables and JSON.

numpy only at import; pandas is imported by :meth:`AgreementResult.to_frame` and
:meth:`AgreementResult.scores_frame`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .._optional import require

__all__ = ["AgreementResult"]

#: the array attributes, in the order of :meth:`AgreementResult.to_dict`
_ARRAYS = ("scores", "mean_scores", "ranks", "win_rate", "verdict", "mean_difference", "interval",
           "flip_probability", "rows_needed", "seed_flip_rate", "metric_agreement",
           "error_case_rate", "similarity_correlation", "verdict_agreement", "hardness")
#: the pairwise (m, k, k) statistics, the columns of :meth:`AgreementResult.to_frame`
_PAIRWISE = ("win_rate", "verdict", "mean_difference", "flip_probability", "rows_needed",
             "seed_flip_rate", "similarity_correlation", "verdict_agreement")


def _encode(x: Any) -> Any:
    """Nested lists for JSON: NaN -> None, +-inf -> "inf" / "-inf" (JSON has neither)."""
    if isinstance(x, np.ndarray):
        return _encode(x.tolist())
    if isinstance(x, (list, tuple)):
        return [_encode(v) for v in x]
    if isinstance(x, (float, np.floating)):
        v = float(x)
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else v
    if isinstance(x, np.integer):
        return int(x)
    return x


def _decode(x: Any) -> np.ndarray:
    """The inverse of :func:`_encode` for an array of floats."""
    def one(v: Any) -> Any:
        if isinstance(v, list):
            return [one(u) for u in v]
        return {None: math.nan, "inf": math.inf, "-inf": -math.inf}.get(v, v) \
            if v is None or isinstance(v, str) else v
    return np.asarray(one(x), dtype=np.float64)


def _fmt(x: float, width: int = 8, digits: int = 3, signed: bool = False) -> str:
    if math.isnan(x):
        return "-".rjust(width)
    if math.isinf(x):
        return (">n" if x > 0 else "-inf").rjust(width)
    text = f"{x:+.{digits}g}" if signed else f"{x:.{digits}g}"
    return text.rjust(width)


@dataclass(repr=False, eq=False)
class AgreementResult:
    """Per-row scores of k explainers under m metrics on n rows, and how far each verdict holds.

    Every ``(m, k, k)`` array compares explainer ``i`` (second axis) with ``j`` (third axis)
    under one metric, oriented so that positive means ``i`` is better; its diagonal is NaN,
    but for the similarity statistics (1 where defined). Definitions: docs/agreement.md.

    Attributes
    ----------
    explainers, metrics : tuple of str
        The names, in the order of the axes.
    higher_is_better, monte_carlo : dict of str to bool
        Per metric.
    n_rows : int
        n.
    scores : (m, n, k)
        Per-row scores as each metric defines them (not oriented), NaN where undefined.
    mean_scores, ranks : (m, k)
        The mean over rows and the rank of each explainer on it (1 = best, ties averaged).
    win_rate : (m, k, k)
        The share of rows on which i beats j, ties counting 1/2.
    verdict, mean_difference : (m, k, k)
        The sign (+1: i better) and value of the oriented mean difference.
    interval : (m, k, k, 2)
        Bootstrap percentile interval of the mean difference at ``settings["level"]``.
    flip_probability : (m, k, k)
        The probability that a bootstrap resample of the rows reverses or ties the verdict.
    rows_needed : (m, k, k)
        The smallest resample size from which on the flip probability stays below 5 % (inf:
        not even at n).
    flip_curve : dict
        ``"sizes"`` (s,) and ``"probability"`` (m, k, k, s): the flip probability by size.
    seed_flip_rate : (m, k, k)
        The probability that two Monte Carlo seeds give different verdicts; 0 for exact metrics.
    metric_agreement : (m, m)
        The share of explainer pairs on which two metrics give the same verdict.
    error_case_rate : (m,)
        The share of explainer pairs on which a majority of the other metrics contradicts one.
    similarity_correlation, verdict_agreement : (m, k, k)
        Spearman's correlation of the per-row scores; the share of rows on which both do well
        or both badly (each relative to its own median over the rows).
    hardness : (n,)
        ``1 - max_i PGI²(x, explainer i) / PG²(x, all features)``; NaN where PG²(all) = 0.
    hardest_rows : (h,) int
        The hardest rows, hardest first.
    settings : dict
        sigma, noise, n_samples, n_seeds, n_bootstraps, level, seed, top_k, output.
    notes : list of str
        Why some scores are NaN.
    """

    explainers: Tuple[str, ...]
    metrics: Tuple[str, ...]
    higher_is_better: Dict[str, bool]
    monte_carlo: Dict[str, bool]
    n_rows: int
    scores: np.ndarray
    mean_scores: np.ndarray
    ranks: np.ndarray
    win_rate: np.ndarray
    verdict: np.ndarray
    mean_difference: np.ndarray
    interval: np.ndarray
    flip_probability: np.ndarray
    rows_needed: np.ndarray
    flip_curve: Dict[str, np.ndarray]
    seed_flip_rate: np.ndarray
    metric_agreement: np.ndarray
    error_case_rate: np.ndarray
    similarity_correlation: np.ndarray
    verdict_agreement: np.ndarray
    hardness: np.ndarray
    hardest_rows: np.ndarray
    settings: Dict[str, Any] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    # ------------------------------------------------------------------------------ tables
    def _pairs(self) -> List[Tuple[int, int]]:
        k = len(self.explainers)
        return [(i, j) for i in range(k) for j in range(k) if i != j]

    def to_frame(self) -> Any:
        """The pairwise statistics as a long table, one row per metric and ordered pair.

        Returns
        -------
        pandas.DataFrame
            Columns ``metric, explainer, other, higher_is_better, monte_carlo``, then
            ``win_rate, verdict, mean_difference, lower, upper, flip_probability, rows_needed,
            seed_flip_rate, similarity_correlation, verdict_agreement`` (explainer against
            other, positive = explainer better).
        """
        pd = require("pandas", "AgreementResult.to_frame()")
        records = []
        for a, metric in enumerate(self.metrics):
            for i, j in self._pairs():
                rec: Dict[str, Any] = {
                    "metric": metric, "explainer": self.explainers[i], "other": self.explainers[j],
                    "higher_is_better": self.higher_is_better[metric],
                    "monte_carlo": self.monte_carlo[metric]}
                for name in _PAIRWISE:
                    rec[name] = float(getattr(self, name)[a, i, j])
                rec["lower"], rec["upper"] = (float(v) for v in self.interval[a, i, j])
                records.append(rec)
        columns = ["metric", "explainer", "other", "higher_is_better", "monte_carlo", "win_rate",
                   "verdict", "mean_difference", "lower", "upper", "flip_probability",
                   "rows_needed", "seed_flip_rate", "similarity_correlation", "verdict_agreement"]
        return pd.DataFrame.from_records(records, columns=columns)

    def scores_frame(self) -> Any:
        """The per-row scores as a long table.

        Returns
        -------
        pandas.DataFrame
            Columns ``metric, row, explainer, score`` (the metric's own orientation).
        """
        pd = require("pandas", "AgreementResult.scores_frame()")
        m, n, k = self.scores.shape
        return pd.DataFrame({
            "metric": np.repeat(np.array(self.metrics, dtype=object), n * k),
            "row": np.tile(np.repeat(np.arange(n), k), m),
            "explainer": np.tile(np.array(self.explainers, dtype=object), m * n),
            "score": self.scores.reshape(-1)})

    # -------------------------------------------------------------------------------- JSON
    def to_dict(self) -> Dict[str, Any]:
        """Everything as JSON-able Python values.

        Returns
        -------
        dict
            Arrays as nested lists, NaN as None and infinities as ``"inf"`` / ``"-inf"``
            (:meth:`from_dict` reads them back).
        """
        out: Dict[str, Any] = {
            "explainers": list(self.explainers), "metrics": list(self.metrics),
            "higher_is_better": dict(self.higher_is_better),
            "monte_carlo": dict(self.monte_carlo), "n_rows": int(self.n_rows)}
        for name in _ARRAYS:
            out[name] = _encode(getattr(self, name))
        out["flip_curve"] = {"sizes": [int(s) for s in self.flip_curve["sizes"]],
                             "probability": _encode(self.flip_curve["probability"])}
        out["hardest_rows"] = [int(r) for r in self.hardest_rows]
        out["settings"] = _encode(dict(self.settings))
        out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "AgreementResult":
        """The result :meth:`to_dict` (or ``json.loads`` of :meth:`to_json`) describes.

        Parameters
        ----------
        data : dict
            As :meth:`to_dict` returns it.

        Returns
        -------
        AgreementResult
        """
        kwargs: Dict[str, Any] = {name: _decode(data[name]) for name in _ARRAYS}
        kwargs.update(
            explainers=tuple(data["explainers"]), metrics=tuple(data["metrics"]),
            higher_is_better=dict(data["higher_is_better"]),
            monte_carlo=dict(data["monte_carlo"]), n_rows=int(data["n_rows"]),
            flip_curve={"sizes": np.asarray(data["flip_curve"]["sizes"], dtype=np.int64),
                        "probability": _decode(data["flip_curve"]["probability"])},
            hardest_rows=np.asarray(data["hardest_rows"], dtype=np.int64),
            settings=dict(data.get("settings", {})), notes=list(data.get("notes", [])))
        assert {f.name for f in fields(cls)} == set(kwargs)  # every field read back
        return cls(**kwargs)

    def to_json(self, path: Optional[str] = None) -> str:
        """:meth:`to_dict` as a JSON string (strict JSON: no NaN or Infinity literals).

        Parameters
        ----------
        path : str, optional
            Also write the string to this file.

        Returns
        -------
        str
        """
        text = json.dumps(self.to_dict(), indent=1, allow_nan=False)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        return text

    # ------------------------------------------------------------------------------ summary
    def _pair_cells(self, a: int, i: int, j: int, name_w: int) -> str:
        """One line of the summary: metric a's statistics of explainer i against j."""
        v = self.verdict[a, i, j]
        who = "-" if math.isnan(v) else "tie" if v == 0 else \
            self.explainers[i] if v > 0 else self.explainers[j]
        lo, hi = self.interval[a, i, j]
        interval = "-" if math.isnan(lo) else f"[{lo:+.3g}, {hi:+.3g}]"
        seed = _fmt(self.seed_flip_rate[a, i, j], 0, 2).strip()
        return (f"{who.ljust(name_w)}{_fmt(self.win_rate[a, i, j], 6, 2)}"
                f"{_fmt(self.mean_difference[a, i, j], 11, 3, True)}  {interval.ljust(22)}"
                f"{_fmt(self.flip_probability[a, i, j], 8, 2)}{_fmt(self.rows_needed[a, i, j], 6, 3)}"
                f"  {seed}{'' if self.monte_carlo[self.metrics[a]] else ' (no seed)'}")

    def __repr__(self) -> str:
        k, m = len(self.explainers), len(self.metrics)
        s = self.settings
        lines = [f"AgreementResult: {k} explainers, {m} metrics, {self.n_rows} rows "
                 f"({s.get('n_bootstraps')} bootstraps, {100 * float(s.get('level', 0.95)):g} % "
                 f"intervals; Monte Carlo: {s.get('n_samples')} samples, {s.get('n_seeds')} seeds)"]
        name_w = max(len(e) for e in self.explainers) + 2
        heads = [f"{a}{'^' if self.higher_is_better[a] else 'v'}" for a in self.metrics]
        col_w = max(12, *(len(h) + 2 for h in heads))
        lines.append("mean score (rank), ^ higher / v lower is better:")
        lines.append(" " * name_w + "".join(h.rjust(col_w) for h in heads))
        for e, name in enumerate(self.explainers):
            cells = [f"{_fmt(self.mean_scores[a, e], 0).strip()} ({_fmt(self.ranks[a, e], 0, 2).strip()})"
                     for a in range(m)]
            lines.append(name.ljust(name_w) + "".join(c.rjust(col_w) for c in cells))
        metric_w = max(len(a) for a in self.metrics) + 2
        lines.append("")
        level = f"{100 * float(s.get('level', 0.95)):g} % interval"
        head = (f"{'better'.ljust(name_w)}{'wins':>6}{'mean diff':>11}  {level.ljust(22)}"
                f"{'P(flip)':>8}{'rows':>6}  seed flips")
        lines.append(f"    {'metric'.ljust(metric_w)}{head}")
        for i in range(k):
            for j in range(i + 1, k):
                lines.append(f"  {self.explainers[i]} vs {self.explainers[j]}")
                for a, metric in enumerate(self.metrics):
                    lines.append(f"    {metric.ljust(metric_w)}{self._pair_cells(a, i, j, name_w)}")
        lines.append("")
        lines.append("metric agreement (share of pairs with the same verdict), error-case rate:")
        cell = metric_w + 1
        lines.append(" " * metric_w + "".join(a.rjust(cell) for a in self.metrics)
                     + "error".rjust(cell))
        for a, metric in enumerate(self.metrics):
            lines.append(metric.ljust(metric_w)
                         + "".join(_fmt(x, cell, 2) for x in self.metric_agreement[a])
                         + _fmt(self.error_case_rate[a], cell, 2))
        hard = ", ".join(f"{int(r)} ({self.hardness[r]:.2f})" for r in self.hardest_rows)
        lines.append("")
        lines.append(f"hardest rows (1 - best PGI² / PG²(all)): {hard or '-'}")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)
