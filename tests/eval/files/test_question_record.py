"""The typed per-question record (eval.files.question_record): every method's real trajectory names its
method, a record survives its results line, and older lines load through the one converter."""

import json
import typing
from types import SimpleNamespace

import dspy
import pytest

import eval.summary as summary
from eir_dspy.lm import DecodingAdapter
from eval.files.question_record import QuestionRecord, RecordError, from_legacy
from eval.files.results_file import ResultsFile
from eval.runs.execute import run_question
from eval.runs.logged_runs import SelectionError, checked
from eval.scoring.run_metrics import summarize
from programs.registry import METHODS
from programs.trajectory_record import Method, Trajectory
from tests.fixtures.pool import POOL_Q_BAND_GOLD as POOL_Q
from tests.scripted import scripted_lm

UNREADABLE = "I am not sure."  # no method can read it: every turn is rejected, every final call unparsed


def record_of(method: str) -> dict:
    """The record of `method` on one question whose every LM output is unreadable: a real trajectory
    of each method's shape (rejected turns, a forced end, an unparsed final call, failed trials)."""
    program = METHODS[method].build(1, {"trials": 2} if method == "reflexion" else {})
    with dspy.context(adapter=DecodingAdapter("free")):
        record = run_question(program, scripted_lm(lambda prompt: UNREADABLE), POOL_Q)
    assert record["error"] is None, record["error_trace"]
    return record


def without_method(row: dict) -> dict:
    """A line as versions before the typed record wrote it: no method in any trajectory."""
    def legacy(trajectory):
        return {k: v for k, v in trajectory.items() if k != "method"} if trajectory else trajectory
    variants = {name: {**v, "trajectory": legacy(v["trajectory"])} for name, v in (row.get("variants") or {}).items()}
    return {**row, "trajectory": legacy(row["trajectory"]), "variants": variants}


def test_the_method_literal_names_exactly_the_programs():
    assert set(typing.get_args(Method)) == set(METHODS)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_methods_trajectory_names_its_method_and_survives_its_results_line(method, tmp_path):
    row = record_of(method)
    record = from_legacy(row)
    assert isinstance(record.trajectory, Trajectory) and record.trajectory.method == method
    results = ResultsFile(tmp_path / "results.jsonl")
    results.append(row)
    (line,) = results.path.read_text().splitlines()
    assert from_legacy(json.loads(line)) == record
    assert json.loads(line)["trajectory"]["method"] == method  # the written line says it too


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_line_written_before_the_typed_record_converts_to_the_same_record(method):
    row = record_of(method)
    legacy = json.loads(json.dumps(without_method(row), default=str))
    assert "method" not in (legacy["trajectory"] or {})
    assert from_legacy(legacy) == from_legacy(json.loads(json.dumps(row, default=str)))


def test_an_older_results_file_tables_as_the_same_file_written_now(tmp_path, capsys):
    rows = [record_of("eir")]
    now, before = tmp_path / "now.jsonl", tmp_path / "old.jsonl"  # names of one length: one column width
    now.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    before.write_text("".join(json.dumps(without_method(r), default=str) + "\n" for r in rows))
    assert "list_updates_discarded_per_question" in summarize(rows)  # EIR's list metrics, found by its method
    summary.main([str(now), str(before), "--behaviour"])
    tables = capsys.readouterr().out.split("\n\n")
    assert tables[0].replace(str(now), "F") == tables[1].replace(str(before), "F")


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
    record = from_legacy(record_of("reflexion"))
    first = record.variants["reflexion_first"]
    assert isinstance(first, QuestionRecord)
    assert first.trajectory.method == "reflexion" and first.trajectory.stopped_at == 1
    assert record.trajectory.stopped_at == 2 and len(record.trajectory.trials) == 2


@pytest.mark.parametrize("trajectory, method", [
    # The hand-built shapes the analysis tests use, as each method wrote them before trajectories named it.
    ({"requirements": [], "conclusions": [], "list_updates": {"applied": 1, "discarded": 0}}, "eir"),
    ({"turns": [], "submitted": "x", "forced_end": False, "final_parsed": True}, "eir"),
    ({"turns": [], "submitted": None, "forced_end": True}, "direct"),
    ({"turns": [], "submitted": None, "forced_end": True, "ssr": []}, "ssr"),
    ({"trials": [{"turns": []}], "stopped_at": 1}, "reflexion"),
    ({"see": "trial 1 of the reflexion_oracle run"}, "reflexion"),  # an older reflexion_first record
    ({"final_parsed": False}, "full_pool"),
])
def test_the_converter_infers_the_method_of_an_older_trajectory(trajectory, method):
    record = from_legacy({"id": "q1", "em": 1.0, "trajectory": trajectory})
    assert record.trajectory.method == method
    assert record.row() == {"id": "q1", "em": 1.0, "trajectory": {"method": method, **trajectory}}  # no key added


def test_an_older_record_without_later_fields_loads_with_them_unrecorded():
    record = from_legacy({"id": "q1", "turns": 3, "rejected_actions": 1, "trajectory": None})
    assert record.title_fallbacks is None and record.citations_outside_evidence is None and record.trajectory is None


@pytest.mark.parametrize("row, named", [
    ({"id": "q1", "em": "high"}, "em"),
    ({"id": "q1", "answer_f1": 1.0, "trajectroy": None}, "trajectroy"),  # an unknown key, not ignored
    ({"id": "q1", "trajectory": {"method": "eir", "turns": [], "notes": "free text"}}, "trajectory.notes"),
    ({"id": "q1", "trajectory": {"method": "cot"}}, "trajectory.method"),
    ({"id": "q1", "trajectory": {"unknown": 1}}, "trajectory.method"),  # no method's keys: nothing to infer
])
def test_a_bad_record_is_an_error_naming_the_field(row, named):
    with pytest.raises(RecordError, match=rf"'q1' is not valid: .*\b{named}:"):
        from_legacy(row)


def test_a_line_that_is_not_an_object_is_an_error():
    with pytest.raises(RecordError, match="JSON object, not list"):
        from_legacy([1, 2])


def test_a_logged_line_is_read_in_the_current_form_and_a_bad_one_names_its_run():
    run = SimpleNamespace(info=SimpleNamespace(run_id="r1", run_name="full_pool / hotpotqa / m"))
    assert checked(run, {"id": "q1", "trajectory": {"final_parsed": True}})["trajectory"]["method"] == "full_pool"
    with pytest.raises(SelectionError, match=r"run r1 \(full_pool / hotpotqa / m\): question record 'q1' is not valid: em:"):
        checked(run, {"id": "q1", "em": "high"})
