"""How a run ends when it does not simply finish: Ctrl-C (once, twice), a provider error on every
question, a request timeout, resuming (wall time, Reflexion's pair of runs). The model is a fake
OpenAI-compatible server on loopback, reached through DSPy and LiteLLM as an API model would be."""

import json
import signal
import time

import mlflow
import pytest

import eval.run as run_module
from eval.files.results_file import wall_time
from eval.runs import tracking
from eval.runs.logged_runs import select_runs
from eval.runs.scheduler import Stop
from tests.fake_openai import FakeOpenAI, eir_reply
from tests.fixtures.served_runs import (
    N,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    records_in,
    start_run,
    wait_for_records,
    write_questions,
)
from tests.scripted import use_lm


def fake_args(fake: FakeOpenAI, *extra: str) -> list[str]:
    return ["--lm", "openai/fake", "--api-base", fake.url, "--data", "data.jsonl", "--limit", str(N),
            "--experiment", "test", *extra]


@pytest.mark.slow  # eval.run in a subprocess, a loopback server
def test_first_ctrl_c_finishes_running_questions_keeps_them_and_resume_completes(workdir):
    with FakeOpenAI(eir_reply, delay=0.25) as fake:
        proc = start_run(workdir, fake_args(fake, "--threads", "2"))
        path = wait_for_records(workdir, 3, proc)
        requests_at_sigint = len(fake.requests)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130
        before = records_in(path)
        ids = [r["id"] for r in before]
        assert len(ids) == len(set(ids)) and 3 <= len(ids) < N
        # Only the (at most 2) questions already running went on, 3 calls each; nothing queued ran.
        assert len(fake.requests) - requests_at_sigint <= 2 * 3
        assert len(fake.requests) == 3 * len(ids)  # every call made belongs to a saved question
        run_id = path.parent.name
        assert mlflow.get_run(run_id).info.status == "KILLED"
        assert f"python -m eval.run --resume {run_id} --experiment test" in err
        assert f"{len(ids)} of {N} questions are saved" in err

        out = run_module.main(["--resume", run_id, "--experiment", "test"])
        after = records_in(path)
        assert sorted(r["id"] for r in after) == sorted(f"q{i}" for i in range(N))  # each exactly once
        assert len(fake.requests) == 3 * N  # no question ran twice
        assert out["metrics"]["n"] == N and out["metrics"]["em"] == 100.0
        assert mlflow.get_run(run_id).info.status == "FINISHED"
    print(f"SIGINT: {len(before)} records saved before resume, {len(after)} after")


@pytest.mark.slow  # eval.run in a subprocess, a loopback server
def test_second_ctrl_c_exits_at_once_and_keeps_what_finished(workdir):
    with FakeOpenAI(eir_reply, delay=1.0) as fake:
        proc = start_run(workdir, fake_args(fake))
        path = wait_for_records(workdir, 1, proc)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        t0 = time.time()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        quit_after = time.time() - t0
        assert proc.returncode == 130 and "Second Ctrl-C" in err
        assert quit_after < 2.0  # it did not wait for the running question (3 calls of 1 s)
        saved = records_in(path)
        assert len(saved) >= 1 and all(r["error"] is None for r in saved)
        assert mlflow.get_run(path.parent.name).info.status == "KILLED"


@pytest.mark.slow  # a loopback server
def test_a_run_whose_every_question_fails_alike_stops_early_and_ends_failed(workdir):
    with FakeOpenAI(eir_reply, fail=(401, "Incorrect API key provided")) as fake:
        with pytest.raises(SystemExit) as failed:
            run_module.main(fake_args(fake))
        asked = len(fake.requests)
        failed_id = mlflow.search_runs(experiment_names=["test"], output_format="list")[0].info.run_id
        # The key is fixed: resuming runs the failed questions again, and the rest.
        fake.fail = None
        resumed = run_module.main(["--resume", failed_id, "--experiment", "test"])
        assert resumed["metrics"]["failed_questions"] == 0 and resumed["metrics"]["em"] == 100.0
        assert len(fake.requests) == asked + 3 * N
        assert tracking.FAILURE_TAG not in mlflow.get_run(failed_id).data.tags
    message = str(failed.value.code)
    assert message.startswith("error: run ") and "LMAuthError" in message and "Incorrect API key" in message
    assert "--resume" in message
    assert asked == 3  # three questions, one call each (an auth error is not retried), then it stopped
    assert "api_key" not in json.dumps(mlflow.get_run(failed_id).data.params).lower()
    assert "sk-fake" not in json.dumps(mlflow.get_run(failed_id).data.tags)


