"""eval.run --trace on a scripted LM: one scored trace per question, linked to its run, with the
program's calls nested under it; DSPy autolog never leaks into an untraced run of the same process
(an eval.grid with a traced and an untraced cell); a finished run scored by mlflow.genai.evaluate."""

import mlflow
import pytest

import eval.grid.__main__ as grid_command
import eval.run as run_module
from eir_dspy.lm.local_models import DEFAULT_MODEL
from eval import genai_eval
from eval.runs import traces, tracking
from eval.runs.logged_runs import select_runs
from tests.fixtures.scripted_runs import (
    ARGS,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    reply,
)
from tests.scripted import use_lm


def run_traces(run_id: str) -> list:
    experiment = mlflow.get_run(run_id).info.experiment_id
    return mlflow.search_traces(locations=[experiment], run_id=run_id, return_type="list")


def by_name(trace) -> dict:
    return {a.name: a for a in trace.info.assessments}


def test_a_traced_run_has_one_scored_trace_per_question_with_the_calls_nested(workdir, monkeypatch):
    use_lm(monkeypatch, reply)
    out = run_module.main(ARGS + ["--trace"])
    found = run_traces(out["run_id"])
    assert len(found) == 3
    by_id = {t.info.tags[traces.QUESTION_TAG]: t for t in found}
    assert sorted(by_id) == ["q1", "q2", "q3"]
    for record in out["records"]:
        trace = by_id[record["id"]]
        assert trace.info.tags[traces.RUN_TAG] == out["run_id"]
        assert trace.info.trace_metadata["mlflow.sourceRun"] == out["run_id"]  # listed on the run's Traces tab
        assert trace.info.client_request_id == record["id"]
        assert trace.info.request_preview == f"[{record['id']}] {record['question']}"  # the UI's Request column
        scores = by_name(trace)
        assert scores["answer_f1"].value == record["answer_f1"] and scores["answer_em"].value == record["em"]
        assert scores["support_f1"].value == record["support_f1"] == 0.0  # reply cites the distractor
        assert scores["answer_f1"].source.source_type == "CODE"
        assert scores["expected_response"].value == record["gold"]
        assert scores["supporting_facts"].value == [[f"{record['id']} gold", 0]]
        root = next(s for s in trace.data.spans if s.parent_id is None)
        assert root.name == f"question {record['id']}" and root.outputs["answer"] == record["prediction"]
        assert [s.name for s in trace.data.spans if s.parent_id == root.span_id] == ["EIR.forward"]
        lm_calls = [s for s in trace.data.spans if s.name == "LM.__call__"]
        assert len(lm_calls) == record["calls"] == 3  # every model call of the question is in its trace
    wrong = next(r for r in out["records"] if r["id"] == "q2")
    assert by_name(by_id["q2"])["answer_f1"].value == wrong["answer_f1"] == 0.0  # the values differ per question
    assert by_name(by_id["q1"])["answer_f1"].value == 1.0
    assert not traces.autolog_on()  # switched off when the traced run ended


def test_an_untraced_run_after_a_traced_one_in_the_same_process_logs_no_traces(workdir, monkeypatch):
    use_lm(monkeypatch, reply)
    traces.use_autolog(True)  # as left by anything earlier in the process
    try:
        untraced = run_module.main(ARGS)
    finally:
        traces.use_autolog(False)
    assert run_traces(untraced["run_id"]) == []
    experiment = mlflow.get_experiment_by_name("test").experiment_id
    assert mlflow.search_traces(locations=[experiment], return_type="list") == []


GRID = f"""
experiment = "grid-trace"
n = 3
seed = 0
datasets = ["hotpotqa"]
lms = ["{DEFAULT_MODEL}"]

[data]
hotpotqa = "data.jsonl"

[[methods]]
method = "eir"
trace = true

[[methods]]
method = "full_pool"
"""


