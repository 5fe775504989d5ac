"""``pgexact-bench``: exact perturbation metrics against Monte Carlo, from one command.

Subcommands (each prints a readable table and writes ``results.json`` into ``--out``):

``demo``
    Trains a paper-style "Bigger" XGBoost regressor (40 trees, depth 4) on scikit-learn's
    built-in diabetes data (standardised features, 80:20 split) and compares, on the test rows,
    the exact PGI² of the greedy ranking with Monte Carlo estimates at a few sample counts:
    time per row and NMAE against the exact value.

Every subcommand is a ``_cmd_<name>(args) -> int`` registered in :func:`_build_parser`; common
options come from one parent parser.  Input problems a user can fix (an unknown dataset, a
missing file) raise :class:`_UsageError`, which :func:`main` turns into a one-line message and
exit code 2, like argparse's own errors.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

PROG = "pgexact-bench"


class _UsageError(Exception):
    """A problem with the user's input: reported in one line, exit code 2, no traceback."""


# --------------------------------------------------------------------------------------------
# small helpers shared by the subcommands
# --------------------------------------------------------------------------------------------


def _log(args, msg):
    """Status line on stderr (suppressed by --quiet)."""
    if not args.quiet:
        print(msg, file=sys.stderr, flush=True)


def _bars_enabled(args) -> bool:
    return not args.quiet and bool(getattr(sys.stderr, "isatty", lambda: False)())


class _NoBar:
    """Stands in for a tqdm bar when bars are off or tqdm is not installed."""

    def update(self, n=1):
        pass

    def set_postfix_str(self, s):
        pass

    def close(self):
        pass


def _bar(args, *, total, desc):
    """A tqdm bar on stderr when stderr is a terminal and not --quiet, else a no-op bar."""
    if not _bars_enabled(args):
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False)


def _progress(args, iterable, *, total=None, desc=None):
    """Wrap ``iterable`` in a tqdm bar under the same conditions as :func:`_bar`."""
    if not _bars_enabled(args):
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, leave=False)


def _timed(fn, *a, **kw):
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t0


def _nmae(exact, approx):
    """The paper's normalised mean absolute error ``sum|y - y_hat| / sum|y|``."""
    exact = np.asarray(exact, dtype=np.float64)
    approx = np.asarray(approx, dtype=np.float64)
    denom = np.sum(np.abs(exact))
    return float(np.sum(np.abs(exact - approx)) / denom) if denom > 0 else float("nan")


def _fmt_time(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _table(headers, rows, align=None):
    """Plain-text table; ``align`` is a string of 'l'/'r' per column."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    align = align or "l" + "r" * (len(headers) - 1)

    def line(r):
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(r, widths, align))

    return "\n".join([line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in cells])


def _versions():
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("pgexact", "xgboost", "sklearn", "lightgbm"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - optional, only informational
            pass
    return out


def _write_json(args, name, payload):
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, name)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2, default=_json_default)
        fh.write("\n")
    return path


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _require_xgboost():
    try:
        import xgboost  # noqa: F401
        import sklearn  # noqa: F401
    except ImportError as e:
        raise _UsageError(
            f"this subcommand needs xgboost and scikit-learn ({e.name} is not installed); "
            "pip install 'pgexact[all]'"
        ) from None


# --------------------------------------------------------------------------------------------
# data and models
# --------------------------------------------------------------------------------------------


def _diabetes(seed):
    """scikit-learn's diabetes data: standardised features (train statistics), 80:20 split."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    data = load_diabetes()
    X, y = np.asarray(data.data, dtype=np.float64), np.asarray(data.target, dtype=np.float64)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=seed)
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    return (Xtr - mu) / sd, (Xte - mu) / sd, ytr, yte, list(data.feature_names)


def _bigger_xgb(Xtr, ytr, *, seed, n_jobs):
    """The paper's "Bigger" model: depth 4, 40 trees."""
    import xgboost as xgb

    model = xgb.XGBRegressor(
        n_estimators=40, max_depth=4, learning_rate=0.3, tree_method="hist",
        random_state=seed, n_jobs=n_jobs,
    )
    return model.fit(Xtr, ytr)


# --------------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------------


