"""EIR: one LM call per turn updates requirements and conclusions and picks the next action;
a separate final call answers from the question and the evidence sentences alone."""

from __future__ import annotations

import dspy

from eir_dspy.accounting import lm_call
from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.episode import Action, Episode, Proposal, run_episode
from eir_dspy.paragraphs import Paragraph
from eir_dspy.state import AgentLists
from programs.answer import AnswerFromEvidence
from programs.direct import to_action
from programs.setting import new_environment, turn_limit
from signatures import EIRSearchTurn, EIRTurn
from signatures.schemas import eir_search_turn_schema, eir_turn_schema, grammar_config


class EIRPolicy:
    def __init__(self, predict: dspy.Predict) -> None:
        self.predict = predict
        self.lists = AgentLists()
        self.updates = {"applied": 0, "discarded": 0}  # turns whose non-empty list updates were kept / thrown out

    def view(self, episode: Episode) -> tuple[dict, dict]:
        """What the agent sees of its environment, and the grammar of its turn output."""
        env, read = episode.env, list(episode.evidence.titles)
        if env.setting == "corpus":
            return ({"search_results": env.render_found()},
                    grammar_config("eir_turn", lambda: eir_search_turn_schema(env.unread_ids, read, episode.reads_left,
                                                                              episode.on_last_turn)))
        unread = list(env.unread_titles)
        return ({"unread_titles": "\n".join(unread) or "(all paragraphs have been read)"},
                grammar_config("eir_turn", lambda: eir_turn_schema(unread, read, episode.reads_left)))

    def propose(self, episode: Episode) -> Proposal:
        seen, config = self.view(episode)
        out = lm_call(
            "action", self.predict,  # the same role name as every method's per-turn call
            question=episode.question,
            **seen,
            requirements=self.lists.render_requirements(),
            conclusions=self.lists.render_conclusions(),
            last_result=episode.last_feedback,
            config=config,
        )
        return Proposal(to_action(out.action), payload=(out.requirement_updates, out.conclusion_updates))

    def check(self, action: Action, episode: Episode) -> str | None:
        return None  # EIR's answer comes from the final call, so any submit is acceptable

    def commit(self, proposal: Proposal, episode: Episode) -> list[str]:
        # Citations are checked against evidence read BEFORE this turn's action executes.
        requirement_updates, conclusion_updates = proposal.payload
        problems = self.lists.apply(requirement_updates, conclusion_updates, episode.evidence)
        if requirement_updates or conclusion_updates:
            self.updates["discarded" if problems else "applied"] += 1
        if problems:
            return ["Your list updates were discarded (all of them): " + "; ".join(problems)]
        return []


class EIR(dspy.Module):
    def __init__(self, budget: int = 6) -> None:
        super().__init__()
        self.budget = budget
        self.turn = dspy.Predict(EIRTurn)
        self.search_turn = dspy.Predict(EIRSearchTurn)
        self.answer = AnswerFromEvidence()

    def forward(self, question: str, paragraphs: tuple[Paragraph, ...] = (),
                corpus: CorpusIndex | None = None) -> dspy.Prediction:
        policy = EIRPolicy(self.turn if corpus is None else self.search_turn)
        # Pool: H reads plus one more decision. Corpus: 12 turns; if none submits, EIR still answers.
        episode = run_episode(question, new_environment(paragraphs, corpus), policy, self.budget,
                              max_turns=turn_limit(corpus, None))
        # The boundary: only the question and the evidence sentences cross into the final call.
        final = self.answer(question=question, evidence=episode.evidence.render(), titles=list(episode.evidence.titles))
        return dspy.Prediction(
            answer=final.answer,
            citations=final.citations,
            episode=episode,
            trajectory={"turns": [t.__dict__ for t in episode.turns], **policy.lists.snapshot(),
                        "list_updates": dict(policy.updates),
                        "submitted": episode.submitted.answer if episode.submitted else None,
                        "forced_end": episode.forced_end, "final_parsed": final.parsed},
        )

