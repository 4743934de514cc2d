"""The final answer call, shared by EIR and Full Pool.

Its only inputs are the question and evidence sentences. This is the boundary of EIR:
nothing from the trajectory (lists, submitted answer, reasoning) can be passed in.
"""

from __future__ import annotations

import dspy

from eir_dspy.accounting import lm_call
from signatures import FinalAnswer
from signatures.schemas import final_answer_schema, grammar_config


class AnswerFromEvidence(dspy.Module):
    def __init__(self) -> None:
        super().__init__()
        self.predict = dspy.Predict(FinalAnswer)

    def forward(self, question: str, evidence: str, titles: list[str]) -> dspy.Prediction:
        """`evidence` is rendered sentences; `titles` the paragraphs they come from (for decoding only)."""
        config = grammar_config("final_answer", lambda: final_answer_schema(titles))
        out = lm_call("final", self.predict, question=question, evidence=evidence, config=config, on_unusable=None)
        if out is None:  # an answer that cannot be read scores as no answer
            return dspy.Prediction(answer="", citations=[], parsed=False)
        citations = [(c.title, c.sentence) for c in out.citations]
        return dspy.Prediction(answer=out.answer.strip(), citations=citations, parsed=True)
