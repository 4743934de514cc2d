"""A run guards its own results (issue 32): every line it writes carries its run id, and a resume
refuses lines of another run, and lines that are not records, by file and line (or skips them with
--skip-bad-lines, reporting each); one process at a time runs a run (its lock); a resume continues
the run in its own experiment."""

import json
import os
from pathlib import Path

import mlflow
import pytest

import eval.run as run_module
from eval.data.loaders import load_questions
from eval.files.results_file import LOCK_NAME, ResultsFile
from eval.runs.logged_runs import SelectionError, select_runs
from tests.fake_openai import FakeOpenAI, eir_reply
from tests.fixtures.scripted_runs import QUESTIONS, fill_workdir, reply  # noqa: F401 (fill_workdir: the workdir fixture's)
from tests.fixtures.served_runs import records_in, start_run, wait_for_records, write_questions
from tests.scripted import use_lm


def args(experiment: str = "test") -> list[str]:
    return ["--data", "data.jsonl", "--limit", "3", "--seed", "0", "--experiment", experiment]


def killed_run(workdir: Path, monkeypatch, experiment: str = "test") -> tuple[str, Path]:
    """A run of the 3 questions killed (Ctrl-C) as its last question started: 2 records saved."""
    last = load_questions("hotpotqa", str(workdir / "data.jsonl"), limit=3, seed=0)[-1].question
    use_lm(monkeypatch, lambda prompt: reply(prompt, interrupt_on=last))
    with pytest.raises(SystemExit) as stopped:
        run_module.main(args(experiment))
    assert stopped.value.code == 130
    (run,) = [r for r in mlflow.search_runs(experiment_names=[experiment], output_format="list")
              if r.info.status == "KILLED"]
    path = workdir / "runs" / run.info.run_id / "results.jsonl"
    assert [r["run_id"] for r in records_in(path)] == [run.info.run_id] * 2
    use_lm(monkeypatch, reply)
    return run.info.run_id, path


def test_every_line_a_run_writes_carries_its_run_id(workdir, monkeypatch):
    use_lm(monkeypatch, reply)
    out = run_module.main(args())
    path = workdir / "runs" / out["run_id"] / "results.jsonl"
    assert [r["run_id"] for r in records_in(path)] == [out["run_id"]] * 3
    assert [r["run_id"] for r in out["records"]] == [out["run_id"]] * 3
    (logged,), _ = select_runs(run_ids=[out["run_id"]])
    assert sorted(r["id"] for r in logged.records) == ["q1", "q2", "q3"]


def test_another_runs_lines_are_refused_by_file_line_and_run_id_and_can_be_skipped(workdir, monkeypatch, capsys):
    use_lm(monkeypatch, reply)
    other = run_module.main(args())["run_id"]  # a finished run: its lines are planted in the killed one's file
    run_id, path = killed_run(workdir, monkeypatch)
    planted = (workdir / "runs" / other / "results.jsonl").read_text().splitlines(keepends=True)[:2]
    with open(path, "a") as f:
        f.writelines(planted)
    before = path.read_text()
    with pytest.raises(SystemExit) as refused:
        run_module.main(["--resume", run_id, "--experiment", "test"])
    message = str(refused.value.code)
    planted_ids = [json.loads(line)["id"] for line in planted]
    assert message.startswith(f"error: {path.relative_to(workdir)} has 2 line(s) that are not records of run {run_id}:\n")
    for number, qid in zip((3, 4), planted_ids):
        assert (f"  {path.relative_to(workdir)}:{number}: record {qid!r} is run {other}'s, not run {run_id}'s "
                "(a line from another run's results)\n") in message
    assert message.endswith(f"python -m eval.run --resume {run_id} --experiment test --skip-bad-lines")
    assert path.read_text() == before  # nothing written, nothing run
    assert mlflow.get_run(run_id).info.status == "KILLED"
    capsys.readouterr()

    out = run_module.main(["--resume", run_id, "--experiment", "test", "--skip-bad-lines"])
    err = capsys.readouterr().err
    assert f"skipping 2 line(s) of {path.relative_to(workdir)} that are not records of run {run_id}" in err
    assert f"{path.relative_to(workdir)}:3: record {planted_ids[0]!r} is run {other}'s" in err
    assert f"{path.relative_to(workdir)}:4: record {planted_ids[1]!r} is run {other}'s" in err
    assert out["metrics"]["n"] == 3 and [r["run_id"] for r in out["records"]] == [run_id] * 3
    assert out["metrics"]["em"] == pytest.approx(200 / 3)  # its own answers: q2 wrong; nothing counted twice
    lines = records_in(path)
    assert [r["run_id"] for r in lines] == [run_id, run_id, other, other, run_id]  # skipped lines stay in the file
    # What is logged holds only the run's records, so comparisons read it.
    (logged,), _ = select_runs(run_ids=[run_id])
    assert sorted(r["id"] for r in logged.records) == ["q1", "q2", "q3"]
    assert {r["run_id"] for r in logged.records} == {run_id}


