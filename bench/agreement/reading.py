"""The numbers of REPORT.md's reading that the printed tables do not show, from results.json.

Run from the repository root: ``PYTHONPATH=python python bench/agreement/reading.py``.
Not part of the test run. Prints: each metric's winners over the setups; exact PGI² against
Monte Carlo PGI² at the run's sample count, pair by pair (rows needed, seed flips); the subset
flip probabilities without the random baseline, over setups and over datasets (the families'
cell ranks averaged); how much the model families agree on which rows are hard.
"""

from __future__ import annotations

import json
import os
import warnings
from collections import Counter
from typing import Any, Dict, List

import numpy as np

from pgexact.metrics._agreement_across import (cell_ranks, dataset_ranks, kendall_w,
                                               subset_flip_probability)

HERE = os.path.dirname(os.path.abspath(__file__))


def arr(x: Any) -> np.ndarray:
    """A results.json array back as floats (None -> NaN, "inf" -> inf)."""
    def conv(v: Any) -> Any:
        if isinstance(v, list):
            return [conv(u) for u in v]
        return np.nan if v is None else {"inf": np.inf, "-inf": -np.inf}.get(v, v)
    return np.asarray(conv(x), dtype=float)


def winners(res: Dict[str, Any]) -> None:
    print("winners per metric (setups; a tie shares the setup)")
    for m in res["across"]["metrics"]:
        c: Counter = Counter()
        for s in res["setups"]:
            ag = s["agreement"]
            if m in ag["metrics"]:
                r = arr(ag["ranks"])[ag["metrics"].index(m)]
                best = np.flatnonzero(r == np.nanmin(r))
                for b in best:
                    c[ag["explainers"][b]] += 1 / len(best)
        print(f"  {m:11s}", ", ".join(f"{k} {v:.3g}" for k, v in c.most_common()))


def exact_vs_mc(res: Dict[str, Any], baseline: str = "random") -> None:
    need: List[List[float]] = []
    seed_flips, differ = [], []
    for s in res["setups"]:
        ag = s["agreement"]
        ex, M = ag["explainers"], ag["metrics"]
        a, b = M.index("pgi2"), M.index("pgi2_mc")
        RN, SF, V = arr(ag["rows_needed"]), arr(ag["seed_flip_rate"]), arr(ag["verdict"])
        keep = [k for k, e in enumerate(ex) if e != baseline]
        for x, i in enumerate(keep):
            for j in keep[x + 1:]:
                need.append([RN[a, i, j], RN[b, i, j]])
                seed_flips.append((SF[b, i, j], RN[a, i, j]))
                differ.append(V[a, i, j] != V[b, i, j])
    N = np.asarray(need)
    fe, fm = np.isfinite(N[:, 0]), np.isfinite(N[:, 1])
    both = N[fe & fm]
    print(f"\nexact PGI² vs Monte Carlo PGI² ({res['settings']['mc_samples']} samples), "
          f"{len(N)} pairs without {baseline!r}:")
    print(f"  settled by both {int(np.sum(fe & fm))}, exact only {int(np.sum(fe & ~fm))}, "
          f"MC only {int(np.sum(~fe & fm))}, neither {int(np.sum(~fe & ~fm))}")
    q75 = np.percentile(both, 75, axis=0)
    print(f"  where both settle: MC needs more rows on {np.mean(both[:, 1] > both[:, 0]):.0%}, "
          f"fewer on {np.mean(both[:, 1] < both[:, 0]):.0%}; mean ratio "
          f"{np.mean(both[:, 1] / both[:, 0]):.2f}; 75th percentile {q75[0]:g} vs {q75[1]:g} rows")
    sf = np.asarray(seed_flips)
    flips = sf[sf[:, 0] > 0]
    print(f"  verdict on all rows differs on {np.mean(differ):.1%} of pairs; seed flips on "
          f"{len(flips)} pairs ({len(flips) / len(sf):.0%}, max {sf[:, 0].max():.2f}), of which "
          f"{int(np.sum(~np.isfinite(flips[:, 1])))} are pairs exact PGI² does not settle either")


