"""What the recovery experiments (F.2-F.4) share: which runs they apply to, the model calls they add
(made like the source run's, counted like any call, kept in a resumable call log:
docs/experiments.md, "Analyses of recorded runs", Model calls) and the tables they report.
"""

from __future__ import annotations

import functools
import sys
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from statistics import mean

import dspy
import mlflow

from eir_dspy.accounting import Ledger, recording
from eir_dspy.evidence import EvidenceStore
from eir_dspy.lm import DecodingAdapter
from eval.analyze.report import POOLED, Context, Report, pooled_run, run_cells
from eval.analyze.sources import questions_of, run_lm
from eval.compare.error_analysis import em_errors, missing_gold
from eval.data.schema import Question
from eval.files.question_record import QuestionRecord
from eval.files.results_file import ResultsFile
from eval.runs import tracking
from eval.runs.logged_runs import LoggedRun, SelectionError
from eval.runs.scheduler import run_all
from eval.scoring.formatting import fmt_p, interval, markdown, pct
from eval.scoring.metrics import score_question
from eval.scoring.stats import mcnemar_exact, paired_bootstrap, proportion
from programs import names
from programs.eir import EIR, AnswerFromEvidence
from programs.run_context import RunContext

# A step's work on one question: (source record, its question, the run's context: programs/run_context.py)
# -> what to keep (answer, citations, ...).
Work = Callable[[QuestionRecord, Question, RunContext], dict]


def answering_runs(runs: list[LoggedRun], report: Report) -> list[LoggedRun]:
    """The runs whose answer came from EIR's final call over recorded evidence in a pool (any EIR
    variant); others are named in a note. Full Pool read everything, so it has nothing to recover."""
    kept = [r for r in runs if r.label.startswith(names.EIR) and r.setting == "pool"]
    for r in runs:
        if r not in kept:
            report.notes.append(f"skipped {r.name} ({r.run_id}): the recovery experiments re-answer EIR's final "
                                "call over a pool; this run is not an EIR pool run")
    if not kept:
        raise SelectionError("no EIR run in the pool setting among the runs given")
    return kept


def incomplete_errors(run: LoggedRun) -> list[QuestionRecord]:
    """F.2/F.3's questions: EM errors with at least one annotated supporting paragraph unread
    (chosen by the labels; nothing of them reaches the model)."""
    return [r for r in em_errors(run.question_records) if missing_gold(r) > 0]


def run_step(step: str, run: LoggedRun, records: list[QuestionRecord], work: Work, context: Context,
             current: Callable[[dict], bool] | None = None) -> dict[str, dict]:
    """`work` on each record not yet in the step's call log, appending each result as it finishes.
    `current(entry)`: False for a logged entry made under an earlier rule of the step, which is run
    again (its new line replaces it)."""
    log = ResultsFile(context.out / "call_logs" / run.run_id / f"{step}.jsonl")
    done = log.load()
    todo = [r for r in records if r.id not in done or (current is not None and not current(done[r.id]))]
    if not todo:
        return done
    questions = questions_of(run, context.data)
    lm, run_context = run_lm(run, context.threads)
    print(f"{step}: {len(todo)} question(s) of {run.name} to run ({len(records) - len(todo)} already in {log.path})",
          file=sys.stderr)

    def one(record: QuestionRecord) -> dict:
        ledger = Ledger()
        try:
            with dspy.context(lm=lm.copy()), recording(ledger):
                kept = work(record, questions[record.id], run_context)
            return {"id": record.id, "step": step, **kept, "lm_calls": ledger.to_list(), "error": None}
        except Exception as exc:  # a provider error: not kept, so the next attempt retries it
            return {"id": record.id, "error": f"{type(exc).__name__}: {exc}", "error_type": type(exc).__name__,
                    "trace": traceback.format_exc(limit=4)}

    failed: list[dict] = []

    def keep(entry: dict) -> None:
        if entry["error"] is None:
            log.append(entry)
            done[entry["id"]] = entry
        else:
            failed.append(entry)

    active = mlflow.active_run()  # the analysis run, ended KILLED if a second Ctrl-C exits at once
    stop = run_all(todo, one, keep, context.threads, total=len(todo),
                   on_abort=lambda: active and tracking.end_run_if_active("KILLED", active.info.run_id))
    if stop.interrupted:
        raise KeyboardInterrupt(f"{step}: stopped; {len(done)} of {len(records)} questions are kept in {log.path} "
                                "and rerunning the same command continues from there")
    if failed:
        raise SelectionError(f"{step}: {len(failed)} question(s) of {run.name} failed, the first with "
                             f"{failed[0]['error']}; the {len(done)} done are kept in {log.path}: run again to retry")
    return done


