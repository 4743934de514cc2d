"""A comparison, typed: the runs chosen (eval.runs.logged_runs), compared as the paper does
(eval.compare.pairs), the tables printed and written with the plots, and all of it logged as one MLflow
comparison run. `python -m eval.compare` calls `run_comparison` with its flags made `CompareOptions`;
eval.grid calls it with the grid's experiment, reference and families."""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import mlflow

from eval.compare.ablation_tables import ablation_files
from eval.compare.error_analysis import Availability, availability_table, evidence_availability, question_diff
from eval.compare.families import H_SWEEP, Family, checked, load_families, parse_cli_family
from eval.compare.pairs import ComparedRuns, compare
from eval.compare.plots import evidence_bars, f1_em_vs_h, f1_vs_calls
from eval.compare.tables import comparison_details, comparisons_csv, runs_table, support_table, table1, table9
from eval.runs import tracking
from eval.runs.logged_runs import LoggedRun, SelectionError, select_runs
from eval.scoring.health import RunWarning, warnings_for
from eval.scoring.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from programs import names


@dataclass(frozen=True)
class CompareOptions:
    """What to compare and how (the flags of `python -m eval.compare`, which take these defaults)."""
    experiment: str = "eir-dspy"  # compare the finished runs of this experiment
    filter: str = ""  # an MLflow filter on those runs
    runs: list[str] | None = None  # exactly these run ids instead
    methods: list[str] | None = None  # keep only these labels
    reference: str = names.EIR  # the method every other one is compared against
    families: list[Family] | None = None  # the Holm families to test; None: the reference's default ones
    alpha: float = 0.05
    intersection: bool = False  # pair runs on the questions they share
    stopped: bool = False  # also KILLED runs, on the questions they finished (implies intersection)
    resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = BOOTSTRAP_SEED  # the bootstrap's
    diff: tuple[str, str] | None = None  # print the per-question diff of two methods (or run ids)
    out: str = "runs/comparisons"  # where the tables, CSV and plots are written
    log: bool = True  # log the comparison as an MLflow run


def chosen_families(families_file: str | None, cli: list[list[str]] | None) -> list[Family] | None:
    """The families of a grid file's [[families]] tables and of `--family NAME "A vs B" ...` items, or
    None (the default families) when neither is given. Raises FamilyError."""
    if not families_file and not cli:
        return None
    found = (load_families(families_file) if families_file else []) + [parse_cli_family(f) for f in cli or []]
    return checked(found, "--families / --family")


def degenerate_runs(grid: ComparedRuns) -> list[tuple[LoggedRun, list[RunWarning]]]:
    """The compared runs whose behaviour makes their scores say little, with their warnings (the
    reference first, then by method and column)."""
    found = []
    for key in sorted(grid.runs, key=lambda k: (grid.variants.index(k[0]), k[1])):
        run = grid.runs[key]
        warnings = warnings_for(run.name or run.variant, run.question_records, method=run.config.method,
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
        "runs.md": f"# Runs: scores, cost and behaviour\n\n{runs_table(grid)}\n",
        "table9.md": f"# Table 9: averages over datasets and LMs\n\n{table9(grid)}\n",
        "support.md": f"# Supporting facts and joint scores\n\n{support_table(grid)}\n",
        "evidence_availability.md": f"# Evidence availability of errors\n\n{availability_table(availability)}\n",
        "comparisons.csv": comparisons_csv(grid),
        **ablation_files(grid),
    }
    for c in grid.of_family(grid.family):
        name = f"diff_{_slug(c.reference)}_vs_{_slug(c.variant)}_{_slug(c.column[0])}_{_slug(c.column[1])}.md"
        files[name] = question_diff(grid.run(c.reference, c.column), grid.run(c.variant, c.column)) + "\n"
    return files


def comparison_metrics(grid: ComparedRuns) -> dict[str, float]:
    """The comparison's numbers under names the MLflow UI can chart: <stat>/<family>/<A> vs <B>/<dataset>/<lm>
    (the named family: the pair and column already say which of its Holm families)."""
    out = {}
    for c in grid.comparisons:
        key = f"{c.family_name}/{c.reference} vs {c.variant}/{c.column[0]}/{c.column[1]}"
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


def run_comparison(options: CompareOptions) -> dict:
    """Compare the runs `options` choose: print the tables, write them and the plots under `options.out`
    and (unless `options.log` is off) log them as one MLflow comparison run. Raises SelectionError
    when the runs cannot be chosen or paired, FamilyError for a family naming variants not run.
    Returns {"grid", "files", "metrics", "out", "run_id"}."""
    uri = tracking.use_tracking_uri()
    runs, notes = select_runs(options.experiment, options.runs, options.filter, options.methods, stopped=options.stopped)
    grid = compare(runs, options.reference, options.families, options.alpha, options.intersection or options.stopped,
                   options.resamples, options.seed)
    diffs = diff_runs(grid, *options.diff) if options.diff else []
    grid.notes[:0] = notes
    availability = [evidence_availability(grid.runs[k]) for k in sorted(grid.runs)]
    degenerate = degenerate_runs(grid)
    files = report(grid, availability, degenerate)
    for name in ("degenerate_runs.md", "table1.md", "statistics.md", "runs.md", "table9.md", "support.md",
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
    if options.log:
        # Logged beside the compared runs (the first one's experiment when they are given by id).
        with mlflow.start_run(experiment_id=runs[0].experiment_id, run_name=f"compare: {grid.reference} vs {len(grid.variants) - 1} variants "  # noqa: E501
                                       f"/ {len(grid.columns)} columns",
                              tags={tracking.KIND_TAG: tracking.COMPARISON_KIND}) as run:  # never read back as a method run
            run_id = run.info.run_id
    out = Path(options.out) / (run_id or time.strftime("%Y%m%d-%H%M%S"))
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
                               "intersection": grid.intersection, "stopped_runs": options.stopped, "bootstrap_resamples": grid.resamples,  # noqa: E501
                               "bootstrap_seed": grid.seed, "runs_compared": len(grid.runs),
                               "filter": options.filter or "(none)"})
            mlflow.log_metrics(metrics)
            mlflow.log_artifacts(str(out))
    print(f"wrote {len(files) + len(plots)} files to {out}")
    if run_id:
        print(f"MLflow comparison run {run_id} in {uri}")
    return {"grid": grid, "files": files, "metrics": metrics, "out": out, "run_id": run_id}


def _slug(text: str) -> str:
    return re.sub(r"[^\w.-]+", "-", text).strip("-")