def test_a_comparison_refuses_a_stopped_runs_planted_line_by_name(workdir, monkeypatch):
    use_lm(monkeypatch, reply)
    other = run_module.main(args())["run_id"]
    run_id, path = killed_run(workdir, monkeypatch)
    with open(path, "a") as f:
        f.write((workdir / "runs" / other / "results.jsonl").read_text().splitlines(keepends=True)[0])
    with pytest.raises(SelectionError) as refused:
        select_runs(run_ids=[run_id], stopped=True)
    message = str(refused.value)
    assert f"{path.relative_to(workdir)}:3: record " in message and f"is run {other}'s, not run {run_id}'s" in message
    assert f"python -m eval.run --resume {run_id} --skip-bad-lines" in message


def test_bad_lines_stop_the_resume_naming_file_line_and_problem_and_can_be_skipped(workdir, monkeypatch, capsys):
    run_id, path = killed_run(workdir, monkeypatch)
    with open(path, "a") as f:
        f.write('{"id": "q1", "em": \n')  # 3: not JSON
        f.write("[1, 2]\n")  # 4: not an object
        f.write('{"question": "Where?"}\n')  # 5: no id
        f.write('{"id": "q2", "em": "high"}\n')  # 6: not a valid record
        f.write(json.dumps({"id": "q3", "em": 1.0}) + "\n")  # 7: no run id, in a file whose lines carry one
        f.write('{"id": "q3", "em"')  # a torn last line (a writer killed mid-line): dropped, not an error
    where = path.relative_to(workdir)
    with pytest.raises(SystemExit) as refused:
        run_module.main(["--resume", run_id])
    message = str(refused.value.code)
    assert f"{where} has 5 line(s) that are not records of run {run_id}:\n" in message
    assert f"  {where}:3: not JSON (Expecting value at column 20)\n" in message
    assert f"  {where}:4: a JSON list, not a record object\n" in message
    assert f"  {where}:5: no question id\n" in message
    assert f"  {where}:6: question record 'q2' is not valid: em: " in message
    assert f"  {where}:7: record 'q3' has no run id, though this file's records carry run {run_id}'s" in message
    assert message.endswith(f"python -m eval.run --resume {run_id} --experiment test --skip-bad-lines")
    assert "Traceback" not in message
    assert len(path.read_text().splitlines()) == 7 and path.read_text().endswith("\n")  # the torn tail is gone
    assert mlflow.get_run(run_id).info.status == "KILLED"
    capsys.readouterr()

    out = run_module.main(["--resume", run_id, "--skip-bad-lines"])
    err = capsys.readouterr().err
    assert f"skipping 5 line(s) of {where}" in err
    assert all(f"{where}:{n}: " in err for n in range(3, 8))
    assert out["metrics"]["n"] == 3 and sorted(r["id"] for r in out["records"]) == ["q1", "q2", "q3"]
    assert len(path.read_text().splitlines()) == 8  # the bad lines stay; the third question's record is added
    assert mlflow.get_run(run_id).info.status == "FINISHED"


