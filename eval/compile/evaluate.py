"""Score a program on questions exactly as eval.run does (eval.runs.execute.run_question per question,
eval.scoring.run_metrics.summarize over them), plus the compile's metric as one number."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import dspy

from eval.compile.metric import combine
from eval.data.schema import Question
from eval.runs.execute import run_question
from eval.scoring.run_metrics import summarize


def evaluate(program: dspy.Module, lm: dspy.BaseLM, questions: list[Question], metric: str,
             threads: int = 1) -> tuple[list[dict], dict[str, float]]:
    """Per-question records (in question order) and their summary; `score` is the metric's mean × 100."""
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        records = list(pool.map(lambda q: run_question(program, lm, q), questions))
    metrics = summarize(records)
    metrics["score"] = 100 * sum(combine(r, metric) for r in records) / len(records)
    metrics["wall_time_s"] = time.perf_counter() - t0
    return records, metrics
