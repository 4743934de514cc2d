"""Runs started together on a fresh MLflow store (eval/runs/tracking.py: store_lock, setup), and a
failing run's message counting every question that failed (eval/runs/scheduler.py)."""

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import mlflow
import pytest

from eval.runs import tracking
from eval.runs.scheduler import Stop, run_all
from tests.fake_openai import FakeOpenAI, eir_reply
from tests.fixtures.served_runs import write_questions

ROOT = Path(__file__).resolve().parents[3]
BAD_KEY = {"error": "LMAuthError: Incorrect API key provided", "error_type": "LMAuthError"}


# ---------------------------------------------------------------- a fresh store, two runs at once


@pytest.mark.slow  # two eval.run subprocesses, a loopback server
def test_two_runs_started_at_once_on_a_fresh_sqlite_store_both_finish(tmp_path):
    write_questions(tmp_path / "data.jsonl", n=2)  # fresh prompts: DSPy's response cache cannot answer them
    uri = f"sqlite:///{tmp_path}/new.db"  # no such file yet: the first process to open it creates it
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": uri, "OPENAI_API_KEY": "sk-fake",
           "DSPY_CACHEDIR": str(tmp_path / "dspy_cache")}
    with FakeOpenAI(eir_reply) as fake:
        args = [sys.executable, "-m", "eval.run", "--lm", "openai/fake", "--api-base", fake.url,
                "--data", "data.jsonl", "--limit", "2", "--experiment", "together"]
        procs = [subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        errs = [p.communicate(timeout=600)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(e[-3000:] for e in errs)
    client = mlflow.MlflowClient(uri)
    [experiment] = [e for e in client.search_experiments() if e.name == "together"]  # made once
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.status for r in runs) == ["FINISHED", "FINISHED"]
    assert all(r.data.metrics["n"] == 2 and r.data.metrics["em"] == 100.0 for r in runs)


def test_every_spelling_of_a_local_store_takes_one_lock_and_a_server_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = (tmp_path / "mlflow.db").resolve()
    assert tracking.store_path("sqlite:///mlflow.db") == db
    assert tracking.store_path(f"sqlite:///{tmp_path}/./mlflow.db") == db
    assert tracking.store_path("./mlruns") == tracking.store_path(f"file://{tmp_path}/mlruns") == tmp_path / "mlruns"
    for remote in ("http://127.0.0.1:5000", "https://mlflow.example.org", "postgresql://u@host/db", "databricks",
                   "sqlite://", "sqlite:///:memory:"):
        assert tracking.store_path(remote) is None, remote


def test_the_store_lock_lets_one_holder_in_at_a_time(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    order = []

    def second():
        with tracking.store_lock(f"sqlite:///{tmp_path}/../{tmp_path.name}/mlflow.db"):  # the same store
            order.append("second in")

    with tracking.store_lock(uri):
        waiter = threading.Thread(target=second)
        waiter.start()  # flock: a second open file waits, in this process as in another
        time.sleep(0.3)
        order.append("first out")
    waiter.join(timeout=10)
    assert order == ["first out", "second in"]
    with tracking.store_lock("http://127.0.0.1:1"):  # a server: nothing to lock, nothing opened
        pass


def test_stores_used_as_the_harness_does_leave_no_lock_file_in_the_temp_directory(tmp_path, monkeypatch):
    # Issue 44: each store once left an eir-dspy-mlflow-store-<hash>.lock in $TMPDIR for good.
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    stores = tmp_path / "stores"
    stores.mkdir()
    for i in range(3):
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{stores}/mlflow{i}.db")
        for _ in range(2):  # a fresh store, then the same one again (a second run, a resume)
            tracking.setup("probe")
            with mlflow.start_run():
                mlflow.log_metric("em", 1.0)
    assert tempfile.gettempdir() == str(temp)
    assert sorted(os.listdir(temp)) == []
    assert sorted(p.name for p in stores.iterdir() if "lock" in p.name) == []  # nor beside the stores
    mlflow.set_experiment("Default")  # leave this process as a later test expects it


def test_the_store_lock_stays_exclusive_while_its_file_comes_and_goes(tmp_path):
    # Each holder removes the lock file as it leaves; one that waited on the removed file opens it anew.
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    inside, most, errors = [0], [0], []
    guard = threading.Lock()

    def holder():
        try:
            for _ in range(25):
                with tracking.store_lock(uri):
                    with guard:
                        inside[0] += 1
                        most[0] = max(most[0], inside[0])
                    time.sleep(0.001)
                    with guard:
                        inside[0] -= 1
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=holder) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == [] and most[0] == 1
    assert list(tmp_path.iterdir()) == []  # no lock file left, and the store was never touched


def test_an_experiment_made_meanwhile_by_another_run_is_read_again_and_made_active(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    tracking.use_tracking_uri()
    other = mlflow.MlflowClient().create_experiment("shared")  # the other process's
    real = mlflow.MlflowClient.get_experiment_by_name
    looked = []

    def not_there_yet(self, name):  # our look-up ran before the other process's create
        looked.append(name)
        return None if len(looked) == 1 else real(self, name)

    monkeypatch.setattr(mlflow.MlflowClient, "get_experiment_by_name", not_there_yet)
    assert tracking.setup("shared") == uri
    assert looked == ["shared", "shared"]  # the create met RESOURCE_ALREADY_EXISTS, then it was read again
    with mlflow.start_run() as run:
        pass
    assert run.info.experiment_id == other  # MLflow's own set_experiment would leave Default (0) active here
    mlflow.set_experiment("Default")  # leave this process as a later test expects it


# ---------------------------------------------------------------- a failing run's message


def test_the_watch_keeps_counting_once_the_run_is_failing():
    stop = Stop(total=12)
    for _ in range(3):
        stop.add(BAD_KEY)
    assert stop.failing == BAD_KEY["error"] and stop.failed == 3 and stop.failing_after == 3
    for _ in range(3):  # the questions still running when it was found failing
        assert stop.add(BAD_KEY) == BAD_KEY["error"]
    assert (stop.failed, stop.same, stop.ran, stop.succeeded) == (6, 6, 6, 0)
    assert stop.message == ("the 6 questions run failed with the same error and none succeeded: "
                            "LMAuthError: Incorrect API key provided")


def test_the_message_says_what_the_running_questions_did_after():
    stop = Stop(total=12)
    for record in [BAD_KEY] * 4 + [{"error": None}, {"error": "LMServerError: 502", "error_type": "LMServerError"}]:
        stop.add(record)
    assert stop.message == ("the first 3 questions to finish failed with the same error and none succeeded "
                            "(5 of the 6 run failed, 4 with that error, 1 succeeded): "
                            "LMAuthError: Incorrect API key provided")
    one = Stop(total=1)
    one.add(BAD_KEY)
    assert one.message == "the 1 question run failed with the same error and none succeeded: " + BAD_KEY["error"]
    assert Stop().message is None
    engine = Stop(failing="EngineDied: exit 9", engine_failed=True, errors=["EngineDied: exit 9"])
    assert engine.message == "the embedded engine stopped serving: EngineDied: exit 9"


def test_a_failing_run_with_six_running_counts_all_six():
    # Six questions, all running at once; the run is found failing at the third failure, and the
    # three still running fail after it (before, the message said 3).
    started = threading.Barrier(6, timeout=30)

    def run_one(i):
        started.wait()
        time.sleep(0.05 * i)  # they finish one after another
        return {"id": i, **BAD_KEY}

    kept = []
    stop = run_all(range(6), run_one, kept.append, threads=6, on_abort=lambda: None, total=6)
    assert len(kept) == 6
    assert (stop.failed, stop.ran, stop.failing_after) == (6, 6, 3)
    assert stop.message == ("the 6 questions run failed with the same error and none succeeded: "
                            "LMAuthError: Incorrect API key provided")