@pytest.mark.slow  # a loopback server
def test_a_failed_run_is_skipped_by_comparisons_with_its_reason(workdir):
    with FakeOpenAI(eir_reply, fail=(404, "The model `fake` does not exist")) as fake:
        with pytest.raises(SystemExit):
            run_module.main(fake_args(fake))
    run = mlflow.search_runs(experiment_names=["test"], output_format="list")[0]
    assert run.info.status == "FAILED" and "does not exist" in run.data.tags[tracking.FAILURE_TAG]
    with pytest.raises(ValueError, match="no finished eval.run runs"):
        select_runs("test")  # a comparison never uses it ...
    with FakeOpenAI(eir_reply) as fake:
        run_module.main(fake_args(fake, "--limit", "2"))
    runs, notes = select_runs("test")  # ... and says why it left it out
    assert len(runs) == 1 and any("status FAILED" in n and "does not exist" in n for n in notes)


def test_a_run_is_failing_only_on_the_same_error_and_no_success():
    watch = Stop(total=10)
    bad_key = {"error": "LMAuthError: bad key", "error_type": "LMAuthError"}
    assert watch.add(bad_key) is None
    assert watch.add(bad_key) is None
    assert watch.add(bad_key) == "LMAuthError: bad key"
    mixed = Stop(total=10)
    for e in ["LMAuthError: x", "LMServerError: y", "LMAuthError: x"]:
        assert mixed.add({"error": e, "error_type": e.split(":")[0]}) is None
    lucky = Stop(total=10)
    lucky.add({"error": None})
    assert all(lucky.add({"error": "LMAuthError: x", "error_type": "LMAuthError"}) is None for _ in range(5))
    small = Stop(total=1)
    assert small.add({"error": "LMUnsupportedModelError: no such model", "error_type": "LMUnsupportedModelError"}) is not None


@pytest.mark.slow  # a loopback server that hangs for seconds
def test_a_request_that_times_out_is_retried_not_counted_twice(workdir):
    with FakeOpenAI(eir_reply, hang_first=1, hang_seconds=4) as fake:
        out = run_module.main(fake_args(fake, "--limit", "1", "--request-timeout", "1"))
        assert len(fake.requests) == 4  # the first request timed out and was sent again
    record = out["records"][0]
    assert record["error"] is None and record["calls"] == 3 and record["em"] == 1.0 and record["cache_hits"] == 0
    assert mlflow.get_run(out["run_id"]).data.params["request_timeout"] == "1.0"
    assert run_module.parse_args([]).request_timeout == 600.0


def slow_reply(prompt):
    time.sleep(0.1)
    return eir_reply(prompt)


