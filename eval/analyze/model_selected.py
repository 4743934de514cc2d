"""F.3 (Table 16, "model-selected"): after a known failure, can the model find the missing evidence itself?
One select/read round on F.2's questions (docs/experiments.md, "Analyses of recorded runs"); a selection that reads nothing still
reruns the final call on the unchanged evidence (docs/methods.md, Fidelity 7a).
"""

from __future__ import annotations

import functools
from pathlib import Path

from eir_dspy.evidence import EvidenceStore
from eval.analyze import recovery
from eval.analyze.report import Context, Report, run_cells
from eval.data.schema import Question
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import markdown
from programs.extra_reads import MAX_EXTRA_READS, ExtraReads
from programs.run_context import RunContext

NAME = "model-selected"
PAPER = "F.3, Table 16"
SUMMARY = "on EIR's EM errors with incomplete evidence, the model picks 1-2 more titles to read, then re-answers (LM calls)"
CALLS_LM = True
TABLE, READS = "table16_model_selected.md", "table16_model_selected_reads"
# What a selection that reads nothing leaves, logged as the param no_read: F.3 (here) reruns the final call,
# F.4 (extra_retrieval) keeps the recorded answer, as each section describes.
NO_READ = "final call on the unchanged evidence"
KEEP_ANSWER = "recorded answer stands, no final call"


@functools.cache
def _program(optional: bool, answer_without_read: bool, run_context: RunContext) -> ExtraReads:
    """One ExtraReads for a step's questions (its adapter made once), shared as eval.run shares one program."""
    return ExtraReads(optional=optional, answer_without_read=answer_without_read, context=run_context)


def extra_reads(optional: bool, answer_without_read: bool):
    """A step's work: select, read, re-answer; with nothing read, the final call runs on the unchanged
    evidence (answer_without_read) or the recorded answer stands."""

    def work(record: QuestionRecord, q: Question, run_context: RunContext) -> dict:
        program = _program(optional, answer_without_read, run_context)
        out = program(question=record.question, evidence=EvidenceStore.from_rows(record.evidence),
                      pool=q.paragraphs)
        kept = {"selected": out.selected, "select_parsed": out.select_parsed, "read": out.read,
                "answered": out.answered, "no_read": NO_READ if answer_without_read else KEEP_ANSWER}
        if out.answered:
            kept.update(answer=out.answer, citations=[list(c) for c in out.citations], parsed=out.parsed)
        else:
            kept.update(answer=record.prediction, citations=record.citations, parsed=None)
        return kept

    return work


def analyze(runs: list[LoggedRun], context: Context, out: Path) -> Report:
    report = Report(params={"arms": "control, model-selected", "max_extra_reads": MAX_EXTRA_READS,
                            "select_rounds": 1, "no_read": NO_READ})
    reruns = recovery.rerun_errors(runs, context, report, "model-selected", "model-selected",
                          extra_reads(optional=False, answer_without_read=True), current=_current)
    rows = [row for x in recovery.with_pooled(reruns) for row in recovery.conversion_rows(x, context, report, NAME)]
    report.rows[TABLE] = rows
    report.rows[READS] = reads = [_reads_row(x, report) for x in recovery.with_pooled(reruns)]
    report.tables[TABLE] = (
        "# Table 16 (F.3): model-selected extra reads after a failure\n\n" + recovery.conversion_table(rows, context)
        + "\n\n## What was read\n\n" + markdown(READS_HEAD, reads) + "\n\n" + READS_NOTE
        + "\n\n## Calls the analysis added\n\n" + recovery.calls_table(recovery.calls_rows(reruns)) + "\n")
    return report


def _current(entry: dict) -> bool:
    """A logged F.3 entry made under this rule: every question ends in a final call. An entry of the earlier
    rule that read nothing kept the recorded answer without one, so it is run again; one that read made
    the same calls under both rules and is kept."""
    return bool(entry.get("answered"))


READS_HEAD = ["method", "dataset", "LM", "n errors", "unparseable selection", "successful extra read",
              "final call on unchanged evidence", "read a missing supporting paragraph",
              "exact matches after a successful read", "exact matches without a successful read"]
READS_NOTE = ("A successful extra read: at least one picked title matched an unread paragraph and was read; the final "
              "call then reran over the evidence already read plus the new paragraphs. A selection that was "
              "unparseable, or named only titles already read or not in the pool, read nothing: the final call "
              "still ran, once, on the unchanged evidence (counted in 'final call on unchanged evidence' and in the "
              "calls added), and its answer is the one scored (the paper: 173 of its 174 exact matches followed a "
              "successful read).")


def _reads_row(x: recovery.Rerun, report: Report) -> list[str]:
    """What the selections read: unparseable, a successful read, a final call without one, a missing supporting
    paragraph among the reads, and exact answers with and without a successful read."""
    picked, after = x.entries["model-selected"], x.scores["model-selected"]
    read_ok = [bool(p["read"]) for p in picked]
    unchanged = [not ok and p["answered"] for ok, p in zip(read_ok, picked)]
    gold_found = [bool(set(p["read"]) & (set(r.gold_titles) - set(r.evidence_titles)))
                  for p, r in zip(picked, x.records)]
    matches = sum(ok and s["em"] >= 1 for ok, s in zip(read_ok, after))
    matches_unread = sum(not ok and s["em"] >= 1 for ok, s in zip(read_ok, after))
    unparseable = sum(not p["select_parsed"] for p in picked)
    report.keyed(f"{NAME}/{x.run.variant}/{x.run.dataset}/{x.run.lm}", {
        "successful_reads": sum(read_ok), "final_without_read": sum(unchanged), "missing_gold_read": sum(gold_found),
        "matches_after_read": matches, "matches_without_read": matches_unread, "unparseable_selections": unparseable})
    return [*run_cells(x.run), str(len(x.records)), str(unparseable), str(sum(read_ok)), str(sum(unchanged)),
            str(sum(gold_found)), str(matches), str(matches_unread)]
