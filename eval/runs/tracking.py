"""MLflow logging: one run per (method, dataset, LM) with params, metrics and per-question artifacts."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
from pathlib import Path

import mlflow

from eval.runs.config import RunConfig
from eval.runs.errors import RunError
from programs.registry import METHODS

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
CONFIG_TAG = "eir.config"
RESULTS_TAG = "eir.results_path"
VARIANT_OF_TAG = "eir.variant_of"
KIND_TAG = "eir.kind"  # set on comparison and analysis runs, so they are never read back as method runs
FAILURE_TAG = "eir.failure"  # why a run ended FAILED (every question failed with this error)
# A degenerate run (eval.scoring.health): its warnings' text, one a line, and their codes, comma-separated.
DEGENERATE_TAG = "eir.degenerate"
DEGENERATE_CODES_TAG = "eir.degenerate_codes"
COMPARISON_KIND = "comparison"
ANALYSIS_KIND = "analysis"  # an eval.analyze run over recorded runs
COMPILE_KIND = "compile"  # an eval.compile run: it makes a program file, not per-question results
ANALYSIS_TAG = "eir.analysis"  # its analysis's name
SOURCE_RUNS_TAG = "eir.source_runs"  # the JSON list of the run ids an analysis read

# The system metrics monitor says four INFO lines per run (GPU skipped, started, stopping, stopped).
logging.getLogger("mlflow.system_metrics").setLevel(logging.WARNING)

TABLE_COLUMNS = ["id", "question", "gold", "prediction", "answer_f1", "em", "support_f1", "sp_em", "joint_em",
                 "joint_f1", "citations_outside_evidence", "calls",
                 "prompt_tokens", "completion_tokens", "evidence_titles", "rejected_actions", "error"]


def setup(experiment: str) -> str:
    """Open the tracking store (`use_tracking_uri`) and make `experiment` the active one, creating
    it if it does not exist yet. Safe when several processes start at once on a fresh store: a
    local store is created, and the experiment made, by one process at a time (`store_lock`)."""
    uri = use_tracking_uri()
    with store_lock(uri):
        _activate_experiment(experiment)
    return uri


def use_tracking_uri() -> str:
    """$MLFLOW_TRACKING_URI, else the project's sqlite store; the store is opened (a fresh one
    created, under `store_lock`) before this returns."""
    uri = os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
    with store_lock(uri):
        _open_store(uri)
    return uri


def _open_store(uri: str) -> None:
    """Point MLflow at `uri` and open its store now. Opening a fresh sqlite store creates its tables
    and runs every schema migration (mlflow.store.db.utils._initialize_tables, then _verify_schema),
    which MLflow does unlocked: two processes doing it at once fail (a duplicate column, or an
    out-of-date schema seen mid-migration). MlflowClient opens the store as it is made."""
    mlflow.set_tracking_uri(uri)
    mlflow.MlflowClient(uri)


def _activate_experiment(name: str) -> None:
    """mlflow.set_experiment(name), but an experiment another process created between our look-up
    and our create is read again and made active: MLflow's own set_experiment returns it on that
    race without making it the active experiment, so the run would go to the Default experiment."""
    client = mlflow.MlflowClient()
    found = client.get_experiment_by_name(name)
    if found is None:
        try:
            client.create_experiment(name)
        except mlflow.exceptions.MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
        found = client.get_experiment_by_name(name)
    mlflow.set_experiment(experiment_id=found.experiment_id)  # a deleted one is refused here, as by name


def store_path(uri: str) -> Path | None:
    """The local file or directory a tracking URI stores into (a sqlite file, a file store's root),
    resolved; None for a remote or in-memory store."""
    from mlflow.utils.file_utils import local_file_uri_to_path
    from mlflow.utils.uri import get_uri_scheme, is_local_uri

    if get_uri_scheme(uri) == "sqlite":
        from sqlalchemy.engine import make_url

        database = make_url(uri).database
        return Path(database).resolve() if database and database != ":memory:" else None
    if is_local_uri(uri, is_tracking_or_registry_uri=True):  # a path or file: URI (not "databricks")
        return Path(local_file_uri_to_path(uri)).resolve()
    return None  # a tracking server, or a database server: it handles its own concurrency


@contextlib.contextmanager
def store_lock(uri: str):
    """Hold an exclusive inter-process lock (flock) for a local store while it is created and an
    experiment is made in it, so runs started together on a fresh store do it one after the other.
    The lock file is beside the store, named after it (`mlflow.db.lock` for `mlflow.db`, `mlruns.lock`
    for a directory `mlruns`), so every spelling of one store's URI takes the same lock; the holder
    removes it as it lets go, so nothing is left behind (not in the temp directory either, where it
    once was: one file per store, for good). Nothing is locked for a remote store, or where a lock
    file cannot be made (the store's directory cannot be made or written: then it is as before)."""
    path = store_path(uri)
    fd = _lock_file(path.with_name(path.name + ".lock")) if path is not None else None
    try:
        yield
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(path.with_name(path.name + ".lock"))  # while still held: see _lock_file
            os.close(fd)  # releases the lock


def _lock_file(lock: Path) -> int | None:
    """Open `lock` (creating it) and flock it exclusively; the descriptor, or None if it cannot be
    opened. A holder unlinks the file before it closes it, so one that waited may wake holding a
    file no longer at `lock` (while a newcomer locks a new one there): it then opens `lock` again,
    until the file it holds is the one at `lock`."""
    with contextlib.suppress(OSError):
        lock.parent.mkdir(parents=True, exist_ok=True)  # a fresh nested store's directory: the store goes there anyway
    while True:
        try:
            fd = os.open(lock, os.O_RDONLY | os.O_CREAT, 0o666)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held, there = os.fstat(fd), os.stat(lock)
        except FileNotFoundError:  # removed by the holder we waited for
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        if (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino):
            return fd
        os.close(fd)  # a newer file is there now


def log_config(config: RunConfig) -> None:
    """Params named the same for every method, so MLflow's compare view lines runs up; the config
    itself as the eir.config tag (eval/runs/config.py names the run: label, variant)."""
    lm = config.lm
    mlflow.log_params({
        "method": config.label, "dataset": config.dataset, "n": config.n, "seed": config.seed,
        "variant": config.variant, "lm": config.lm_name, "temperature": lm.temperature, "max_tokens": lm.max_tokens,
        "request_timeout": lm.request_timeout,
        "H": config.budget, "data_file": config.data_file, "threads": config.threads,
        "engine": lm.engine if str(config.lm_name or "").startswith("local/") else None,
        # Which llama.cpp build served the embedded model (greedy outputs differ between builds).
        **(config.served_by.params() if config.served_by else {}),
        "server_args": lm.server_args or None,
        "adapter": "JSONAdapter", "decoding": config.lm.decoding,
        "endpoints": len(lm.api_base or ()),
        "price_in": lm.price_in, "price_out": lm.price_out, **config.options,
        "setting": config.setting, "index": config.index,
        "futile_searches": config.futile_searches if config.setting == "corpus" else None,
        "corpus": config.corpus, "corpus_paragraphs": config.corpus_paragraphs,
        # The method's parse rule (eir_dspy/acceptance.py): which outputs it accepts is a condition of the run.
        "acceptance": METHODS[config.method].acceptance,
        # A compiled program's file and sha256 (eval.run --program); nothing for a zero-shot run.
        **({"program_file": config.program.path, "program_sha256": config.program.sha256} if config.program else {}),
    })
    mlflow.set_tags({CONFIG_TAG: config.to_tag(), "method": config.label, "variant": config.variant,
                     "dataset": config.dataset, "lm": config.lm_name})


def resumable_run(run_id: str) -> str:
    """The run `--resume run_id` continues: the run itself, or, for a variant run (Reflexion's
    first trial), the run it was derived from; finishing that one re-logs the variant too."""
    try:
        run = mlflow.get_run(run_id)
    except mlflow.exceptions.MlflowException:
        raise RunError(f"--resume {run_id}: no such run in {mlflow.get_tracking_uri()}") from None
    parent = run.data.tags.get(VARIANT_OF_TAG)
    if parent:
        print(f"run {run_id} is the {run.data.tags.get('method', 'variant')} result of run {parent}; resuming {parent}, "
              "which logs both", file=sys.stderr)
        return parent
    if CONFIG_TAG not in run.data.tags or RESULTS_TAG not in run.data.tags:
        raise RunError(f"run {run_id} was not made by eval.run (no {CONFIG_TAG} / {RESULTS_TAG} tags); "
                       "cannot resume it")
    return run_id


def saved_config(run_id: str) -> RunConfig:
    try:
        return RunConfig.from_tag(mlflow.get_run(run_id).data.tags[CONFIG_TAG])
    except RunError as exc:
        raise RunError(f"run {run_id}: {exc}") from None


def start_run(config: RunConfig, resume_id: str | None, out_root: str, tags: dict | None = None) -> str:
    """Start (or reopen, to resume) a method run; it stays active until eval.runs.lifecycle.ending ends it.
    `tags` are set as the run is created, so a run killed at once is still found by them.
    System metrics (CPU, memory, disk, network: `system/*`) are sampled every 10 s (MLflow's default;
    $MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL sets another) by a thread that `mlflow.end_run` stops
    and joins, and that exits by itself once the run is no longer RUNNING (a second Ctrl-C)."""
    if resume_id:
        mlflow.start_run(run_id=resume_id, log_system_metrics=True)
        if FAILURE_TAG in mlflow.get_run(resume_id).data.tags:
            mlflow.delete_tag(FAILURE_TAG)  # a new attempt; it is tagged again if it fails again
        return resume_id
    run = mlflow.start_run(run_name=config.run_name, tags=tags, log_system_metrics=True)
    log_config(config)
    mlflow.set_tag(RESULTS_TAG, str(Path(out_root) / run.info.run_id / "results.jsonl"))
    return run.info.run_id


def end_run_if_active(status: str, run_id: str | None = None) -> None:
    """End the active run with `status`; with `run_id`, set that run's status directly (safe from a
    signal handler, where the fluent run stack may be mid-update)."""
    if run_id is not None:
        mlflow.MlflowClient().set_terminated(run_id, status)
    elif mlflow.active_run() is not None:
        mlflow.end_run(status)


def mark_failed(message: str) -> None:
    """End the active run FAILED, saying why, so comparisons skip it with the reason."""
    mlflow.set_tag(FAILURE_TAG, message[:5000])
    mlflow.end_run("FAILED")


def log_variant(config: RunConfig, parent_id: str, records: list[dict], metrics: dict[str, float],
                results_path: str, warnings: list) -> str:
    """Log (or, after a resume, re-log) a variant of `parent_id` (its config labelled as the variant,
    e.g. reflexion_first) as its own run, found again by tag."""
    name = config.label
    found = mlflow.search_runs(filter_string=f"tags.`{VARIANT_OF_TAG}` = '{parent_id}' and tags.method = '{name}'",
                               output_format="list")
    run_id = found[0].info.run_id if found else None
    # The link tags are set as the run is created, so a run killed right after is still found (and
    # resumable through its parent).
    tags = None if run_id else {VARIANT_OF_TAG: parent_id, "method": name}
    with mlflow.start_run(run_id=run_id, run_name=None if run_id else config.run_name, tags=tags) as run:
        if run_id is None:
            log_config(config)
        log_results(records, metrics, results_path)
        log_warnings(warnings)
        return run.info.run_id


def log_results(records: list[dict], metrics: dict[str, float], results_path: str) -> None:
    mlflow.log_metrics(metrics)
    table = {col: [_cell(r.get(col)) for r in records] for col in TABLE_COLUMNS}
    mlflow.log_table(data=table, artifact_file="per_question.json")
    mlflow.log_dict(
        [{k: r[k] for k in ("id", "question", "gold", "prediction", "citations", "calls_by_role", "trajectory",
                            "lm_calls", "error", "error_trace")} for r in records],
        "trajectories.json",
    )
    mlflow.log_artifact(results_path)


def log_warnings(warnings: list) -> None:
    """A degenerate run's warnings (eval.scoring.health.RunWarning) on the active run: the
    eir.degenerate tags, `degenerate_warnings` (0 on a healthy run) and per warning
    `degenerate_<code>` of `degenerate_<code>_of`. A resumed run that is healthy now loses old tags."""
    mlflow.log_metric("degenerate_warnings", len(warnings))
    for w in warnings:
        mlflow.log_metrics({f"degenerate_{w.code}": w.count, f"degenerate_{w.code}_of": w.total})
    if warnings:
        mlflow.set_tags({DEGENERATE_TAG: "\n".join(w.text for w in warnings)[:5000],
                         DEGENERATE_CODES_TAG: ",".join(w.code for w in warnings)})
        return
    tags = mlflow.get_run(mlflow.active_run().info.run_id).data.tags
    for tag in (DEGENERATE_TAG, DEGENERATE_CODES_TAG):
        if tag in tags:
            mlflow.delete_tag(tag)


def _cell(value):
    if isinstance(value, list):
        return "; ".join(map(str, value))
    return value
