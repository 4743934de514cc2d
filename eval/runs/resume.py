"""Continuing a run (`eval.run --resume RUN_ID`): the run to continue and its experiment, its lock (one
process runs a run at a time; a new run takes it too), the records its earlier parts wrote, and the
command that resumes it. How a run guards its results: docs/experiments.md, "Runs and MLflow"."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import mlflow

from eval.files.results_file import ResultsFile, ResultsFileError, RunBusy, describe_bad_lines
from eval.runs import tracking
from eval.runs.config import RunConfig
from eval.runs.errors import RunError
from eval.runs.flags import DEFAULT_EXPERIMENT, SKIP_BAD_LINES


@dataclass(frozen=True)
class Resumed:
    """A run being resumed, its lock held: its own experiment (and tracking URI), its results file,
    the records its earlier parts wrote (by question id) and the config it started with."""

    run_id: str
    experiment: str
    uri: str
    results: ResultsFile
    done: dict[str, dict]
    config: RunConfig


def load_resume(asked: str, experiment: str, held: ExitStack, skip_bad_lines: bool) -> Resumed:
    """The run `--resume asked` continues (a variant's id names its parent), in its own experiment
    (made the active one), its lock entered on `held`. A RunError, leaving the run as it was, when it
    cannot be resumed: no such run, another process running it, a bad line in its results file."""
    tracking.use_tracking_uri()
    run_id = tracking.resumable_run(asked)
    experiment = own_experiment(run_id, experiment)
    uri = tracking.setup(experiment)
    # Held before the run is reopened or its file read: a second process resuming it stops here,
    # and leaves the run's status and results as they are.
    results = results_of(run_id)
    hold(held, results, run_id)
    done = load_done(results, run_id, resume_command(run_id, experiment), skip_bad_lines)
    return Resumed(run_id, experiment, uri, results, done, tracking.saved_config(run_id))


def results_of(run_id: str) -> ResultsFile:
    """The run's results file, as its tag names it."""
    return ResultsFile(Path(mlflow.get_run(run_id).data.tags[tracking.RESULTS_TAG]))


def own_experiment(run_id: str, asked: str) -> str:
    """The experiment a resumed run continues in: its own, whatever `asked` (--experiment) names."""
    own = mlflow.get_experiment(mlflow.get_run(run_id).info.experiment_id).name
    if own != asked:
        print(f"note: run {run_id} is in experiment {own!r}; it continues there (not in {asked!r})", file=sys.stderr)
    return own


def hold(held: ExitStack, results: ResultsFile, run_id: str) -> None:
    """Hold the run's lock until `held` closes; when another process has it, a RunError naming the
    holder and saying what state the run is in (`busy_message`)."""
    try:
        held.enter_context(results.hold(run_id))
    except RunBusy as busy:
        raise RunError(busy_message(busy)) from None


def busy_message(busy: RunBusy) -> str:
    """Why the run cannot be run here now, and its state: the process its lock names is running it
    (or, gone, was killed while a process it started keeps the lock); its MLflow status, which the
    refused run leaves as it is."""
    status = mlflow.get_run(busy.run_id).info.status
    if busy.holder_alive is False:
        return (f"run {busy.run_id}'s lock ({busy.lock}) is held, but pid {busy.pid}, the process that took it, "
                f"is gone: it was killed, and MLflow shows the run {status}. A process it started still holds "
                f"the lock (`fuser -v {busy.lock}` names it); stop that process, then resume. Nothing was changed.")
    return (f"{busy}: that process is running it now, and MLflow shows it {status}; nothing was changed. "
            "Two processes must not run one run's questions; wait for it to finish (or stop it), then resume.")


def load_done(results: ResultsFile, run_id: str, resume: str, skip_bad_lines: bool) -> dict[str, dict]:
    """The records an earlier part of the run wrote, by question id. A line that is not one of the
    run's records stops the resume, naming it, unless `skip_bad_lines` (then each is reported)."""
    try:
        done = results.load_records(run_id, skip_bad_lines=skip_bad_lines)
    except ResultsFileError as exc:
        raise RunError(f"{exc}Nothing was run. Remove or fix these lines, or skip them (they stay in the "
                       f"file, left out of the run and its logged results) with:\n  {resume} {SKIP_BAD_LINES}") from None
    if results.skipped:
        print(f"skipping {len(results.skipped)} line(s) of {results.path} that are not records of run {run_id} "
              f"({SKIP_BAD_LINES}; they stay in the file):\n" + describe_bad_lines(str(results.path), results.skipped),
              end="", file=sys.stderr)
    return done


def resume_command(run_id: str, experiment: str = DEFAULT_EXPERIMENT) -> str:
    flags = "" if experiment == DEFAULT_EXPERIMENT else f" --experiment {experiment}"
    return f"python -m eval.run --resume {run_id}{flags}"
