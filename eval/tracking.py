"""MLflow logging: one run per (method, dataset, LM) with params, metrics and per-question artifacts."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import mlflow

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
CONFIG_TAG = "eir.config"
RESULTS_TAG = "eir.results_path"
VARIANT_OF_TAG = "eir.variant_of"
KIND_TAG = "eir.kind"  # set on comparison and analysis runs, so they are never read back as method runs
FAILURE_TAG = "eir.failure"  # why a run ended FAILED (every question failed with this error)
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
    uri = use_tracking_uri()
    mlflow.set_experiment(experiment)
    return uri


def use_tracking_uri() -> str:
    """$MLFLOW_TRACKING_URI, else the project's sqlite store."""
    uri = os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
    mlflow.set_tracking_uri(uri)
    return uri


def method_label(config: dict) -> str:
    """The method a run's numbers belong to (e.g. reflexion_oracle for --method reflexion)."""
    return config.get("label") or config["method"]


DEFAULT_BUDGET = 6  # the paper's H: a variant names its H only when it differs
_OPTION_NAMES = {"verifier_temperature": "T"}  # short names in variants; others keep their own


def variant(config: dict) -> str:
    """A run's condition as one name: the method label (with setting and decoding), the ablation,
    H where it is not the paper's 6, and the method's options; e.g. `eir`, `eir H=8`,
    `eir no-list-feedback`, `ssr votes=3 T=0.7`, `eir compiled=gepa` (a program file from eval.compile).
    Comparisons pair runs by it. Sampling settings (temperature, max tokens) are params, not part of
    the name: vary them in separate experiments."""
    options = dict(config.get("options", {}))
    parts = [method_label(config)]
    ablation = options.pop("ablation", None)
    if ablation and ablation != "none":
        parts.append(ablation)
    if config.get("program"):
        parts.append(f"compiled={config['program']['name']}")
    if int(config["budget"]) != DEFAULT_BUDGET:
        parts.append(f"H={config['budget']}")
    parts += [f"{_OPTION_NAMES.get(k, k)}={v:g}" if isinstance(v, float) else f"{_OPTION_NAMES.get(k, k)}={v}"
              for k, v in sorted(options.items(), key=lambda kv: (kv[0] != "votes", kv[0]))]
    return " ".join(parts)


def without_budget(config: dict) -> str:
    """The variant with H left out: the runs of one budget sweep share it."""
    return variant({**config, "budget": DEFAULT_BUDGET})


def run_name(config: dict) -> str:
    name = f"{variant(config)} / {config['dataset']} / {config['lm']}"
    return name if int(config["budget"]) != DEFAULT_BUDGET else f"{name} / H={config['budget']}"


def setting_label(name: str, config: dict) -> str:
    """Corpus-setting runs carry the setting in their method name, and runs decoded other than the
    LM's default carry the decoding, so comparisons never mix conditions."""
    label = f"{name}_corpus" if config.get("setting") == "corpus" else name
    decoding = config.get("decoding")
    if decoding and decoding != config.get("default_decoding", decoding):
        label += f" decoding={decoding}"
    return label


def acceptance(method: str) -> str | None:
    """The method's parse rule (eir_dspy/acceptance.py): which outputs it accepts is a condition of the run."""
    from programs import METHODS

    return getattr(METHODS.get(method), "acceptance", None)


