"""`python -m eval.genai_eval RUN_ID`: score a finished eval.run run's stored outputs with
`mlflow.genai.evaluate`, so MLflow's GenAI evaluation view shows answer_f1, answer_em and support_f1
per question. The scorers are code scorers around eval.scoring.metrics.score_question: no model is called.

The evaluation is a new analysis run beside the source run: docs/experiments.md, "Traces and GenAI evaluation"."""

from __future__ import annotations

import argparse
import sys

import mlflow
from mlflow.genai.scorers import Scorer, scorer

from eval.analyze.report import start_analysis_run
from eval.analyze.sources import questions_of
from eval.data.schema import Question
from eval.runs import tracking
from eval.runs.errors import RunError
from eval.runs.logged_runs import LoggedRun, SelectionError, select_runs
from eval.runs.traces import FEEDBACK, QUESTION_TAG, expectations
from eval.scoring.metrics import score_question

ANALYSIS = "genai_eval"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m eval.genai_eval", description=__doc__.splitlines()[0])
    p.add_argument("run_id", metavar="RUN_ID", help="a finished eval.run run (or its Reflexion first-trial run)")
    p.add_argument("--data", help="the data file or directory of its questions (default: the file the run "
                                  "recorded, else $EIR_DATA_DIR)")
    return p.parse_args(argv)


def scorers(questions: dict[str, Question]) -> list[Scorer]:
    """One code scorer per score, each scoring a row's stored answer and citations by the benchmark's
    official rules (eval.scoring.metrics), against the question the row names."""

    def make(name: str, key: str) -> Scorer:
        def score(inputs: dict, outputs: dict) -> float:
            q = questions[inputs["question_id"]]
            return float(score_question(q, outputs["answer"], outputs["citations"])[key] or 0.0)

        return scorer(score, name=name, description=f"eval.scoring.metrics.score_question: {key}, 0..1")

    return [make(name, key) for name, key in FEEDBACK.items()]


def evaluation_data(run: LoggedRun, questions: dict[str, Question]) -> list[dict]:
    """One row per stored record: the question (inputs), the stored answer and citations (outputs)
    and the gold answer and support (expectations)."""
    rows = []
    for r in run.question_records:
        q = questions[r.id]
        rows.append({"inputs": {"question_id": q.id, "question": q.question},
                     "outputs": {"answer": r.prediction or "", "citations": [list(c) for c in r.citations or ()]},
                     "expectations": expectations(q),
                     "tags": {QUESTION_TAG: q.id, tracking.SOURCE_RUNS_TAG: run.run_id}})
    return rows


def evaluate(run: LoggedRun, data: str | None = None):
    """mlflow.genai.evaluate over `run`'s records, in a new analysis run; returns its EvaluationResult."""
    questions = questions_of(run, data)
    start_analysis_run(ANALYSIS, [run])
    try:
        result = mlflow.genai.evaluate(data=evaluation_data(run, questions), scorers=scorers(questions))
    except BaseException:
        tracking.end_run_if_active("FAILED")
        raise
    tracking.end_run_if_active("FINISHED")
    return result


def main(argv: list[str] | None = None):
    args = parse_args(argv)
    uri = tracking.use_tracking_uri()
    try:
        (run,), _ = select_runs(run_ids=[args.run_id])
        result = evaluate(run, args.data)
    except (SelectionError, RunError) as exc:
        raise SystemExit(f"error: {exc}") from None
    means = ", ".join(f"{k} {v:.3f}" for k, v in sorted(result.metrics.items()))
    print(f"GenAI evaluation of run {run.run_id} ({run.name}): run {result.run_id} in {uri}\n  {means}\n"
          f"Open the UI with:\n  mlflow ui --backend-store-uri {uri}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