def pgi2_rows_needed(res: Dict[str, Any], first: str = "PG² greedy",
                     baseline: str = "random") -> None:
    """Exact PGI²'s rows needed: the pairs with ``first``, and the others."""
    with_first, rest = [], []
    for s in res["setups"]:
        ag = s["agreement"]
        ex = ag["explainers"]
        RN = arr(ag["rows_needed"])[ag["metrics"].index("pgi2")]
        keep = [k for k, e in enumerate(ex) if e != baseline]
        for x, i in enumerate(keep):
            for j in keep[x + 1:]:
                (with_first if first in (ex[i], ex[j]) else rest).append(RN[i, j])
    w, r = np.asarray(with_first), np.asarray(rest)
    done = r[np.isfinite(r)]
    print(f"  exact PGI² rows needed: pairs with {first!r} {len(w)}, at most {w.max():g} rows; "
          f"the other {len(r)}: settled {len(done)} ({len(done) / len(r):.0%}), upper quartile "
          f"{np.percentile(done, 75):g} rows among them")


def subset_flips(res: Dict[str, Any], baseline: str = "random") -> None:
    a = res["across"]
    keep = [k for k, e in enumerate(a["explainers"]) if e != baseline]
    hib: Dict[str, bool] = {}
    for s in res["setups"]:
        hib.update(s["agreement"]["higher_is_better"])
    S = arr(a["mean_scores"])[:, :, keep]
    R = cell_ranks(S, [hib[m] for m in a["metrics"]])
    names = list(dict.fromkeys(lab.split("/")[0] for lab in a["datasets"]))
    rows = [[i for i, lab in enumerate(a["datasets"]) if lab.split("/")[0] == n] for n in names]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a truth metric on real data only
        Rd = np.stack([np.nanmean(R[r], axis=0) for r in rows])
    for what, T in (("setups", R), ("datasets (families averaged)", Rd)):
        f = subset_flip_probability(T, seed=res["seed"])
        w = kendall_w(dataset_ranks(T))
        print(f"\nwithout {baseline!r}, over {what}: Kendall's W {w:.2f}; P(pairwise flip) "
              "[P(winner flips)], rows: size of the subset, columns: metrics 1..")
        for d in range(T.shape[0]):
            print(f"  {d + 1:2d}  " + "  ".join(f"{p:.2f} [{w:.2f}]" for p, w in
                                                 zip(f["mean"][d], f["winner"][d])))


def hard_rows(res: Dict[str, Any]) -> None:
    from scipy.stats import spearmanr

    by = {s["label"]: s for s in res["setups"]}
    H = [arr(s["agreement"]["hardness"]) for s in res["setups"]]
    print(f"\nhardness: per-setup median {min(np.nanmedian(h) for h in H):.2f} to "
          f"{max(np.nanmedian(h) for h in H):.2f}; share of rows above 0.3 at most "
          f"{max(np.mean(h[np.isfinite(h)] > 0.3) for h in H):.1%}")
    print("hard rows across families: Spearman of hardness, overlap of the 10 hardest")
    for name in dict.fromkeys(lab.split("/")[0] for lab in by):
        labs = [lab for lab in by if lab.startswith(name + "/")]
        # a family that dropped rows (sklearn on housing's missing values) explains other rows
        n = {lab: by[lab]["explained_rows"] for lab in labs}
        labs = [lab for lab in labs if by[lab]["data"]["n_test"] == by[labs[0]]["data"]["n_test"]]
        out = []
        for x, p in enumerate(labs):
            for q in labs[x + 1:]:
                ap, aq = by[p]["agreement"], by[q]["agreement"]
                hp, hq = arr(ap["hardness"]), arr(aq["hardness"])
                ok = np.isfinite(hp) & np.isfinite(hq)
                top = set(ap["hardest_rows"]) & set(aq["hardest_rows"])
                rho = spearmanr(hp[ok], hq[ok])[0]
                out.append(f"{p.split('/')[1]}-{q.split('/')[1]} {rho:+.2f} / {len(top)}")
        print(f"  {name:15s} ({n[labs[0]]} rows, chance overlap {100 / n[labs[0]]:.1f}): "
              + "; ".join(out))


if __name__ == "__main__":
    with open(os.path.join(HERE, "results.json"), encoding="utf-8") as fh:
        results = json.load(fh)
    winners(results)
    exact_vs_mc(results)
    pgi2_rows_needed(results)
    subset_flips(results)
    hard_rows(results)
