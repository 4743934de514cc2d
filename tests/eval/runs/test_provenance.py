"""What every eval.run run records about what it ran (scripted LM): the program's state as an
artifact, the question set as an MLflow dataset input, and system metrics from a thread that stops
with the run, whether it finished or was killed."""

import json
import threading
import time

import mlflow
import pytest

import eval.run as run_module
from eval.runs import provenance
from programs.registry import METHODS
from tests.fixtures.scripted_runs import (
    ARGS,
    QUESTIONS,
    direct_reply,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    reply,
)
from tests.scripted import use_lm


def slow(fn, seconds=0.3):
    """A reply that takes `seconds`, so a run lasts several system-metrics samples."""
    def answer(prompt):
        time.sleep(seconds)
        return fn(prompt)
    return answer


def monitors_alive() -> list:
    return [t for t in threading.enumerate() if t.name == "SystemMetricsMonitor" and t.is_alive()]


@pytest.fixture
def fast_sampling(monkeypatch):
    monkeypatch.setenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", "0.1")  # MLflow's own setting; 10 s by default


def artifact(run_id: str, name: str) -> str:
    return open(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=name)).read()


def test_a_run_logs_its_program_state_its_question_set_and_system_metrics(workdir, monkeypatch, fast_sampling):
    use_lm(monkeypatch, slow(reply))
    out = run_module.main(ARGS)
    run = mlflow.get_run(out["run_id"])
    assert json.loads(artifact(out["run_id"], provenance.PROGRAM_STATE)) == METHODS["eir"].build(6).dump_state()

    (given,) = run.inputs.dataset_inputs
    assert {t.key: t.value for t in given.tags}["mlflow.data.context"] == "eval"
    dataset = given.dataset
    assert dataset.source_type == "local" and json.loads(dataset.source) == {"uri": str(workdir / "data.jsonl")}
    profile = json.loads(dataset.profile)
    assert profile["question_ids"] == [r["id"] for r in out["records"]]  # in run order
    assert sorted(profile["question_ids"]) == sorted(qid for qid, _, _ in QUESTIONS) and profile["num_rows"] == 3
    assert dataset.name == "hotpotqa n=3 seed=0" and dataset.digest

    system = {k for k in run.data.metrics if k.startswith("system/")}
    assert {"system/cpu_utilization_percentage", "system/system_memory_usage_megabytes"} <= system
    assert monitors_alive() == []  # the sampling thread ended with the run


def test_the_program_state_is_the_methods_own_and_a_resume_logs_no_second_dataset(workdir, monkeypatch):
    use_lm(monkeypatch, direct_reply)
    out = run_module.main(ARGS + ["--method", "direct", "--limit", "2"])
    state = json.loads(artifact(out["run_id"], provenance.PROGRAM_STATE))
    assert state == METHODS["direct"].build(6).dump_state() != METHODS["eir"].build(6).dump_state()
    run_module.main(["--resume", out["run_id"], "--experiment", "test"])  # nothing left to run
    run = mlflow.get_run(out["run_id"])
    assert len(run.inputs.dataset_inputs) == 1
    assert json.loads(run.inputs.dataset_inputs[0].dataset.profile)["num_rows"] == 2


def test_a_killed_run_stops_its_system_metrics_thread(workdir, monkeypatch, fast_sampling):
    order = [q for _, q, _ in QUESTIONS]
    use_lm(monkeypatch, slow(lambda prompt: reply(prompt, interrupt_on=order[2])))
    with pytest.raises(SystemExit) as stopped:
        run_module.main(ARGS + ["--seed", "-1"])
    assert stopped.value.code == 130
    run = mlflow.search_runs(experiment_names=["test"], output_format="list")[0]
    assert run.info.status == "KILLED"
    assert any(k.startswith("system/") for k in run.data.metrics)
    assert monitors_alive() == []


def test_a_compiled_programs_instructions_are_in_its_runs_program_state(workdir, monkeypatch):
    from eval.files.program_file import save_program

    compiled = METHODS["eir"].build(6)
    answer = compiled.answer.predict
    answer.signature = answer.signature.with_instructions("Answer in the fewest words the evidence allows.")
    save_program(compiled, workdir / "terse.json", {"name": "terse", "method": "eir", "options": {"ablation": "none"}})
    use_lm(monkeypatch, reply)
    out = run_module.main(ARGS + ["--program", "terse.json"])
    state = json.loads(artifact(out["run_id"], provenance.PROGRAM_STATE))
    assert state == compiled.dump_state() != METHODS["eir"].build(6).dump_state()
    assert state["answer.predict"]["signature"]["instructions"] == "Answer in the fewest words the evidence allows."
