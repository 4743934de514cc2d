"""Run one method on one question and turn the outcome into a scored, costed record."""

from __future__ import annotations

import time
import traceback

import dspy

from eir_dspy.accounting import Ledger, recording
from eval.metrics import score_question
from eval.schema import Question


def run_question(program: dspy.Module, lm: dspy.LM, q: Question) -> dict:
    # A copy per question isolates DSPy's history, so the ledger sees exactly this
    # question's calls even when questions run in parallel threads.
    qlm = lm.copy()
    ledger = Ledger()
    t0 = time.perf_counter()
    error, trace, pred = None, None, None
    try:
        with dspy.context(lm=qlm), recording(ledger):
            pred = program(question=q.question, paragraphs=q.paragraphs)
    except Exception as exc:  # a failed question scores 0 and the run goes on
        error = f"{type(exc).__name__}: {exc}"
        trace = traceback.format_exc(limit=4)
    seconds = time.perf_counter() - t0
    answer = pred.answer if pred is not None else ""
    citations = list(pred.citations) if pred is not None else []
    scores = score_question(q, answer, citations)
    episode = getattr(pred, "episode", None)
    read = list(episode.evidence.titles) if episode is not None else []
    gold = q.gold_titles
    totals = ledger.totals()
    return {
        "id": q.id,
        "question": q.question,
        "gold": q.answer,
        "aliases": list(q.aliases),
        "type": q.type,
        "prediction": answer,
        "citations": citations,
        **scores,
        "calls": totals["calls"],
        "calls_by_role": ledger.by_role(),
        "prompt_tokens": totals["prompt_tokens"],
        "completion_tokens": totals["completion_tokens"],
        "cost_usd": totals["cost_usd"],
        "cache_hits": totals["cache_hits"],
        "seconds": seconds,
        "turns": len(episode.turns) if episode is not None else 0,
        "rejected_actions": episode.rejected_turns if episode is not None else 0,
        "reads": episode.reads if episode is not None else 0,
        "evidence_titles": read,
        "gold_titles": sorted(gold),
        "gold_read_share": (len(gold & set(read)) / len(gold)) if gold else 0.0,
        "forced_end": episode.forced_end if episode is not None else None,
        "error": error,
        "error_trace": trace if error else None,
        "trajectory": getattr(pred, "trajectory", None),
        "lm_calls": ledger.to_list(),
    }
