"""Direct's per-turn decision (ReAct-style): a short thought, then read a title or submit.

Direct sees what EIR's turn sees minus the two lists (the paper, B.1 and B.3): the question, the
unread titles and the last result. SSR's proposer and Reflexion's trials keep the ReAct turn over
the whole trajectory (`ReActTurn`)."""

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


class ReActTurn(dspy.Signature):
    # SSR's proposer (and Reflexion's base): all titles and every earlier turn.
    question: str = dspy.InputField()
    titles: str = dspy.InputField(desc="the paragraphs in the pool")
    trajectory: str = dspy.InputField(desc="your earlier turns: thought, action, result")
    thought: str = dspy.OutputField()
    action: DirectAction = dspy.OutputField()


ReActTurn = ReActTurn.with_instructions(_INSTRUCTIONS)

# Reflexion's trials are ReAct trajectories that also see the reflections of earlier failed trials.
# Inserted before the trajectory so the prompt prefix stays the same within a trial.
ReflexionTurn = ReActTurn.insert(
    2, "reflections", dspy.InputField(desc="lessons from your earlier failed attempts at this question"), type_=str,
).append_instructions("Use the reflections on your earlier attempts to avoid repeating their mistakes.")
