"""The per-question result record: `QuestionRecord`, the one typed form of a results.jsonl line.

eval.runs.execute builds it; it is written as one JSON line (`row()`: the keys set) and read back
only through `read_record` (the current format only: docs/experiments.md, "Runs and MLflow").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from programs.registry import METHODS
from programs.trajectory_record import Trajectory

SCORES = {"answer_f1", "em", "support_f1", "sp_em", "joint_em", "joint_f1"}  # eval.scoring.metrics.score_question's


class RecordError(ValueError):
    """A line that is not a question record; the message names the field at fault."""


class QuestionRecord(BaseModel):
    # extra="forbid": a misspelt or unknown key is an error, not a silently ignored field.
    model_config = ConfigDict(extra="forbid")

    # The question, as the dataset gives it.
    id: str | None = None
    question: str | None = None
    gold: str | None = None
    aliases: list[str] | None = None
    type: str | None = None  # the dataset's question type (HotpotQA: bridge / comparison)
    # The answer and its scores (0..1, eval.scoring.metrics); joint_*: HotpotQA only.
    prediction: str | None = None
    citations: list[tuple[str, int]] | None = None  # (title, sentence index) pairs the answer cites
    answer_f1: float | None = None
    em: float | None = None
    support_f1: float | None = None
    sp_em: float | None = None
    joint_em: float | None = None
    joint_f1: float | None = None
    # What it cost (eir_dspy.accounting).
    calls: int | None = None
    calls_by_role: dict[str, int] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None  # None: the model has no price
    cache_hits: int | None = None
    seconds: float | None = None  # this question's own time, from its first call to its record
    # How the agent acted, summed over the question's episodes.
    turns: int | None = None
    rejected_actions: int | None = None
    rejections_by_cause: dict[str, int] | None = None
    citations_outside_evidence: int | None = None  # cited sentences the answering call was not shown
    title_fallbacks: int | None = None  # pool reads whose title matched nothing, so the first unread was read
    reads: int | None = None
    searches: int | None = None  # corpus setting; 0 in the pool
    evidence_titles: list[str] | None = None  # the paragraphs read (Full Pool: the whole pool)
    # The sentences the answer came from, as [title, sentence index, text], in read order.
    evidence: list[list[str | int]] | None = None
    gold_titles: list[str] | None = None  # the annotated supporting paragraphs
    gold_read_share: float | None = None  # share of gold_titles among evidence_titles
    forced_end: bool | None = None  # the turn limit ended the episode (None: no episode)
    submitted_before_budget: bool | None = None  # the agent submitted before its last turn
    # A question that raised: the exception, its type and a short traceback; it scores 0.
    error: str | None = None
    error_type: str | None = None
    error_trace: str | None = None
    engine_failed: bool | None = None  # the error was the embedded engine stopping
    served_by: str | None = None  # the embedded model's server build (EngineBuild.label); None for other LMs
    trajectory: Trajectory | None = None  # None: the program raised before making one
    lm_calls: list[dict[str, Any]] | None = None  # every LM call (eir_dspy.accounting.CallRecord as a dict)
    # Further results from the same work, by label (Reflexion's trial 1: reflexion_first).
    variants: dict[str, QuestionRecord] | None = None
    # Wall clock (epoch seconds): when this run part (the first invocation or a --resume) started, and
    # when this question finished.
    part_started_at: float | None = None
    finished_at: float | None = None
    # The eval.run run that wrote this line (its MLflow run id), so a results file refuses another run's
    # lines; None in a variant nested in its record, and in records built in memory.
    run_id: str | None = None

    @field_validator("trajectory")
    @classmethod
    def _registered(cls, trajectory: Trajectory | None) -> Trajectory | None:
        """A trajectory names a method of the registry as it is when the record is read (one added later too)."""
        if trajectory is not None and trajectory.method not in METHODS:
            raise ValueError(f"unknown method {trajectory.method!r}; the registry's: {', '.join(METHODS)}")
        return trajectory

    def scores(self) -> dict[str, float | None]:
        """The scores this record holds, by name: what eval.scoring.metrics' aggregates take."""
        return self.model_dump(include=SCORES, exclude_unset=True)

    def row(self) -> dict[str, Any]:
        """The record as a results.jsonl line holds it: the fields set, nothing added."""
        return self.model_dump(exclude_unset=True)


def read_record(row: dict | QuestionRecord) -> QuestionRecord:
    """The record of a results line in the current format, or a RecordError naming the record and each
    key at fault (a record of an earlier version: migrate its runs with scripts/migrate_runs.py)."""
    if isinstance(row, QuestionRecord):
        return row
    if not isinstance(row, dict):
        raise RecordError(f"a question record is a JSON object, not {type(row).__name__}")
    try:
        return QuestionRecord.model_validate(row)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'record'}: {e['msg']}" for e in exc.errors())
        old = any(e["type"] in ("missing", "extra_forbidden") for e in exc.errors())
        raise RecordError(f"question record {row.get('id')!r} is not valid: {problems}"
                          + (MIGRATE_HINT if old else "")) from None


MIGRATE_HINT = " (a record of an earlier version? `python scripts/migrate_runs.py` rewrites old runs)"


def as_records(rows: Iterable[dict | QuestionRecord]) -> list[QuestionRecord]:
    """Records however they came (read from a file or MLflow, built in memory) as QuestionRecords."""
    return [read_record(r) for r in rows]