def log_config(config: dict) -> None:
    """Params named the same for every method, so MLflow's compare view lines runs up."""
    mlflow.log_params({
        "method": method_label(config), "dataset": config["dataset"], "n": config["n"], "seed": config["seed"],
        "variant": variant(config), "lm": config["lm"], "temperature": config["temperature"], "max_tokens": config["max_tokens"],
        "request_timeout": config.get("request_timeout"),
        "H": config["budget"], "data_file": config["data_file"], "threads": config["threads"],
        "engine": config.get("engine") if str(config.get("lm", "")).startswith("local/") else None,
        "server_args": config.get("server_args") or None,
        "adapter": "JSONAdapter", "decoding": config.get("decoding"),
        "endpoints": len(config["api_base"]) if isinstance(config.get("api_base"), list) else int(bool(config.get("api_base"))),
        "price_in": config.get("price_in"), "price_out": config.get("price_out"), **config.get("options", {}),
        "setting": config.get("setting", "pool"), "index": config.get("index"),
        "corpus": config.get("corpus"), "corpus_paragraphs": config.get("corpus_paragraphs"),
        "acceptance": acceptance(config["method"]),
        **program_params(config),
    })
    mlflow.set_tags({CONFIG_TAG: json.dumps(config), "method": method_label(config), "variant": variant(config),
                     "dataset": config["dataset"], "lm": config["lm"]})


def program_params(config: dict) -> dict:
    """A compiled program's file and sha256 (eval.run --program); nothing for a zero-shot run."""
    program = config.get("program")
    return {"program_file": program["path"], "program_sha256": program["sha256"]} if program else {}


def resumable_run(run_id: str) -> str:
    """The run `--resume run_id` continues: the run itself, or, for a variant run (Reflexion's
    first trial), the run it was derived from; finishing that one re-logs the variant too."""
    try:
        run = mlflow.get_run(run_id)
    except mlflow.exceptions.MlflowException:
        raise SystemExit(f"error: --resume {run_id}: no such run in {mlflow.get_tracking_uri()}") from None
    parent = run.data.tags.get(VARIANT_OF_TAG)
    if parent:
        print(f"run {run_id} is the {run.data.tags.get('method', 'variant')} result of run {parent}; resuming {parent}, "
              "which logs both", file=sys.stderr)
        return parent
    if CONFIG_TAG not in run.data.tags or RESULTS_TAG not in run.data.tags:
        raise SystemExit(f"error: run {run_id} was not made by eval.run (no {CONFIG_TAG} / {RESULTS_TAG} tags); "
                         "cannot resume it")
    return run_id


def saved_config(run_id: str) -> dict:
    return json.loads(mlflow.get_run(run_id).data.tags[CONFIG_TAG])


def start_run(config: dict, resume_id: str | None, out_root: str, tags: dict | None = None) -> str:
    """Start (or reopen, to resume) a method run; it stays active until `end_run_if_active`.
    `tags` are set as the run is created, so a run killed at once is still found by them.
    System metrics (CPU, memory, disk, network: `system/*`) are sampled every 10 s (MLflow's default;
    $MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL sets another) by a thread that `mlflow.end_run` stops
    and joins, and that exits by itself once the run is no longer RUNNING (a second Ctrl-C)."""
    if resume_id:
        mlflow.start_run(run_id=resume_id, log_system_metrics=True)
        if FAILURE_TAG in mlflow.get_run(resume_id).data.tags:
            mlflow.delete_tag(FAILURE_TAG)  # a new attempt; it is tagged again if it fails again
        return resume_id
    run = mlflow.start_run(run_name=run_name(config), tags=tags, log_system_metrics=True)
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


def log_variant(config: dict, parent_id: str, name: str, records: list[dict], metrics: dict[str, float],
                results_path: str) -> str:
    """Log (or, after a resume, re-log) a variant of `parent_id` as its own run, found again by tag."""
    found = mlflow.search_runs(filter_string=f"tags.`{VARIANT_OF_TAG}` = '{parent_id}' and tags.method = '{name}'",
                               output_format="list")
    run_id = found[0].info.run_id if found else None
    variant = {**config, "label": name}
    # The link tags are set as the run is created, so a run killed right after is still found (and
    # resumable through its parent).
    tags = None if run_id else {VARIANT_OF_TAG: parent_id, "method": name}
    with mlflow.start_run(run_id=run_id, run_name=None if run_id else run_name(variant), tags=tags) as run:
        if run_id is None:
            log_config(variant)
        log_results(records, metrics, results_path)
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


def _cell(value):
    if isinstance(value, list):
        return "; ".join(map(str, value))
    return value
