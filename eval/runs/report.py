"""What a run reports once its questions are done: its scores and warnings logged to its MLflow run
(`score_and_log`), then printed with each further result of its method (Reflexion's first trial),
logged as a run of its own (`report`); a run stopped by Ctrl-C prints what it saved (`interrupted`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from eval.files.results_file import ResultsFile, wall_time
from eval.runs import tracking
from eval.runs.config import RunConfig
from eval.scoring import health
from eval.scoring.run_metrics import format_table, summarize
from programs.registry import METHODS


def score_and_log(config: RunConfig, records: list[dict], results: ResultsFile) -> dict:
    """Score the run's records and log them, the metrics and the run's warnings to the active run."""
    metrics = summarize(records)
    metrics["wall_time_s"] = wall_time(records)
    with results.loggable() as path:  # without the lines a resume skipped
        tracking.log_results(records, metrics, str(path))
    tracking.log_warnings(run_warnings(config, records))
    return metrics


def report(config: RunConfig, run_id: str, records: list[dict], metrics: dict, results_path: Path, uri: str) -> None:
    """Print the run's table and warnings; log and print each of its method's further results (the
    registry's `variants`: every one, whatever its records hold); say what failed and where MLflow is."""
    print()
    print(format_table(metrics, f"{config.label}/{config.dataset}"))
    print(health.render(run_warnings(config, records)), end="")
    for name in METHODS[config.method].variants:
        variant = config.with_label(name)
        print(format_table(log_variant(variant, run_id, name, records, results_path),
                           f"{variant.label}/{config.dataset}"))
        print(health.render(run_warnings(variant, variant_records(records, name))), end="")
    failed = int(metrics["failed_questions"])
    if failed:
        print(f"{failed} question(s) failed; their errors are in {results_path} "
              f"(--resume {run_id} runs them again)", file=sys.stderr)
    print(f"\nMLflow run {run_id} in {uri}. Open the UI with:\n  mlflow ui --backend-store-uri {uri}")


def interrupted(config: RunConfig, finished: list[dict], total: int, results_path: Path, resume: str) -> None:
    """What a run stopped by Ctrl-C saved (the partial table, its warnings) and how to continue it."""
    if finished:
        print(format_table(summarize(finished), f"{config.run_name} (partial: {len(finished)} of {total})"),
              file=sys.stderr)
        print(health.render(run_warnings(config, finished)), end="", file=sys.stderr)
    print(f"\nInterrupted: {len(finished)} of {total} questions are saved in {results_path}.\n"
          f"Continue with:\n  {resume}", file=sys.stderr)


def log_variant(config: RunConfig, parent_id: str, name: str, records: list[dict], results_path: Path) -> dict:
    """A second result from the same trajectories (Reflexion's first trial) as its own MLflow run;
    `config` is labelled as the variant. Its lines carry `parent_id`, the run that ran the questions."""
    variant = variant_records(records, name)
    metrics = summarize(variant)
    metrics["wall_time_s"] = sum(r["seconds"] for r in variant)
    path = results_path.with_name(f"{name}.jsonl")
    path.write_text("".join(json.dumps({**r, "run_id": parent_id}, default=str) + "\n" for r in variant))
    tracking.log_variant(config, parent_id, variant, metrics, str(path), run_warnings(config, variant))
    return metrics


def variant_records(records: list[dict], name: str) -> list[dict]:
    """The variant's record of each question. A question that failed outright has no variant; its
    failed record scores 0 for both."""
    return [r.get("variants", {}).get(name, r) for r in records]


def run_warnings(config: RunConfig, records: list[dict]) -> list[health.RunWarning]:
    """Why the run's scores may say little (eval.scoring.health); none for a healthy run."""
    return health.warnings_for(config.label, records, method=config.method, max_tokens=config.lm.max_tokens)
