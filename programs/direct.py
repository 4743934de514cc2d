"""Direct (ReAct-style): one LM call per turn writes a thought and an action; no lists, no final call.

Each turn sees EIR's inputs minus the lists (the paper, B.1 and B.3): the question, the unread
titles (corpus: the search results) and the last result, nothing of earlier turns. In the corpus
setting (B.3) the turn also writes what its action should establish, the result it expects and how
it will judge progress (output fields, kept in the turn's recorded reasoning), and it sees the two
paragraphs read most recently. Scored on the FIRST valid submit: the shared loop stops there, so a
later submit never happens. Pool: at most H turns in all, reads and the submit included, and every
result says how many are left (programs/agent_view.py). Corpus: 12 turns, at most H reads. No
valid submit scores 0. SSR proposes with this policy; Reflexion's trials add the reflections.
"""

from __future__ import annotations

import dspy

from eir_dspy.acceptance import JSON_ONLY
from eir_dspy.accounting import lm_call
from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.episode import Action, Episode, Proposal, run_episode
from eir_dspy.paragraphs import Paragraph
from eir_dspy.rejection import EMPTY_ANSWER, INVALID_CITATION, Rejection
from programs import names
from programs.agent_view import environment_view, last_result
from programs.options import Options
from programs.result import MethodResult
from programs.setting import most_turns, new_environment, turn_limit
from programs.trajectory import can_read, read_paragraphs, recent_paragraphs
from programs.trajectory_record import Trajectory
from signatures import DirectSearchTurn, DirectTurn
from signatures.schemas import direct_search_turn_schema, direct_turn_schema, grammar_config
from signatures.search_turns import PLAN_FIELDS


def to_action(a) -> Action:
    """An Action from any signature's action model (pool or corpus: absent fields stay empty)."""
    return Action(kind=a.kind, title=getattr(a, "title", ""), answer=a.answer.strip(),
                  citations=tuple((c.title, c.sentence) for c in getattr(a, "citations", ())),
                  query=getattr(a, "query", "").strip(), paragraph_id=getattr(a, "paragraph_id", "").strip())


def action_config(name: str, episode: Episode, plan: bool = True) -> dict:
    """The grammar of a Direct-style action now: what can be read, citable sentences, submit-only at the end.
    `plan`: the corpus turn's plan fields come first (False: SSR's refinement, which writes none)."""
    if episode.env.setting == "corpus":
        return grammar_config(name, lambda: direct_search_turn_schema(
            episode.env.unread_ids, read_paragraphs(episode), can_read(episode), episode.on_last_turn, plan))
    return grammar_config(name, lambda: direct_turn_schema(list(episode.env.unread_titles), read_paragraphs(episode),
                                                           can_read(episode)))


def submit_problem(action: Action, episode: Episode) -> Rejection | None:
    """Direct-style answers are scored as submitted, so a submit must be usable as it stands.

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
    """Direct's turn: EIR's inputs minus the lists in, a thought and an action out (corpus: plus the
    plan fields out and the two latest paragraphs in). `reflections` (Reflexion's trials): the same
    turn with the reflections on earlier failed trials as one more input."""

    def __init__(self, predict: dspy.Predict, reflections: str | None = None) -> None:
        self.predict = predict
        self.reflections = reflections

    def inputs(self, episode: Episode) -> dict:
        extra = {} if self.reflections is None else {"reflections": self.reflections}
        if episode.env.setting == "corpus":
            extra["recent_paragraphs"] = recent_paragraphs(episode)
        return {"question": episode.question, **extra, **environment_view(episode), "last_result": last_result(episode)}

    def propose(self, episode: Episode) -> Proposal:
        out = lm_call("action", self.predict, **self.inputs(episode), config=action_config("direct_turn", episode))
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


def max_calls(budget: int, setting: str, options: Options) -> int:
    """`forward` below: max_turns=turn_limit(corpus, H), so H turns in all in the pool (reads and the
    submit), 12 in the corpus; one `action` call per turn, no final call."""
    return most_turns(setting, budget, budget)


class Direct(dspy.Module):
    acceptance = JSON_ONLY  # the paper: Direct requires JSON only (eir_dspy/acceptance.py)

    def __init__(self, budget: int = 6) -> None:
        super().__init__()
        self.budget = budget
        self.turn = dspy.Predict(DirectTurn)
        self.search_turn = dspy.Predict(DirectSearchTurn)

    def forward(self, question: str, paragraphs: tuple[Paragraph, ...] = (),
                corpus: CorpusIndex | None = None) -> MethodResult:
        predict = self.turn if corpus is None else self.search_turn
        episode = run_episode(question, new_environment(paragraphs, corpus), DirectPolicy(predict), self.budget,
                              max_turns=turn_limit(corpus, self.budget))
        trajectory = Trajectory(method=names.DIRECT, **episode_trajectory(episode))
        return MethodResult(**episode_result(episode), trajectory=trajectory)

