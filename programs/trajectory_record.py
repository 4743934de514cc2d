"""What a program keeps of how it reached its answer: one Trajectory shape for every method.

`method` names the program that made it (programs/names.py, a key of programs.registry.METHODS; the
corpus setting runs the same programs). Each method fills only its own fields and leaves the others unset; a field a method does
not fill is left out of the written record, so a record keeps exactly the keys its method wrote.
Nested entries stay the plain dicts they are written as (their types are named per field)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints

# A method's name (programs.registry.METHODS; a record read back is checked against it: eval/files/question_record.py).
Method = Annotated[str, StringConstraints(min_length=1)]


class Trajectory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: Method
    # The episode's turns in order, each an eir_dspy.episode.TurnRecord as a dict (EIR, Direct, SSR).
    turns: list[dict[str, Any]] | None = None
    # The answer the episode's submit carried; None: it ended without a valid submit.
    submitted: str | None = None
    forced_end: bool | None = None  # the episode ended by its turn limit, not by a submit
    # EIR's lists at the end (eir_dspy.state Requirement / Conclusion as dicts).
    requirements: list[dict[str, Any]] | None = None
    conclusions: list[dict[str, Any]] | None = None
    # EIR: turns whose non-empty list updates were applied / discarded as invalid.
    list_updates: dict[str, int] | None = None
    repairs: dict[str, int] | None = None  # EIR's repair ablations: programs/eir_repair.py's counters
    final_parsed: bool | None = None  # EIR, Full Pool: the final answering call's output could be read
    ssr: list[dict[str, Any]] | None = None  # SSR: per turn, how its proposal was verified and executed
    # Reflexion: per trial, its number, answer, whether the oracle matched it, its turns, submit and
    # forced end, and the reflection written after it (if it failed and another trial followed).
    trials: list[dict[str, Any]] | None = None
    stopped_at: int | None = None  # Reflexion: the trial it stopped after
    # Older reflexion_first records: only a pointer to the oracle run's trial 1, no trajectory of their own.
    see: str | None = None

    def __getitem__(self, key: str) -> Any:
        """A field by the key it is written under, as code reading a prediction's trajectory as a dict
        does (docs/python.md); a field this method did not fill is a missing key."""
        if key not in self.model_fields_set:
            raise KeyError(key)
        return getattr(self, key)

    def episodes(self) -> list[list[dict[str, Any]]] | None:
        """The turns of each episode this trajectory holds (Reflexion: one per trial); None when it
        holds none (Full Pool, an older reflexion_first record)."""
        if self.trials is not None:
            return [trial["turns"] for trial in self.trials]
        return [self.turns] if self.turns is not None else None
