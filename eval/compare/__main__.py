"""`python -m eval.compare`: the paper's tables, paired statistics and plots over eval.run's MLflow runs.

Prints the warnings of any compared run that degenerated (eval.scoring.health), then Table 1 (per
dataset × LM: Answer F1 and calls/question, marked where a baseline is significantly below the
reference after Holm), the pairwise statistics of every Holm family, Table 9
(averages and ratios to the reference), evidence availability and the ablation tables (10-14) whose
family has comparisons; writes the plots; logs it all as one MLflow comparison run (markdown, CSV,
PNG artifacts, and the numbers as metrics).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import mlflow

from eval.compare.ablation_tables import ablation_files
from eval.compare.error_analysis import Availability, availability_table, evidence_availability, question_diff
from eval.compare.families import H_SWEEP, Family, FamilyError, checked, load_families, parse_cli_family
from eval.compare.pairs import ComparedRuns, compare
from eval.compare.plots import evidence_bars, f1_em_vs_h, f1_vs_calls
from eval.compare.tables import comparison_details, comparisons_csv, support_table, table1, table9
from eval.runs import tracking
from eval.runs.logged_runs import LoggedRun, SelectionError, select_runs
from eval.scoring.health import RunWarning, warnings_for
from eval.scoring.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from programs import names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m eval.compare", description=__doc__.splitlines()[0])
    p.add_argument("--experiment", default="eir-dspy", help="compare the finished runs of this experiment")
    p.add_argument("--filter", default="", help="an MLflow filter on those runs, e.g. \"params.dataset = 'hotpotqa'\"")
    p.add_argument("--runs", nargs="+", metavar="RUN_ID", help="compare exactly these runs instead")
    p.add_argument("--methods", nargs="+", help="keep only these methods (labels, e.g. eir direct reflexion_first)")
    p.add_argument("--reference", default=names.EIR, help="the method every other method is compared against")
    p.add_argument("--families", metavar="FILE.toml",
                   help="Holm families from the [[families]] tables of a grid TOML file (name, compare, per_column, "
                        "per_pair, size)")
    p.add_argument("--family", action="append", nargs="+", metavar=("NAME", "A vs B"),
                   help='a Holm family of its own: --family h_sweep "eir H=8 vs eir" ... (repeatable). With '
                        "--families or --family only the families named are tested; else the reference against "
                        "its baselines, its H sweep, list-feedback control and repair ablations")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--intersection", action="store_true",
                   help="pair runs on the questions they share instead of refusing different question sets")
    p.add_argument("--stopped", action="store_true",
                   help="also compare runs stopped by Ctrl-C (KILLED) on the questions they finished; implies "
                        "--intersection (each pair on the questions both finished)")
    p.add_argument("--resamples", type=int, default=BOOTSTRAP_RESAMPLES)
    p.add_argument("--seed", type=int, default=BOOTSTRAP_SEED,
                   help=f"bootstrap seed (default {BOOTSTRAP_SEED}, the paper's; logged as bootstrap_seed)")
    p.add_argument("--diff", nargs=2, metavar=("A", "B"), help="print the per-question diff of two methods (or run ids)")
    p.add_argument("--out", default="runs/comparisons", help="where the tables, CSV and plots are written")
    p.add_argument("--no-log", action="store_true", help="do not log a comparison run to MLflow")
    return p.parse_args(argv)


def families(args: argparse.Namespace) -> list[Family] | None:
    """The families asked for on the command line, or None for the default ones."""
    if not args.families and not args.family:
        return None
    found = (load_families(args.families) if args.families else []) + [parse_cli_family(f) for f in args.family or []]
    return checked(found, "--families / --family")


def degenerate_runs(grid: ComparedRuns) -> list[tuple[LoggedRun, list[RunWarning]]]:
    """The compared runs whose behaviour makes their scores say little, with their warnings (the
    reference first, then by method and column)."""
    found = []
    for key in sorted(grid.runs, key=lambda k: (grid.variants.index(k[0]), k[1])):
        run = grid.runs[key]
        warnings = warnings_for(run.name or run.method, run.question_records, method=run.config.method,
                                max_tokens=run.config.lm.max_tokens)
        if warnings:
            found.append((run, warnings))
    return found


def degenerate_text(degenerate: list[tuple[LoggedRun, list[RunWarning]]]) -> str:
    """degenerate_runs.md: one line per warning, under the run it is about."""
    lines = [f"- {w.text} (run {run.run_id})" for run, warnings in degenerate for w in warnings]
    return ("# Degenerate runs\n\nThese runs' scores say little about their method "
            "(docs/experiments.md, Degenerate runs):\n\n" + "\n".join(lines) + "\n")


def report(grid: ComparedRuns, availability: list[Availability],
           degenerate: list[tuple[LoggedRun, list[RunWarning]]] = ()) -> dict[str, str]:
    """Every text artifact of the comparison, by file name (degenerate_runs.md only when a run degenerated)."""
    files = {
        **({"degenerate_runs.md": degenerate_text(degenerate)} if degenerate else {}),
        "table1.md": f"# Table 1: {grid.reference} against the baselines\n\n{table1(grid)}\n",
        "statistics.md": f"# Paired statistics\n\n{comparison_details(grid)}\n",
        "table9.md": f"# Table 9: averages over datasets and LMs\n\n{table9(grid)}\n",
        "support.md": f"# Supporting facts and joint scores\n\n{support_table(grid)}\n",
        "evidence_availability.md": f"# Evidence availability of errors\n\n{availability_table(availability)}\n",
        "comparisons.csv": comparisons_csv(grid),
        **ablation_files(grid),
    }
    for c in grid.of_family(grid.family):
        name = f"diff_{_slug(c.reference)}_vs_{_slug(c.method)}_{_slug(c.column[0])}_{_slug(c.column[1])}.md"
        files[name] = question_diff(grid.run(c.reference, c.column), grid.run(c.method, c.column)) + "\n"
    return files


def comparison_metrics(grid: ComparedRuns) -> dict[str, float]:
    """The comparison's numbers under names the MLflow UI can chart: <stat>/<family>/<A> vs <B>/<dataset>/<lm>
    (the named family: the pair and column already say which of its Holm families)."""
    out = {}
    for c in grid.comparisons:
        key = f"{c.family_name}/{c.reference} vs {c.method}/{c.column[0]}/{c.column[1]}"
        out.update({f"f1_diff/{key}": c.f1.diff, f"f1_ci_low/{key}": c.f1.low, f"f1_ci_high/{key}": c.f1.high,
                    f"f1_p/{key}": c.f1.p, f"f1_p_holm/{key}": c.f1_holm.adjusted,
                    f"mcnemar_b/{key}": c.em.b, f"mcnemar_c/{key}": c.em.c, f"mcnemar_p/{key}": c.em.p,
                    f"mcnemar_p_holm/{key}": c.em_holm.adjusted, f"n/{key}": len(c.ids),
                    f"family_size/{key}": c.family_size, f"family_formed/{key}": c.formed})
    out["comparisons"] = len(grid.comparisons)
    out["significant_f1"] = sum(c.f1_holm.significant for c in grid.comparisons)
    out["significant_em"] = sum(c.em_holm.significant for c in grid.comparisons)
    return {re.sub(r"[^\w./\- :]", "_", k): float(v) for k, v in out.items()}


def diff_runs(grid: ComparedRuns, a: str, b: str) -> list[tuple[LoggedRun, LoggedRun]]:
    """Pairs of runs to diff: two run ids, or two methods in every column both ran in."""
    by_id = {run.run_id: run for run in grid.runs.values()}
    if a in by_id and b in by_id:
        return [(by_id[a], by_id[b])]
    pairs = [(grid.run(a, c), grid.run(b, c)) for c in grid.columns if grid.run(a, c) and grid.run(b, c)]
    if not pairs:
        raise SelectionError(f"--diff {a} {b}: no column has runs of both (methods here: {grid.variants})")
    return pairs


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    uri = tracking.use_tracking_uri()
    try:
        runs, notes = select_runs(args.experiment, args.runs, args.filter, args.methods, stopped=args.stopped)
        grid = compare(runs, args.reference, families(args), args.alpha, args.intersection or args.stopped,
                       args.resamples, args.seed)
        diffs = diff_runs(grid, *args.diff) if args.diff else []
    except (SelectionError, FamilyError) as exc:
        raise SystemExit(f"error: {exc}") from None
    grid.notes[:0] = notes
    availability = [evidence_availability(grid.runs[k]) for k in sorted(grid.runs)]
    degenerate = degenerate_runs(grid)
    files = report(grid, availability, degenerate)
    for name in ("degenerate_runs.md", "table1.md", "statistics.md", "table9.md", "support.md",
                 "evidence_availability.md", *(f"table{k}.md" for k in range(10, 15))):
        if name in files:
            print(files[name])
    for a, b in diffs:
        print(question_diff(a, b) + "\n")
    for note in grid.notes:
        print(f"note: {note}", file=sys.stderr)

    metrics = comparison_metrics(grid)
    metrics["degenerate_runs"] = float(len(degenerate))
    run_id = None
    if not args.no_log:
        # Logged beside the compared runs (the first one's experiment when they are given by id).
        with mlflow.start_run(experiment_id=runs[0].experiment_id, run_name=f"compare: {grid.reference} vs {len(grid.variants) - 1} variants "  # noqa: E501
                                       f"/ {len(grid.columns)} columns",
                              tags={tracking.KIND_TAG: tracking.COMPARISON_KIND}) as run:  # never read back as a method run
            run_id = run.info.run_id
    out = Path(args.out) / (run_id or time.strftime("%Y%m%d-%H%M%S"))
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text)
    plots = [f1_vs_calls(grid, out / "f1_vs_calls.png"), evidence_bars(availability, out / "evidence_availability.png")]
    if grid.of_family(H_SWEEP):
        plots.append(f1_em_vs_h(grid, out / "fig6_f1_em_vs_h.png"))
    if run_id:
        with mlflow.start_run(run_id=run_id):
            names = ", ".join(f.name for f in grid.families)
            mlflow.set_tags({tracking.KIND_TAG: tracking.COMPARISON_KIND, "reference": grid.reference,
                             "families": names, "eir.compared_runs": json.dumps(sorted(r.run_id for r in runs))})
            groups = "; ".join(f"{f.name}: {f.grouping}" for f in grid.families)
            mlflow.log_params({"reference": grid.reference, "families": names[:6000], "holm_groups": groups[:6000],
                               "holm_unformed": "p=1", "alpha": grid.alpha,
                               "intersection": grid.intersection, "stopped_runs": args.stopped, "bootstrap_resamples": grid.resamples,  # noqa: E501
                               "bootstrap_seed": grid.seed, "runs_compared": len(grid.runs),
                               "filter": args.filter or "(none)"})
            mlflow.log_metrics(metrics)
            mlflow.log_artifacts(str(out))
    print(f"wrote {len(files) + len(plots)} files to {out}")
    if run_id:
        print(f"MLflow comparison run {run_id} in {uri}")
    return {"grid": grid, "files": files, "metrics": metrics, "out": out, "run_id": run_id}


def _slug(text: str) -> str:
    return re.sub(r"[^\w.-]+", "-", text).strip("-")


if __name__ == "__main__":
    main()
