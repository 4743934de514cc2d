"""`eval.run --trace`: one MLflow trace per question, scored, with DSPy's autolog on only for the
runs that ask for it.

What a trace holds (spans, tags, scores as feedback, expectations): docs/experiments.md, "Traces and
GenAI evaluation".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import dspy
import mlflow
from mlflow.entities import AssessmentSource, AssessmentSourceType, SpanType

from eval.data.schema import Question

QUESTION_TAG = "eir.question_id"
RUN_TAG = "eir.run_id"
# Feedback name -> the record's score (0..1), as eval.scoring.metrics computed it.
FEEDBACK = {"answer_f1": "answer_f1", "answer_em": "em", "support_f1": "support_f1"}
SCORER = AssessmentSource(source_type=AssessmentSourceType.CODE, source_id="eval.scoring.metrics.score_question")

_ASYNC = "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"
_usage_before: bool | None = None  # dspy's track_usage before autolog turned it on


def use_autolog(on: bool) -> None:
    """DSPy autolog is process-wide (a callback in dspy.settings): on for a run that asked, off for
    any other, so in one eval.grid process an untraced cell never inherits a traced cell's tracing."""
    global _usage_before
    if on:
        _export_in_order()
        if _usage_before is None:
            _usage_before = bool(getattr(dspy.settings, "track_usage", False))
        mlflow.dspy.autolog(silent=True)
    elif autolog_on():
        mlflow.dspy.autolog(disable=True, silent=True)
        if _usage_before is not None:  # autolog turned DSPy's usage tracking on; give it back
            dspy.settings.configure(track_usage=_usage_before)
            _usage_before = None


def _export_in_order() -> None:
    """MLflow's async exporter writes a trace's spans and its info as separate tasks on a thread
    pool; when the span task lands last it replaces the request preview set in `traced` with the
    root span's inputs (seen in 10 of 21 runs of tests/eval/runs/test_traces.py). Exported synchronously, the
    spans are written before the info: a few local writes per question, against minutes of model."""
    if os.environ.get(_ASYNC) != "false":
        os.environ[_ASYNC] = "false"
        mlflow.tracing.reset()  # the exporter reads the setting when the tracer provider is built


def autolog_on() -> bool:
    from mlflow.dspy.callback import MlflowCallback

    return any(isinstance(c, MlflowCallback) for c in dspy.settings.callbacks)


def traced(run_one: Callable[[Question], dict], run_id: str) -> Callable[[Question], dict]:
    """`run_one` with each question inside its own trace (in the worker thread that runs it)."""

    def run_traced(q: Question) -> dict:
        with mlflow.start_span(name=f"question {q.id}", span_type=SpanType.AGENT, run_id=run_id) as span:
            span.set_inputs({"question_id": q.id, "question": q.question})
            # The id leads the preview: the trace list's Request column then says which question it is.
            mlflow.update_current_trace(tags={RUN_TAG: run_id, QUESTION_TAG: q.id}, client_request_id=q.id,
                                        request_preview=f"[{q.id}] {q.question}")
            record = run_one(q)
            span.set_outputs({"answer": record["prediction"], "citations": record["citations"]})
            if record.get("error") is not None:
                mlflow.update_current_trace(state="ERROR")
            # Logged while the trace is active: they are written with it (no second request per score).
            for name, key in FEEDBACK.items():
                mlflow.log_feedback(trace_id=span.trace_id, name=name, value=float(record[key] or 0.0), source=SCORER,
                                    rationale=record.get("error"))
            for name, value in expectations(q).items():
                mlflow.log_expectation(trace_id=span.trace_id, name=name, value=value, source=SCORER)
        return record

    return run_traced


def expectations(q: Question) -> dict:
    """The gold answer (MLflow's `expected_response`) and the gold support of one question."""
    gold = {"expected_response": q.answer, "supporting_facts": [list(f) for f in q.supporting_facts]}
    if q.aliases:
        gold["answer_aliases"] = list(q.aliases)
    if q.supporting_paragraphs:  # MuSiQue scores support over paragraph indices
        gold["supporting_paragraphs"] = list(q.supporting_paragraphs)
    return gold


def flush() -> None:
    """Write every pending trace before the run reports (MLflow exports traces asynchronously)."""
    mlflow.flush_trace_async_logging()


@contextmanager
def flushed(trace: bool) -> Iterator[None]:
    """For a traced run (`trace`), write its pending traces and turn autolog off when the block ends,
    however it ends: autolog is process-wide, and the next run in this process (an eval.grid cell)
    starts untraced."""
    try:
        yield
    finally:
        if trace:
            flush()
            use_autolog(False)
