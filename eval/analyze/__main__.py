"""`python -m eval.analyze NAME --experiment E | --run RUN_ID ...`: one of the paper's analyses over
finished eval.run runs. It never changes a source run: what it computes goes into a new MLflow run
tagged eir.kind=analysis and eir.analysis=NAME, linked to its sources, and to the terminal."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from eval.analyze import analyses
from eval.analyze.report import Context, finish_analysis_run, start_analysis_run, write_report
from eval.files.results_file import ResultsFileError
from eval.runs import tracking
from eval.runs.errors import RunError
from eval.runs.logged_runs import SelectionError, select_runs
from eval.scoring.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    found = analyses()
    lines = "\n".join(f"  {n:<20} {m.PAPER}: {m.SUMMARY}" for n, m in found.items())
    p = argparse.ArgumentParser(prog="python -m eval.analyze", description=__doc__.splitlines()[0],
                                epilog="analyses:\n" + lines, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", choices=list(found), metavar="NAME", help="the analysis (listed below)")
    p.add_argument("--experiment", default="eir-dspy", help="every fitting finished run of this experiment")
    p.add_argument("--run", nargs="+", metavar="RUN_ID", help="exactly these runs instead")
    p.add_argument("--filter", default="", help="an MLflow filter on the experiment's runs")
    p.add_argument("--methods", nargs="+", help="keep only runs of these variants or labels (e.g. eir direct)")
    p.add_argument("--data", help="the data file or directory the runs' questions come from (default: what each "
                                  "run recorded, else $EIR_DATA_DIR)")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--resamples", type=int, default=BOOTSTRAP_RESAMPLES)
    p.add_argument("--seed", type=int, default=BOOTSTRAP_SEED, help="bootstrap seed (recorded)")
    p.add_argument("--threads", type=int, default=1, help="questions re-answered at once (analyses that call the LM)")
    p.add_argument("--out", default="runs/analyses", help="where tables, plots and call logs are written")
    p.add_argument("--no-log", action="store_true", help="print and write files, but log no MLflow run")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    module = analyses()[args.name]
    uri = tracking.use_tracking_uri()
    try:
        runs, notes = select_runs(args.experiment, args.run, args.filter, args.methods)
    except (SelectionError, RunError) as exc:
        raise SystemExit(f"error: {exc}") from None
    context = Context(out=Path(args.out), alpha=args.alpha, resamples=args.resamples, seed=args.seed,
                      data=args.data, threads=args.threads)
    run_id = None if args.no_log else start_analysis_run(args.name, runs)
    out = Path(args.out) / args.name / (run_id or time.strftime("%Y%m%d-%H%M%S"))
    try:
        report = module.analyze(runs, context, out)
    except (SelectionError, ResultsFileError, RunError) as exc:  # ResultsFileError: a call log's bad line, named
        tracking.end_run_if_active("FAILED")
        raise SystemExit(f"error: {exc}") from None
    except BaseException:  # Ctrl-C included: the analysis run says it did not finish
        tracking.end_run_if_active("KILLED")
        raise
    report.notes[:0] = notes
    write_report(report, out)
    for name, text in report.tables.items():
        if name.endswith(".md"):
            print(text.rstrip() + "\n")
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if run_id:
        finish_analysis_run(report, context, out)
        print(f"MLflow analysis run {run_id} in {uri}")
    print(f"wrote {len(report.tables) + len(report.plots)} files to {out}")
    return {"report": report, "out": out, "run_id": run_id}


if __name__ == "__main__":
    main()
