"""The one episode loop every method shares, in both settings. Methods differ only by their
policy; settings only by their environment (a pool read by title, or a corpus to search).

A turn: the policy makes its LM call(s) and proposes an action; the loop checks the action
against the budget and the environment, then whatever else the output holds (EIR's list
updates), lets the policy commit its own state (EIR's lists), then has the environment execute
it. An output the model wrote that cannot be used (the accounting layer raises UnusableOutput for
any of them), an invalid action, or an action whose output the policy calls invalid (EIR's list
updates under `reject`) is rejected with an explanation: nothing of it runs and it still consumes
the turn (in the corpus setting an invalid read also consumes a read attempt; a valid read whose
list updates are invalid does not). A policy may instead drop the invalid part and let the action
run (EIR's list updates under `discard`): the turn is accepted and records what was discarded. No
model output can fail the question.

The last turn of a turn-limited trial (Direct, SSR, Reflexion in the pool; every method in the corpus
setting) accepts only a submit (`action_problem`): anything else is rejected with `submit_only_turn`,
nothing of it runs, and the trial ends with no submission. Appendix H.1 states this for the corpus
setting; the pool text (4.2, B.1) is silent and the project applies the same rule there. EIR in the
pool has no turn limit (H reads, then one more decision) and is not affected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from eir_dspy.accounting import UnusableOutput, calls_so_far
from eir_dspy.evidence import EvidenceStore
from eir_dspy.rejection import NO_ACTION, NO_READS_LEFT, SUBMIT_ONLY_TURN, Rejection
from eir_dspy.turns import Action, Environment, Outcome

NO_ACTION_TEXT = "the output held no action"  # a rejected turn's text when the policy gave no reason


@dataclass
class Proposal:
    """What a policy returns for one turn: an action, or the reason there is none."""

    action: Action | None
    error: str | None = None
    payload: object = None  # policy-specific output (e.g. EIR's list updates), committed by the policy
    reasoning: str = ""  # the thought a ReAct-style policy wrote before acting (kept in the trajectory)
    cause: str | None = None  # why there is no action: the UnusableOutput cause
    invalid: Rejection | None = None  # the action is fine but the rest of the output is not: reject the turn
    discarded: Rejection | None = None  # the rest of the output was invalid and dropped; the action runs


@dataclass
class TurnRecord:
    turn: int
    action: dict | None
    accepted: bool
    feedback: str
    read_title: str | None = None
    notes: list[str] = field(default_factory=list)
    reasoning: str = ""
    brief: str = ""  # the result in one line where the full one is long (a read paragraph)
    rejection_cause: str | None = None  # a rejected turn: an UnusableOutput cause or a Rejection cause
    title_fallback: bool = False  # the read title matched no unread title; the first unread was read
    calls_made: int | None = None  # the question's LM calls so far when this turn's action ran
    discarded_cause: str | None = None  # an accepted turn whose invalid part (EIR's list updates) was dropped


@dataclass
class Episode:
    question: str
    env: Environment
    budget: int  # H: read attempts allowed
    turn_limit: int | None = None  # None: H reads plus one more decision (EIR); Direct: H turns in all
    evidence: EvidenceStore = field(default_factory=EvidenceStore)
    turn: int = 0
    reads: int = 0
    searches: int = 0
    last_feedback: str = ""
    turns: list[TurnRecord] = field(default_factory=list)
    submitted: Action | None = None

    @property
    def max_turns(self) -> int:
        return self.turn_limit if self.turn_limit is not None else self.budget + 1

    @property
    def on_last_turn(self) -> bool:
        return self.turn >= self.max_turns

    @property
    def submit_only(self) -> bool:
        """This turn accepts only a submit: the last turn of a turn-limited trial (`action_problem`)."""
        return self.turn_limit is not None and self.on_last_turn

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

    def check(self, action: Action, episode: Episode) -> Rejection | None:
        """A policy-specific reason to reject the action, or None."""

    def commit(self, proposal: Proposal, episode: Episode) -> list[str]:
        """Apply policy state for an accepted turn; returns notes for the next prompt."""


def run_episode(question: str, env: Environment, policy: Policy, budget: int,
                max_turns: int | None = None) -> Episode:
    """Run one trial in `env` (a fresh environment: nothing found or read yet)."""
    episode = Episode(question=question, env=env, budget=budget, turn_limit=max_turns, last_feedback=env.opening)
    while episode.turn < episode.max_turns and episode.submitted is None:
        episode.turn += 1
        try:
            proposal = policy.propose(episode)
        except UnusableOutput as exc:  # whatever the model wrote, it costs this turn and nothing more
            proposal = Proposal(None, error=exc.explanation, cause=exc.cause)
        action = proposal.action
        if action is None:
            problem = Rejection(proposal.cause or NO_ACTION, proposal.error or NO_ACTION_TEXT)
        else:
            problem = action_problem(action, episode) or env.problem(action, episode) or policy.check(action, episode)
        invalid_read = problem is not None and action is not None and action.kind == "read"
        problem = problem or proposal.invalid
        if problem:
            text = problem.text
            if invalid_read and env.invalid_reads_cost_a_read and episode.reads_left > 0:
                episode.reads += 1
                text += f" ({episode.reads_left} reads left)"
            episode.last_feedback = f"Turn {episode.turn} was rejected: {text}"
            episode.turns.append(TurnRecord(episode.turn, _as_dict(action), False, text,
                                            reasoning=proposal.reasoning, brief=text,
                                            rejection_cause=problem.cause, calls_made=calls_so_far()))
            continue
        notes = policy.commit(proposal, episode)
        record = TurnRecord(episode.turn, _as_dict(action), True, "", notes=notes, reasoning=proposal.reasoning,
                            calls_made=calls_so_far(),
                            discarded_cause=proposal.discarded.cause if proposal.discarded else None)
        if action.kind == "submit":
            episode.submitted = action
            record.feedback = record.brief = "submitted"
        else:
            outcome: Outcome = env.execute(action, episode)
            record.read_title, record.feedback, record.brief = outcome.read_title, outcome.feedback, outcome.brief
            record.title_fallback = outcome.fell_back
        if notes:
            record.feedback += "\n" + "\n".join(notes)
        episode.last_feedback = record.feedback
        episode.turns.append(record)
    return episode


def action_problem(action: Action, episode: Episode) -> Rejection | None:
    """Why `action` cannot run now under the budget rules every method and setting shares, or None.

    The one place of the submit-only last turn: on the last turn of a turn-limited trial anything
    but a submit is refused (H.1 for the corpus; the pool text is silent, and the project applies the
    same rule to the pool's turn-limited methods). A read with no read left keeps its own cause."""
    if action.kind == "read" and episode.reads_left <= 0:
        rest = " or ".join(kind for kind in episode.env.action_kinds if kind != "read")
        return Rejection(NO_READS_LEFT, f"the read budget of {episode.budget} is used up; the only valid actions now: {rest}")
    if action.kind != "submit" and episode.submit_only:
        return Rejection(SUBMIT_ONLY_TURN, f"turn {episode.turn} is the last turn and accepts only a submission")
    return None


def _as_dict(action: Action | None) -> dict | None:
    if action is None:
        return None
    out = {"kind": action.kind, "title": action.title, "answer": action.answer, "citations": list(action.citations)}
    if action.kind == "search" or action.paragraph_id:
        out.update(query=action.query, paragraph_id=action.paragraph_id)
    return out
