"""The typed per-question record (eval.files.question_record): every method's real trajectory names its
method, a record survives its results line, and a line of an older format is refused, naming the key at
fault (scripts/migrate_runs.py rewrites such lines: tests/scripts/test_migrate_runs.py)."""

import json

import pydantic
import pytest

import eval.summary as summary
from eval.files.question_record import QuestionRecord, RecordError, read_record
from eval.files.results_file import ResultsFile, read_run_records
from programs.registry import METHODS
from programs.trajectory_record import Trajectory
from tests.fixtures.question_records import record_of, without_method


def test_a_record_names_a_method_of_the_registry_as_it_is_when_read(monkeypatch):
    row = {"id": "q1", "trajectory": {"method": "added_later", "turns": []}}
    with pytest.raises(RecordError, match="trajectory: Value error, unknown method 'added_later'"):
        read_record(row)
    monkeypatch.setitem(METHODS, "added_later", METHODS["direct"])  # no list of names to edit beside the registry
    assert read_record(row).trajectory.method == "added_later"
    with pytest.raises(pydantic.ValidationError):
        Trajectory(method="")


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_methods_trajectory_names_its_method_and_survives_its_results_line(method, tmp_path):
    row = record_of(method)
    record = read_record(row)
    assert isinstance(record.trajectory, Trajectory) and record.trajectory.method == method
    results = ResultsFile(tmp_path / "results.jsonl")
    results.append(row)
    (line,) = results.path.read_text().splitlines()
    assert read_record(json.loads(line)) == record
    assert json.loads(line)["trajectory"]["method"] == method  # the written line says it too


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_line_written_before_trajectories_named_their_method_is_refused_naming_the_key(method):
    old = json.loads(json.dumps(without_method(record_of(method)), default=str))
    with pytest.raises(RecordError, match=r"trajectory.method: Field required.*scripts/migrate_runs.py"):
        read_record(old)


def test_the_summary_command_names_a_bad_line_and_a_foreign_one_by_file_and_line(tmp_path):
    run_dir = tmp_path / "runA"
    run_dir.mkdir()
    path = run_dir / "results.jsonl"
    row = json.loads(json.dumps({**record_of("eir"), "run_id": "runA"}, default=str))
    foreign = {**row, "id": "other", "run_id": "runB"}
    path.write_text(json.dumps(row) + "\n" + '{"id": 5\n' + json.dumps(foreign) + "\n")
    with pytest.raises(SystemExit) as stopped:
        summary.main([str(path)])
    message = str(stopped.value)
    assert f"{path}:2: not JSON" in message
    assert f"{path}:3: record 'other' is run runB's, not run runA's" in message
    path.write_text(json.dumps(row) + "\n")
    summary.main([str(path)])  # the run's own lines table as before


def test_reflexions_first_trial_variant_is_a_record_of_its_own():
    record = read_record(record_of("reflexion"))
    first = record.variants["reflexion_first"]
    assert isinstance(first, QuestionRecord)
    assert first.trajectory.method == "reflexion" and first.trajectory.stopped_at == 1
    assert record.trajectory.stopped_at == 2 and len(record.trajectory.trials) == 2


def test_a_record_without_the_optional_fields_loads_with_them_unrecorded():
    record = read_record({"id": "q1", "turns": 3, "rejected_actions": 1, "trajectory": None})
    assert record.title_fallbacks is None and record.citations_outside_evidence is None and record.trajectory is None
    assert record.row() == {"id": "q1", "turns": 3, "rejected_actions": 1, "trajectory": None}  # no key added


@pytest.mark.parametrize("row, named", [
    ({"id": "q1", "em": "high"}, "em"),
    ({"id": "q1", "answer_f1": 1.0, "trajectroy": None}, "trajectroy"),  # an unknown key, not ignored
    ({"id": "q1", "trajectory": {"method": "eir", "turns": [], "notes": "free text"}}, "trajectory.notes"),
    ({"id": "q1", "trajectory": {"method": "cot"}}, "trajectory"),  # no method of the registry
    ({"id": "q1", "trajectory": {"unknown": 1}}, "trajectory.method"),  # no method's keys: nothing to infer
])
def test_a_bad_record_is_an_error_naming_the_field(row, named):
    with pytest.raises(RecordError, match=rf"'q1' is not valid: .*\b{named}:"):
        read_record(row)


def test_a_line_that_is_not_an_object_is_an_error():
    with pytest.raises(RecordError, match="JSON object, not list"):
        read_record([1, 2])


def test_a_line_without_its_runs_id_is_named_by_line_with_the_migrator():
    row = json.loads(json.dumps(record_of("direct"), default=str))
    text = json.dumps({**row, "run_id": "r1"}) + "\n" + json.dumps({**row, "id": "q2"}) + "\n"
    lines = read_run_records(text, {"r1"})
    assert list(lines.records) == [row["id"]] and [b.number for b in lines.bad] == [2]
    assert "record 'q2' has no run id, though this file's records carry run r1's" in lines.bad[0].problem
    lines = read_run_records(json.dumps(row) + "\n", {"r1"})  # written before records carried run ids
    assert not lines.records and "has no run id" in lines.bad[0].problem
    assert "scripts/migrate_runs.py" in lines.bad[0].problem
