"""eval.summary names the llama.cpp build(s) that served a run's questions, and a run resumed on
another build as mixed (eval/summary.py)."""

import json

import eval.summary as summary
from eval.files.question_record import read_record
from tests.fixtures.question_records import record_of


def records(*builds):
    return [read_record({"id": f"q{i}", "served_by": b} if b else {"id": f"q{i}"}) for i, b in enumerate(builds)]


def test_one_build_is_named_with_its_question_count():
    assert summary.served_by(records("wheel b11549 avx2", "wheel b11549 avx2")) == \
        "served by: wheel b11549 avx2 (2 questions)\n"
    assert summary.served_by(records("binary b11434 avx512")) == "served by: binary b11434 avx512 (1 question)\n"


def test_an_api_models_run_names_no_build():
    assert summary.served_by(records(None, None)) == ""


def test_a_run_resumed_after_builds_were_recorded_is_called_mixed():
    assert summary.served_by(records(None, "wheel b11549 avx2", "wheel b11549 avx2")) == (
        "served by: wheel b11549 avx2 (2 questions), not recorded (1 question)"
        "  warning: mixed engines, not one condition\n")


def test_a_run_served_by_two_builds_is_called_mixed():
    line = summary.served_by(records("binary b11434 avx512", "wheel b11549 avx2", "binary b11434 avx512"))
    assert line == ("served by: binary b11434 avx512 (2 questions), wheel b11549 avx2 (1 question)"
                    "  warning: mixed engines, not one condition\n")


def test_the_command_prints_it_under_the_runs_table(tmp_path, capsys):
    run = tmp_path / "runs" / "abc123"
    run.mkdir(parents=True)
    row = {**record_of("eir"), "served_by": "wheel b11549 avx2", "run_id": "abc123"}
    (run / "results.jsonl").write_text(json.dumps(row) + "\n")
    summary.main([str(run / "results.jsonl")])
    assert "served by: wheel b11549 avx2 (1 question)" in capsys.readouterr().out
