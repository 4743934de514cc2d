"""Agentic SSR's three extra decisions: decompose a proposal, judge one step, refine one step."""

from __future__ import annotations

from typing import Literal

import dspy

from signatures.direct_turn import DirectAction
from signatures.search_turns import CitingSearchAction

STEPS = ("facts", "justification", "action")


class DecomposeProposal(dspy.Signature):
    """Break the proposed action of a question-answering agent into three steps:
    facts: what the paragraphs read so far establish;
    justification: how those facts justify the action;
    action: the action to execute, restated."""

    question: str = dspy.InputField()
    trajectory: str = dspy.InputField(desc="the agent's earlier turns: thought, action, result")
    proposal: str = dspy.InputField(desc="the agent's thought and proposed action")
    facts: str = dspy.OutputField()
    justification: str = dspy.OutputField()
    action: str = dspy.OutputField()


class VerifyStep(dspy.Signature):
    """Check one step of a question-answering agent's reasoning against the paragraphs it has read.
    Accept a correct step. Reject a wrong one and write the corrected step: for the action step,
    `read: <title>` or `submit: <answer>`. Give your confidence in your verdict, from 0 to 1."""

    question: str = dspy.InputField()
    trajectory: str = dspy.InputField(desc="the agent's earlier turns: thought, action, result")
    steps: str = dspy.InputField(desc="the agent's facts, justification and action")
    step: str = dspy.InputField(desc="the step to check")
    verdict: Literal["accept", "reject"] = dspy.OutputField()
    correction: str = dspy.OutputField(desc="the corrected step when rejecting, else empty")
    confidence: float = dspy.OutputField()


class RefineStep(dspy.Signature):
    """A verifier found a wrong step in a question-answering agent's reasoning. Rewrite it using the
    verifier's correction, then give the action to execute: read an unread title, or submit the
    shortest correct answer citing the sentences it rests on."""

    question: str = dspy.InputField()
    titles: str = dspy.InputField(desc="the paragraphs in the pool")
    trajectory: str = dspy.InputField(desc="the agent's earlier turns: thought, action, result")
    steps: str = dspy.InputField(desc="the agent's facts, justification and action")
    step: str = dspy.InputField(desc="the step to rewrite")
    correction: str = dspy.InputField(desc="the verifiers' agreed correction")
    thought: str = dspy.OutputField(desc="the rewritten step")
    action: DirectAction = dspy.OutputField()


# The corpus setting: the same three decisions, with search among the actions and the two most
# recently read paragraphs shown (the trajectory there carries only one-line read results).
_RECENT = dspy.InputField(desc="the two paragraphs the agent read most recently")

DecomposeSearchProposal = DecomposeProposal.insert(2, "recent_paragraphs", _RECENT, type_=str)

VerifySearchStep = VerifyStep.insert(2, "recent_paragraphs", _RECENT, type_=str).with_instructions(
    "Check one step of a question-answering agent's reasoning against the paragraphs it has read.\n"
    "Accept a correct step. Reject a wrong one and write the corrected step: for the action step,\n"
    "`search: <keywords>`, `read: <paragraph id>` or `submit: <answer>`. Give your confidence in your verdict, from 0 to 1."
)

RefineSearchStep = (
    RefineStep.delete("titles")
    .insert(1, "search_results", dspy.InputField(desc="paragraphs the agent's searches found, as id | title"), type_=str)
    .insert(3, "recent_paragraphs", _RECENT, type_=str)
    .with_updated_fields("action", type_=CitingSearchAction)
    .with_instructions(
        "A verifier found a wrong step in a question-answering agent's reasoning. Rewrite it using the\n"
        "verifier's correction, then give the action to execute: search with a few keywords, read a found\n"
        "paragraph id, or submit the shortest correct answer citing the sentences it rests on.")
)