@pytest.mark.slow  # seconds of timed calls and pauses
def test_wall_time_after_resume_is_the_sum_of_the_parts(workdir, monkeypatch):
    calls = {"n": 0}

    def stops_after_two_questions(prompt):
        calls["n"] += 1
        if calls["n"] > 6:
            raise KeyboardInterrupt  # killed during the third question
        return slow_reply(prompt)

    use_lm(monkeypatch, stops_after_two_questions)
    with pytest.raises(SystemExit):
        run_module.main(["--data", "data.jsonl", "--limit", "4", "--experiment", "test"])
    run_id = mlflow.search_runs(experiment_names=["test"], output_format="list")[0].info.run_id
    time.sleep(0.5)  # time between the parts is not run time
    use_lm(monkeypatch, slow_reply)
    t0 = time.perf_counter()
    out = run_module.main(["--resume", run_id, "--experiment", "test"])
    second_part = time.perf_counter() - t0
    parts = {r["part_started_at"] for r in out["records"]}
    assert len(parts) == 2
    wall = out["metrics"]["wall_time_s"]
    assert wall == pytest.approx(wall_time(out["records"]))
    first_part = wall_time([r for r in out["records"] if r["part_started_at"] == min(parts)])
    assert first_part >= 2 * 3 * 0.1  # two questions of three 0.1 s calls
    assert wall == pytest.approx(first_part + wall_time([r for r in out["records"] if r["part_started_at"] == max(parts)]))
    assert wall > first_part and wall < first_part + second_part + 0.5 - 0.1  # the pause between parts is not counted


def test_duplicate_question_ids_fail_before_anything_runs(workdir):
    write_questions(workdir / "dup.jsonl", n=3, duplicate=True)
    with pytest.raises(SystemExit, match=r"dup.jsonl: records 0 and 2 share the id 'q0'"):
        run_module.main(["--data", "dup.jsonl", "--experiment", "test"])
    assert not (workdir / "runs").exists()


def reflexion_reply(prompt):
    from tests.scripted import act, field

    if "`reflection`" in prompt:
        return {"reflection": "read the fort's page"}
    fort = "Fort " + field(prompt, "question").split("number ")[1].split()[0]
    if field(prompt, "last_result").startswith("(nothing yet"):  # a trial's first turn
        return act("read", fort)
    return act("submit", answer="Varn", citations=[(fort, 0)])


def test_resuming_an_orphan_reflexion_first_run_completes_both(workdir, monkeypatch):
    use_lm(monkeypatch, reflexion_reply)
    real_log_results = tracking.log_results

    def killed_while_logging_the_variant(records, metrics, path):
        if path.endswith("reflexion_first.jsonl"):
            raise KeyboardInterrupt  # the process dies inside Reflexion's second MLflow run
        real_log_results(records, metrics, path)

    monkeypatch.setattr(tracking, "log_results", killed_while_logging_the_variant)
    args = ["--data", "data.jsonl", "--limit", "2", "--method", "reflexion", "--trials", "2", "--experiment", "test"]
    with pytest.raises(KeyboardInterrupt):
        run_module.main(args)
    runs = {r.data.tags["method"]: r for r in mlflow.search_runs(experiment_names=["test"], output_format="list")}
    orphan = runs["reflexion_first"]
    assert orphan.info.status != "FINISHED" and tracking.RESULTS_TAG not in orphan.data.tags
    monkeypatch.setattr(tracking, "log_results", real_log_results)

    run_module.main(["--resume", orphan.info.run_id, "--experiment", "test"])
    after = {r.data.tags["method"]: r for r in mlflow.search_runs(experiment_names=["test"], output_format="list")}
    assert set(after) == {"reflexion_oracle", "reflexion_first"}  # nothing duplicated
    assert after["reflexion_first"].info.run_id == orphan.info.run_id
    for run in after.values():
        assert run.info.status == "FINISHED" and run.data.metrics["em"] == 100.0 and run.data.metrics["n"] == 2
    # Resuming the main run of a finished pair is harmless too.
    run_module.main(["--resume", runs["reflexion_oracle"].info.run_id, "--experiment", "test"])
    assert len(mlflow.search_runs(experiment_names=["test"], output_format="list")) == 2


@pytest.mark.slow  # a loopback server
def test_a_served_model_gets_the_token_cap_it_understands(workdir):
    # llama.cpp's OpenAI-compatible server reads `max_tokens`, not `max_completion_tokens`.
    with FakeOpenAI(eir_reply) as fake:
        run_module.main(fake_args(fake, "--limit", "1", "--max-tokens", "321"))
        assert fake.requests and all(r.get("max_tokens") == 321 for r in fake.requests)
