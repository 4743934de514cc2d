"""F.2 (Table 16, "added support"): would the EIR errors with incomplete evidence be right if the
missing supporting paragraphs were added? The arms and the control: docs/experiments.md, "Analyses of recorded runs".
"""

from __future__ import annotations

from pathlib import Path

from eir_dspy.evidence import EvidenceStore
from eval.analyze import recovery
from eval.analyze.report import Context, Report
from eval.data.schema import Question
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun
from programs.run_context import RunContext

NAME = "added-support"
PAPER = "F.2, Table 16"
SUMMARY = "rerun EIR's final call on its EM errors with the missing supporting paragraphs added (LM calls)"
CALLS_LM = True
TABLE = "table16_added_support.md"


def added(record: QuestionRecord, q: Question, run_context: RunContext) -> dict:
    evidence = EvidenceStore.from_rows(record.evidence)
    gold = set(record.gold_titles)
    for paragraph in q.paragraphs:
        if paragraph.title in gold and paragraph.title not in evidence.titles:
            evidence.add_paragraph(paragraph, turn=0)
    return recovery.final_call(evidence, record.question, run_context)


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report(params={"arms": "control, added"})
    reruns = recovery.rerun_errors(runs, context, report, "added", "added-support", added)
    rows = [row for x in recovery.with_pooled(reruns) for row in recovery.conversion_rows(x, context, report, NAME)]
    report.rows[TABLE] = rows
    report.tables[TABLE] = (
        "# Table 16 (F.2): adding the missing supporting paragraphs\n\n" + recovery.conversion_table(rows, context)
        + "\n\n## Calls the analysis added\n\n" + recovery.calls_table(recovery.calls_rows(reruns)) + "\n")
    return report
