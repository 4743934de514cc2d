"""`python -m eval.analyze` end to end over real eval.run runs (scripted LMs) in a throwaway MLflow store."""

import hashlib
import json
from pathlib import Path

import mlflow
import pytest

import eval.run as run_module
from eval.analyze.__main__ import main as analyze
from eval.runs.logged_runs import select_runs
from tests.fixtures.scripted_runs import (
    ARGS,
    direct_reply,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    reply,
)
from tests.scripted import use_lm


def make_runs(monkeypatch) -> dict[str, str]:
    """eir: q1 and q3 right, q2 wrong without its gold paragraph (the fallback read the distractor);
    direct: reads each gold paragraph, right on q1 only (q2 and q3 wrong with complete evidence)."""
    ids = {}
    for method, fn in (("eir", reply), ("direct", direct_reply)):
        use_lm(monkeypatch, fn)
        ids[method] = run_module.main(ARGS + ["--method", method])["run_id"]
    return ids


def artifacts(client, run_id, path=None) -> dict[str, int]:
    out = {}
    for a in client.list_artifacts(run_id, path):
        out.update(artifacts(client, run_id, a.path) if a.is_dir else {a.path: a.file_size})
    return out


def snapshot(run_id) -> dict:
    """Everything an analysis could change about a source run."""
    client = mlflow.MlflowClient()
    run = client.get_run(run_id)
    results = Path(run.data.tags["eir.results_path"])
    return {"status": run.info.status, "end_time": run.info.end_time, "name": run.info.run_name,
            "experiment": run.info.experiment_id, "tags": dict(run.data.tags), "params": dict(run.data.params),
            "metrics": dict(run.data.metrics),
            "history": {k: [(m.step, m.value) for m in client.get_metric_history(run_id, k)] for k in run.data.metrics},
            "artifacts": artifacts(client, run_id),
            "results": hashlib.sha256(results.read_bytes()).hexdigest()}


def table_rows(text):
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return {(r["method"], r["dataset"]): r for r in
            (dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in lines[1:])}


def test_availability_logs_an_analysis_run_and_leaves_the_sources_unchanged(workdir, monkeypatch, capsys):
    ids = make_runs(monkeypatch)
    before = {rid: snapshot(rid) for rid in ids.values()}
    capsys.readouterr()
    out = analyze(["availability", "--experiment", "test"])
    printed = capsys.readouterr().out

    # The terminal gets Table 15; its counts by hand (see make_runs).
    rows = table_rows(printed)
    eir, direct = rows[("eir", "hotpotqa")], rows[("direct", "hotpotqa")]
    assert [eir[k] for k in ("n", "EM errors", "complete", "incomplete", "missing 1")] == ["3", "1", "0", "1", "1"]
    assert [direct[k] for k in ("n", "EM errors", "complete", "incomplete", "missing 1")] == ["3", "2", "2", "0", "0"]

    run = mlflow.get_run(out["run_id"])
    tags = run.data.tags
    assert tags["eir.kind"] == "analysis" and tags["eir.analysis"] == "availability"
    assert sorted(json.loads(tags["eir.source_runs"])) == sorted(ids.values())
    assert run.info.status == "FINISHED" and run.info.experiment_id == mlflow.get_run(ids["eir"]).info.experiment_id
    assert run.data.params["alpha"] == "0.05" and "seed" in run.data.params
    assert run.data.metrics["errors/eir/hotpotqa/local/scripted"] == 1.0
    assert run.data.metrics["incomplete/direct/hotpotqa/local/scripted"] == 0.0
    names = set(artifacts(mlflow.MlflowClient(), out["run_id"]))
    assert {"table15_availability.md", "fig3_availability.png"} <= names
    png = (out["out"] / "fig3_availability.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert out["out"] == Path("runs/analyses/availability") / out["run_id"]

    # The source runs are exactly as they were.
    assert {rid: snapshot(rid) for rid in ids.values()} == before

    # A second analysis in the same experiment: neither analysis run is read back as a method run.
    second = analyze(["availability", "--experiment", "test"])
    assert sorted(json.loads(mlflow.get_run(second["run_id"]).data.tags["eir.source_runs"])) == sorted(ids.values())
    runs, _ = select_runs("test")
    assert sorted(r.run_id for r in runs) == sorted(ids.values())
    assert {rid: snapshot(rid) for rid in ids.values()} == before

    # Chosen by id, an analysis run is refused with a message that says what it is.
    with pytest.raises(SystemExit, match=f"run {out['run_id']} .*is an analysis run, not a method run"):
        analyze(["availability", "--run", out["run_id"]])
    with pytest.raises(SystemExit, match="is an analysis run, not a method run"):
        analyze(["availability", "--run", ids["eir"], second["run_id"]])
    # Only finished runs of both analyses and the two sources: the refusals started no run.
    assert len(mlflow.search_runs(experiment_names=["test"], output_format="list")) == 4


def test_availability_over_chosen_runs_and_without_logging(workdir, monkeypatch):
    ids = make_runs(monkeypatch)
    out = analyze(["availability", "--run", ids["direct"]])
    assert json.loads(mlflow.get_run(out["run_id"]).data.tags["eir.source_runs"]) == [ids["direct"]]
    assert "| eir " not in out["report"].tables["table15_availability.md"]
    runs_before = len(mlflow.search_runs(experiment_names=["test"], output_format="list"))
    quiet = analyze(["availability", "--experiment", "test", "--no-log", "--out", "elsewhere"])
    assert quiet["run_id"] is None and (quiet["out"] / "table15_availability.md").is_file()
    assert Path("elsewhere") in quiet["out"].parents
    assert len(mlflow.search_runs(experiment_names=["test"], output_format="list")) == runs_before


def test_records_hold_the_evidence_each_answer_came_from(workdir, monkeypatch):
    ids = make_runs(monkeypatch)
    runs, _ = select_runs(run_ids=[ids["direct"]])
    # eval.run's records hold the sentences each answer came from: here the gold paragraph read on turn 1.
    by_id = {r["id"]: r for r in runs[0].records}
    assert by_id["q2"]["evidence"] == [["q2 gold", 0, "The answer is Varn."]]


def test_help_lists_table16_and_the_table19_totals(capsys):
    from eval.analyze.__main__ import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--help"])
    listed = capsys.readouterr().out
    assert "table16" in listed and "F.2, F.3, Table 16" in listed
    assert "totals" in listed and "Table 19" in listed
