"""eval.run end to end on a scripted LM: MLflow params/metrics/artifacts, failures, resume."""

import json

import mlflow
import pytest

import eval.run as run_module
import eval.summary as summary
from eval.data.loaders import load_questions
from tests.fixtures.scripted_runs import (
    ARGS,
    QUESTIONS,
    corpus_reply,
    direct_reply,
    fill_workdir,  # noqa: F401 (the files the workdir fixture writes here)
    reply,
)
from tests.scripted import field, use_lm


def test_run_logs_params_metrics_and_per_question_table(workdir, monkeypatch):
    use_lm(monkeypatch, reply)
    out = run_module.main(ARGS)
    run = mlflow.get_run(out["run_id"])
    m, p = run.data.metrics, run.data.params
    assert m["answer_f1"] == pytest.approx(200 / 3) and m["em"] == pytest.approx(200 / 3)
    assert m["support_f1"] == 0.0  # cited the distractor sentence every time
    assert m["calls_per_question"] == 3.0 and m["rejected_action_rate"] == 0.0
    assert m["gold_paragraphs_read"] == 0.0  # the fallback read the distractor (first in pool order)
    assert p["method"] == "eir" and p["H"] == "6" and p["n"] == "3" and p["lm"] == "local/scripted"
    assert run.info.run_name == "eir / hotpotqa / local/scripted / H=6"
    names = {a.path for a in mlflow.MlflowClient().list_artifacts(out["run_id"])}
    assert {"per_question.json", "trajectories.json", "results.jsonl"} <= names
    table = json.loads(open(mlflow.artifacts.download_artifacts(run_id=out["run_id"], artifact_path="per_question.json")).read())
    assert table["columns"][:4] == ["id", "question", "gold", "prediction"]
    assert [row[3] for row in table["data"]] == [r["prediction"] for r in out["records"]]


def test_a_failing_question_scores_zero_and_the_run_goes_on(workdir, monkeypatch):
    def broken_on_q2(prompt):
        if QUESTIONS[1][1] in prompt.rsplit("[[ ## question ## ]]", 1)[1]:
            raise RuntimeError("provider exploded")
        return reply(prompt)

    use_lm(monkeypatch, broken_on_q2)
    out = run_module.main(ARGS)
    by_id = {r["id"]: r for r in out["records"]}
    assert "provider exploded" in by_id["q2"]["error"] and by_id["q2"]["answer_f1"] == 0.0
    assert by_id["q1"]["error"] is None and by_id["q1"]["answer_f1"] == 1.0
    assert out["metrics"]["failed_questions"] == 1.0


def test_resume_continues_without_redoing_or_double_counting(workdir, monkeypatch):
    order = [q for _, q, _ in QUESTIONS]
    use_lm(monkeypatch, lambda prompt: reply(prompt, interrupt_on=order[2]))
    with pytest.raises(SystemExit) as stopped:
        run_module.main(ARGS + ["--seed", "-1"])  # seed kept explicit; file order is shuffled identically on resume
    assert stopped.value.code == 130
    run = mlflow.search_runs(experiment_names=["test"], output_format="list")[0]
    assert run.info.status == "KILLED"
    run_id = run.info.run_id
    results = workdir / "runs" / run_id / "results.jsonl"
    done_before = [json.loads(line)["id"] for line in results.read_text().splitlines()]
    assert len(done_before) < 3

    lm = use_lm(monkeypatch, reply)
    out = run_module.main(["--resume", run_id, "--experiment", "test"])
    assert out["run_id"] == run_id
    ids = [json.loads(line)["id"] for line in results.read_text().splitlines()]
    assert sorted(ids) == ["q1", "q2", "q3"]  # each exactly once
    assert len(lm.engine.prompts) == 3 * (3 - len(done_before))  # only the unfinished questions ran
    assert out["metrics"]["n"] == 3.0 and out["metrics"]["calls_per_question"] == 3.0


def test_bad_inputs_fail_with_a_message_naming_what_is_wrong(workdir):
    with pytest.raises(SystemExit, match="missing.gguf is not a file"):
        run_module.main(ARGS + ["--lm-path", "missing.gguf"])
    with pytest.raises(SystemExit, match="--resume abc123: no such run"):
        run_module.main(["--resume", "abc123"])
    with pytest.raises(SystemExit, match="neither a file nor a directory"):
        run_module.main(["--data", "nowhere.jsonl"])


def test_trace_flag_logs_dspy_traces(workdir, monkeypatch):
    use_lm(monkeypatch, reply)
    try:
        out = run_module.main(ARGS + ["--limit", "1", "--trace"])
    finally:
        mlflow.dspy.autolog(disable=True)  # autolog is process-wide; keep it out of later tests
    experiment = mlflow.get_experiment_by_name("test")
    traces = mlflow.search_traces(locations=[experiment.experiment_id], return_type="list")
    assert len(traces) >= 1 and out["metrics"]["n"] == 1.0


