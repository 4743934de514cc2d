"""Table 16 as the paper prints it: F.2 (added support) and F.3 (model-selected reads) in one table, over
the same questions, reusing both steps' call logs (docs/experiments.md, "Analyses of recorded runs").
"""

from __future__ import annotations

from pathlib import Path

from eval.analyze import added_support, model_selected
from eval.analyze.recovery import conversion_table
from eval.analyze.report import Context, Report
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import markdown

NAME = "table16"
PAPER = "F.2, F.3, Table 16"
SUMMARY = "added support and model-selected reads in one table, over the same errors (LM calls, shared with both)"
CALLS_LM = True
ARMS = ("control", "added", "model-selected")


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    parts = [added_support.analyze(runs, context, out), model_selected.analyze(runs, context, out)]
    report = Report(params={k: v for p in parts for k, v in p.params.items()})
    report.params["arms"] = ", ".join(ARMS)
    for part in parts:
        report.metrics.update(part.metrics)
        report.notes += [n for n in part.notes if n not in report.notes]
    rows = merge(parts[0].rows[added_support.TABLE] + parts[1].rows[model_selected.TABLE])
    report.rows["table16.md"] = rows
    report.tables["table16.md"] = (
        "# Table 16: adding the missing supporting paragraphs (F.2) and model-selected reads (F.3)\n\n"
        + conversion_table(rows, context) + " added: the missing supporting paragraphs appended to the evidence "
          "(F.2); model-selected: one or two titles the model picked read and the final call rerun (F.3).\n\n## What F.3 read\n\n"
        + markdown(model_selected.READS_HEAD, parts[1].rows[model_selected.READS]) + "\n\n" + model_selected.READS_NOTE
        + "\n")
    return report


def merge(rows: list[list[str]]) -> list[list[str]]:
    """One row per (method, dataset, LM, arm), grouped by run in first-seen order, arms in ARMS order
    (the control row both analyses report is the same call log, so it is kept once)."""
    groups: dict[tuple[str, ...], dict[str, list[str]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[:3]), {}).setdefault(row[3], row)
    return [group[arm] for group in groups.values() for arm in sorted(group, key=_arm_order)]


def _arm_order(arm: str) -> int:
    return ARMS.index(arm) if arm in ARMS else len(ARMS)
