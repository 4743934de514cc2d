"""The dependency-repair ablations (Appendix E.3): conclusions name the conclusions they follow
from; when one changes, a `repair` call revises each dependent and a `refresh` call the requirements."""

from __future__ import annotations

import dspy

from eir_dspy.state import ConclusionRevision, DependentConclusionUpdate, RequirementUpdate
from signatures.eir_turn import EIRTurn
from signatures.search_turns import EIRSearchTurn

DEPENDENCY_RULE = ("A conclusion that follows from earlier conclusions lists their ids in depends_on; "
                   "when one of those changes, the conclusions that depend on it are revised.")


def _with_dependencies(turn: type[dspy.Signature]) -> type[dspy.Signature]:
    """The same turn decision, with depends_on on every conclusion update."""
    return (turn.with_updated_fields("conclusion_updates", type_=list[DependentConclusionUpdate])
            .with_instructions(turn.instructions + "\n" + DEPENDENCY_RULE))


EIRDependentTurn = _with_dependencies(EIRTurn)
EIRDependentSearchTurn = _with_dependencies(EIRSearchTurn)


class RepairConclusion(dspy.Signature):
    """A conclusion that this conclusion depends on has changed.
    Revise this conclusion so it agrees with the current conclusions and the evidence: keep it as it is,
    change its claim, or retract it. Cite only sentences shown in the evidence (title and sentence index)."""

    question: str = dspy.InputField()
    evidence: str = dspy.InputField(desc="the sentences read so far, grouped by paragraph title, each labelled [sentence index]")
    conclusions: str = dspy.InputField(desc="the current conclusions")
    changed: str = dspy.InputField(desc="the conclusions that changed, before and now")
    conclusion: str = dspy.InputField(desc="the conclusion to revise")
    revision: ConclusionRevision = dspy.OutputField()


class RefreshRequirements(dspy.Signature):
    """Conclusions were revised. Bring the requirements up to date: mark satisfied what the conclusions
    now establish, reopen what they no longer establish, add any fact that is now missing.
    Revise an entry by its existing id; add one with id null; send only new or changed entries."""

    question: str = dspy.InputField()
    requirements: str = dspy.InputField()
    conclusions: str = dspy.InputField()
    requirement_updates: list[RequirementUpdate] = dspy.OutputField()
