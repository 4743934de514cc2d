"""Runs made by `python -m eval.run`, read back from MLflow with their per-question records."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import mlflow
from mlflow.entities import Run

from eval.files.question_record import QuestionRecord, as_records
from eval.files.results_file import ResultsFileError, read_run_records
from eval.runs import tracking
from eval.runs.config import RunConfig
from eval.runs.errors import RunError


class SelectionError(RunError, ValueError):
    """The runs asked for cannot be compared (none found, unknown ids, missing results)."""


@dataclass(frozen=True)
class LoggedRun:
    run_id: str
    experiment_id: str
    name: str
    variant: str  # RunConfig.variant: what comparisons pair by
    dataset: str
    lm: str
    budget: int
    start_time: int
    metrics: dict[str, float]
    records: tuple[dict, ...]  # in the run's question order, as the lines hold them (see `question_records`)
    sweep: str = ""  # the variant without H: the runs of one budget sweep share it
    label: str = ""  # the method label alone (RunConfig.label), without ablation, H or options
    ablation: str = "none"  # the EIR ablation; a method without ablations has none
    setting: str = "pool"  # pool or corpus
    decoding: str | None = None  # the decoding mode it ran under (None: logged before --decoding)
    config: RunConfig = field(default_factory=RunConfig, compare=False, hash=False)  # the condition eval.run logged

    @property
    def column(self) -> tuple[str, str]:
        """Where this run sits in Table 1: one column per (dataset, LM)."""
        return self.dataset, self.lm

    @cached_property
    def question_records(self) -> tuple[QuestionRecord, ...]:
        """The records, typed (eval.files.question_record): what the analyses read."""
        return tuple(as_records(self.records))

    @property
    def served_by(self) -> frozenset[str]:
        """The embedded model's server builds that answered its questions (empty for other LMs)."""
        return frozenset(r.served_by for r in self.question_records if r.served_by)

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(r.id for r in self.question_records)


def load_run(run: Run, records: list[dict] | None = None) -> LoggedRun:
    """A finished run with its logged records, or a stopped one with the `records` it finished."""
    try:
        config = RunConfig.from_tag(run.data.tags[tracking.CONFIG_TAG])
    except RunError as exc:
        raise SelectionError(f"run {run.info.run_id} ({run.info.run_name}): {exc}") from None
    return LoggedRun(
        run_id=run.info.run_id,
        experiment_id=run.info.experiment_id,
        name=run.info.run_name,
        variant=config.variant,
        dataset=config.dataset,
        lm=config.lm_name,
        budget=config.budget,
        start_time=run.info.start_time,
        metrics=dict(run.data.metrics),
        records=tuple(_results(run) if records is None else records),
        sweep=config.sweep,
        label=config.label,
        ablation=config.options.get("ablation") or "none",
        setting=config.setting,
        decoding=config.lm.decoding,
        config=config,
    )


