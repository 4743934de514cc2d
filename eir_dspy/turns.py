"""What a turn is made of, shared by the episode loop and the environments it runs in.

The loop (eir_dspy.episode) gets an Action from the policy, asks the environment whether it can
run (`problem`) and has it run it (`execute`), which returns an Outcome and updates the episode's
counters and evidence. The loop and the environments (eir_dspy.environment for the pool,
eir_dspy.corpus_environment for the corpus) each import this module and not each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from eir_dspy.evidence import EvidenceStore
from eir_dspy.rejection import Rejection


@dataclass(frozen=True)
class Action:
    kind: Literal["search", "read", "submit"]
    title: str = ""  # pool read
    answer: str = ""
    citations: tuple[tuple[str, int], ...] = ()
    query: str = ""  # corpus search
    paragraph_id: str = ""  # corpus read


def to_action(output) -> Action:
    """An Action from any signature's action model (pool or corpus: absent fields stay empty)."""
    return Action(kind=output.kind, title=getattr(output, "title", ""), answer=output.answer.strip(),
                  citations=tuple((c.title, c.sentence) for c in getattr(output, "citations", ())),
                  query=getattr(output, "query", "").strip(), paragraph_id=getattr(output, "paragraph_id", "").strip())


@dataclass(frozen=True)
class Outcome:
    """What an executed action returned: the full result, and a one-line brief of it
    (what a compact trajectory shows for a read)."""

    feedback: str
    brief: str
    read_title: str | None = None
    fell_back: bool = False  # a pool read whose title matched no unread title read the first unread one


class EpisodeState(Protocol):
    """The part of a running episode (eir_dspy.episode.Episode) an environment reads and updates."""

    turn: int
    turn_limit: int | None  # None: H reads plus one more decision (EIR); else turns in all, the submit included
    reads: int
    searches: int
    evidence: EvidenceStore
    last_feedback: str  # the last turn's result as the loop recorded it
    turns: list  # the turns so far (eir_dspy.episode.TurnRecord)

    @property
    def reads_left(self) -> int: ...

    @property
    def on_last_turn(self) -> bool: ...


class Environment(Protocol):
    """What every setting gives the shared episode loop: `problem` (why an action cannot run here),
    `execute` (run it, store evidence) and `opening` (the first turn's result); and what differs
    between the settings for the agent: the actions it has, what it is shown of the environment
    and of the last result, and how an action named in free text (SSR's corrections) reads."""

    setting: str  # "pool" or "corpus": the key of the per-setting tables in programs/
    opening: str
    invalid_reads_cost_a_read: bool
    action_kinds: tuple[str, ...]  # the actions this environment runs, read and submit among them
    compact_trajectory: bool  # a trajectory shows a read's one-line brief, not the paragraph

    @property
    def has_unread(self) -> bool: ...

    def problem(self, action: Action, episode: EpisodeState) -> Rejection | None: ...

    def execute(self, action: Action, episode: EpisodeState) -> Outcome: ...

    def catalogue(self) -> dict[str, str]:
        """What the agent can act on now, keyed by the turn prompt's input field that shows it."""

    def render_known(self) -> str:
        """Every paragraph the agent knew of in this trial (what a reflection on it is shown)."""

    def last_result(self, episode: EpisodeState) -> str:
        """The last result as a Direct-style turn is shown it."""

    def read_named(self, text: str) -> Action | None:
        """The read of the paragraph `text` names (a correction's `read: ...`), or None."""

    def runs_as_written(self, action: Action, episode: EpisodeState) -> bool:
        """`action` can run here and reads what it names (no fallback to another paragraph)."""
