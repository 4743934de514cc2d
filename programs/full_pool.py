"""Full Pool: one call that sees every paragraph of the pool, distractors included.

Same answering instructions and evidence format as EIR's final call (it IS that call, given the
whole pool as evidence), so the two differ only in what evidence reaches the answer.
"""

from __future__ import annotations

import dspy

from eir_dspy.acceptance import EXTRACT
from eir_dspy.evidence import EvidenceStore
from eir_dspy.paragraphs import Paragraph
from programs.answer import AnswerFromEvidence
from programs.trajectory_record import Trajectory


class FullPool(dspy.Module):
    acceptance = EXTRACT  # the paper is silent; its one call is EIR's final call, so it accepts as EIR does

    def __init__(self, budget: int = 6) -> None:  # budget is unused: nothing is read turn by turn
        super().__init__()
        self.answer = AnswerFromEvidence()

    def forward(self, question: str, paragraphs: tuple[Paragraph, ...]) -> dspy.Prediction:
        pool = EvidenceStore()
        for p in paragraphs:
            pool.add_paragraph(p, turn=0)
        final = self.answer(question=question, evidence=pool.render(), titles=list(pool.titles))
        return dspy.Prediction(answer=final.answer, citations=final.citations, evidence_titles=list(pool.titles),
                               answer_evidence=pool,
                               trajectory=Trajectory(method="full_pool", final_parsed=final.parsed))
