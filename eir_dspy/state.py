"""EIR's two lists and the all-or-nothing validation of the updates the LM proposes.

The checks are structural: revised ids must exist, citations must name sentences already in the
evidence store, and every entry must read as its model, a cited sentence position an integer as
written (a string "1" is not coerced: the paper's incorrectly typed position). A list that does not
read (a wrong type, a missing field in an entry) does not make the turn's output unusable: the
adapter hands it over as `MalformedUpdates` and the all-or-nothing check reports it like any other
problem, so what becomes of the turn is the policy's rule alone (programs/eir_policy.py: the pool discards the updates, the
corpus rejects the turn). Whether a cited sentence supports a claim is not checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError, field_validator

from eir_dspy.evidence import EvidenceStore
from eir_dspy.rejection import INVALID_CITATION, INVALID_DEPENDENCY, MISSING_FIELD, UNKNOWN_LIST_ID, WRONG_TYPE, Rejection

DISCARD, REJECT = "discard", "reject"  # what invalid updates do to their turn (programs/eir_policy.py)
INVALID_UPDATE_RULES = (DISCARD, REJECT)


# The paper's rule per setting: the pool discards invalid updates and runs the action (3.2, B.1);
# only the corpus setting rejects the action with them (H.1, H.4, Table 22).
PAPER_INVALID_UPDATES = {"pool": DISCARD, "corpus": REJECT}


def paper_invalid_updates(setting: str) -> str:
    """The paper's rule in `setting` (PAPER_INVALID_UPDATES)."""
    return PAPER_INVALID_UPDATES[setting]


class Citation(BaseModel):
    title: str = Field(description="the paragraph's title exactly as written, not a sentence")
    sentence: int = Field(description="the [number] before the sentence in that paragraph")


def integer_positions(citations):
    """List updates' citations as written: a sentence position must be a JSON integer. Pydantic would
    coerce "1" or 1.0; the paper counts those as incorrectly typed, so they fail to parse (wrong_type)."""
    for c in citations if isinstance(citations, list) else ():
        if isinstance(c, dict) and "sentence" in c and type(c["sentence"]) is not int:
            raise ValueError(f"sentence position {c['sentence']!r} is not an integer")
    return citations


class RequirementUpdate(BaseModel):
    id: str | None = Field(default=None, description="an existing id to revise it, or null to add a new entry")
    text: str
    status: Literal["open", "satisfied"] = "open"


class ConclusionUpdate(BaseModel):
    id: str | None = Field(default=None, description="an existing id to revise it, or null to add a new entry")
    claim: str
    status: Literal["supported", "retracted"] = "supported"
    citations: list[Citation] = Field(default_factory=list)

    _integer_positions = field_validator("citations", mode="before")(integer_positions)


class DependentConclusionUpdate(ConclusionUpdate):
    """A conclusion update that also names the earlier conclusions it follows from (the repair ablations)."""

    depends_on: list[str] = Field(default_factory=list, description="ids of existing conclusions this one follows from")


class ConclusionRevision(BaseModel):
    """A repair call's output: the revised content of the one conclusion it was asked about."""

    claim: str
    status: Literal["supported", "retracted"] = "supported"
    citations: list[Citation] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list, description="ids of other existing conclusions it follows from")

    _integer_positions = field_validator("citations", mode="before")(integer_positions)


@dataclass(frozen=True)
class MalformedUpdates:
    """A list-update field whose value did not read as its entries, or is missing (kept, not raised,
    so that the action beside it still parses): one invalid part, with the cause Table 22 counts it
    under. It reads as no updates wherever a list of them is iterated or tested."""

    cause: str  # WRONG_TYPE or MISSING_FIELD
    where: str  # the entry and field, e.g. "0.citations"; "" for the list itself
    message: str  # what is wrong, e.g. "Value error, sentence position '1' is not an integer"
    raw: object = None  # the value as the model wrote it

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0


def read_updates(value, annotation):
    """`value` validated as the list-update field `annotation` (one of LIST_UPDATE_TYPES), or the
    MalformedUpdates that says why it is not one (None: the field was missing or null)."""
    if value is None:
        return MalformedUpdates(MISSING_FIELD, "", "the field is missing")
    try:
        return _adapter(annotation).validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        cause = MISSING_FIELD if first["type"] == "missing" else WRONG_TYPE
        return MalformedUpdates(cause, where, first["msg"], value)


# The list-update fields' types. The adapter (eir_dspy/lm/decoding.py) reads a field of one of these
# types with `read_updates`, so a malformed list never makes the rest of the output unusable.
LIST_UPDATE_TYPES = (list[RequirementUpdate], list[ConclusionUpdate], list[DependentConclusionUpdate])
_ADAPTERS = {t: TypeAdapter(t) for t in LIST_UPDATE_TYPES}


def _adapter(annotation) -> TypeAdapter:
    return _ADAPTERS.get(annotation) or TypeAdapter(annotation)


class Requirement(BaseModel):
    id: str
    text: str
    status: Literal["open", "satisfied"]