def select_runs(experiment: str | None = None, run_ids: list[str] | None = None, filter_string: str = "",
                methods: list[str] | None = None, stopped: bool = False) -> tuple[list[LoggedRun], list[str]]:
    """Finished eval.run runs (by id, or all of an experiment matching an MLflow filter), newest first.
    `stopped`: also the runs stopped by Ctrl-C (KILLED), with the questions they finished.

    Returns the runs and notes on what was skipped, so the caller can say why a run is missing.
    """
    notes: list[str] = []
    if run_ids:
        runs = []
        for run_id in run_ids:
            try:
                runs.append(mlflow.get_run(run_id))
            except mlflow.exceptions.MlflowException:
                raise SelectionError(f"run {run_id}: no such run in {mlflow.get_tracking_uri()}") from None
    else:
        found = mlflow.get_experiment_by_name(experiment)
        if found is None:
            raise SelectionError(f"no experiment named {experiment!r} in {mlflow.get_tracking_uri()}")
        runs = mlflow.search_runs(experiment_ids=[found.experiment_id], filter_string=filter_string,
                                  order_by=["attributes.start_time DESC"], output_format="list")
    loaded = []
    for run in runs:
        label = f"run {run.info.run_id} ({run.info.run_name})"
        kind = run.data.tags.get(tracking.KIND_TAG)
        if kind == tracking.COMPILE_KIND and not run_ids:
            continue  # an eval.compile run made a program file; the runs of that program are method runs
        if kind in (tracking.COMPARISON_KIND, tracking.ANALYSIS_KIND):
            if run_ids:
                raise SelectionError(f"{label} is an {kind} run, not a method run" if kind == tracking.ANALYSIS_KIND
                                     else f"{label} is a comparison, not a method run")
            continue
        if tracking.CONFIG_TAG not in run.data.tags:
            if run.info.status == "FINISHED" or run_ids:
                raise SelectionError(f"{label} was not made by eval.run (no {tracking.CONFIG_TAG} tag)")
            # a process killed between creating the run and tagging it: no question ran in it
            notes.append(f"skipped {label}: status {run.info.status}, killed while eval.run was setting it up "
                         "(no question ran in it)")
            continue
        records = _finished_so_far(run) if stopped and run.info.status == "KILLED" else None
        if not records and run.info.status != "FINISHED":
            why = run.data.tags.get(tracking.FAILURE_TAG)
            notes.append(f"skipped {label}: status {run.info.status}" + (f": {why}" if why else "")
                         + f" (finish it with `python -m eval.run --resume {run.info.run_id}`)")
            continue
        logged = load_run(run, records)  # names the run if its tag is not today's
        if records:
            notes.append(f"included {label}: stopped (KILLED) after {len(records)} of its {logged.config.n} "
                         "questions; compared on the questions both runs of a pair finished")
        if methods and logged.variant not in methods and logged.label not in methods:
            continue
        loaded.append(logged)
    if not loaded:
        where = f"runs {run_ids}" if run_ids else f"experiment {experiment!r}" + (f" with {filter_string!r}" if filter_string else "")  # noqa: E501
        raise SelectionError(f"no finished eval.run runs in {where}" + (f" (methods {methods})" if methods else ""))
    return loaded, notes


def _finished_so_far(run: Run) -> list[dict]:
    """A stopped run's records: its results file as the runner wrote it (each question appended as it
    finished; a question run again on resume replaces its earlier record)."""
    path = Path(run.data.tags[tracking.RESULTS_TAG])
    if not path.exists():
        raise SelectionError(f"run {run.info.run_id} ({run.info.run_name}) was stopped; its finished questions are in "
                             f"{path}, which is not here (run eval.compare where the run was made)")
    return run_records(run, path.read_text(), str(path))


def _results(run: Run) -> list[dict]:
    """The run's per-question JSONL artifact (results.jsonl, or <variant>.jsonl for a variant run)."""
    client = mlflow.MlflowClient()
    names = [a.path for a in client.list_artifacts(run.info.run_id) if a.path.endswith(".jsonl")]
    if len(names) != 1:
        raise SelectionError(f"run {run.info.run_id} ({run.info.run_name}): expected one per-question .jsonl "
                             f"artifact, found {names or 'none'}")
    path = Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path=names[0]))
    return run_records(run, path.read_text(), f"the logged artifact {names[0]}")


def run_records(run: Run, text: str, where: str) -> list[dict]:
    """The run's records in a results file's `text` (eval.files.results_file.read_run_records: one per question,
    the latest), or a SelectionError naming the run, the file (`where`) and each line that is not one
    of its records. A variant run's lines carry the id of the run it came from."""
    run_id = run.info.run_id
    parent = run.data.tags.get(tracking.VARIANT_OF_TAG)
    lines = read_run_records(text, {run_id, parent} if parent else {run_id})
    if lines.bad:
        finish = parent or run_id
        raise SelectionError(f"run {run_id} ({run.info.run_name}): {ResultsFileError(where, run_id, lines.bad)}"
                             "Remove or fix these lines in the run's results file, or finish the run without them "
                             f"(they stay in the file): python -m eval.run --resume {finish} --skip-bad-lines") from None
    return list(lines.records.values())

