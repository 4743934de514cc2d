"""F.1 (Table 15, Figure 3): were the wrong answers missing evidence? Per run (and pooled), the EM errors
with complete and incomplete evidence, split by Figure 3's one computation,
eval.compare.error_analysis.evidence_availability (docs/experiments.md, "Analyses of recorded runs").
"""

from __future__ import annotations

from pathlib import Path

from eval.analyze.report import POOLED, Context, Report, pooled_run, run_cells
from eval.compare.error_analysis import Availability, evidence_availability
from eval.compare.plots import availability_shares, run_label
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import markdown, pct
from eval.scoring.stats import proportion

NAME = "availability"
PAPER = "F.1, Table 15, Figure 3"
SUMMARY = "EM errors with complete vs incomplete evidence, and how many supporting paragraphs were missed"


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report()
    rows, shares = [], []
    ordered = sorted(runs, key=lambda r: (r.dataset, r.lm, r.variant))
    for run in ordered:
        found = evidence_availability(run)
        # A question that failed outright (a provider error) read nothing: not an evidence error.
        if found.failed:
            report.notes.append(f"{run.name}: {found.failed} failed question(s) left out of the errors")
        rows.append(_row(found, report))
        n = len(run.records)
        shares.append((run_label(run),
                       found.exact / n, found.all_gold_read / n, found.incomplete / n))
    if len(ordered) > 1:  # the paper's pooled row: every run's questions together
        rows.append(_row(evidence_availability(pooled_run(ordered)), report))
    head = ["method", "dataset", "LM", "n", "EM errors", "complete", "incomplete", "incomplete %", "95% CI (Wilson)",
            "missing 1", "missing 2", "missing 3+"]
    report.table(
        "table15_availability.md", "Table 15: evidence availability of EM errors (F.1)", markdown(head, rows),
        "An error is *complete* when every annotated supporting paragraph was read before answering, "
        "*incomplete* otherwise; 'missing k' counts incomplete errors by the supporting paragraphs never read. "
        f"{POOLED}: every run's questions pooled (its interval over the pooled errors).")
    report.plots.append(availability_shares(shares, out / "fig3_availability.png"))
    return report


def _row(found: Availability, report: Report) -> list[str]:
    """One run's (or the pooled) row of Table 15, its numbers also kept as metrics."""
    run, missing = found.run, found.missing
    incomplete = proportion(found.incomplete, found.errors)
    by_count = [sum(m == 1 for m in missing), sum(m == 2 for m in missing), sum(m >= 3 for m in missing)]
    report.keyed("/".join((run.variant, run.dataset, run.lm)), {
        "errors": found.errors, "incomplete": incomplete.k, "incomplete_share": incomplete.share,
        "incomplete_ci_low": incomplete.low, "incomplete_ci_high": incomplete.high,
        **{f"missing_{k}": v for k, v in zip(("1", "2", "3plus"), by_count)}})
    return [*run_cells(run), str(len(run.records)), str(found.errors),
            str(found.errors - incomplete.k), str(incomplete.k), pct(incomplete.share),
            f"[{pct(incomplete.low)}, {pct(incomplete.high)}]", *map(str, by_count)]