def test_reflexion_logs_oracle_and_first_trial_as_two_runs(workdir, monkeypatch):
    use_lm(monkeypatch, direct_reply)
    out = run_module.main(ARGS + ["--method", "reflexion", "--trials", "2"])
    main = mlflow.get_run(out["run_id"])
    assert main.data.params["method"] == "reflexion_oracle" and main.data.params["trials"] == "2"
    assert main.info.run_name == "reflexion_oracle trials=2 / hotpotqa / local/scripted / H=6"
    assert main.data.params["variant"] == main.data.tags["variant"] == "reflexion_oracle trials=2"
    assert main.data.metrics["em"] == pytest.approx(200 / 3)  # q1 in trial 1, q3 in trial 2, q2 never
    # q1: 2 calls; q2 and q3: two trials of 2 calls plus one reflection.
    assert main.data.metrics["calls_per_question"] == pytest.approx((2 + 5 + 5) / 3)
    assert main.data.metrics["support_f1"] == 100.0  # every answer cites the gold sentence, right or wrong
    variants = mlflow.search_runs(experiment_names=["test"], filter_string=f"tags.`eir.variant_of` = '{out['run_id']}'",
                                  output_format="list")
    assert len(variants) == 1
    first = variants[0]
    assert first.data.params["method"] == "reflexion_first" and first.info.run_name.startswith("reflexion_first trials=2 / ")
    assert first.data.metrics["em"] == pytest.approx(100 / 3) and first.data.metrics["calls_per_question"] == 2.0
    names = {a.path for a in mlflow.MlflowClient().list_artifacts(first.info.run_id)}
    assert {"per_question.json", "trajectories.json", "reflexion_first.jsonl"} <= names

    run_module.main(["--resume", out["run_id"], "--experiment", "test"])  # nothing left to run
    again = mlflow.search_runs(experiment_names=["test"], filter_string=f"tags.`eir.variant_of` = '{out['run_id']}'",
                               output_format="list")
    assert [r.info.run_id for r in again] == [first.info.run_id]  # re-logged, not duplicated


def test_reflexion_logs_both_runs_when_its_first_question_fails(workdir, monkeypatch):
    # The first question (in run order) fails outright, so its record has no variants; the pair of
    # runs comes from the method's registry entry, not from that record.
    first = load_questions("hotpotqa", str(workdir / "data.jsonl"), limit=3, seed=0)[0]

    def broken_on_the_first(prompt):
        if field(prompt, "question") == first.question:
            raise RuntimeError("provider exploded")
        return direct_reply(prompt)

    use_lm(monkeypatch, broken_on_the_first)
    out = run_module.main(ARGS + ["--method", "reflexion", "--trials", "2"])
    assert out["records"][0]["id"] == first.id and out["records"][0]["variants"] == {}
    runs = {r.data.tags["method"]: r for r in mlflow.search_runs(experiment_names=["test"], output_format="list")}
    assert set(runs) == {"reflexion_oracle", "reflexion_first"}
    assert runs["reflexion_first"].data.tags["eir.variant_of"] == out["run_id"]
    for name, run in runs.items():
        assert run.info.status == "FINISHED"
        assert run.data.metrics["n"] == 3 and run.data.metrics["failed_questions"] == 1
        path = "results.jsonl" if name == "reflexion_oracle" else "reflexion_first.jsonl"
        lines = [json.loads(line) for line in open(mlflow.artifacts.download_artifacts(
            run_id=run.info.run_id, artifact_path=path)).read().splitlines()]
        failed = next(r for r in lines if r["id"] == first.id)
        assert "provider exploded" in failed["error"]  # the failed question scores 0 in both
        assert failed["em"] == failed["answer_f1"] == failed["support_f1"] == 0.0


def test_ssr_options_are_logged_only_for_ssr(workdir, monkeypatch):
    use_lm(monkeypatch, lambda p: {"facts": "f", "justification": "j", "action": "a"} if "Break the proposed" in p
           else {"verdict": "accept", "correction": "", "confidence": 0.9} if "Check one step" in p else direct_reply(p))
    out = run_module.main(ARGS + ["--method", "ssr", "--votes", "2", "--limit", "1"])
    params = mlflow.get_run(out["run_id"]).data.params
    assert params["votes"] == "2" and params["verifier_temperature"] == "0.7" and "trials" not in params
    assert out["metrics"]["calls_per_question"] == 2 * (2 + 3 * 2)
    direct = run_module.main(ARGS + ["--method", "direct", "--limit", "1"])
    assert "votes" not in mlflow.get_run(direct["run_id"]).data.params


