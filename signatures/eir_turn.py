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


class EIRTurn(dspy.Signature):
    """Gather evidence for a multi-hop question, one paragraph at a time.
    Requirements name information still missing; mark one satisfied once found.
    Conclusions state facts and cite the sentences you read, as paragraph title and sentence index.
    Add an entry with id null; revise one by giving its existing id. Use [] when nothing changes.
    Then read the unread paragraph most likely to hold missing information, or submit when the conclusions answer the question."""

    question: str = dspy.InputField()
    unread_titles: str = dspy.InputField(desc="paragraphs you can still read")
    requirements: str = dspy.InputField()
    conclusions: str = dspy.InputField()
    last_result: str = dspy.InputField(desc="the paragraph just read, or why the last turn was rejected")
    requirement_updates: list[RequirementUpdate] = dspy.OutputField()
    conclusion_updates: list[ConclusionUpdate] = dspy.OutputField()
    action: EIRAction = dspy.OutputField()
