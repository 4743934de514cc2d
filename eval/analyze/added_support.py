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
from eval.analyze.recovery import (CONVERSION_HEAD, CONVERSION_NOTE, answering_runs, calls_row, calls_table, control,
                                   conversion_rows, final_call, incomplete_errors, rescored, run_step)
from eval.analyze.report import Context, Report
from eval.analyze.sources import questions_of
from eval.logged_runs import LoggedRun
from eval.schema import Question
from eval.tables import markdown

NAME = "added-support"
PAPER = "F.2, Table 16"
SUMMARY = "rerun EIR's final call on its EM errors with the missing supporting paragraphs added (LM calls)"
CALLS_LM = True


def added(record: dict, q: Question) -> dict:
    evidence = EvidenceStore.from_rows(record["evidence"])
    gold = set(record["gold_titles"])
    for paragraph in q.paragraphs:
        if paragraph.title in gold and paragraph.title not in evidence.titles:
            evidence.add_paragraph(paragraph, turn=0)
    return final_call(evidence, record["question"])


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report(params={"arms": "control, added"})
    rows, cost = [], []
    for run in answering_runs(runs, report):
        errors = incomplete_errors(run)
        if not errors:
            report.notes.append(f"{run.name}: no EM error with incomplete evidence, nothing to rerun")
            continue
        questions = questions_of(run, context.data)
        reruns = {"control": run_step("control", run, errors, control, context),
                  "added": run_step("added-support", run, errors, added, context)}
        scores = {arm: [rescored(questions[r["id"]], done[r["id"]]) for r in errors] for arm, done in reruns.items()}
        rows += conversion_rows(run, errors, {arm: [s["em"] for s in sc] for arm, sc in scores.items()},
                                [s["em"] for s in scores["control"]], [r["answer_f1"] for r in errors],
                                {arm: [s["answer_f1"] for s in sc] for arm, sc in scores.items()}, context, report, NAME)
        cost += [calls_row(run, step, [reruns[arm][r["id"]] for r in errors])
                 for arm, step in (("control", "control"), ("added", "added-support"))]
    report.tables["table16_added_support.md"] = (
        "# Table 16 (F.2): adding the missing supporting paragraphs\n\n" + markdown(CONVERSION_HEAD, rows) + "\n\n"
        + CONVERSION_NOTE.format(resamples=context.resamples, seed=context.seed)
        + "\n\n## Calls the analysis added\n\n" + calls_table(cost) + "\n")
    return report
