"""Agentic SSR's voting rule (Appendix D.1), in plain Python so every clause can be tested without an LM.

A step qualifies for refinement when
  (a) at least two judgments reject it,
  (b) a majority of the VALID judgments reject it, and
  (c) a majority of those rejections agree on one correction.
Invalid judgments (unparseable, a confidence outside [0, 1], or a rejection without a usable
correction) do not vote. Of the qualifying steps the one with the lowest confidence is refined;
ties go to the later step.

A step's agreed correction (`StepVote.agreed`) is the correction of clause (c), and exists only
when the step's own votes meet all three clauses: one rejection is never an agreement, however
the other verifiers voted. So the fallback of D.1 (refinement gave no valid action: use an agreed
correction to the action step) needs the action step's own qualifying majority of agreeing
rejections, whichever step was refined.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Judgment:
    verdict: str | None  # "accept" | "reject"; None when the output could not be parsed
    confidence: float | None = None  # the verifier's confidence in its own verdict
    correction: str = ""
    key: object = None  # what "agreeing on a correction" compares; None when the correction is unusable

    @property
    def valid(self) -> bool:
        if self.verdict not in ("accept", "reject") or self.confidence is None:
            return False
        if not 0.0 <= self.confidence <= 1.0:
            return False
        return self.verdict == "accept" or self.key is not None


@dataclass(frozen=True)
class StepVote:
    step: str
    judgments: tuple[Judgment, ...]

    @property
    def valid(self) -> list[Judgment]:
        return [j for j in self.judgments if j.valid]

    @property
    def rejections(self) -> list[Judgment]:
        return [j for j in self.valid if j.verdict == "reject"]

    def _majority_correction(self) -> Judgment | None:
        """The first rejection carrying the correction a strict majority of the rejections share (clause c)."""
        rejections = self.rejections
        if not rejections:
            return None
        key, count = Counter(j.key for j in rejections).most_common(1)[0]
        if count * 2 <= len(rejections):
            return None
        return next(j for j in rejections if j.key == key)

    @property
    def qualifies(self) -> bool:
        n_reject, n_valid = len(self.rejections), len(self.valid)
        return n_reject >= 2 and n_reject * 2 > n_valid and self._majority_correction() is not None

    @property
    def agreed(self) -> Judgment | None:
        """The step's agreed correction: clause (c)'s, only when the step qualifies (so at least two
        rejections agree on it); None otherwise."""
        return self._majority_correction() if self.qualifies else None

    @property
    def confidence(self) -> float:
        """How sure the verifiers are that the step is right: mean of c (accept) and 1 - c (reject)."""
        valid = self.valid
        if not valid:
            return 1.0
        return sum(j.confidence if j.verdict == "accept" else 1.0 - j.confidence for j in valid) / len(valid)

    def summary(self) -> dict:
        return {"step": self.step, "qualifies": self.qualifies, "confidence": round(self.confidence, 4),
                "agreed_correction": self.agreed.correction if self.agreed else None,
                "judgments": [{"verdict": j.verdict, "confidence": j.confidence, "correction": j.correction,
                               "valid": j.valid} for j in self.judgments]}


def step_to_refine(votes: list[StepVote]) -> StepVote | None:
    chosen = None
    for vote in votes:  # in step order, so `<=` hands ties to the later step
        if vote.qualifies and (chosen is None or vote.confidence <= chosen.confidence):
            chosen = vote
    return chosen
