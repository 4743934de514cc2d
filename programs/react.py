"""The ReAct-style turn the baselines share (Direct, SSR's proposal, Reflexion's trials): one LM call
writes a thought and an action; its answer is scored as submitted.

The turn sees EIR's inputs minus the lists (the paper, B.1 and B.3): the question, what the
environment offers (the unread titles; corpus: the search results) and the last result as the
environment shows it, nothing of earlier turns. A turn whose signature takes `recent_paragraphs`
(Direct's corpus turn, B.3) also sees the two paragraphs read most recently. The environment
(eir_dspy.environment, eir_dspy.corpus_environment) decides what each of these says.
"""

from __future__ import annotations

import dspy

from eir_dspy.accounting import lm_call
from eir_dspy.episode import Action, Episode, Proposal
from eir_dspy.rejection import EMPTY_ANSWER, INVALID_CITATION, Rejection
from eir_dspy.turns import to_action
from programs.setting import CORPUS, POOL
from programs.trajectory import can_read, read_paragraphs, recent_paragraphs
from signatures.schemas import direct_search_turn_schema, direct_turn_schema, grammar_config
from signatures.search_turns import PLAN_FIELDS


def _pool_action_schema(episode: Episode, plan: bool) -> dict:
    return direct_turn_schema(list(episode.env.unread_titles), read_paragraphs(episode), can_read(episode))


def _corpus_action_schema(episode: Episode, plan: bool) -> dict:
    return direct_search_turn_schema(episode.env.unread_ids, read_paragraphs(episode), can_read(episode),
                                     episode.on_last_turn, plan)


# The grammar of a ReAct-style turn's output in each setting: what can be read now, the citable
# sentences, submit-only at the end; in the corpus also search, and the plan fields first.
ACTION_SCHEMAS = {POOL: _pool_action_schema, CORPUS: _corpus_action_schema}


def action_config(name: str, episode: Episode, plan: bool = True, *, strict: bool) -> dict:
    """The decoding config of a ReAct-style action now (`strict`, the program's strict decoding: its
    grammar). `plan`: the corpus turn's plan fields come first (False: SSR's refinement, which writes none)."""
    return grammar_config(name, lambda: ACTION_SCHEMAS[episode.env.setting](episode, plan), strict=strict)


def submit_problem(action: Action, episode: Episode) -> Rejection | None:
    """ReAct-style answers are scored as submitted, so a submit must be usable as it stands.

    A citation may name any sentence read in this episode (as the strict grammar allows), not only
    one in the last result, the only paragraph Direct's prompt still shows."""
    if action.kind != "submit":
        return None
    if not action.answer:
        return Rejection(EMPTY_ANSWER, "the submitted answer is empty")
    unread = [c for c in action.citations if not episode.evidence.has(*c)]
    if unread:
        return Rejection(INVALID_CITATION, "the submit cites sentences you have not read: "
                         + ", ".join(f"({t!r}, {i})" for t, i in unread))
    return None


class DirectPolicy:
    """Direct's turn on the shared episode loop: EIR's inputs minus the lists in, a thought and an
    action out (corpus: plus the plan fields out and the two latest paragraphs in). `reflections`
    (Reflexion's trials): the same turn with the reflections on earlier failed trials as one more input.
    `strict`: the program decodes under strict grammars (its run context, programs/run_context.py)."""

    def __init__(self, predict: dspy.Predict, reflections: str | None = None, *, strict: bool) -> None:
        self.predict = predict
        self.reflections = reflections
        self.strict = strict

    def inputs(self, episode: Episode) -> dict:
        extra = {} if self.reflections is None else {"reflections": self.reflections}
        if "recent_paragraphs" in self.predict.signature.input_fields:
            extra["recent_paragraphs"] = recent_paragraphs(episode)
        env = episode.env
        return {"question": episode.question, **extra, **env.catalogue(), "last_result": env.last_result(episode)}

    def propose(self, episode: Episode) -> Proposal:
        out = lm_call("action", self.predict, **self.inputs(episode),
                      config=action_config("direct_turn", episode, strict=self.strict))
        return Proposal(to_action(out.action), reasoning=turn_reasoning(out))

    def check(self, action: Action, episode: Episode) -> Rejection | None:
        return submit_problem(action, episode)

    def commit(self, proposal: Proposal, episode: Episode) -> list[str]:
        return []


PLAN_LABELS = {"establish": "Should establish", "expected_result": "Expected result", "progress": "Progress judged by"}


def turn_reasoning(out) -> str:
    """What a turn wrote before its action, as the trajectory records it: the thought, then (Direct's
    corpus turn) one labelled line per plan field."""
    lines = [out.thought.strip()]
    lines += [f"{PLAN_LABELS[name]}: {str(getattr(out, name)).strip()}" for name in PLAN_FIELDS if name in out.keys()]
    return "\n".join(lines)


def episode_answer(episode: Episode) -> tuple[str, list[tuple[str, int]]]:
    if episode.submitted is None:
        return "", []
    return episode.submitted.answer, list(episode.submitted.citations)


def episode_result(episode: Episode) -> dict:
    """The MethodResult fields of an answer submitted in `episode` (none: no valid submit)."""
    answer, citations = episode_answer(episode)
    return {"answer": answer, "citations": citations, "episodes": [episode], "evidence": episode.evidence}


def episode_trajectory(episode: Episode) -> dict:
    """The fields of a Trajectory every episode-running method fills."""
    return {"turns": [t.__dict__ for t in episode.turns],
            "submitted": episode.submitted.answer if episode.submitted else None, "forced_end": episode.forced_end}
