"""The one episode loop every pool method shares. Methods differ only by their policy.

A turn: the policy makes its LM call(s) and proposes an action; the loop checks the action
against the budget, lets the policy commit its own state (EIR's lists), then executes it.
An unparseable output or an invalid action is rejected with an explanation and still
consumes the turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from eir_dspy.environment import PoolEnvironment
from eir_dspy.evidence import EvidenceStore
from eir_dspy.paragraphs import Paragraph


@dataclass(frozen=True)
class Action:
    kind: Literal["read", "submit"]
    title: str = ""
    answer: str = ""
    citations: tuple[tuple[str, int], ...] = ()


@dataclass
class Proposal:
    """What a policy returns for one turn: an action, or the reason there is none."""

    action: Action | None
    error: str | None = None
    payload: object = None  # policy-specific output (e.g. EIR's list updates), committed by the policy
    reasoning: str = ""  # the thought a ReAct-style policy wrote before acting (kept in the trajectory)


@dataclass
class TurnRecord:
    turn: int
    action: dict | None
    accepted: bool
    feedback: str
    read_title: str | None = None
    notes: list[str] = field(default_factory=list)
    reasoning: str = ""


@dataclass
class Episode:
    question: str
    env: PoolEnvironment
    budget: int  # H: read attempts allowed
    turn_limit: int | None = None  # None: H reads plus one more decision (EIR); Direct: H turns in all
    evidence: EvidenceStore = field(default_factory=EvidenceStore)
    turn: int = 0
    reads: int = 0
    last_feedback: str = "(nothing yet: choose a paragraph to read)"
    turns: list[TurnRecord] = field(default_factory=list)
    submitted: Action | None = None

    @property
    def max_turns(self) -> int:
        return self.turn_limit if self.turn_limit is not None else self.budget + 1

    @property
    def reads_left(self) -> int:
        return self.budget - self.reads

    @property
    def forced_end(self) -> bool:
        return self.submitted is None

    @property
    def rejected_turns(self) -> int:
        return sum(not t.accepted for t in self.turns)


class Policy(Protocol):
    def propose(self, episode: Episode) -> Proposal: ...

    def check(self, action: Action, episode: Episode) -> str | None:
        """A policy-specific reason to reject the action, or None."""

    def commit(self, proposal: Proposal, episode: Episode) -> list[str]:
        """Apply policy state for an accepted turn; returns notes for the next prompt."""


def run_episode(question: str, paragraphs: tuple[Paragraph, ...], policy: Policy, budget: int,
                max_turns: int | None = None) -> Episode:
    episode = Episode(question=question, env=PoolEnvironment(paragraphs), budget=budget, turn_limit=max_turns)
    while episode.turn < episode.max_turns and episode.submitted is None:
        episode.turn += 1
        proposal = policy.propose(episode)
        problem = proposal.error or action_problem(proposal.action, episode) or policy.check(proposal.action, episode)
        if problem:
            episode.last_feedback = f"Turn {episode.turn} was rejected: {problem}"
            episode.turns.append(TurnRecord(episode.turn, _as_dict(proposal.action), False, problem,
                                            reasoning=proposal.reasoning))
            continue
        notes = policy.commit(proposal, episode)
        action = proposal.action
        record = TurnRecord(episode.turn, _as_dict(action), True, "", notes=notes, reasoning=proposal.reasoning)
        if action.kind == "submit":
            episode.submitted = action
            record.feedback = "submitted"
        else:
            record.read_title, record.feedback = _execute_read(action, episode)
        if notes:
            record.feedback += "\n" + "\n".join(notes)
        episode.last_feedback = record.feedback
        episode.turns.append(record)
    return episode


def action_problem(action: Action, episode: Episode) -> str | None:
    """Why the environment cannot execute `action` now (the budget rules every method shares), or None."""
    if action.kind == "read" and episode.reads_left <= 0:
        return f"the read budget of {episode.budget} is used up; the only valid action now is submit"
    if action.kind == "read" and not episode.env.unread_titles:
        return "every paragraph has been read; the only valid action now is submit"
    return None


def _execute_read(action: Action, episode: Episode) -> tuple[str, str]:
    result = episode.env.read(action.title)
    episode.reads += 1
    paragraph = result.paragraph
    episode.evidence.add_paragraph(paragraph, episode.turn)
    header = f"Read {paragraph.title!r}"
    if result.fell_back:
        header = f"No unread title matches {action.title!r}; read {paragraph.title!r} instead"
    lines = [f"[{i}] {s.strip()}" for i, s in enumerate(paragraph.sentences)]
    return paragraph.title, f"{header} ({episode.reads_left} reads left):\n" + "\n".join(lines)


def _as_dict(action: Action | None) -> dict | None:
    if action is None:
        return None
    return {"kind": action.kind, "title": action.title, "answer": action.answer, "citations": list(action.citations)}
