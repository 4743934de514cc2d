"""MLflow logging: one run per (method, dataset, LM) with params, metrics and per-question artifacts."""

from __future__ import annotations

import json
import os

import mlflow

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
CONFIG_TAG = "eir.config"
RESULTS_TAG = "eir.results_path"

TABLE_COLUMNS = ["id", "question", "gold", "prediction", "answer_f1", "em", "support_f1", "calls",
                 "prompt_tokens", "completion_tokens", "evidence_titles", "rejected_actions", "error"]


def setup(experiment: str) -> str:
    uri = os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    return uri


def run_name(config: dict) -> str:
    return f"{config['method']} / {config['dataset']} / {config['lm']} / H={config['budget']}"


def log_config(config: dict) -> None:
    """Params named the same for every method, so MLflow's compare view lines runs up."""
    mlflow.log_params({
        "method": config["method"], "dataset": config["dataset"], "n": config["n"], "seed": config["seed"],
        "lm": config["lm"], "temperature": config["temperature"], "max_tokens": config["max_tokens"],
        "H": config["budget"], "data_file": config["data_file"], "threads": config["threads"],
        "adapter": "JSONAdapter", "constrained_decoding": config["constrained"],
    })
    mlflow.set_tags({CONFIG_TAG: json.dumps(config), "method": config["method"], "dataset": config["dataset"],
                     "lm": config["lm"]})


def saved_config(run_id: str) -> dict:
    try:
        run = mlflow.get_run(run_id)
    except mlflow.exceptions.MlflowException:
        raise SystemExit(f"error: --resume {run_id}: no such run in {mlflow.get_tracking_uri()}") from None
    if CONFIG_TAG not in run.data.tags:
        raise SystemExit(f"run {run_id} was not made by eval.run (no {CONFIG_TAG} tag); cannot resume it")
    return json.loads(run.data.tags[CONFIG_TAG])


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
