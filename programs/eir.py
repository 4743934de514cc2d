"""EIR: one LM call per turn updates requirements and conclusions and picks the next action;
a separate final call answers from the question and the evidence sentences alone."""

from __future__ import annotations

import dspy

from eir_dspy.acceptance import EXTRACT
from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.episode import run_episode
from eir_dspy.paragraphs import Paragraph
from eir_dspy.state import INVALID_UPDATE_RULES, paper_invalid_updates
from programs.answer import AnswerFromEvidence
from programs.eir_policy import ABLATIONS, EIRPolicy
from programs.eir_repair import RepairingPolicy
from programs.setting import new_environment, turn_limit
from programs.trajectory_record import Trajectory
from signatures import EIRSearchTurn, EIRTurn
from signatures.repair import EIRDependentSearchTurn, EIRDependentTurn, RefreshRequirements, RepairConclusion


class EIR(dspy.Module):
    acceptance = EXTRACT  # the paper: EIR can extract its action from surrounding prose

    def __init__(self, budget: int = 6, ablation: str = "none", invalid_updates: str | None = None) -> None:
        """`invalid_updates`: what invalid list updates do to a turn, `discard` or `reject`
        (programs/eir_policy.py); None takes the paper's rule for the setting each question runs in."""
        super().__init__()
        if ablation not in ABLATIONS:
            raise ValueError(f"unknown EIR ablation {ablation!r}; choose one of {', '.join(ABLATIONS)}")
        if invalid_updates not in (None, *INVALID_UPDATE_RULES):
            raise ValueError(f"invalid_updates must be one of {', '.join(INVALID_UPDATE_RULES)}; got {invalid_updates!r}")
        self.budget = budget
        self.ablation = ablation
        self.invalid_updates = invalid_updates
        repairs = ablation.startswith("repair")
        self.turn = dspy.Predict(EIRDependentTurn if repairs else EIRTurn)
        self.search_turn = dspy.Predict(EIRDependentSearchTurn if repairs else EIRSearchTurn)
        if repairs:
            self.repair = dspy.Predict(RepairConclusion)
            self.refresh = dspy.Predict(RefreshRequirements)
        self.answer = AnswerFromEvidence()

    def policy(self, corpus: CorpusIndex | None) -> EIRPolicy:
        turn = self.turn if corpus is None else self.search_turn
        rule = self.invalid_updates or paper_invalid_updates("pool" if corpus is None else "corpus")
        if self.ablation.startswith("repair"):
            return RepairingPolicy(turn, self.repair, self.refresh, apply_repairs=self.ablation == "repair",
                                   invalid_updates=rule)
        return EIRPolicy(turn, show_lists=self.ablation != "no-list-feedback", invalid_updates=rule)

    def forward(self, question: str, paragraphs: tuple[Paragraph, ...] = (),
                corpus: CorpusIndex | None = None) -> dspy.Prediction:
        policy = self.policy(corpus)
        # Pool: H reads plus one more decision. Corpus: 12 turns; if none submits, EIR still answers.
        episode = run_episode(question, new_environment(paragraphs, corpus), policy, self.budget,
                              max_turns=turn_limit(corpus, None))
        # The boundary: only the question and the evidence sentences cross into the final call.
        final = self.answer(question=question, evidence=episode.evidence.render(), titles=list(episode.evidence.titles))
        return dspy.Prediction(
            answer=final.answer,
            citations=final.citations,
            episode=episode,
            trajectory=Trajectory(method="eir", turns=[t.__dict__ for t in episode.turns], **policy.record(),
                                  submitted=episode.submitted.answer if episode.submitted else None,
                                  forced_end=episode.forced_end, final_parsed=final.parsed),
        )

