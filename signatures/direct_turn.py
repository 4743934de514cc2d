"""Direct's per-turn decision (ReAct-style): a short thought, then read a title or submit.

Direct sees what EIR's turn sees minus the two lists (the paper, B.1 and B.3): the question, the
unread titles and the last result. SSR proposes with this same turn (its additions are separate
calls, signatures/ssr.py); Reflexion's trials use it plus the reflections (`ReflexionTurn`)."""

from __future__ import annotations

from typing import Literal

import dspy
from pydantic import BaseModel, Field

from eir_dspy.state import Citation


class DirectAction(BaseModel):
    kind: Literal["read", "submit"]
    title: str = Field(default="", description="for read: one of the unread titles")
    answer: str = Field(default="", description="for submit: the shortest correct answer")
    citations: list[Citation] = Field(default_factory=list, description="for submit: the sentences the answer rests on")


_INSTRUCTIONS = """Answer a multi-hop question by reading paragraphs, one per turn.
Think briefly: what do you know, what is missing? Then act: read the unread paragraph most likely
to hold the missing fact, or submit the shortest correct answer (an entity, date, number, or yes/no)
citing the sentences it rests on by paragraph title and sentence index."""


class DirectTurn(dspy.Signature):
    # EIRTurn's inputs in EIRTurn's order, without requirements and conclusions (same descriptions).
    question: str = dspy.InputField()
    unread_titles: str = dspy.InputField(desc="paragraphs you can still read")
    last_result: str = dspy.InputField(desc="the paragraph just read, or why the last turn was rejected")
    thought: str = dspy.OutputField()
    action: DirectAction = dspy.OutputField()


DirectTurn = DirectTurn.with_instructions(_INSTRUCTIONS)


# Reflexion's trials: Direct's turn plus the reflections written after earlier failed trials (B.3).
# Inserted right after the question: it does not change within a trial, so the prompt prefix stays stable.
ReflexionTurn = DirectTurn.insert(
    1, "reflections", dspy.InputField(desc="lessons from your earlier failed attempts at this question"), type_=str,
).append_instructions("Use the reflections on your earlier attempts to avoid repeating their mistakes.")
