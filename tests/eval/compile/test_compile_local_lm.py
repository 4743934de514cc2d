"""eval.compile on the real local LM (SmolLM2-135M) and real HotpotQA questions: BootstrapFewShot and
GEPA each compile EIR on the training split, select on the dev split, save a program file, and
`eval.run --program` runs the file under its own variant (the plumbing, not the score)."""

import json
from pathlib import Path

import mlflow
import pytest

pytestmark = pytest.mark.integration

TRAIN = "hotpotqa/hotpot_dev_distractor.rpt_sample300_seed2.jsonl"  # the training split
DEV = "hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl"  # the selection split
LM = ["--lm", "smollm2-135m", "--max-tokens", "256", "--budget", "1"]  # H=1: calls stay few and short


@pytest.mark.parametrize("optimizer, extra, roles", [
    ("bootstrap", ["--max-bootstrapped-demos", "1", "--metric-threshold", "0"], {"action", "final"}),
    ("gepa", ["--gepa-max-metric-calls", "4"], {"action", "final"}),  # see the note below
])
# GEPA's reflection is not asserted here: on SmolLM2 every turn's output was unusable (a FailedPrediction in
# DSPy's trace), so GEPA found no reflective example and proposed nothing (measured 2026-12-05; its log says
# "No valid predictions found for any module"). The scripted-LM tests assert the `reflect` calls.
def test_compile_runs_on_the_real_local_lm_and_its_program_runs(optimizer, extra, roles, tmp_path, monkeypatch,
                                                                data_dir, llama_server):
    import eval.compile.__main__ as compile_main
    import eval.run as run_module

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    out = compile_main.main(["--method", "eir", "--optimizer", optimizer, "--train", str(data_dir / TRAIN),
                             "--dev", str(data_dir / DEV), "--n-train", "2", "--n-dev", "1", "--score", "dev",
                             "--name", f"real-{optimizer}", "--out", str(tmp_path), "--experiment", "compile-real",
                             *LM, *extra])
    run = mlflow.get_run(out["run_id"])
    assert run.info.status == "FINISHED" and run.data.params["optimizer"] == optimizer
    assert run.data.params["lm"] == "local/smollm2-135m"
    # The optimizer's own calls were made on the real model and counted by role.
    by_role = out["ledger"].by_role()
    assert roles <= by_role.keys(), by_role
    assert run.data.metrics["compile_calls"] == sum(by_role.values())
    saved = json.loads(Path(out["path"]).read_text())
    assert saved["metadata"]["eir"]["optimizer"] == optimizer

    ran = run_module.main(["--data", str(data_dir / DEV), "--program", out["path"], "--limit", "1",
                           "--experiment", "compile-real", *LM])
    assert mlflow.get_run(ran["run_id"]).data.tags["variant"] == f"eir compiled=real-{optimizer} H=1"
    record = ran["records"][0]
    assert record["error"] is None and 2 <= record["calls"] <= 3  # H=1: one read turn, one more decision, final