def migrate_runs():
    from tests.fixtures.scripts import load_script

    return load_script("migrate_runs")


def test_a_results_file_from_before_run_ids_is_refused_until_migrated(workdir, monkeypatch):
    run_id, path = killed_run(workdir, monkeypatch)
    current = path.read_text()
    legacy = [{k: v for k, v in r.items() if k != "run_id"} for r in records_in(path)]
    path.write_text("".join(json.dumps(r) + "\n" for r in legacy))  # as written before records carried run ids
    with pytest.raises(SystemExit) as refused:
        run_module.main(["--resume", run_id])
    assert all(f":{n}: record '{r['id']}' has no run id" in str(refused.value) for n, r in enumerate(legacy, 1))
    assert "scripts/migrate_runs.py" in str(refused.value) and path.read_text().count("run_id") == 0  # left as it was
    migrated, records, changed, _ = migrate_runs().migrate_text(path.read_text(), run_id)
    assert (records, changed["run id"]) == (2, 2) and migrated == current  # the lines as the run wrote them
    path.write_text(migrated)
    assert run_module.main(["--resume", run_id])["metrics"]["n"] == 3


def test_a_resume_is_refused_while_another_process_holds_the_run(workdir, monkeypatch):
    run_id, path = killed_run(workdir, monkeypatch)
    before = path.read_text()
    lock = path.with_name(LOCK_NAME)
    with ResultsFile(path).hold(run_id):  # as the process running it would
        assert lock.read_text() == f"{os.getpid()}\n"
        with pytest.raises(SystemExit) as refused:
            run_module.main(["--resume", run_id])
    assert str(refused.value.code) == (
        f"error: run {run_id} is already running in another process (pid {os.getpid()}, holding "
        f"{lock.relative_to(workdir)}): that process is running it now, and MLflow shows it KILLED; nothing was "
        "changed. Two processes must not run one run's questions; wait for it to finish (or stop it), then resume.")
    assert path.read_text() == before and mlflow.get_run(run_id).info.status == "KILLED"
    # A lock file left by a process that died (its pid inside, no one holding it) does not block.
    lock.write_text("999999999\n")
    out = run_module.main(["--resume", run_id])
    assert out["metrics"]["n"] == 3 and lock.read_text() == f"{os.getpid()}\n"


def test_a_refused_resume_says_the_run_is_running_and_leaves_it_running(workdir, monkeypatch):
    run_id, path = killed_run(workdir, monkeypatch)
    client = mlflow.MlflowClient()
    client.update_run(run_id, status="RUNNING")  # as MLflow shows a run while its process runs it
    with ResultsFile(path).hold(run_id):
        with pytest.raises(SystemExit) as refused:
            run_module.main(["--resume", run_id])
    message = str(refused.value.code)
    assert f"(pid {os.getpid()}, holding " in message
    assert "that process is running it now, and MLflow shows it RUNNING; nothing was changed" in message
    assert mlflow.get_run(run_id).info.status == "RUNNING"


def test_a_refused_resume_says_when_the_process_the_lock_names_was_killed(workdir, monkeypatch):
    # The process that took the lock is gone (killed, its run left RUNNING), but one it started (a
    # fork, which inherits the lock) still holds it: the resume is refused, saying so.
    run_id, path = killed_run(workdir, monkeypatch)
    client = mlflow.MlflowClient()
    client.update_run(run_id, status="RUNNING")
    lock = path.with_name(LOCK_NAME)
    with ResultsFile(path).hold(run_id):
        lock.write_text("999999999\n")  # no such process
        with pytest.raises(SystemExit) as refused:
            run_module.main(["--resume", run_id])
    where = lock.relative_to(workdir)
    assert str(refused.value.code) == (
        f"error: run {run_id}'s lock ({where}) is held, but pid 999999999, the process that took it, is gone: it "
        "was killed, and MLflow shows the run RUNNING. A process it started still holds the lock "
        f"(`fuser -v {where}` names it); stop that process, then resume. Nothing was changed.")
    assert mlflow.get_run(run_id).info.status == "RUNNING"


