"""One whole run: `run(config)` starts it (or resumes a killed one), runs its questions, scores them and
logs it all to MLflow. `python -m eval.run` calls it with the config its flags make; eval.grid calls
it once per cell, and a notebook with a RunConfig of its own.

The steps: `prepare` (eval/runs/prepare.py: config, resume state and lock, data, corpus, LM, program),
`start` (the MLflow run), the questions (eval/runs/questions.py), `report` (eval/runs/report.py); the
MLflow run's end status is set in one place, `ending`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from eval.files.results_file import ResultsFile
from eval.runs import provenance, traces, tracking
from eval.runs.config import RunConfig
from eval.runs.errors import RunFailed
from eval.runs.flags import DEFAULT_EXPERIMENT, DEFAULT_OUT
from eval.runs.prepare import Prepared, prepare
from eval.runs.questions import run_questions
from eval.runs.report import report, score_and_log
from eval.runs.resume import hold, results_of


def run(config: RunConfig | None, *, experiment: str = DEFAULT_EXPERIMENT, out: str = DEFAULT_OUT,
        resume: str | None = None, trace: bool = False, tags: dict | None = None,
        skip_bad_lines: bool = False) -> dict:
    """Run `config` (or, with `resume`, continue that run with its own config in its own experiment):
    every question, each record saved as it finishes, then scored and logged to MLflow in `experiment`.
    `out`: where the per-question results go (and the offline corpus index is looked for); `trace`: one
    scored MLflow trace per question; `tags`: set on the run as it is created (eval.grid finds its cells
    by them); `skip_bad_lines`: on resume, leave out the results file's lines that are not the run's
    records instead of stopping. The process holds the run's lock while it runs it.
    Returns {"run_id", "metrics", "records"}. A RunError on a bad input, when another process is
    running the run, and with the cause when the run failed; RunInterrupted on Ctrl-C (its
    questions saved, its run KILLED)."""
    with ExitStack() as held:  # the run's lock, taken by `prepare` (a resume) or `start` (a new run)
        prepared = prepare(config, held, experiment=experiment, out=out, resume=resume, trace=trace,
                           skip_bad_lines=skip_bad_lines)
        run_id, results = start(prepared, held, out, tags)
        with traces.flushed(trace), ending(run_id) as kill_now:
            provenance.log_provenance(prepared.program, prepared.questions, prepared.config)
            records = run_questions(prepared, run_id, results, trace=trace, kill_now=kill_now)
            metrics = score_and_log(prepared.config, records, results)
        report(prepared.config, run_id, records, metrics, results.path, prepared.uri)
        return {"run_id": run_id, "metrics": metrics, "records": records}


def start(prepared: Prepared, held: ExitStack, out: str, tags: dict | None) -> tuple[str, ResultsFile]:
    """Start the run's MLflow run (a resumed run's own, reopened) and its results file; a new run's lock
    is entered on `held` (a resumed run's was taken before it was reopened)."""
    run_id = tracking.start_run(prepared.config, prepared.resume_id, out, tags)  # eval.grid finds its cells by these tags
    if prepared.resumed:
        return run_id, prepared.resumed.results
    results = results_of(run_id)
    hold(held, results, run_id)
    return run_id, results


@contextmanager
def ending(run_id: str) -> Iterator[Callable[[], None]]:
    """The one place a run's MLflow status is set as it ends: FINISHED when the block ends, KILLED on
    Ctrl-C (KeyboardInterrupt, RunInterrupted), FAILED on any other exception, with the reason in the
    eir.failure tag when the run failed (RunFailed). Yields `kill_now`, which ends it KILLED at once
    from the signal handler of a second Ctrl-C (the process then exits, and this block never ends)."""
    try:
        yield lambda: tracking.end_run_if_active("KILLED", run_id)
    except KeyboardInterrupt:
        tracking.end_run_if_active("KILLED")
        raise
    except RunFailed as failed:
        tracking.mark_failed(failed.reason)
        raise
    except BaseException:
        tracking.end_run_if_active("FAILED")
        raise
    tracking.end_run_if_active("FINISHED")
