"""F.2 (Table 16, "added support"): would the EIR errors with incomplete evidence be right if the
missing supporting paragraphs were added?

For each EM error whose evidence missed an annotated supporting paragraph, the missing ones are
appended (whole, in pool order) to the recorded evidence and EIR's final call is rerun: same
signature, evidence format and LM settings, nothing else in the prompt (no earlier answer, no lists).
The control reruns the final call on the unchanged evidence as a fresh model call.
"""

from __future__ import annotations

from pathlib import Path

from eir_dspy.evidence import EvidenceStore
from eval.analyze.recovery import (
    CONVERSION_HEAD,
    CONVERSION_NOTE,
    answering_runs,
    calls_row,
    calls_table,
    control,
    conversion_rows,
    final_call,
    incomplete_errors,
    rescored,
    run_step,
)
from eval.analyze.report import POOLED, Context, Report, pooled_run
from eval.analyze.sources import questions_of
from eval.data.schema import Question
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import markdown

NAME = "added-support"
PAPER = "F.2, Table 16"
SUMMARY = "rerun EIR's final call on its EM errors with the missing supporting paragraphs added (LM calls)"
CALLS_LM = True
TABLE = "table16_added_support.md"
POOLED_NOTE = f" {POOLED}: every run's errors pooled (with more than one run)."


def added(record: QuestionRecord, q: Question) -> dict:
    evidence = EvidenceStore.from_rows(record.evidence)
    gold = set(record.gold_titles)
    for paragraph in q.paragraphs:
        if paragraph.title in gold and paragraph.title not in evidence.titles:
            evidence.add_paragraph(paragraph, turn=0)
    return final_call(evidence, record.question)


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report(params={"arms": "control, added"})
    rows, cost, pooled = [], [], []
    for run in answering_runs(runs, report):
        errors = incomplete_errors(run)
        if not errors:
            report.notes.append(f"{run.name}: no EM error with incomplete evidence, nothing to rerun")
            continue
        questions = questions_of(run, context.data)
        reruns = {"control": run_step("control", run, errors, control, context),
                  "added": run_step("added-support", run, errors, added, context)}
        scores = {arm: [rescored(questions[r.id], done[r.id]) for r in errors] for arm, done in reruns.items()}
        rows += conversions(run, errors, scores, context, report, NAME)
        pooled.append((run, errors, scores))
        cost += [calls_row(run, step, [reruns[arm][r.id] for r in errors])
                 for arm, step in (("control", "control"), ("added", "added-support"))]
    if len(pooled) > 1:  # the paper's pooled rows: every run's errors together
        rows += conversions(*pool(pooled), context, report, NAME)
    report.rows[TABLE] = rows
    report.tables[TABLE] = (
        "# Table 16 (F.2): adding the missing supporting paragraphs\n\n" + markdown(CONVERSION_HEAD, rows) + "\n\n"
        + CONVERSION_NOTE.format(resamples=context.resamples, seed=context.seed) + POOLED_NOTE
        + "\n\n## Calls the analysis added\n\n" + calls_table(cost) + "\n")
    return report


def conversions(run: LoggedRun, errors: list[QuestionRecord], scores: dict[str, list[dict]], context: Context,
                report: Report, analysis: str) -> list[list[str]]:
    """Table 16's rows of one run (or the pooled one): each arm's conversions, from the arms' rescored answers."""
    return conversion_rows(run, errors, {arm: [s["em"] for s in sc] for arm, sc in scores.items()},
                           [s["em"] for s in scores["control"]], [r.answer_f1 for r in errors],
                           {arm: [s["answer_f1"] for s in sc] for arm, sc in scores.items()}, context, report, analysis)


def pool(parts: list[tuple[LoggedRun, list[QuestionRecord], dict[str, list[dict]]]]):
    """(pooled run, every run's errors, every arm's scores) in the same order, for the pooled rows."""
    runs = [run for run, _, _ in parts]
    errors = [e for _, errs, _ in parts for e in errs]
    scores = {arm: [s for _, _, sc in parts for s in sc[arm]] for arm in parts[0][2]}
    return pooled_run(runs), errors, scores