def _cmd_demo(args) -> int:
    _require_xgboost()
    import pgexact
    from pgexact import mc

    if args.rows < 1:
        raise _UsageError("--rows must be >= 1")
    if not args.sigma > 0:
        raise _UsageError("--sigma must be positive")
    if not args.iterations or min(args.iterations) < 1:
        raise _UsageError("--iterations must be positive integers")

    _log(args, "training the model (XGBoost, 40 trees, depth 4) on diabetes ...")
    Xtr, Xte, ytr, yte, names = _diabetes(args.seed)
    model = _bigger_xgb(Xtr, ytr, seed=args.seed, n_jobs=args.n_jobs)
    X = Xte[: args.rows]
    n, d = X.shape
    rmse = float(np.sqrt(np.mean((model.predict(Xte) - yte) ** 2)))

    te = pgexact.load(model)
    common = dict(sigma=args.sigma, n_jobs=args.n_jobs)
    # warm up both paths on one row (thread pools, first-call allocations)
    pgexact.pgi2(te, X[:1], np.arange(d), **common)
    mc.pgi2(model, X[:1], np.arange(d), n_samples=10, seed=args.seed, **common)

    bar = _bar(args, total=2 + len(args.iterations), desc="demo")
    bar.set_postfix_str("greedy ranking")
    ranking, t_rank = _timed(pgexact.rank, te, X, **common)
    ranking = np.asarray(ranking, dtype=np.int64)
    bar.update()
    bar.set_postfix_str("exact PGI2")
    exact, t_exact = _timed(pgexact.pgi2, te, X, ranking, **common)
    exact = np.asarray(exact, dtype=np.float64)
    bar.update()

    results = [dict(method="exact", samples=None, mean_pgi2=float(exact.mean()), nmae=0.0,
                    mean_se=0.0, time_per_row_s=t_exact / n)]
    for k in args.iterations:
        bar.set_postfix_str(f"Monte Carlo, {k} samples")
        (est, se), t = _timed(mc.pgi2, model, X, ranking, n_samples=k, seed=args.seed,
                              return_se=True, **common)
        results.append(dict(method="monte_carlo", samples=int(k), mean_pgi2=float(est.mean()),
                            nmae=_nmae(exact, est), mean_se=float(np.nanmean(se)),
                            time_per_row_s=t / n))
        bar.update()
    bar.close()

    top1 = np.bincount(ranking[:, 0], minlength=d)
    j = int(np.argmax(top1))
    threads = args.n_jobs if args.n_jobs is not None else (os.cpu_count() or 1)

    rows = []
    for r in results:
        rows.append([
            "exact" if r["method"] == "exact" else "Monte Carlo",
            "-" if r["samples"] is None else f"{r['samples']:,}",
            f"{r['mean_pgi2']:.4g}",
            "0 (reference)" if r["method"] == "exact" else f"{r['nmae']:.4f}",
            _fmt_time(r["time_per_row_s"]),
            f"{r['time_per_row_s'] / results[0]['time_per_row_s']:.3g}x",
        ])
    print(
        f"pgexact demo: XGBoost regressor (40 trees, depth 4, test RMSE {rmse:.1f}) on "
        f"scikit-learn diabetes ({d} standardised features)\n"
        f"{n} test rows, Gaussian noise sigma={args.sigma:g}, {threads} thread(s), "
        f"seed {args.seed}\n"
        f"greedy exact PG2 ranking, computed once and shared by all methods: "
        f"{_fmt_time(t_rank / n)} per row; most frequent top feature: {names[j]} "
        f"({top1[j] / n:.0%} of rows)\n"
    )
    print(_table(
        ["method", "samples/prefix", "mean PGI2", "NMAE vs exact", "time/row", "time / exact time"],
        rows, "lrrrrr",
    ))
    print("\nNMAE = sum|exact - MC| / sum|exact| over the rows; PGI2 averages PG2 over the "
          f"top-k prefixes, k = 1..{d}.")

    payload = dict(
        command="demo", dataset="diabetes", n_features=d, n_rows=n, sigma=args.sigma,
        seed=args.seed, n_jobs=args.n_jobs, threads=threads,
        model=dict(library="xgboost", n_estimators=40, max_depth=4, test_rmse=rmse),
        feature_names=names, ranking_time_per_row_s=t_rank / n,
        top1_counts={names[i]: int(c) for i, c in enumerate(top1) if c},
        rows=results, versions=_versions(),
    )
    path = _write_json(args, "results.json", payload)
    _log(args, f"wrote {path}")
    return 0


# --------------------------------------------------------------------------------------------
# argument parsing
# --------------------------------------------------------------------------------------------


def _positive_int(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {s!r}")
    return v


def _n_jobs(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v == 0 or v < -1:
        raise argparse.ArgumentTypeError("must be a positive integer or -1 (all cores)")
    return None if v == -1 else v


def _positive_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not (v > 0 and np.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive number: {s!r}")
    return v


def _build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("common options")
    g.add_argument("--out", default="pgexact-bench-out", metavar="DIR",
                   help="directory for results.json and figures (default: %(default)s)")
    g.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    g.add_argument("--n-jobs", type=_n_jobs, default=None, metavar="N",
                   help="threads for pgexact and the model library (default: all cores)")
    g.add_argument("--quiet", action="store_true", help="no progress bars or status lines")

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Exact perturbation-gap metrics (PG2, PGI2) for tree ensembles, "
                    "compared with Monte Carlo.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "demo", parents=[common],
        help="exact PGI2 vs Monte Carlo on built-in data (about 10 seconds)",
        description="Train a 40-tree depth-4 XGBoost regressor on scikit-learn's diabetes data "
                    "and compare exact PGI2 with Monte Carlo at several sample counts.",
    )
    p.add_argument("--rows", type=_positive_int, default=100,
                   help="test rows to evaluate (at most the 89 test rows; default: %(default)s)")
    p.add_argument("--sigma", type=_positive_float, default=0.3,
                   help="noise standard deviation, in standardised units (default: %(default)s)")
    p.add_argument("--iterations", type=_positive_int, nargs="+", default=[10, 100, 1000],
                   metavar="K", help="Monte Carlo samples per prefix (default: 10 100 1000)")
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv=None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except _UsageError as e:
        parser.exit(2, f"{PROG}: error: {e}\n")
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
