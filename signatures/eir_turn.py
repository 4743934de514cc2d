"""EIR's per-turn decision: update the two lists, then read a title or submit."""

from __future__ import annotations

from typing import Literal

import dspy
from pydantic import BaseModel, Field

from eir_dspy.state import ConclusionUpdate, RequirementUpdate


class EIRAction(BaseModel):
    kind: Literal["read", "submit"]
    title: str = Field(default="", description="for read: one of the unread titles")
    answer: str = Field(default="", description="for submit: a short answer")


# The list rules every EIR turn prompt states (the corpus setting's signature reuses them).
LIST_RULES = (
    "Requirements: facts still missing. On the first turn add one per fact the question needs; mark one satisfied once found.\n"
    "Conclusions: facts you found, each citing the sentences you read (paragraph title and sentence index).\n"
    "Add an entry with id null; revise one by its existing id.\n"
    "Send only new or changed entries; never repeat an entry already listed. When the last paragraph\n"
    "gives a needed fact, add it as a conclusion citing those sentences and mark its requirement satisfied.\n"
    "Cite only sentences already shown to you, never the paragraph you are about to read: on the first turn, add requirements only."
)


class EIRTurn(dspy.Signature):
    """Gather evidence for a multi-hop question, reading one paragraph per turn.
    Requirements: facts still missing. On the first turn add one per fact the question needs; mark one satisfied once found.
    Conclusions: facts you found, each citing the sentences you read (paragraph title and sentence index).
    Add an entry with id null; revise one by its existing id.
    Send only new or changed entries; never repeat an entry already listed. When the last paragraph
    gives a needed fact, add it as a conclusion citing those sentences and mark its requirement satisfied.
    Cite only sentences already shown to you, never the paragraph you are about to read: on the first turn, add requirements only.
    Action: read the unread paragraph most likely to hold an open requirement, or submit once the conclusions answer the question."""

    # Stable parts first: the question never changes, the lists only when updated, the titles
    # with every read, the last result every turn; the engine reuses the cached prefix.
    question: str = dspy.InputField()
    requirements: str = dspy.InputField()
    conclusions: str = dspy.InputField()
    unread_titles: str = dspy.InputField(desc="paragraphs you can still read")
    last_result: str = dspy.InputField(desc="the paragraph just read, or why the last turn was rejected")
    requirement_updates: list[RequirementUpdate] = dspy.OutputField()
    conclusion_updates: list[ConclusionUpdate] = dspy.OutputField()
    action: EIRAction = dspy.OutputField()


assert LIST_RULES in EIRTurn.instructions  # one wording of the list rules in both settings