def test_a_grid_with_a_traced_and_an_untraced_cell_traces_only_the_first(workdir, monkeypatch):
    import eval.compare.comparison as comparison

    monkeypatch.setattr(comparison, "run_comparison", lambda options: None)  # the tables are eval.compare's tests' business
    monkeypatch.setenv("EIR_DATA_DIR", str(workdir))
    (workdir / "grid.toml").write_text(GRID)
    use_lm(monkeypatch, reply)
    grid_command.main(["grid.toml"])
    runs = mlflow.search_runs(experiment_names=["grid-trace"], order_by=["attributes.start_time ASC"],
                              output_format="list")
    assert [r.data.params["method"] for r in runs] == ["eir", "full_pool"]
    assert all(r.info.status == "FINISHED" for r in runs)
    traced, untraced = runs
    assert sorted(t.info.tags[traces.QUESTION_TAG] for t in run_traces(traced.info.run_id)) == ["q1", "q2", "q3"]
    assert run_traces(untraced.info.run_id) == []
    everything = mlflow.search_traces(locations=[traced.info.experiment_id], return_type="list")
    assert len(everything) == 3  # none unlinked either


def test_genai_eval_scores_a_finished_runs_stored_outputs_with_the_projects_scorer(workdir, monkeypatch):
    lm = use_lm(monkeypatch, reply)
    out = run_module.main(ARGS)
    before = mlflow.get_run(out["run_id"])
    calls = len(lm.engine.prompts)
    result = genai_eval.main([out["run_id"]])
    assert len(lm.engine.prompts) == calls  # no model call
    means = out["metrics"]
    assert result.metrics["answer_f1/mean"] == pytest.approx(means["answer_f1"] / 100)
    assert result.metrics["answer_em/mean"] == pytest.approx(means["em"] / 100)
    assert result.metrics["support_f1/mean"] == pytest.approx(means["support_f1"] / 100)
    rows = run_traces(result.run_id)
    assert len(rows) == 3
    records = {r["id"]: r for r in out["records"]}
    for trace in rows:
        record = records[trace.info.tags[traces.QUESTION_TAG]]
        scores = by_name(trace)
        assert scores["answer_f1"].value == record["answer_f1"] and scores["answer_em"].value == record["em"]
        assert scores["support_f1"].value == record["support_f1"]
        assert scores["expected_response"].value == record["gold"]
    evaluation = mlflow.get_run(result.run_id)
    assert evaluation.data.tags[tracking.KIND_TAG] == tracking.ANALYSIS_KIND
    assert evaluation.data.tags[tracking.SOURCE_RUNS_TAG] == f'["{out["run_id"]}"]'
    assert evaluation.info.status == "FINISHED"
    assert [r.run_id for r in select_runs("test")[0]] == [out["run_id"]]  # comparisons still see the method run only
    after = mlflow.get_run(out["run_id"])
    assert after.data.metrics == before.data.metrics and after.info.end_time == before.info.end_time  # unchanged
    assert not traces.autolog_on()


def test_genai_eval_refuses_an_unknown_run(workdir):
    with pytest.raises(SystemExit, match="no such run"):
        genai_eval.main(["0123456789abcdef"])


def test_a_failed_question_is_an_error_trace_scored_zero_with_its_error(workdir, monkeypatch):
    def broken_on_q2(prompt):
        if "Where is Fort Ban?" in prompt.rsplit("[[ ## question ## ]]", 1)[1]:
            raise RuntimeError("provider exploded")
        return reply(prompt)

    use_lm(monkeypatch, broken_on_q2)
    out = run_module.main(ARGS + ["--trace"])
    by_id = {t.info.tags[traces.QUESTION_TAG]: t for t in run_traces(out["run_id"])}
    assert by_id["q2"].info.state == "ERROR" and by_id["q1"].info.state == "OK"
    scores = by_name(by_id["q2"])
    assert scores["answer_f1"].value == 0.0 and "provider exploded" in scores["answer_f1"].rationale
    assert scores["expected_response"].value == "Varn"
