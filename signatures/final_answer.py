"""The final answer: question and evidence sentences in, short answer and citations out."""

from __future__ import annotations

import dspy

from eir_dspy.state import Citation


class FinalAnswer(dspy.Signature):
    """Answer the question using only the evidence sentences.
    Give the shortest answer that is correct (an entity, date, number, or yes/no), not a sentence.
    Cite every sentence the answer depends on by paragraph title and sentence index."""

    question: str = dspy.InputField()
    evidence: str = dspy.InputField(desc="sentences grouped by paragraph title, each labelled [sentence index]")
    answer: str = dspy.OutputField()
    citations: list[Citation] = dspy.OutputField()
