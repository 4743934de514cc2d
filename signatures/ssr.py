"""Agentic SSR's three extra decisions: decompose a proposal, judge one step, refine one step.

The proposal itself is Direct's turn (the paper, B.3: SSR adds verification and refinement calls to
Direct's inputs). What these three calls see besides the proposal is a choice (D.1 does not say):
the question, the sentences the agent has read in this trial (what a step's facts are checked
against), and, where an action may be corrected or rewritten, what can be acted on now (the unread
titles; in the corpus setting the search results) and the turns left (eir_dspy/environment.py
`budget_note`, in the pool the text Direct's turn gets with its last result: on the last turn only a
submit counts). No earlier thoughts or actions.
"""

from __future__ import annotations

from typing import Literal

import dspy

from signatures.direct_turn import DirectAction
from signatures.search_turns import CitingSearchAction

STEPS = ("facts", "justification", "action")

_EVIDENCE = dspy.InputField(desc="the sentences the agent has read so far, grouped by paragraph title, "
                                 "each labelled [sentence index]")
_TURNS_LEFT = dspy.InputField(desc="the agent's turns left, this one included; on its last turn only a submit counts")


class DecomposeProposal(dspy.Signature):
    """Break the proposed action of a question-answering agent into three steps:
    facts: what the paragraphs read so far establish;
    justification: how those facts justify the action;
    action: the action to execute, restated."""

    question: str = dspy.InputField()
    evidence: str = _EVIDENCE
    proposal: str = dspy.InputField(desc="the agent's thought and proposed action")
    facts: str = dspy.OutputField()
    justification: str = dspy.OutputField()
    action: str = dspy.OutputField()


class VerifyStep(dspy.Signature):
    """Check one step of a question-answering agent's reasoning against the paragraphs it has read.
    Accept a correct step. Reject a wrong one and write the corrected step: for the action step,
    `read: <title>` (one of the unread titles) or `submit: <answer>`. Give your confidence in your
    verdict, from 0 to 1."""

    question: str = dspy.InputField()
    evidence: str = _EVIDENCE
    unread_titles: str = dspy.InputField(desc="paragraphs the agent can still read")
    turns_left: str = _TURNS_LEFT
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
    evidence: str = _EVIDENCE
    unread_titles: str = dspy.InputField(desc="paragraphs the agent can still read")
    turns_left: str = _TURNS_LEFT
    steps: str = dspy.InputField(desc="the agent's facts, justification and action")
    step: str = dspy.InputField(desc="the step to rewrite")
    correction: str = dspy.InputField(desc="the verifiers' agreed correction")
    thought: str = dspy.OutputField(desc="the rewritten step")
    action: DirectAction = dspy.OutputField()


# The corpus setting: the same decisions with search among the actions, and the search results in
# place of the unread titles. Decomposing a proposal needs nothing setting-specific (DecomposeProposal).
_FOUND = dspy.InputField(desc="paragraphs the agent's searches found, as id | title")

VerifySearchStep = (
    VerifyStep.delete("unread_titles")
    .insert(2, "search_results", _FOUND, type_=str)
    .with_instructions(
        "Check one step of a question-answering agent's reasoning against the paragraphs it has read.\n"
        "Accept a correct step. Reject a wrong one and write the corrected step: for the action step,\n"
        "`search: <keywords>`, `read: <paragraph id>` or `submit: <answer>`. Give your confidence in your verdict, from 0 to 1.")
)

RefineSearchStep = (
    RefineStep.delete("unread_titles")
    .insert(2, "search_results", _FOUND, type_=str)
    .with_updated_fields("action", type_=CitingSearchAction)
    .with_instructions(
        "A verifier found a wrong step in a question-answering agent's reasoning. Rewrite it using the\n"
        "verifier's correction, then give the action to execute: search with a few keywords, read a found\n"
        "paragraph id, or submit the shortest correct answer citing the sentences it rests on.")
)
