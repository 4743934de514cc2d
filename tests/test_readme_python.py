"""The "From Python" block (docs/python.md, linked from the README) runs as written, on the scripted
LM and a scripted data file: the objects it names exist, the calls it makes work, and what it prints
holds the values it promises."""

import re
from pathlib import Path

import pytest

import eir_dspy.lm as lm_module
import eval.runs.prepare as prepare
from tests.fixtures.scripted_runs import QUESTIONS, reply, write_data
from tests.scripted import scripted_lm

FROM_PYTHON = Path(__file__).resolve().parents[1] / "docs" / "python.md"
DATA = "../shared/data/raw/hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl"


def from_python_block() -> str:
    section = FROM_PYTHON.read_text().split("# From Python", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_block_names_the_real_data_file_it_is_run_against_here():
    assert f'data = "{DATA}"' in from_python_block()


def test_the_from_python_block_runs_and_its_records_are_scored(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(lm_module, "build_lm", lambda spec: scripted_lm(reply))  # the block's own import
    monkeypatch.setattr(prepare, "build_lm", lambda spec: scripted_lm(reply))  # eval.run's
    data = write_data(tmp_path / "dev.jsonl")
    namespace: dict = {}
    exec(from_python_block().replace(DATA, str(data)), namespace)  # noqa: S102 - the documentation's own code

    q, prediction, record, out = (namespace[k] for k in ("q", "prediction", "record", "out"))
    assert q.question in {question for _, question, _ in QUESTIONS}
    answers = {question: a for _, question, a in QUESTIONS}
    wrong = QUESTIONS[1][1]  # the scripted final call answers this one wrongly
    assert prediction.answer == ("wrong" if q.question == wrong else answers[q.question])
    assert [t["action"]["kind"] for t in prediction.trajectory["turns"]] == ["read", "submit"]
    assert record["prediction"] == prediction.answer
    assert record["answer_f1"] == (0.0 if q.question == wrong else 1.0)
    assert record["calls_by_role"] == {"action": 2, "final": 1}
    assert len(out["records"]) == 3 and out["metrics"]["answer_f1"] == pytest.approx(200 / 3)
    printed = capsys.readouterr().out
    assert out["run_id"] in printed
