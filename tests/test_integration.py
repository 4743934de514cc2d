"""End to end on the real local LM and real HotpotQA questions (the plumbing, not the score)."""

import json
from importlib.metadata import version
from pathlib import Path

import mlflow
import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("decoding", ["schema", "free", "strict"])  # schema: the embedded model's default
def test_eir_on_two_real_questions_logs_an_mlflow_run(decoding, tmp_path, monkeypatch, data_dir, llama_server):
    import eval.run as run_module

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    # Free decoding lets SmolLM2 ramble; 256 tokens keep a call to seconds and any JSON it means to write.
    out = run_module.main(["--data", str(data_dir), "--lm", "smollm2-135m", "--limit", "2", "--budget", "2",
                           "--decoding", decoding, "--max-tokens", "256", "--experiment", "integration"])
    run = mlflow.get_run(out["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.params["lm"] == "local/smollm2-135m" and run.data.params["n"] == "2"
    assert run.data.params["decoding"] == decoding
    # Served by the prebuilt engine, and the run says which build: the wheel's llama.cpp release, the kernels
    # its server reported (AVX2 on x86-64).
    params = run.data.params
    assert params["engine_build"] == "wheel" and params["cpu_variant"] != "unknown"
    assert params["llama_cpp_build"] == version("xllamacpp").rsplit(".", 1)[-1]
    assert {r["served_by"] for r in out["records"]} == {f"wheel b{params['llama_cpp_build']} {params['cpu_variant']}"}
    for key in ("answer_f1", "em", "support_f1", "calls_per_question", "tokens_per_question", "wall_time_s"):
        assert key in run.data.metrics
    # Real calls happened and stayed within EIR's budget: at most (H + 1) turns + 1 final call.
    records = out["records"]
    assert all(r["error"] is None for r in records), [r["error"] for r in records]
    assert all(2 <= r["calls"] <= 4 and r["prompt_tokens"] > 100 for r in records)
    assert all(r["calls_by_role"].get("final") == 1 for r in records)
    table = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=out["run_id"],
                                                                artifact_path="per_question.json")).read_text())
    assert len(table["data"]) == 2 and table["columns"][0] == "id"


# One real question per baseline, H=1: every signature's grammar compiles and decodes on llama.cpp
# and each method's calls stay within its own bound.
BASELINES = {
    "direct": ([], lambda roles, h: roles.keys() == {"action"} and roles["action"] <= h),
    "full_pool": ([], lambda roles, h: roles == {"final": 1}),
    "ssr": (["--votes", "2"], lambda roles, h: roles["action"] <= h and roles.get("verify", 0) <= 3 * 2 * h
            and roles.get("refine", 0) <= h),
    "reflexion": (["--trials", "2"], lambda roles, h: roles["action"] <= 2 * h and roles.get("reflect", 0) <= 1),
}


@pytest.mark.parametrize("method", sorted(BASELINES))
def test_each_baseline_runs_on_a_real_question(method, tmp_path, monkeypatch, data_dir, llama_server):
    import eval.run as run_module

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    extra, within_bounds = BASELINES[method]
    out = run_module.main(["--data", str(data_dir), "--lm", "smollm2-135m", "--limit", "1", "--budget", "1",
                           "--method", method, "--max-tokens", "256", "--experiment", "integration", *extra])
    (record,) = out["records"]
    assert record["error"] is None, record["error"]
    assert record["prompt_tokens"] > 100 and within_bounds(record["calls_by_role"], 1), record["calls_by_role"]
    assert mlflow.get_run(out["run_id"]).info.status == "FINISHED"


@pytest.mark.parametrize("method", ["eir", "direct"])
def test_corpus_setting_on_a_real_question(method, tmp_path, monkeypatch, data_dir, llama_server):
    """The offline corpus is built from the real HotpotQA files; the real model searches it."""
    import eval.run as run_module

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.setenv("EIR_INDEX_DIR", str(tmp_path / "index"))
    out = run_module.main(["--data", str(data_dir), "--lm", "smollm2-135m", "--limit", "1", "--setting", "corpus",
                           "--method", method, "--max-tokens", "256", "--experiment", "integration"])
    (record,) = out["records"]
    assert record["error"] is None, record["error"]
    assert json.loads((tmp_path / "index" / "corpus.json").read_text())["paragraphs"] > 5000
    assert 1 <= record["turns"] <= 12 and record["reads"] <= 6
    assert record["calls_by_role"]["action"] == record["turns"]  # one call per turn, no more
    assert mlflow.get_run(out["run_id"]).data.params["setting"] == "corpus"