def test_corpus_setting_builds_the_offline_index_searches_and_logs_the_setting(workdir, monkeypatch):
    lm = use_lm(monkeypatch, corpus_reply)
    out = run_module.main(ARGS + ["--setting", "corpus"])
    run = mlflow.get_run(out["run_id"])
    m, p = run.data.metrics, run.data.params
    assert p["setting"] == "corpus" and p["method"] == "eir_corpus" and p["index"].endswith("hotpotqa-abstracts-index")
    assert m["answer_f1"] == 100.0 and m["support_f1"] == 100.0 and m["gold_paragraphs_read"] == 100.0
    assert m["searches_per_question"] == 1.0 and m["reads_per_question"] == 1.0 and m["calls_per_question"] == 4.0
    first = lm.engine.prompts[0]
    assert "distractor" not in first and "q1 gold" not in first  # no pool is shown: only what a search finds
    assert (workdir / "runs" / "corpus" / "hotpotqa-abstracts.tar.bz2").is_file()  # built in the dump's format


def test_summary_cli_tables_a_results_file_on_the_common_questions(workdir, monkeypatch, capsys):
    use_lm(monkeypatch, reply)
    full = run_module.main(ARGS)
    part = run_module.main(ARGS + ["--limit", "1", "--experiment", "other"])
    paths = [str(workdir / "runs" / o["run_id"] / "results.jsonl") for o in (full, part)]
    capsys.readouterr()
    summary.main(paths + ["--common"])
    rows = [line for line in capsys.readouterr().out.splitlines() if "(n=" in line]
    first_f1 = part["records"][0]["answer_f1"] * 100
    assert len(rows) == 2 and all("(n=1)" in r and f"| {first_f1:.1f} " in r for r in rows)


def test_corpus_setting_refuses_methods_without_one_and_a_missing_index(workdir, monkeypatch):
    use_lm(monkeypatch, corpus_reply)
    with pytest.raises(SystemExit, match="--method full_pool has no corpus setting"):
        run_module.main(ARGS + ["--setting", "corpus", "--method", "full_pool"])
    with pytest.raises(SystemExit, match="not an index directory"):
        run_module.main(ARGS + ["--setting", "corpus", "--index", str(workdir / "nowhere")])


def test_ssr_verifier_temperature_defaults_to_zero_in_the_corpus(workdir):
    assert run_module.run_config(run_module.parse_args(["--method", "ssr", "--setting", "corpus"])).options[
        "verifier_temperature"] == 0.0
    assert run_module.run_config(run_module.parse_args(["--method", "ssr"])).options["verifier_temperature"] == 0.7


def test_decoding_is_logged_and_a_non_default_one_names_the_condition(workdir, monkeypatch):
    from eir_dspy.lm.decoding import LOCAL_DEFAULT

    lm = use_lm(monkeypatch, reply)
    default = mlflow.get_run(run_module.main(ARGS)["run_id"])
    assert default.data.params["decoding"] == LOCAL_DEFAULT and default.data.params["method"] == "eir"
    assert default.data.params["acceptance"] == "extract"  # EIR's parse rule (eir_dspy/acceptance.py)
    other = "free" if LOCAL_DEFAULT != "free" else "schema"
    run = mlflow.get_run(run_module.main(ARGS + ["--decoding", other])["run_id"])
    assert run.data.params["decoding"] == other and run.data.params["method"] == f"eir decoding={other}"
    assert run.info.run_name == f"eir decoding={other} / hotpotqa / local/scripted / H=6"
    # free: no response_format reaches the engine; schema: the signature's, on every call
    formats = lm.engine.formats[-9:]
    assert all(f is None for f in formats) if other == "free" else all(f and "schema" in f for f in formats)


def test_an_early_submit_is_one_made_before_the_last_turn(workdir, monkeypatch):
    use_lm(monkeypatch, reply)  # reads once, then submits
    early = run_module.main(ARGS)["records"]
    assert [r["submitted_before_budget"] for r in early] == [True] * 3  # turn 2 of 7
    last = run_module.main(ARGS + ["--budget", "1"])["records"]
    assert [r["submitted_before_budget"] for r in last] == [False] * 3  # turn 2 of 2: what the budget left


def test_ablation_and_budget_runs_are_their_own_variants(workdir, monkeypatch):
    use_lm(monkeypatch, reply)
    control = mlflow.get_run(run_module.main(ARGS + ["--ablation", "no-list-feedback"])["run_id"])
    sweep = mlflow.get_run(run_module.main(ARGS + ["--budget", "8"])["run_id"])
    assert control.data.params["variant"] == "eir no-list-feedback" and control.data.params["ablation"] == "no-list-feedback"
    assert control.info.run_name == "eir no-list-feedback / hotpotqa / local/scripted / H=6"
    assert sweep.data.params["variant"] == "eir H=8" and sweep.info.run_name == "eir H=8 / hotpotqa / local/scripted"


def test_an_ablation_of_a_method_without_ablations_is_refused(workdir, monkeypatch):
    use_lm(monkeypatch, reply)
    with pytest.raises(SystemExit, match="'ablation' is not an option of method direct \\(it takes none\\)"):
        run_module.main(ARGS + ["--method", "direct", "--ablation", "repair"])
