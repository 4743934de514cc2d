"""A run's questions: those not yet done (or that failed with an error) on the thread pool
(eval/runs/scheduler.py), each record written to the results file as it finishes. Why a small thread pool
over `run_question`, not dspy.Evaluate: docs/experiments.md, "Runs and MLflow"."""

from __future__ import annotations

import time
from collections.abc import Callable

from tqdm import tqdm

from eir_dspy.lm.embedded_server import stop_shared_server
from eval.files.results_file import ResultsFile
from eval.runs import report, traces
from eval.runs.errors import RunFailed, RunInterrupted
from eval.runs.execute import run_question
from eval.runs.prepare import Prepared
from eval.runs.resume import resume_command
from eval.runs.scheduler import run_all


def run_questions(prepared: Prepared, run_id: str, results: ResultsFile, *, trace: bool = False,
                  kill_now: Callable[[], None] = lambda: None) -> list[dict]:
    """Run every question not yet done, keeping each record as it finishes; every record of the run,
    in question order. RunInterrupted on Ctrl-C (what was saved and how to continue printed),
    RunFailed when the run is failing; either way the caller ends the MLflow run. `trace`: each question
    in its own scored MLflow trace (eval.runs.traces); `kill_now`: ends the run KILLED at once, from the
    signal handler of a second Ctrl-C, before the process exits."""
    config, questions, program, lm, corpus = (prepared.config, prepared.questions, prepared.program, prepared.lm,
                                              prepared.corpus)
    resume = resume_command(run_id, prepared.experiment)
    done = dict(prepared.done)
    todo = [q for q in questions if q.id not in done or done[q.id].get("error") is not None]
    part_started = time.time()

    def run_one(q):
        record = run_question(program, lm, q, corpus)
        record.update(part_started_at=part_started, finished_at=time.time(), run_id=run_id)
        if config.served_by:  # on the question's record and on each further result from the same calls
            for each in (record, *(record.get("variants") or {}).values()):
                each["served_by"] = config.served_by.label
        return record

    if trace:
        run_one = traces.traced(run_one, run_id)
    with tqdm(total=len(questions), initial=len(questions) - len(todo), desc=config.run_name) as bar:
        def keep(record: dict) -> None:
            results.append(record)  # written now: a killed run resumes from here
            done[record["id"]] = record
            bar.update(1)

        stop = run_all(todo, run_one, keep, config.threads, total=len(todo),
                       on_abort=lambda: (kill_now(), stop_shared_server()))
    finished = [done[q.id] for q in questions if q.id in done]
    if stop.interrupted:
        try:  # whatever printing the partial table does, the run ends KILLED (`ending`)
            report.interrupted(config, finished, len(questions), results.path, resume)
        finally:
            raise RunInterrupted
    message = stop.message  # counted now: questions still running when the run was found failing included
    if message is None and len(finished) == len(questions) and all(r.get("error") is not None for r in finished):
        message = f"every question failed; the first with: {finished[0]['error']}"
    if message:
        raise RunFailed(f"run {run_id} failed: {message}\nFix the cause, then run it again with: {resume}", message)
    return [done[q.id] for q in questions]  # question order, whatever order they finished in
