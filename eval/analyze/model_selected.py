"""F.3 (Table 16, "model-selected"): after a known failure, can the model find the missing evidence itself?

For the same questions as F.2 (EM errors with incomplete evidence; the labels choose them and never
reach the model), one `select` call sees the question, the sentences already read and the unread
titles and must pick one or two titles; they are read and EIR's final call reruns once, over the
evidence already read plus the new paragraphs (one select/read round). A pick that matches no
unread title (one already read, one not in the pool) reads nothing; when nothing is read (that, or
an unparseable selection) the final call still runs, once, on the unchanged evidence, and its answer
is scored: F.3 says the final call then uses the evidence, with no exception for a failed read, and
one of its 174 exact matches followed no successful read. Such calls are counted apart (the reads
table's "final call on unchanged evidence") and among the calls the analysis added.
"""

from __future__ import annotations

from pathlib import Path

from eir_dspy.evidence import EvidenceStore
from eval.analyze.added_support import POOLED_NOTE, conversions, pool
from eval.analyze.recovery import (
    CONVERSION_HEAD,
    CONVERSION_NOTE,
    answering_runs,
    calls_row,
    calls_table,
    control,
    incomplete_errors,
    rescored,
    run_step,
)
from eval.analyze.report import Context, Report
from eval.analyze.sources import questions_of
from eval.data.schema import Question
from eval.files.question_record import QuestionRecord
from eval.runs.logged_runs import LoggedRun
from eval.scoring.formatting import markdown
from programs.extra_reads import MAX_EXTRA_READS, ExtraReads

NAME = "model-selected"
PAPER = "F.3, Table 16"
SUMMARY = "on EIR's EM errors with incomplete evidence, the model picks 1-2 more titles to read, then re-answers (LM calls)"
CALLS_LM = True
TABLE, READS = "table16_model_selected.md", "table16_model_selected_reads"
# What a selection that reads nothing leaves, logged as the param no_read: F.3 (here) reruns the final call,
# F.4 (extra_retrieval) keeps the recorded answer, as each section describes.
NO_READ = "final call on the unchanged evidence"
KEEP_ANSWER = "recorded answer stands, no final call"


def extra_reads(optional: bool, answer_without_read: bool):
    """A step's work: select, read, re-answer; with nothing read, the final call runs on the unchanged
    evidence (answer_without_read) or the recorded answer stands."""
    program = ExtraReads(optional=optional, answer_without_read=answer_without_read)

    def work(record: QuestionRecord, q: Question) -> dict:
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
    rows, cost, reads, pooled = [], [], [], []
    for run in answering_runs(runs, report):
        errors = incomplete_errors(run)
        if not errors:
            report.notes.append(f"{run.name}: no EM error with incomplete evidence, nothing to rerun")
            continue
        questions = questions_of(run, context.data)
        reruns = {"control": run_step("control", run, errors, control, context),
                  "model-selected": run_step("model-selected", run, errors,
                                             extra_reads(optional=False, answer_without_read=True), context,
                                             current=_current)}
        scores = {arm: [rescored(questions[r.id], done[r.id]) for r in errors] for arm, done in reruns.items()}
        rows += conversions(run, errors, scores, context, report, NAME)
        picked = [reruns["model-selected"][r.id] for r in errors]
        reads.append(_reads_row(run, errors, picked, scores["model-selected"], report))
        pooled.append((run, errors, scores, picked))
        cost += [calls_row(run, step, [reruns[step][r.id] for r in errors])
                 for step in ("control", "model-selected")]
    if len(pooled) > 1:  # the paper's pooled rows: every run's errors together
        run, errors, scores = pool([p[:3] for p in pooled])
        rows += conversions(run, errors, scores, context, report, NAME)
        reads.append(_reads_row(run, errors, [e for p in pooled for e in p[3]], scores["model-selected"], report))
    report.rows[TABLE] = rows
    report.rows[READS] = reads
    report.tables[TABLE] = (
        "# Table 16 (F.3): model-selected extra reads after a failure\n\n" + markdown(CONVERSION_HEAD, rows) + "\n\n"
        + CONVERSION_NOTE.format(resamples=context.resamples, seed=context.seed) + POOLED_NOTE
        + "\n\n## What was read\n\n" + markdown(READS_HEAD, reads) + "\n\n" + READS_NOTE
        + "\n\n## Calls the analysis added\n\n" + calls_table(cost) + "\n")
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


def _reads_row(run: LoggedRun, errors: list[QuestionRecord], picked: list[dict], after: list[dict],
               report: Report) -> list[str]:
    """What the selections read: unparseable, a successful read, a final call without one, a missing supporting
    paragraph among the reads, and exact answers with and without a successful read."""
    read_ok = [bool(p["read"]) for p in picked]
    unchanged = [not ok and p["answered"] for ok, p in zip(read_ok, picked)]
    gold_found = [bool(set(p["read"]) & (set(r.gold_titles) - set(r.evidence_titles)))
                  for p, r in zip(picked, errors)]
    matches = sum(ok and s["em"] >= 1 for ok, s in zip(read_ok, after))
    matches_unread = sum(not ok and s["em"] >= 1 for ok, s in zip(read_ok, after))
    unparseable = sum(not p["select_parsed"] for p in picked)
    key = f"{NAME}/{run.method}/{run.dataset}/{run.lm}"
    report.metrics.update({f"successful_reads/{key}": sum(read_ok), f"final_without_read/{key}": sum(unchanged),
                           f"missing_gold_read/{key}": sum(gold_found), f"matches_after_read/{key}": matches,
                           f"matches_without_read/{key}": matches_unread, f"unparseable_selections/{key}": unparseable})
    return [run.method, run.dataset, run.lm.rsplit("/", 1)[-1], str(len(errors)), str(unparseable), str(sum(read_ok)),
            str(sum(unchanged)), str(sum(gold_found)), str(matches), str(matches_unread)]
