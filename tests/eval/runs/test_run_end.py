"""A run's MLflow status is set in one place as it ends (eval.runs.lifecycle.ending): FINISHED, KILLED on
Ctrl-C, FAILED on a crash, and FAILED with the reason in eir.failure when the run failed."""

from contextlib import nullcontext

import mlflow
import pytest

import eval.run as run_module
from eval.runs import tracking
from eval.runs.errors import RunFailed, RunInterrupted
from eval.runs.lifecycle import ending
from tests.fixtures.scripted_runs import ARGS, fill_workdir, reply  # noqa: F401 (fill_workdir: the workdir fixture's)
from tests.scripted import use_lm


@pytest.mark.parametrize("raised, status", [
    (None, "FINISHED"),
    (KeyboardInterrupt(), "KILLED"),
    (RunInterrupted(), "KILLED"),
    (RuntimeError("boom"), "FAILED"),
    (RunFailed("run r failed: LMAuthError: bad key\nFix the cause, then run it again with: ...",
               "LMAuthError: bad key"), "FAILED"),
])
def test_the_block_ends_the_run_with_the_status_of_how_it_ended(workdir, raised, status):
    tracking.setup("test")
    run_id = mlflow.start_run().info.run_id
    with pytest.raises(type(raised)) if raised else nullcontext():
        with ending(run_id):
            if raised:
                raise raised
    assert mlflow.active_run() is None
    run = mlflow.get_run(run_id)
    assert run.info.status == status
    reason = run.data.tags.get(tracking.FAILURE_TAG)
    assert reason == (raised.reason if isinstance(raised, RunFailed) else None)


def test_kill_now_ends_the_run_killed_at_once(workdir):
    tracking.setup("test")
    run_id = mlflow.start_run().info.run_id
    with pytest.raises(KeyboardInterrupt):
        with ending(run_id) as kill_now:
            kill_now()  # what a second Ctrl-C does, from its signal handler, before the process exits
            assert mlflow.get_run(run_id).info.status == "KILLED"
            raise KeyboardInterrupt
    assert mlflow.get_run(run_id).info.status == "KILLED"


def test_a_crash_while_logging_the_results_ends_the_run_failed_with_no_reason(workdir, monkeypatch):
    use_lm(monkeypatch, reply)

    def crash(records, metrics, path):
        raise RuntimeError("disk full")

    monkeypatch.setattr(tracking, "log_results", crash)
    with pytest.raises(RuntimeError, match="disk full"):
        run_module.main(ARGS)
    (run,) = mlflow.search_runs(experiment_names=["test"], output_format="list")
    assert run.info.status == "FAILED" and tracking.FAILURE_TAG not in run.data.tags
    assert mlflow.active_run() is None


def test_a_ctrl_c_whose_partial_table_fails_to_print_still_ends_killed_with_exit_130(workdir, monkeypatch):
    import eval.runs.report as report

    def broken(*args, **kwargs):
        raise OSError("stderr closed")

    monkeypatch.setattr(report, "interrupted", broken)
    use_lm(monkeypatch, lambda prompt: reply(prompt, interrupt_on="Fort Ban"))
    with pytest.raises(SystemExit) as stopped:
        run_module.main(ARGS)
    assert stopped.value.code == 130
    [run] = mlflow.search_runs(experiment_names=["test"], output_format="list")
    assert run.info.status == "KILLED"