def final_call(evidence: EvidenceStore, question: str, run_context: RunContext) -> dict:
    """EIR's final answer call, unchanged: same signature, evidence format, LM settings, decoding (the
    run's `run_context`) and acceptance rule (EIR's)."""
    adapter, answer = _final_call(run_context)
    with dspy.context(adapter=adapter):
        out = answer(question=question, evidence=evidence.render(), titles=list(evidence.titles))
    return {"answer": out.answer, "citations": [list(c) for c in out.citations], "parsed": out.parsed,
            "evidence_titles": list(evidence.titles)}


@functools.cache
def _final_call(run_context: RunContext) -> tuple[DecodingAdapter, AnswerFromEvidence]:
    """EIR's adapter and final-answer module for the run's context, made once (as a program makes its
    own: programs/method_program.py) and shared by every question, as eval.run shares one program."""
    return DecodingAdapter(run_context.decoding, acceptance=EIR.acceptance), AnswerFromEvidence(run_context)


def control(record: QuestionRecord, q: Question, run_context: RunContext) -> dict:
    """The final call rerun on the unchanged evidence, as a fresh model call."""
    return final_call(EvidenceStore.from_rows(record.evidence), record.question, run_context)


def rescored(q: Question, entry: dict) -> dict:
    return score_question(q, entry["answer"], [tuple(c) for c in entry["citations"]])


@dataclass(frozen=True)
class Rerun:
    """One run's reruns (or every run's, pooled): per arm, each question's call-log entry and its rescored answer."""

    run: LoggedRun
    records: list[QuestionRecord]  # the questions rerun, in run order
    steps: dict[str, str]  # arm -> the step (call log) it comes from
    entries: dict[str, list[dict]]  # arm -> each question's call-log entry
    scores: dict[str, list[dict]]  # arm -> each question's rescored answer


def rerun(run: LoggedRun, records: list[QuestionRecord], context: Context,
          steps: dict[str, tuple[str, Work, Callable[[dict], bool] | None]]) -> Rerun:
    """Every step (arm -> (step, work, current)) on the records, rescored by the dataset's rules."""
    questions = questions_of(run, context.data)
    logs = {arm: run_step(step, run, records, work, context, current) for arm, (step, work, current) in steps.items()}
    entries = {arm: [log[r.id] for r in records] for arm, log in logs.items()}
    return Rerun(run, records, {arm: step for arm, (step, _, _) in steps.items()}, entries,
                 {arm: [rescored(questions[r.id], e) for r, e in zip(records, es)] for arm, es in entries.items()})


def rerun_errors(runs: list[LoggedRun], context: Context, report: Report, arm: str, step: str, work: Work,
                 current: Callable[[dict], bool] | None = None) -> list[Rerun]:
    """F.2/F.3: on each EIR pool run's EM errors with incomplete evidence, the control and `arm` (call log `step`)."""
    found = []
    for run in answering_runs(runs, report):
        errors = incomplete_errors(run)
        if not errors:
            report.notes.append(f"{run.name}: no EM error with incomplete evidence, nothing to rerun")
            continue
        found.append(rerun(run, errors, context, {"control": ("control", control, None), arm: (step, work, current)}))
    return found


def with_pooled(reruns: list[Rerun]) -> list[Rerun]:
    """The runs' reruns, then (with more than one run) the paper's pooled one: every run's questions together."""
    if len(reruns) < 2:
        return reruns
    arms = reruns[0].entries
    return reruns + [Rerun(pooled_run([x.run for x in reruns]), [r for x in reruns for r in x.records], reruns[0].steps,
                           {arm: [e for x in reruns for e in x.entries[arm]] for arm in arms},
                           {arm: [s for x in reruns for s in x.scores[arm]] for arm in arms})]


def calls_added(entries: list[dict]) -> dict[str, float]:
    """The calls the entries made: count, by role, tokens."""
    calls = [c for e in entries for c in e["lm_calls"]]
    roles = Counter(c["role"] for c in calls)
    return {"calls": len(calls), **{f"calls_{k}": v for k, v in sorted(roles.items())},
            "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
            "completion_tokens": sum(c["completion_tokens"] for c in calls),
            # None when any call's model has no known price (reported as unknown, never as 0)
            "cost_usd": None if any(c["cost_usd"] is None for c in calls) else sum(c["cost_usd"] for c in calls)}


