"""The exact kernels' builds per x86-64 level (baseline, AVX2, AVX-512) on the same calls.

The inner loops are built once per level and picked at run time (``pair_passes.hpp``);
``PGEXACT_PASSES=base`` or ``v3`` caps the level in a fresh process. Each case (model, call,
64 rows of California housing, 1 thread) runs in a child process per level and checkout, all
of them one after the other and the round repeated, so that they share the machine's load; the
table gives the smallest CPU seconds of each and the ratio to the best level of the last
checkout. The levels must give the same bits (checked here too). ``--before`` adds an older
checkout's builds (its extension built into its ``python/pgexact/``).

    python bench/bench_isa_levels.py [--before ../old-checkout] [--rounds 2] [--cases a,b]
        [--data-dir ../shared/datasets] [--write]

A CPU without AVX-512 runs no ``v4`` row (the child would run the best level it has).
"""

from __future__ import annotations

import argparse
import datetime
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _checkouts import run_in_checkout  # noqa: E402
from _results import DATA_DIR, write_section  # noqa: E402
from pgexact.bench.data import load_named  # noqa: E402

BEGIN = "<!-- bench_isa_levels:begin -->"
END = "<!-- bench_isa_levels:end -->"
LEVELS = ("base", "v3", "")  # "": the best the CPU has

CHILD = r'''
import json, pickle, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
import pgexact
model, X, call = pickle.load(open(sys.argv[1], "rb"))
ens = pgexact.load(model)
R = np.argsort(-np.abs(X), axis=1)
t0 = time.process_time()
if call == "pgi2":
    value = pgexact.pgi2(ens, X, R, sigma=0.3, n_jobs=1, progress=False)
elif call == "rank":
    value = pgexact.rank(ens, X, sigma=0.3, n_jobs=1, progress=False).astype(float)
else:
    raise SystemExit(call)
seconds = time.process_time() - t0
print(json.dumps({"seconds": seconds, "bits": np.asarray(value, dtype=float).tobytes().hex()}))
'''


def _models(data_dir: str):
    """name -> (description, factory of a fitted model and its test rows)."""
    def fit(make):
        def run():
            data = load_named("housing", data_dir, seed=0, keep_missing=False)
            return make().fit(data.Xtr, data.ytr), data.Xte[:64]
        return run

    def xgb():
        import xgboost
        return xgboost.XGBRegressor(nthread=2, random_state=0)

    def lgbm():
        import lightgbm
        return lightgbm.LGBMRegressor(n_jobs=2, random_state=0, verbose=-1)

    def cat():
        import catboost
        return catboost.CatBoostRegressor(iterations=200, thread_count=2, random_seed=0, verbose=False)

    return {"xgb": ("XGBRegressor()", fit(xgb)), "lgbm": ("LGBMRegressor()", fit(lgbm)),
            "cat200": ("CatBoostRegressor(iterations=200)", fit(cat))}


CASES = [("xgb-pgi2", "xgb", "pgi2"), ("xgb-rank", "xgb", "rank"), ("lgbm-pgi2", "lgbm", "pgi2"),
         ("lgbm-rank", "lgbm", "rank"), ("cat200-pgi2", "cat200", "pgi2"), ("cat200-rank", "cat200", "rank")]


def _best_level() -> str:
    """The level the package picks on this CPU (gcc's names)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "?"
    return "v4 (AVX-512)" if " avx512f " in flags else ("v3 (AVX2)" if " avx2 " in flags else "base")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, default=None)
    ap.add_argument("--after", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cases", default="")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--data-dir", default=DATA_DIR, help="where california_housing.csv is")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    wanted = set(filter(None, args.cases.split(",")))
    checkouts = ([("before", args.before)] if args.before is not None else []) + [("after", args.after)]
    best = _best_level()
    levels = [lv for lv in LEVELS if lv or best.startswith("v4")]
    models = _models(args.data_dir)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        made = {}
        for key, model_name, call in CASES:
            if wanted and key not in wanted:
                continue
            if model_name not in made:
                made[model_name] = models[model_name][1]()
            case_file = Path(tmp) / f"{key}.pkl"
            model, X = made[model_name]
            with open(case_file, "wb") as f:
                pickle.dump((model, X, call), f)
            times = {(c, lv): [] for c, _ in checkouts for lv in levels}
            bits = {}
            for _ in range(args.rounds):
                for label, path in checkouts:
                    for lv in levels:
                        out = run_in_checkout(path, CHILD, case_file, args.timeout, {"PGEXACT_PASSES": lv or None})
                        times[(label, lv)].append(out["seconds"])
                        bits.setdefault(label, set()).add(out["bits"])
            same = all(len(b) == 1 for b in bits.values())
            best_after = min(times[("after", lv)]) if ("after", "") in times else None
            for label, _ in checkouts:
                cells = [f"{min(times[(label, lv)]):.2f} s" for lv in levels]
                ratios = [f"{min(times[(label, lv)]) / best_after:.2f}" for lv in levels]
                rows.append(f"| {models[model_name][0]} | {call} | {label} | " + " | ".join(cells) + " | "
                            + " / ".join(ratios) + f" | {'yes' if len(bits[label]) == 1 else 'NO'} |")
            print(rows[-1], flush=True)
            if not same:
                print(f"{key}: the levels gave different bits", file=sys.stderr)
    names = {"base": "baseline", "v3": "AVX2", "": "best"}
    head = ("| model | call | checkout | " + " | ".join(names[lv] for lv in levels)
            + " | each / best of after | same bits across levels |\n|---|---|---|"
            + "--:|" * len(levels) + "--:|:-:|")
    commit = subprocess.run(["git", "-C", str(args.after), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    text = (f"{BEGIN}\n## The passes per x86-64 level (bench/bench_isa_levels.py)\n\n"
            f"`python bench/bench_isa_levels.py{' --before ' + str(args.before) if args.before else ''} "
            f"--rounds {args.rounds}` on {datetime.date.today()}, commit {commit}; this CPU's best level: {best}; "
            f"load average at the end {load}.\n\n{head}\n" + "\n".join(rows)
            + "\n\nCPU seconds of one call, the smallest of the rounds (each a fresh process per level and "
            "checkout, alternated); 64 rows of California housing (rows with NaN dropped, standardised, "
            "80:20 split, seed 0), 1 thread, σ = 0.3, a ranking by |x| for pgi2. `PGEXACT_PASSES` caps the level; \"best\" is "
            "the level picked at run time.\n" + END)
    print(text)
    if args.write:
        write_section(text, BEGIN, END)


if __name__ == "__main__":
    main()
