"""`python -m eval.compare`: the paper's tables, paired statistics and plots over eval.run's MLflow runs.

What it prints, writes and logs: docs/experiments.md, "Comparing runs".
"""

from __future__ import annotations

import argparse

from eval.compare.comparison import CompareOptions, chosen_families, run_comparison
from eval.compare.families import FamilyError
from eval.runs.errors import RunError
from eval.runs.logged_runs import SelectionError

DEFAULTS = CompareOptions()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m eval.compare", description=__doc__.splitlines()[0])
    p.add_argument("--experiment", default=DEFAULTS.experiment, help="compare the finished runs of this experiment")
    p.add_argument("--filter", default=DEFAULTS.filter,
                   help="an MLflow filter on those runs, e.g. \"params.dataset = 'hotpotqa'\"")
    p.add_argument("--runs", nargs="+", metavar="RUN_ID", help="compare exactly these runs instead")
    p.add_argument("--methods", nargs="+", help="keep only these methods (labels, e.g. eir direct reflexion_first)")
    p.add_argument("--reference", default=DEFAULTS.reference, help="the method every other method is compared against")
    p.add_argument("--families", metavar="FILE.toml",
                   help="Holm families from the [[families]] tables of a grid TOML file (name, compare, per_column, "
                        "per_pair, size)")
    p.add_argument("--family", action="append", nargs="+", metavar=("NAME", "A vs B"),
                   help='a Holm family of its own: --family h_sweep "eir H=8 vs eir" ... (repeatable). With '
                        "--families or --family only the families named are tested; else the reference against "
                        "its baselines, its H sweep, list-feedback control and repair ablations")
    p.add_argument("--alpha", type=float, default=DEFAULTS.alpha)
    p.add_argument("--intersection", action="store_true",
                   help="pair runs on the questions they share instead of refusing different question sets")
    p.add_argument("--stopped", action="store_true",
                   help="also compare runs stopped by Ctrl-C (KILLED) on the questions they finished; implies "
                        "--intersection (each pair on the questions both finished)")
    p.add_argument("--resamples", type=int, default=DEFAULTS.resamples)
    p.add_argument("--seed", type=int, default=DEFAULTS.seed,
                   help=f"bootstrap seed (default {DEFAULTS.seed}, the paper's; logged as bootstrap_seed)")
    p.add_argument("--diff", nargs=2, metavar=("A", "B"), help="print the per-question diff of two methods (or run ids)")
    p.add_argument("--out", default=DEFAULTS.out, help="where the tables, CSV and plots are written")
    p.add_argument("--no-log", action="store_true", help="do not log a comparison run to MLflow")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    """The command line: flags -> CompareOptions -> `run_comparison` (its result); exits on a selection,
    family or config error."""
    args = parse_args(argv)
    try:
        options = CompareOptions(
            experiment=args.experiment, filter=args.filter, runs=args.runs, methods=args.methods,
            reference=args.reference, families=chosen_families(args.families, args.family), alpha=args.alpha,
            intersection=args.intersection, stopped=args.stopped, resamples=args.resamples, seed=args.seed,
            diff=tuple(args.diff) if args.diff else None, out=args.out, log=not args.no_log)
        return run_comparison(options)
    except (SelectionError, FamilyError, RunError) as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
