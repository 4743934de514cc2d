"""The project's scorer as a DSPy metric, and the dspy.Example each question becomes.

An Example carries what the program's forward takes (question, paragraphs: its inputs) and the
gold the scorer needs (answer, aliases, supporting facts, ...), so the metric scores exactly as
eval.scoring.metrics.score_question scores a run's record.
"""

from __future__ import annotations

import dspy

from eval.data.schema import Question
from eval.scoring.metrics import score_question

METRICS = ("f1", "f1+support")  # answer F1; or the mean of answer F1 and support F1
_FIELDS = ("id", "question", "answer", "aliases", "type", "paragraphs", "supporting_facts", "dataset",
           "supporting_paragraphs")


def example_of(q: Question) -> dspy.Example:
    return dspy.Example(**{k: getattr(q, k) for k in _FIELDS}).with_inputs("question", "paragraphs")


def question_of(example: dspy.Example) -> Question:
    return Question(**{k: example[k] for k in _FIELDS})


def combine(scores: dict, metric: str) -> float:
    """One number (0..1) from score_question's scores (or a run record, which holds them)."""
    if metric == "f1":
        return float(scores["answer_f1"])
    if metric == "f1+support":
        return (float(scores["answer_f1"]) + float(scores["support_f1"])) / 2
    raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")


class Metric:
    """`(example, prediction, trace=None) -> float`: the DSPy metric every optimizer is given.
    The same number with or without a trace; BootstrapFewShot's threshold decides what passes."""

    def __init__(self, metric: str = "f1") -> None:
        combine({"answer_f1": 0, "support_f1": 0}, metric)  # an unknown metric fails here, not mid-compile
        self.metric = metric

    def scores(self, example: dspy.Example, prediction) -> dict:
        answer = getattr(prediction, "answer", "") or ""
        citations = list(getattr(prediction, "citations", None) or [])
        return score_question(question_of(example), answer, citations)

    def __call__(self, example: dspy.Example, prediction, trace=None) -> float:
        return combine(self.scores(example, prediction), self.metric)
