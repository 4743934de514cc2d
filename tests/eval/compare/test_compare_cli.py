"""`python -m eval.compare` over real eval.run runs (scripted LMs) in a throwaway MLflow store."""

import json

import mlflow
import pytest

import eval.compare.__main__ as compare_module
import eval.run as run_module
from tests.fixtures.scripted_runs import (
    ARGS,
    direct_reply,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    reply,
)
from tests.scripted import use_lm


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
    key = "eir_vs_baselines/eir vs {}/hotpotqa/local/scripted"
    assert metrics[f"f1_diff/{key.format('direct')}"] == pytest.approx(100 / 3)
    assert metrics[f"mcnemar_c/{key.format('direct')}"] == 1.0 and metrics["comparisons"] == 2.0
    assert metrics[f"f1_p_holm/{key.format('full_pool')}"] == 1.0
    # One Holm family per baseline over the columns (Table 6): Direct's holds its one column.
    assert metrics[f"family_size/{key.format('direct')}"] == 1.0 and direct.family == "eir_vs_baselines:eir vs direct"
    run = mlflow.get_run(out["run_id"])
    assert run.data.tags["eir.kind"] == "comparison" and run.data.params["bootstrap_resamples"] == "500"
    assert run.data.params["families"] == "eir_vs_baselines"
    assert run.data.params["holm_groups"] == "eir_vs_baselines: per pair" and run.data.params["holm_unformed"] == "p=1"
    # The paper's bootstrap seed unless --seed says otherwise, logged either way.
    assert grid.seed == 20260806 and run.data.params["bootstrap_seed"] == "20260806"
    assert "seed 20260806" in out["files"]["statistics.md"]
    assert sorted(json.loads(run.data.tags["eir.compared_runs"])) == sorted(ids.values())

    names = {a.path for a in mlflow.MlflowClient().list_artifacts(out["run_id"])}
    assert {"table1.md", "statistics.md", "table9.md", "support.md", "evidence_availability.md", "comparisons.csv",
            "f1_vs_calls.png", "evidence_availability.png", "diff_eir_vs_direct_hotpotqa_local-scripted.md"} <= names
    for png in ("f1_vs_calls.png", "evidence_availability.png"):
        data = (out["out"] / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000

    # The comparison run is never read back as a method run.
    again = compare_module.main(["--experiment", "test", "--resamples", "100", "--seed", "7"])
    assert len(again["grid"].runs) == 3 and again["grid"].seed == 7
    assert mlflow.get_run(again["run_id"]).data.params["bootstrap_seed"] == "7"


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


def test_compare_takes_named_families_from_the_command_line_or_a_toml_file(workdir, monkeypatch):
    make_runs(monkeypatch)
    out = compare_module.main(["--experiment", "test", "--no-log", "--resamples", "100",
                               "--family", "mine", "eir vs direct", "full_pool vs direct",
                               "--family", "other", "eir vs full_pool"])
    grid = out["grid"]
    assert [(c.family, c.family_size, c.reference, c.variant) for c in grid.comparisons] == [
        ("mine", 2, "eir", "direct"), ("mine", 2, "full_pool", "direct"), ("other", 1, "eir", "full_pool")]
    assert "mine,eir,direct" in out["files"]["comparisons.csv"] and "| mine (2)" in out["files"]["statistics.md"]

    (workdir / "grid.toml").write_text('[[families]]\nname = "eir_vs_baselines"\ncompare = [["eir", "direct"]]\n')
    out = compare_module.main(["--experiment", "test", "--no-log", "--resamples", "100", "--families", "grid.toml"])
    assert [(c.family, c.variant) for c in out["grid"].comparisons] == [("eir_vs_baselines", "direct")]
    assert out["grid"].methods == ["eir", "direct"]  # Table 1's rows: the baselines family as given

    (workdir / "bad.toml").write_text('[[families]]\nname = "x"\ncompare = "eir vs direct"\n')
    with pytest.raises(SystemExit, match=r"bad\.toml: \[\[families\]\] #1 \('x'\): compare must be"):
        compare_module.main(["--experiment", "test", "--no-log", "--families", "bad.toml"])
    with pytest.raises(SystemExit, match="--family mine: 'eir direct' is not \"A vs B\""):
        compare_module.main(["--experiment", "test", "--no-log", "--family", "mine", "eir direct"])
    with pytest.raises(SystemExit, match="family 'mine' is defined more than once"):
        compare_module.main(["--experiment", "test", "--no-log", "--family", "mine", "eir vs direct",
                             "--family", "mine", "eir vs full_pool"])


def test_stopped_runs_are_compared_on_the_questions_they_finished_only_when_asked(workdir, monkeypatch, capsys):
    ids = make_runs(monkeypatch)
    # Make the direct run one stopped by Ctrl-C after q2 and q3: KILLED, its results file holding those two
    # (q2 twice: a failed first attempt replaced on resume).
    direct = mlflow.get_run(ids["direct"])
    path = workdir / direct.data.tags["eir.results_path"] if not direct.data.tags["eir.results_path"].startswith("/") \
        else direct.data.tags["eir.results_path"]
    lines = open(path).read().splitlines()
    first_q2 = {**json.loads(lines[1]), "prediction": "", "error": "ProviderError: timed out"}
    open(path, "w").write("\n".join([json.dumps(first_q2), lines[1], lines[2]]) + "\n")
    mlflow.MlflowClient().set_terminated(ids["direct"], "KILLED")
    runs = ["--runs", ids["eir"], ids["direct"], "--no-log", "--resamples", "200"]

    out = compare_module.main(runs)  # without --stopped the stopped run is left out, with why
    assert not out["grid"].comparisons
    assert any("status KILLED" in n and "--resume" in n for n in out["grid"].notes)

    out = compare_module.main(runs + ["--stopped"])
    (comparison,) = out["grid"].comparisons
    assert sorted(comparison.ids) == ["q2", "q3"]  # the questions both finished
    assert comparison.f1.diff == pytest.approx(50.0)  # eir: q2 wrong, q3 right; direct: both wrong
    assert any("stopped (KILLED) after 2 of its 3 questions" in n for n in out["grid"].notes)


def test_compare_prints_and_writes_the_warnings_of_a_degenerate_run(workdir, monkeypatch, capsys):
    from tests.fixtures.scripted_runs import DIRECT_WARNINGS, nonsense

    use_lm(monkeypatch, reply)  # EIR's one read a question asks for a title not in the pool: a title fallback
    fallbacks = run_module.main(ARGS)["run_id"]
    use_lm(monkeypatch, nonsense)  # Direct never writes JSON: every turn rejected, no answer
    degenerate = run_module.main(ARGS + ["--method", "direct"])["run_id"]
    capsys.readouterr()
    out = compare_module.main(["--runs", fallbacks, degenerate, "--resamples", "100"])
    printed = capsys.readouterr().out
    name = "direct / hotpotqa / local/scripted / H=6"
    expected = [
        "- eir / hotpotqa / local/scripted / H=6: 3 of 3 reads (100%) were title fallbacks: the agent asked for titles "
        "it had already read or that are not in the pool, so the pool read its first unread paragraph instead (main "
        f"cause title not in the pool: 3) (run {fallbacks})",
        *(f"- {name}: {w.removeprefix('direct: ')} (run {degenerate})" for w in DIRECT_WARNINGS)]
    # Printed before the comparison's tables, and written beside them.
    assert printed.index("# Degenerate runs") < printed.index("# Table 1")
    assert [line for line in printed.splitlines() if line.startswith("- ")] == expected
    assert [line for line in (out["out"] / "degenerate_runs.md").read_text().splitlines() if line.startswith("- ")] \
        == expected
    assert mlflow.get_run(out["run_id"]).data.metrics["degenerate_runs"] == 2.0
    # The runs table: each run's fallbacks a question and its warnings' codes.
    runs = {line.split("|")[2].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in out["files"]["runs.md"].splitlines()[2:] if line.startswith("| ")}
    assert (runs["eir"][10], runs["eir"][12]) == ("1.00", "title_fallbacks")
    assert (runs["direct"][10], runs["direct"][12]) == ("0.00", "rejected_turns, few_reads, no_submission, empty_answers")

    use_lm(monkeypatch, direct_reply)  # Direct reads the gold paragraph by its title, then submits
    healthy = run_module.main(ARGS + ["--method", "direct"])["run_id"]
    quiet = compare_module.main(["--runs", healthy, "--reference", "direct", "--no-log", "--resamples", "100"])
    assert "degenerate_runs.md" not in quiet["files"] and quiet["metrics"]["degenerate_runs"] == 0.0