def test_a_resume_continues_the_run_in_its_own_experiment(workdir, monkeypatch, capsys):
    run_id, _ = killed_run(workdir, monkeypatch, experiment="x")
    assert f"python -m eval.run --resume {run_id} --experiment x" in capsys.readouterr().err
    out = run_module.main(["--resume", run_id])  # no --experiment
    assert out["run_id"] == run_id and out["metrics"]["n"] == 3
    assert f"note: run {run_id} is in experiment 'x'; it continues there (not in 'eir-dspy')" in capsys.readouterr().err
    run = mlflow.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.info.experiment_id == mlflow.get_experiment_by_name("x").experiment_id
    assert mlflow.get_experiment_by_name("eir-dspy") is None  # nothing made in the default experiment
    assert run_module.main(["--resume", run_id, "--experiment", "other"])["run_id"] == run_id  # named another: same
    assert mlflow.get_experiment_by_name("other") is None


@pytest.mark.slow  # eval.run in a subprocess, a loopback server
def test_a_second_resume_is_refused_while_the_first_runs_and_the_first_finishes(workdir, monkeypatch):
    n = 4
    write_questions(workdir / "forts.jsonl", n=n)
    monkeypatch.setenv("DSPY_CACHEDIR", str(workdir / "dspy_cache"))  # the subprocess's own response cache
    with FakeOpenAI(eir_reply, fail=(401, "Incorrect API key provided")) as fake:
        with pytest.raises(SystemExit):  # every question fails: a FAILED run with 3 records
            run_module.main(["--lm", "openai/fake", "--api-base", fake.url, "--data", "forts.jsonl", "--limit", str(n),
                             "--experiment", "test"])
        run_id = mlflow.search_runs(experiment_names=["test"], output_format="list")[0].info.run_id
        path = workdir / "runs" / run_id / "results.jsonl"
        failed = len(records_in(path))
        fake.fail, fake.delay = None, 0.3  # the key is fixed; each call takes 0.3 s: the first resume runs for seconds
        first = start_run(workdir, ["--resume", run_id])
        wait_for_records(workdir, failed + 1, first)  # it is running the questions
        with pytest.raises(SystemExit) as refused:
            run_module.main(["--resume", run_id])
        assert first.poll() is None  # the first is still running
        _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert str(refused.value.code).startswith(
        f"error: run {run_id} is already running in another process (pid {first.pid}, holding ")
    assert "that process is running it now, and MLflow shows it RUNNING" in str(refused.value.code)
    after = records_in(path)
    assert sorted(r["id"] for r in after[failed:]) == [f"q{i}" for i in range(n)]  # each question ran once
    assert len(fake.requests) == failed + 3 * n  # 3 failed calls, then 3 calls a question: none ran twice
    assert {r["run_id"] for r in after} == {run_id}
    run = mlflow.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.metrics["n"] == n and run.data.metrics["em"] == 100.0


def test_a_call_log_line_that_is_not_an_entry_is_named_by_file_and_line(tmp_path):
    from eval.files.results_file import ResultsFile, ResultsFileError

    path = tmp_path / "select.jsonl"
    path.write_text('{"id": "a", "step": "select"}\nnot json\n{"step": "select"}\n{"id": "b"')  # torn tail
    with pytest.raises(ResultsFileError) as bad:
        ResultsFile(path).load()
    assert f"{path}:2: not JSON" in str(bad.value) and f"{path}:3: not an object with a question id" in str(bad.value)
    path.write_text('{"id": "a", "step": "select"}\n{"id": "b"')
    assert list(ResultsFile(path).load()) == ["a"]  # a torn last line is a writer killed mid-line, not an error