def conversion_rows(x: Rerun, context: Context, report: Report, analysis: str) -> list[list[str]]:
    """Table 16 rows: per arm, exact-match conversions (count, %, Wilson CI), McNemar of the arm's EM
    after against the recorded EM before (the paper's test: its p = 2 * 0.5^335 and 2 * 0.5^174 are
    those of every discordant pair going from wrong to right), and Answer F1 before/after with a
    paired bootstrap interval. The control is an arm like the others."""
    rows = []
    before_em, before_f1 = [r.em >= 1 for r in x.records], [r.answer_f1 for r in x.records]
    for arm, scores in x.scores.items():
        after_f1 = [s["answer_f1"] for s in scores]
        conv = proportion(sum(s["em"] >= 1 for s in scores), len(x.records))
        vs = mcnemar_exact(before_em, [s["em"] >= 1 for s in scores])
        boot = paired_bootstrap([100 * f for f in before_f1], [100 * f for f in after_f1], context.resamples,
                                context.seed)
        rows.append([*run_cells(x.run), arm, str(len(x.records)), f"{conv.k} ({pct(conv.share)})",
                     f"[{pct(conv.low)}, {pct(conv.high)}]", f"{vs.b} / {vs.c}", fmt_p(vs.p, 2),  # 2 * 0.5^335 is about 3e-101
                     f"{100 * mean(before_f1):.1f}", f"{100 * mean(after_f1):.1f}", interval(boot)])
        report.keyed(f"{analysis}/{arm}/{x.run.variant}/{x.run.dataset}/{x.run.lm}", {
            "conversions": conv.k, "conversion_share": conv.share, "f1_before": 100 * mean(before_f1),
            "f1_after": 100 * mean(after_f1), "f1_diff": boot.diff, "f1_ci_low": boot.low, "f1_ci_high": boot.high,
            "mcnemar_b": vs.b, "mcnemar_c": vs.c, "mcnemar_p": vs.p})
    return rows


def conversion_table(rows: list[list[str]], context: Context) -> str:
    """Table 16's conversions as markdown, with its note."""
    return (markdown(CONVERSION_HEAD, rows) + "\n\n" + CONVERSION_NOTE.format(resamples=context.resamples, seed=context.seed)
            + f" {POOLED}: every run's errors pooled (with more than one run).")


CONVERSION_HEAD = ["method", "dataset", "LM", "arm", "n errors", "EM conversions (%)", "95% CI (Wilson)",
                   "McNemar b / c (after vs before)", "McNemar p", "F1 before", "F1 after", "ΔF1 [95% CI]"]
CONVERSION_NOTE = ("n errors: EM errors whose evidence missed an annotated supporting paragraph. A conversion: the rerun "
                   "answer is an exact match. control: the final call rerun on the unchanged evidence (a fresh model "
                   "call). McNemar (exact, two-sided): each arm after against before (the run's recorded answer) on "
                   "the same questions, b = exact before only, c = exact after only; every question here was wrong "
                   "before, so p = 2 × 0.5^c. ΔF1 = after − before, Answer F1 points, paired bootstrap ({resamples:,} "
                   "resamples, seed {seed}).")


def calls_table(rows: list[list[str]]) -> str:
    return markdown(["method", "dataset", "LM", "step", "questions", "calls", "by role", "prompt tokens",
                     "completion tokens", "cost (USD)"], rows)


def calls_rows(reruns: list[Rerun]) -> list[list[str]]:
    """Per run and step, the calls the analysis added."""
    return [calls_row(x.run, step, x.entries[arm]) for x in reruns for arm, step in x.steps.items()]


def calls_row(run: LoggedRun, step: str, entries: list[dict]) -> list[str]:
    added = calls_added(entries)
    roles = ", ".join(f"{k.removeprefix('calls_')} {v}" for k, v in added.items() if k.startswith("calls_")) or "–"
    return [*run_cells(run), step, str(len(entries)), str(added["calls"]), roles,
            f"{added['prompt_tokens']:,}", f"{added['completion_tokens']:,}",
            "unknown" if added["cost_usd"] is None else f"{added['cost_usd']:.4f}"]
