"""F.1 (Table 15, Figure 3): were the wrong answers missing evidence?

An EM error has complete evidence when every annotated supporting paragraph was among the
paragraphs the run read (Full Pool reads them all), else incomplete. Per run: the errors, the
incomplete share with a Wilson 95% interval, and the incomplete errors by how many supporting
paragraphs they missed (one, two, three or more); with more than one run, a last row pools every
run's questions, as the paper's pooled rows do.
"""

from __future__ import annotations

from pathlib import Path

from eval.analyze.report import POOLED, Context, Report, pooled_run
from eval.logged_runs import LoggedRun
from eval.plots import availability_shares
from eval.stats import Proportion, proportion
from eval.tables import markdown

NAME = "availability"
PAPER = "F.1, Table 15, Figure 3"
SUMMARY = "EM errors with complete vs incomplete evidence, and how many supporting paragraphs were missed"


def missing_gold(record: dict) -> int:
    """Annotated supporting paragraphs the run never read."""
    return len(set(record["gold_titles"]) - set(record["evidence_titles"]))


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report()
    rows, shares = [], []
    ordered = sorted(runs, key=lambda r: (r.dataset, r.lm, r.method))
    for run in ordered:
        # A question that failed outright (a provider error) read nothing: not an evidence error.
        failed = sum(1 for r in run.records if r.get("error"))
        if failed:
            report.notes.append(f"{run.name}: {failed} failed question(s) left out of the errors")
        rows.append(_row(run, report))
        errors, incomplete = _split(run.records)
        exact = sum(1 for r in run.records if r["em"] >= 1 and not r.get("error"))
        n = len(run.records)
        shares.append((f"{run.method}\n{run.dataset}\n{run.lm.rsplit('/', 1)[-1]}",
                       exact / n, (len(errors) - incomplete.k) / n, incomplete.k / n))
    if len(ordered) > 1:  # the paper's pooled row: every run's questions together
        rows.append(_row(pooled_run(ordered), report))
    head = ["method", "dataset", "LM", "n", "EM errors", "complete", "incomplete", "incomplete %", "95% CI (Wilson)",
            "missing 1", "missing 2", "missing 3+"]
    report.tables["table15_availability.md"] = (
        "# Table 15: evidence availability of EM errors (F.1)\n\n" + markdown(head, rows) + "\n\n"
        "An error is *complete* when every annotated supporting paragraph was read before answering, "
        "*incomplete* otherwise; 'missing k' counts incomplete errors by the supporting paragraphs never read. "
        f"{POOLED}: every run's questions pooled (its interval over the pooled errors).\n")
    report.plots.append(availability_shares(shares, out / "fig3_availability.png"))
    return report


def _split(records) -> tuple[list[dict], Proportion]:
    """The EM errors (failed questions left out) and the share of them with incomplete evidence."""
    errors = [r for r in records if r["em"] < 1 and not r.get("error")]
    return errors, proportion(sum(missing_gold(r) > 0 for r in errors), len(errors))


def _row(run: LoggedRun, report: Report) -> list[str]:
    """One run's (or the pooled) row of Table 15, its numbers also kept as metrics."""
    errors, incomplete = _split(run.records)
    missing = [missing_gold(r) for r in errors]
    by_count = [sum(m == 1 for m in missing), sum(m == 2 for m in missing), sum(m >= 3 for m in missing)]
    key = "/".join((run.method, run.dataset, run.lm))
    report.metrics.update({
        f"errors/{key}": len(errors), f"incomplete/{key}": incomplete.k, f"incomplete_share/{key}": incomplete.share,
        f"incomplete_ci_low/{key}": incomplete.low, f"incomplete_ci_high/{key}": incomplete.high,
        **{f"missing_{k}/{key}": v for k, v in zip(("1", "2", "3plus"), by_count)}})
    return [run.method, run.dataset, run.lm.rsplit("/", 1)[-1], str(len(run.records)), str(len(errors)),
            str(len(errors) - incomplete.k), str(incomplete.k), _pct(incomplete.share),
            f"[{_pct(incomplete.low)}, {_pct(incomplete.high)}]", *map(str, by_count)]


def _pct(share: float) -> str:
    return "–" if share != share else f"{100 * share:.1f}"
