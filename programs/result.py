"""What a method returns for one question: the one contract between the programs and the harness.

Every method's `forward` returns a MethodResult, and eval.runs.execute reads nothing else of it.
It is a dspy.Prediction (a subclass), not a separate object carried alongside, so DSPy's machinery
keeps working on it unchanged: optimizers hand it to the metric (which reads `answer` and
`citations`), `dspy.Module.__call__` records LM usage on it, tracing and streaming check
`isinstance(output, dspy.Prediction)`. Its fields live in the Prediction's store as usual; the
annotations below name their types, and the constructor fills every one.
"""

from __future__ import annotations

import dspy

from eir_dspy.episode import Episode
from eir_dspy.evidence import EvidenceStore
from programs.trajectory_record import Trajectory

# Every field and its value when not given.
EMPTY = {"answer": "", "citations": (), "episodes": (), "evidence": None, "trajectory": None, "variants": None,
         "calls": None, "seconds": None}


class MethodResult(dspy.Prediction):
    answer: str  # "" when there is none (no valid submit, an unreadable final call)
    citations: list[tuple[str, int]]  # (title, sentence index) pairs
    episodes: list[Episode]  # every episode run, in order; the answer came from the last (none: Full Pool)
    # The sentences the answer was given from: what the final call was shown (EIR: the evidence read;
    # Full Pool: the whole pool), or the evidence read in the episode that submitted it.
    evidence: EvidenceStore | None
    trajectory: Trajectory | None
    variants: dict[str, MethodResult]  # further results of the same work, by label (Reflexion's first trial)
    # A variant's share of the work: the LM calls made (the question's first `calls`) and the seconds
    # taken when its answer was fixed. None: the whole question's (a main result).
    calls: int | None
    seconds: float | None

    def __init__(self, base=None, **fields) -> None:
        """MethodResult(answer=..., citations=..., ...): a field not given takes its empty value.
        `base` is DSPy's copy path (`Example.copy`): its fields, then the ones given."""
        unknown = [k for k in fields if k not in EMPTY]
        if unknown:
            raise TypeError(f"MethodResult has no field {unknown[0]!r}; its fields: {', '.join(EMPTY)}")
        if base is not None:
            super().__init__(base, **fields)
            return
        given = {**EMPTY, **fields}
        given.update(citations=list(given["citations"]), episodes=list(given["episodes"]),
                     variants=dict(given["variants"] or {}))
        super().__init__(**given)

    @property
    def episode(self) -> Episode | None:
        """The episode the answer came from (the last one run); None when none ran."""
        return self.episodes[-1] if self.episodes else None
