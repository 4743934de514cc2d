"""`python -m eval.compare` over real eval.run runs (scripted LMs) in a throwaway MLflow store."""

import json

import mlflow
import pytest

import eval.compare as compare_module
import eval.run as run_module
from tests.test_runner import ARGS, direct_reply, reply, use_lm, workdir  # noqa: F401  (workdir is a fixture)


def make_runs(monkeypatch) -> dict[str, str]:
    """eir and full_pool get q1 and q3 right; direct only q1."""
    ids = {}
    for method, fn in (("eir", reply), ("full_pool", reply), ("direct", direct_reply)):
        use_lm(monkeypatch, fn)
        ids[method] = run_module.main(ARGS + ["--method", method])["run_id"]
    return ids


def test_compare_prints_tables_logs_a_comparison_run_and_writes_plots(workdir, monkeypatch, capsys):
    ids = make_runs(monkeypatch)
    capsys.readouterr()
    out = compare_module.main(["--experiment", "test", "--resamples", "500", "--diff", "eir", "direct"])
    printed = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in printed.split("# Paired statistics")[0].splitlines() if line.startswith("| ")}
    assert rows["eir"] == ["66.7", "3.00"] and rows["full_pool"] == ["66.7", "1.00"] and rows["direct"] == ["33.3", "2.00"]
    assert "hotpotqa · scripted F1" in printed and "Table 9" in printed and "Evidence availability" in printed
    assert "only eir: 1; only direct: 0" in printed  # the --diff

    grid = out["grid"]
    direct = grid.comparison("direct", ("hotpotqa", "local/scripted"))
    assert direct.f1.diff == pytest.approx(100 / 3) and (direct.em.b, direct.em.c, direct.em.p) == (0, 1, 1.0)
    metrics = mlflow.get_run(out["run_id"]).data.metrics
    assert metrics["f1_diff/direct/hotpotqa/local/scripted"] == pytest.approx(100 / 3)
    assert metrics["mcnemar_c/direct/hotpotqa/local/scripted"] == 1.0 and metrics["comparisons"] == 2.0
    assert metrics["f1_p_holm/full_pool/hotpotqa/local/scripted"] == 1.0
    run = mlflow.get_run(out["run_id"])
    assert run.data.tags["eir.kind"] == "comparison" and run.data.params["bootstrap_resamples"] == "500"
    assert sorted(json.loads(run.data.tags["eir.compared_runs"])) == sorted(ids.values())

    names = {a.path for a in mlflow.MlflowClient().list_artifacts(out["run_id"])}
    assert {"table1.md", "statistics.md", "table9.md", "support.md", "evidence_availability.md", "comparisons.csv",
            "f1_vs_calls.png", "evidence_availability.png", "diff_eir_vs_direct_hotpotqa_local-scripted.md"} <= names
    for png in ("f1_vs_calls.png", "evidence_availability.png"):
        data = (out["out"] / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000

    # The comparison run is never read back as a method run.
    again = compare_module.main(["--experiment", "test", "--resamples", "100", "--no-log"])
    assert len(again["grid"].runs) == 3 and again["run_id"] is None


def test_compare_refuses_different_question_sets_and_unknown_selections(workdir, monkeypatch):
    make_runs(monkeypatch)
    use_lm(monkeypatch, reply)
    run_module.main(ARGS + ["--limit", "2"])  # a newer eir run on 2 of the 3 questions
    with pytest.raises(SystemExit, match="different questions.*--intersection"):
        compare_module.main(["--experiment", "test", "--no-log"])
    out = compare_module.main(["--experiment", "test", "--no-log", "--intersection", "--resamples", "100"])
    assert {len(c.ids) for c in out["grid"].comparisons} == {2}
    with pytest.raises(SystemExit, match="no experiment named 'nope'"):
        compare_module.main(["--experiment", "nope", "--no-log"])
    with pytest.raises(SystemExit, match="no run of the reference method 'ssr'"):
        compare_module.main(["--experiment", "test", "--no-log", "--reference", "ssr"])
    with pytest.raises(SystemExit, match="run deadbeef: no such run"):
        compare_module.main(["--runs", "deadbeef", "--no-log"])
