"""The compile's MLflow run: tagged eir.kind=compile, so comparisons never read it as a method run."""

from __future__ import annotations

import mlflow

from eir_dspy.accounting import Ledger
from eval.runs import tracking


def start(run_name: str, params: dict) -> str:
    run = mlflow.start_run(run_name=run_name, tags={tracking.KIND_TAG: tracking.COMPILE_KIND,
                                                    "compiled": params["name"], "method": params["method"]})
    mlflow.log_params(params)
    return run.info.run_id


def log_scores(phase: str, split: str, metrics: dict[str, float], records: list[dict]) -> None:
    """`<phase>_<split>_<metric>` for every summary metric; the records as an artifact."""
    mlflow.log_metrics({f"{phase}_{split}_{k}": v for k, v in metrics.items() if v == v})  # NaN: undefined, left out
    keep = ("id", "prediction", "gold", "answer_f1", "support_f1", "calls", "calls_by_role", "prompt_tokens",
            "completion_tokens", "turns", "rejections_by_cause", "submitted_before_budget", "error")
    mlflow.log_dict([{k: r.get(k) for k in keep} for r in records], f"scores/{phase}_{split}.json")


def log_ledger(prefix: str, ledger: Ledger, seconds: float) -> dict:
    """Calls (in all and by role), tokens, cost and time of one phase; returns what was logged."""
    totals = ledger.totals()
    metrics = {f"{prefix}_calls": totals["calls"], f"{prefix}_prompt_tokens": totals["prompt_tokens"],
               f"{prefix}_completion_tokens": totals["completion_tokens"], f"{prefix}_lm_seconds": totals["lm_seconds"],
               f"{prefix}_wall_time_s": seconds, f"{prefix}_cache_hits": totals["cache_hits"],
               **{f"{prefix}_calls_{role}": n for role, n in ledger.by_role().items()}}
    if totals["cost_usd"] is not None:
        metrics[f"{prefix}_cost_usd"] = totals["cost_usd"]
    mlflow.log_metrics(metrics)
    mlflow.log_dict(ledger.to_list(), f"{prefix}_lm_calls.json")
    return metrics


def log_program(path: str, sha256: str) -> None:
    mlflow.log_params({"program_file": path, "program_sha256": sha256})
    mlflow.log_artifact(path, artifact_path="program")


def log_demos(program) -> None:
    mlflow.log_metrics({f"demos_{name.replace('.', '_')}": len(p.demos) for name, p in program.named_predictors()})
    mlflow.log_dict({name: p.signature.instructions for name, p in program.named_predictors()}, "instructions.json")


def log_info(info: dict) -> None:
    """What the optimizer settled on: GEPA's budget in program runs (a param), the demonstration
    questions (their ids as an artifact, and as a param while they fit one), the counts (metrics)."""
    if "gepa_max_metric_calls" in info:
        mlflow.log_param("gepa_metric_calls_budget", info["gepa_max_metric_calls"])
    if "demo_questions" in info:
        ids = info["demo_questions"]
        mlflow.log_dict(ids, "demo_questions.json")
        if len(joined := ",".join(ids)) <= 500:  # MLflow's cap on a param value
            mlflow.log_param("demo_question_ids", joined)
    mlflow.log_metrics({k: v for k, v in info.items() if k not in ("gepa_max_metric_calls", "demo_questions")})
