"""MLflow logging: one run per (method, dataset, LM) with params, metrics and per-question artifacts."""

from __future__ import annotations

import json
import os

import mlflow

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
CONFIG_TAG = "eir.config"
RESULTS_TAG = "eir.results_path"
VARIANT_OF_TAG = "eir.variant_of"
KIND_TAG = "eir.kind"  # set on comparison runs, so they are never read back as method runs
COMPARISON_KIND = "comparison"

TABLE_COLUMNS = ["id", "question", "gold", "prediction", "answer_f1", "em", "support_f1", "calls",
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


def run_name(config: dict) -> str:
    return f"{method_label(config)} / {config['dataset']} / {config['lm']} / H={config['budget']}"


def setting_label(name: str, config: dict) -> str:
    """Corpus-setting runs carry the setting in their method name, so comparisons never mix the two."""
    return f"{name}_corpus" if config.get("setting") == "corpus" else name


def log_config(config: dict) -> None:
    """Params named the same for every method, so MLflow's compare view lines runs up."""
    mlflow.log_params({
        "method": method_label(config), "dataset": config["dataset"], "n": config["n"], "seed": config["seed"],
        "lm": config["lm"], "temperature": config["temperature"], "max_tokens": config["max_tokens"],
        "H": config["budget"], "data_file": config["data_file"], "threads": config["threads"],
        "adapter": "JSONAdapter", "constrained_decoding": config["constrained"], **config.get("options", {}),
        "setting": config.get("setting", "pool"), "index": config.get("index"),
    })
    mlflow.set_tags({CONFIG_TAG: json.dumps(config), "method": method_label(config), "dataset": config["dataset"],
                     "lm": config["lm"]})


def saved_config(run_id: str) -> dict:
    try:
        run = mlflow.get_run(run_id)
    except mlflow.exceptions.MlflowException:
        raise SystemExit(f"error: --resume {run_id}: no such run in {mlflow.get_tracking_uri()}") from None
    if CONFIG_TAG not in run.data.tags:
        raise SystemExit(f"run {run_id} was not made by eval.run (no {CONFIG_TAG} tag); cannot resume it")
    return json.loads(run.data.tags[CONFIG_TAG])


def log_variant(config: dict, parent_id: str, name: str, records: list[dict], metrics: dict[str, float],
                results_path: str) -> str:
    """Log (or, after a resume, re-log) a variant of `parent_id` as its own run, found again by tag."""
    found = mlflow.search_runs(filter_string=f"tags.`{VARIANT_OF_TAG}` = '{parent_id}' and tags.method = '{name}'",
                               output_format="list")
    run_id = found[0].info.run_id if found else None
    variant = {**config, "label": name}
    with mlflow.start_run(run_id=run_id, run_name=None if run_id else run_name(variant)) as run:
        if run_id is None:
            log_config(variant)
            mlflow.set_tag(VARIANT_OF_TAG, parent_id)
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
