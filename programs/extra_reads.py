"""The recovery experiments' program (Appendix F.3, F.4): after an episode, one `select` call picks up to
two unread paragraphs; they are read, and the same final answer call as EIR's answers again.

The select call sees only the question, the sentences already read and the unread titles: no
answer (earlier or reference), no lists, no score. Its titles are matched to unread titles as a read
is (case, spacing and wrapping quotes ignored); a title that matches none is not read, and nothing
else is read in its place.

When no extra read succeeds, the two experiments differ, as the paper describes them:
- F.3 (`answer_without_read=True`): the final call runs anyway, on the unchanged evidence (one of the
  paper's 174 F.3 exact matches followed no successful read, so its answer came from such a call);
- F.4 (`answer_without_read=False`): EIR's earlier answer stands and no final call is made.
"""

from __future__ import annotations

import dspy

from eir_dspy.acceptance import EXTRACT
from eir_dspy.accounting import lm_call
from eir_dspy.environment import match_title
from eir_dspy.evidence import EvidenceStore
from eir_dspy.paragraphs import Paragraph
from programs.eir import AnswerFromEvidence
from programs.method_program import MethodProgram
from programs.run_context import RunContext
from signatures import MaybeSelectMoreReads, SelectMoreReads
from signatures.schemas import grammar_config, select_reads_schema

MAX_EXTRA_READS = 2


class ExtraReads(MethodProgram):
    """`optional=False`: F.3, the model must pick one or two titles; `optional=True`: F.4, it may pick none.
    `context`: the recorded run's decoding (eval/analyze/sources.py `run_lm`)."""

    acceptance = EXTRACT  # what it re-runs is EIR's final call, so it accepts as EIR does (its select call too)

    def __init__(self, optional: bool, answer_without_read: bool = False, context: RunContext | None = None) -> None:
        super().__init__(context)
        self.optional = optional
        self.answer_without_read = answer_without_read
        self.select = dspy.Predict(MaybeSelectMoreReads if optional else SelectMoreReads)
        self.answer = AnswerFromEvidence(self.context)

    def forward(self, question: str, evidence: EvidenceStore, pool: tuple[Paragraph, ...]) -> dspy.Prediction:
        with dspy.context(adapter=self.adapter):
            return self._select_and_answer(question, evidence, pool)

    def _select_and_answer(self, question: str, evidence: EvidenceStore, pool: tuple[Paragraph, ...]) -> dspy.Prediction:
        unread = tuple(p.title for p in pool if p.title not in evidence.titles)
        if not unread:  # everything was read: there is nothing to choose, so no select call is made
            return self._after([], True, [], question, evidence)
        config = grammar_config("select_reads", lambda: select_reads_schema(list(unread), self.optional),
                                strict=self.context.strict)
        out = lm_call("select", self.select, question=question, evidence=evidence.render(),
                      unread_titles="\n".join(unread) or "(every paragraph has been read)", config=config,
                      on_unusable=None)
        selected = [str(t) for t in (out.titles if out is not None else [])]
        chosen: list[str] = []
        for title in selected:
            found = match_title(title.strip(), unread)
            if found and found not in chosen and len(chosen) < MAX_EXTRA_READS:
                chosen.append(found)
        more = evidence.copy()
        by_title = {p.title: p for p in pool}
        for title in chosen:
            more.add_paragraph(by_title[title], turn=0)
        return self._after(selected, out is not None, chosen, question, more)

    def _after(self, selected: list[str], parsed: bool, read: list[str], question: str,
               evidence: EvidenceStore) -> dspy.Prediction:
        """The final call over `evidence` after a successful read (or always, with answer_without_read);
        `answered` says whether it ran."""
        if not read and not self.answer_without_read:
            return dspy.Prediction(selected=selected, select_parsed=parsed, read=[], answered=False)
        final = self.answer(question=question, evidence=evidence.render(), titles=list(evidence.titles))
        return dspy.Prediction(selected=selected, select_parsed=parsed, read=read, answered=True,
                               answer=final.answer, citations=final.citations, parsed=final.parsed, evidence=evidence)
