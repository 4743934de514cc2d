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

    @property
    def reads_left(self) -> int: ...

    @property
    def on_last_turn(self) -> bool: ...


class Environment(Protocol):
    """What every setting gives the shared episode loop: `problem` (why an action cannot run here),
    `execute` (run it, store evidence) and `opening` (the first turn's result)."""

    setting: str  # "pool" or "corpus"
    opening: str
    invalid_reads_cost_a_read: bool

    @property
    def has_unread(self) -> bool: ...

    def problem(self, action: Action, episode: EpisodeState) -> Rejection | None: ...

    def execute(self, action: Action, episode: EpisodeState) -> Outcome: ...