class Conclusion(BaseModel):
    id: str
    claim: str
    status: Literal["supported", "retracted"]
    citations: list[Citation]
    depends_on: list[str] = Field(default_factory=list)


class AgentLists:
    """Requirements (what is still missing) and conclusions (claims citing read sentences)."""

    def __init__(self) -> None:
        self.requirements: dict[str, Requirement] = {}
        self.conclusions: dict[str, Conclusion] = {}

    def check(
        self,
        requirement_updates: list[RequirementUpdate],
        conclusion_updates: list[ConclusionUpdate],
        evidence: EvidenceStore,
    ) -> list[Rejection]:
        """Every problem with the proposed updates, checked together, each with its rejection cause, in
        update order; [] means valid."""
        problems = [Rejection(updates.cause, f"{which}_updates{'.' + updates.where if updates.where else ''}: "
                                             f"{updates.message}")
                    for which, updates in (("requirement", requirement_updates), ("conclusion", conclusion_updates))
                    if isinstance(updates, MalformedUpdates)]
        for update in requirement_updates:
            if update.id and update.id not in self.requirements:
                problems.append(Rejection(UNKNOWN_LIST_ID, f"requirement id {update.id!r} does not exist"))
        for update in conclusion_updates:
            if update.id and update.id not in self.conclusions:
                problems.append(Rejection(UNKNOWN_LIST_ID, f"conclusion id {update.id!r} does not exist"))
            for c in update.citations:
                if not evidence.has(c.title, c.sentence):
                    problems.append(Rejection(INVALID_CITATION,
                                              f"citation ({c.title!r}, {c.sentence}) is not a sentence you have read"))
            for dep in getattr(update, "depends_on", ()):
                if dep not in self.conclusions:
                    problems.append(Rejection(UNKNOWN_LIST_ID, f"depends_on names conclusion {dep!r}, which does not exist"))
                elif dep == update.id:
                    problems.append(Rejection(INVALID_DEPENDENCY, f"conclusion {dep!r} cannot depend on itself"))
        return problems

    def apply(
        self,
        requirement_updates: list[RequirementUpdate],
        conclusion_updates: list[ConclusionUpdate],
        evidence: EvidenceStore,
    ) -> list[Rejection]:
        """Apply all updates, or none of them if any part is invalid; returns the problems."""
        problems = self.check(requirement_updates, conclusion_updates, evidence)
        if problems:
            return problems
        for u in requirement_updates:
            rid = u.id or f"R{len(self.requirements) + 1}"
            self.requirements[rid] = Requirement(id=rid, text=u.text, status=u.status)
        for u in conclusion_updates:
            cid = u.id or f"C{len(self.conclusions) + 1}"
            # A revision that leaves depends_on out keeps the conclusion's dependencies.
            given = "depends_on" in u.model_fields_set
            depends_on = list(u.depends_on) if given else (self.conclusions[cid].depends_on if cid in self.conclusions else [])
            self.conclusions[cid] = Conclusion(id=cid, claim=u.claim, status=u.status, citations=list(u.citations),
                                               depends_on=depends_on)
        return []

    def states(self) -> dict[str, tuple[str, str]]:
        """Each conclusion's (claim, status): what a dependency repair watches for changes."""
        return {cid: (c.claim, c.status) for cid, c in self.conclusions.items()}

    def changed_since(self, before: dict[str, tuple[str, str]]) -> list[str]:
        """Conclusions that existed in `before` and whose claim or status differs now."""
        now = self.states()
        return [cid for cid, state in before.items() if cid in now and now[cid] != state]

    def dependents(self, changed: list[str]) -> list[str]:
        """Every conclusion that depends on a changed one, directly or through others, nearest first."""
        found, frontier = [], list(changed)
        while frontier:
            nxt = []
            for cid, c in self.conclusions.items():
                if cid not in found and cid not in changed and any(d in frontier for d in c.depends_on):
                    found.append(cid)
                    nxt.append(cid)
            frontier = nxt
        return found

    def render_requirements(self) -> str:
        if not self.requirements:
            return "(none yet: add one per fact the question needs)"
        return "\n".join(f"{r.id} [{r.status}] {r.text}" for r in self.requirements.values())

    def render_one(self, cid: str) -> str:
        c = self.conclusions[cid]
        cites = ", ".join(f"{x.title}#{x.sentence}" for x in c.citations) or "no citations"
        depends = f" depends on {', '.join(c.depends_on)}" if c.depends_on else ""
        return f"{c.id} [{c.status}] {c.claim} ({cites}){depends}"

    def render_conclusions(self) -> str:
        if not self.conclusions:
            return "(none yet: add one for each needed fact a paragraph you read states, citing its sentences)"
        return "\n".join(self.render_one(cid) for cid in self.conclusions)

    def snapshot(self) -> dict:
        return {
            "requirements": [r.model_dump() for r in self.requirements.values()],
            "conclusions": [c.model_dump() for c in self.conclusions.values()],
        }
