"""The per-turn decisions of the corpus setting: search a Wikipedia corpus, read by id, or submit.

Same outputs as the pool signatures, but the action can also be a search and a read names a
paragraph id from the search results (there are no titles to pick from).
"""

from __future__ import annotations

from typing import Literal

import dspy
from pydantic import BaseModel, Field

from eir_dspy.state import Citation, ConclusionUpdate, RequirementUpdate
from signatures.eir_turn import LIST_RULES


class SearchAction(BaseModel):
    kind: Literal["search", "read", "submit"]
    query: str = Field(default="", description="for search: a few keywords")
    paragraph_id: str = Field(default="", description="for read: an id from your search results")
    answer: str = Field(default="", description="for submit: a short answer")


class CitingSearchAction(SearchAction):
    answer: str = Field(default="", description="for submit: the shortest correct answer")
    citations: list[Citation] = Field(default_factory=list, description="for submit: the sentences the answer rests on")


class EIRSearchTurn(dspy.Signature):
    question: str = dspy.InputField()  # stable parts first, as in EIRTurn
    requirements: str = dspy.InputField()
    conclusions: str = dspy.InputField()
    search_results: str = dspy.InputField(desc="paragraphs your searches found, as id | title")
    last_result: str = dspy.InputField(desc="what your last action returned, or why it was rejected")
    requirement_updates: list[RequirementUpdate] = dspy.OutputField()
    conclusion_updates: list[ConclusionUpdate] = dspy.OutputField()
    action: SearchAction = dspy.OutputField()


EIRSearchTurn = EIRSearchTurn.with_instructions(
    "Gather evidence for a multi-hop question by searching a Wikipedia corpus and reading paragraphs.\n"
    + LIST_RULES
    + "\nAction: search with a few keywords for an open requirement (the names, titles or dates a paragraph about it"
    " would contain), read the found paragraph most likely to hold it, or submit once the conclusions answer the question."
)


_DIRECT_INSTRUCTIONS = (
    "Answer a multi-hop question by searching a Wikipedia corpus and reading paragraphs, one action per turn.\n"
    "Think briefly: what do you know, what is missing? Then say what your next action should establish, what you\n"
    "expect it to return, and how you will judge whether it moved you closer to the answer. Then act: search with\n"
    "a few keywords, read one found paragraph id, or submit the shortest correct answer (an entity, date, number,\n"
    "or yes/no) citing the sentences it rests on by paragraph title and sentence index."
)

# What Direct's corpus turn writes about its action before the action itself (the paper, B.3), in order.
PLAN_FIELDS = ("establish", "expected_result", "progress")


class DirectSearchTurn(dspy.Signature):
    # EIRSearchTurn's inputs in its order, without requirements and conclusions (as DirectTurn in the
    # pool), plus the two paragraphs read most recently (B.3: only Direct's corpus prompt has them).
    question: str = dspy.InputField()
    search_results: str = dspy.InputField(desc="paragraphs your searches found, as id | title")
    recent_paragraphs: str = dspy.InputField(desc="the two paragraphs you read most recently")
    last_result: str = dspy.InputField(desc="what your last action returned, or why it was rejected")
    thought: str = dspy.OutputField()
    establish: str = dspy.OutputField(desc="the fact your action should establish")
    expected_result: str = dspy.OutputField(desc="what you expect the action to return")
    progress: str = dspy.OutputField(desc="how you will judge whether the result brought you closer to the answer")
    action: CitingSearchAction = dspy.OutputField()


DirectSearchTurn = DirectSearchTurn.with_instructions(_DIRECT_INSTRUCTIONS)
assert tuple(DirectSearchTurn.output_fields)[1:-1] == PLAN_FIELDS

# Reflexion in the corpus setting: Direct's corpus turn plus the reflections, right after the question
# (as ReflexionTurn in the pool). SSR proposes with DirectSearchTurn itself.
ReflexionSearchTurn = DirectSearchTurn.insert(
    1, "reflections", dspy.InputField(desc="lessons from your earlier failed attempts at this question"), type_=str,
).append_instructions("Use the reflections on your earlier attempts to avoid repeating their mistakes.")
