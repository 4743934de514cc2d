"""Full Pool: one call that sees every paragraph of the pool, distractors included.

Same answering instructions and evidence format as EIR's final call (it IS that call, given the
whole pool as evidence), so the two differ only in what evidence reaches the answer. It reads
nothing turn by turn, so it takes no read budget H (a run still logs the H it was given).
"""

from __future__ import annotations

import dspy

from eir_dspy.acceptance import EXTRACT
from eir_dspy.evidence import EvidenceStore
from eir_dspy.paragraphs import Paragraph
from programs import names
from programs.eir import AnswerFromEvidence
from programs.method_program import MethodProgram
from programs.options import Options
from programs.result import MethodResult
from programs.run_context import RunContext
from programs.token_bound import PoolTokens, Prompts, TokenBound
from programs.trajectory_record import Trajectory


def max_calls(budget: int, setting: str, options: Options) -> int:
    """One `final` call over the whole pool, whatever H."""
    return 1


def max_tokens(budget: int, setting: str, options: Options, pool: PoolTokens, cap: int,
               prompts: Prompts) -> TokenBound:
    """Its one `final` call (`answer.predict`): the question and the whole pool rendered as evidence;
    one completion of at most cap. Nothing grows: the prompt is fixed by the question's text."""
    return TokenBound(prompts.call("answer.predict", question=pool.question, evidence=pool.pool), cap)


class FullPool(MethodProgram):
    acceptance = EXTRACT  # the paper is silent; its one call is EIR's final call, so it accepts as EIR does

    def __init__(self, context: RunContext | None = None) -> None:
        """`context`: the run's (programs/run_context.py; the pool setting has no search)."""
        super().__init__(context)
        self.answer = AnswerFromEvidence(self.context)

    def forward(self, question: str, paragraphs: tuple[Paragraph, ...]) -> MethodResult:
        pool = EvidenceStore()
        for p in paragraphs:
            pool.add_paragraph(p, turn=0)
        with dspy.context(adapter=self.adapter):  # its one call by Full Pool's rule
            final = self.answer(question=question, evidence=pool.render(), titles=list(pool.titles))
        return MethodResult(answer=final.answer, citations=final.citations, evidence=pool,
                            trajectory=Trajectory(method=names.FULL_POOL, final_parsed=final.parsed))
