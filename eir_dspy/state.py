"""EIR's two lists and the all-or-nothing validation of the updates the LM proposes.

The checks are structural: revised ids must exist and citations must name sentences
already in the evidence store. Whether a cited sentence supports a claim is not checked.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from eir_dspy.evidence import EvidenceStore


class Citation(BaseModel):
    title: str = Field(description="the paragraph's title exactly as written, not a sentence")
    sentence: int = Field(description="the [number] before the sentence in that paragraph")


class RequirementUpdate(BaseModel):
    id: str | None = Field(default=None, description="an existing id to revise it, or null to add a new entry")
    text: str
    status: Literal["open", "satisfied"] = "open"


class ConclusionUpdate(BaseModel):
    id: str | None = Field(default=None, description="an existing id to revise it, or null to add a new entry")
    claim: str
    status: Literal["supported", "retracted"] = "supported"
    citations: list[Citation] = Field(default_factory=list)


class Requirement(BaseModel):
    id: str
    text: str
    status: Literal["open", "satisfied"]


class Conclusion(BaseModel):
    id: str
    claim: str
    status: Literal["supported", "retracted"]
    citations: list[Citation]


class AgentLists:
    """Requirements (what is still missing) and conclusions (claims citing read sentences)."""

    def __init__(self) -> None:
        self.requirements: dict[str, Requirement] = {}
        self.conclusions: dict[str, Conclusion] = {}

    def validate(
        self,
        requirement_updates: list[RequirementUpdate],
        conclusion_updates: list[ConclusionUpdate],
        evidence: EvidenceStore,
    ) -> list[str]:
        """Every problem with the proposed updates, checked together; [] means valid."""
        problems = []
        for update in requirement_updates:
            if update.id and update.id not in self.requirements:
                problems.append(f"requirement id {update.id!r} does not exist")
        for update in conclusion_updates:
            if update.id and update.id not in self.conclusions:
                problems.append(f"conclusion id {update.id!r} does not exist")
            for c in update.citations:
                if not evidence.has(c.title, c.sentence):
                    problems.append(f"citation ({c.title!r}, {c.sentence}) is not a sentence you have read")
        return problems

    def apply(
        self,
        requirement_updates: list[RequirementUpdate],
        conclusion_updates: list[ConclusionUpdate],
        evidence: EvidenceStore,
    ) -> list[str]:
        """Apply all updates, or none of them if any part is invalid; returns the problems."""
        problems = self.validate(requirement_updates, conclusion_updates, evidence)
        if problems:
            return problems
        for u in requirement_updates:
            rid = u.id or f"R{len(self.requirements) + 1}"
            self.requirements[rid] = Requirement(id=rid, text=u.text, status=u.status)
        for u in conclusion_updates:
            cid = u.id or f"C{len(self.conclusions) + 1}"
            self.conclusions[cid] = Conclusion(id=cid, claim=u.claim, status=u.status, citations=list(u.citations))
        return []

    def render_requirements(self) -> str:
        if not self.requirements:
            return "(none yet: add one per fact the question needs)"
        return "\n".join(f"{r.id} [{r.status}] {r.text}" for r in self.requirements.values())

    def render_conclusions(self) -> str:
        if not self.conclusions:
            return "(none yet: add one for each needed fact a paragraph you read states, citing its sentences)"
        lines = []
        for c in self.conclusions.values():
            cites = ", ".join(f"{x.title}#{x.sentence}" for x in c.citations) or "no citations"
            lines.append(f"{c.id} [{c.status}] {c.claim} ({cites})")
        return "\n".join(lines)

    def snapshot(self) -> dict:
        return {
            "requirements": [r.model_dump() for r in self.requirements.values()],
            "conclusions": [c.model_dump() for c in self.conclusions.values()],
        }
