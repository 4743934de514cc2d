"""Run one method on one question and turn the outcome into a scored, costed record (eval.files.question_record).

What a method returned is read from its MethodResult (programs/result.py) and what it needs from its
registry entry (programs/registry.py), nothing else."""

from __future__ import annotations

import time
import traceback
from collections import Counter

import dspy

from eir_dspy.accounting import CallRecord, Ledger, recording
from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.lm.embedded_server import EngineError
from eval.data.schema import Question
from eval.files.question_record import QuestionRecord
from eval.scoring.metrics import exact_match, max_over_answers, score_question
from programs.registry import method_of
from programs.result import MethodResult


def oracle_for(q: Question):
    """The external controller of oracle-stopped Reflexion: a yes/no on a trial's answer.

    Only this boolean reaches the program; the reference answer itself never does.
    """
    return lambda answer: bool(max_over_answers(exact_match, answer, q.answers))


def run_question(program: dspy.Module, lm: dspy.LM, q: Question, corpus: CorpusIndex | None = None) -> dict:
    """The question's record as its results line holds it (QuestionRecord.row())."""
    # A copy per question isolates DSPy's history, so the ledger sees exactly this
    # question's calls even when questions run in parallel threads.
    qlm = lm.copy()
    ledger = Ledger()
    method = method_of(program)
    t0 = time.perf_counter()
    error, trace, result, engine_failed = None, None, None, False
    try:
        # The corpus setting hides the question's pool: the program sees only the index.
        inputs = method.inputs(paragraphs=q.paragraphs, corpus=corpus, oracle=oracle_for(q))
        with dspy.context(lm=qlm), recording(ledger):
            result = method.result(program(question=q.question, **inputs))
    except Exception as exc:  # a failed question scores 0 and the run goes on, unless the engine is gone
        engine = engine_failure(exc)
        engine_failed, cause = engine is not None, engine or exc
        error = f"{type(cause).__name__}: {cause}"
        trace = traceback.format_exc(limit=4)
    seconds = time.perf_counter() - t0
    record = build_record(q, result, ledger.calls, seconds, error, trace)
    record.engine_failed = engine_failed
    # A method may report further results from the same work (Reflexion's first trial),
    # each with the calls it had made by then.
    variants = result.variants if result is not None else {}
    record.variants = {name: build_record(q, v, ledger.calls[: v.calls], v.seconds, None, None)
                       for name, v in variants.items()}
    return record.row()


def engine_failure(exc: BaseException) -> EngineError | None:
    """The embedded engine's failure behind an error, through DSPy's wrapping (`raise ... from`)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, EngineError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def build_record(q: Question, result: MethodResult | None, calls: list[CallRecord], seconds: float,
                 error: str | None, trace: str | None) -> QuestionRecord:
    """The record of `result` (None: the question failed with `error`)."""
    answer = result.answer if result is not None else ""
    citations = list(result.citations) if result is not None else []
    scores = score_question(q, answer, citations)
    episodes = result.episodes if result is not None else []
    episode = result.episode if result is not None else None  # the episode the answer came from
    # The sentences the answer was given from (EIR's final call: the evidence read; Full Pool: the
    # pool). A citation outside them is kept for Support F1, as the official scorers keep any
    # predicted fact, and counted here.
    shown = result.evidence if result is not None else None
    read = list(shown.titles) if shown is not None else []
    outside = [c for c in citations if shown is None or not shown.has(*c)]
    gold = q.gold_titles
    spent = Ledger(list(calls))
    totals = spent.totals()
    return QuestionRecord(**{
        "id": q.id,
        "question": q.question,
        "gold": q.answer,
        "aliases": list(q.aliases),
        "type": q.type,
        "prediction": answer,
        "citations": citations,
        **scores,
        "calls": totals["calls"],
        "calls_by_role": spent.by_role(),
        "prompt_tokens": totals["prompt_tokens"],
        "completion_tokens": totals["completion_tokens"],
        "cost_usd": totals["cost_usd"],
        "cache_hits": totals["cache_hits"],
        "seconds": seconds,
        "turns": sum(len(e.turns) for e in episodes),
        "rejected_actions": sum(e.rejected_turns for e in episodes),
        "rejections_by_cause": dict(Counter(t.rejection_cause for e in episodes for t in e.turns if not t.accepted)),
        "citations_outside_evidence": len(outside),
        "title_fallbacks": sum(t.title_fallback for e in episodes for t in e.turns),
        "reads": sum(e.reads for e in episodes),
        "searches": sum(e.searches for e in episodes),
        "evidence_titles": read,
        # The sentences the answer came from, as [title, sentence index, text], in read order: what a
        # recovery analysis (eval.analyze) adds to or re-answers from.
        "evidence": [[r.title, r.sentence_index, r.text] for r in shown.records] if shown is not None else None,
        "gold_titles": sorted(gold),
        "gold_read_share": (len(gold & set(read)) / len(gold)) if gold else 0.0,
        "forced_end": episode.forced_end if episode is not None else None,
        # The agent chose to stop: it submitted before its last turn (a last-turn submit is what the
        # budget leaves; under strict decoding it is the only action the grammar allows there).
        "submitted_before_budget": (episode.submitted is not None and episode.turn < episode.max_turns)
        if episode is not None else None,
        "error": error,
        "error_type": error.split(":", 1)[0] if error else None,
        "error_trace": trace if error else None,
        "trajectory": result.trajectory if result is not None else None,
        "lm_calls": spent.to_list(),
    })
