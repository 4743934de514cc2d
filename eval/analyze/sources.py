"""What an analysis reads: finished eval.run runs, the benchmark questions behind their records,
and the LM they ran with."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dspy

from eir_dspy.lm import build_lm, server_build
from eval.data.loaders import DataError, load_file, resolve_data_file
from eval.data.schema import Question
from eval.runs.logged_runs import LoggedRun, SelectionError
from programs.run_context import RunContext


def questions_of(run: LoggedRun, data: str | None = None) -> dict[str, Question]:
    """The benchmark questions of `run`'s records, by id: from `data` if given, else the file the run
    recorded, else the file of that name under $EIR_DATA_DIR (a run made on another machine)."""
    recorded = run.config.data_file
    if data is not None:
        path = resolve_data_file(run.dataset, data)
    elif recorded and Path(recorded).is_file():
        path = Path(recorded)
    elif recorded and os.environ.get("EIR_DATA_DIR"):
        found = list(Path(os.environ["EIR_DATA_DIR"]).rglob(Path(recorded).name))
        if not found:
            raise SelectionError(f"run {run.run_id} ({run.name}): its data file {recorded} is not here, nor under "
                                 f"EIR_DATA_DIR; give --data")
        path = found[0]
    else:
        raise SelectionError(f"run {run.run_id} ({run.name}): its data file {recorded!r} is not here; give --data "
                             "or set EIR_DATA_DIR")
    try:
        by_id = {q.id: q for q in load_file(path, run.dataset)}
    except DataError as exc:
        raise SelectionError(f"run {run.run_id} ({run.name}): {exc}") from None
    missing = [r.id for r in run.question_records if r.id not in by_id]
    if missing:
        raise SelectionError(f"run {run.run_id} ({run.name}): {len(missing)} of its questions are not in {path} "
                             f"(e.g. {missing[0]}); give the file it ran on with --data")
    return by_id


def run_lm(run: LoggedRun, threads: int = 1) -> tuple[dspy.LM, RunContext]:
    """The run's LM, rebuilt from its config (model, path, endpoints, temperature, max tokens, the
    embedded engine), with no response cache: every call an analysis makes is a fresh model call; and
    the run context the analysis's programs are built with (the run's decoding; a run that logged none: free).
    `threads`: questions the analysis re-answers at once (the embedded server's slots)."""
    spec = run.config.lm.spec(threads)
    lm = build_lm(spec)
    now, then = server_build(lm), run.config.served_by
    if now and then and now != then:  # the recorded trajectories and the new calls come from different builds
        print(f"warning: run {run.run_id} was served by {then.label}; this analysis's calls are served by "
              f"{now.label} (greedy outputs differ between builds: docs/lm.md, Engines)", file=sys.stderr)
    return lm.copy(cache=False), RunContext(spec.decoding or "free")

