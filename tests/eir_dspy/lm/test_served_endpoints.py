"""Served models at scale, for real: two `python -m llama_cpp.server` processes with SmolLM2 on
loopback, one run spread over both through LiteLLM's Router, against the same run on one server."""

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dspy
import pytest

from eir_dspy.lm.embedded_server import free_port

pytestmark = pytest.mark.integration

LIMIT, BUDGET = 4, 2


def start_server(model: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    # One thread each: the two servers share this machine's two cores.
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2",
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", "1", "--n_threads_batch", "1"]
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"llama_cpp.server did not start within 120 s: {log.read_text()[-2000:]}")


def served(log: Path) -> int:
    """Chat completions a server answered, from its access log."""
    return log.read_text().count("POST /v1/chat/completions")


def test_one_run_over_two_llama_cpp_servers_matches_one_server(tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is installed by scripts/setup.sh")
    data = os.environ.get("EIR_DATA_DIR")
    if not data or not Path(data).is_dir():
        pytest.fail("set EIR_DATA_DIR to the benchmark data directory (e.g. ../shared/data/raw)")
    data = Path(data).resolve()  # before chdir: the variable may be relative (.ci/run sets ../shared/data/raw)
    import eval.run as run_module
    from eir_dspy.lm.local_models import model_path

    model = model_path("smollm2-135m")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    # No DSPy response cache: every call must reach a server. (~/.dspy_cache outlives earlier runs
    # of this test, and DSPY_CACHEDIR is read only when dspy is first imported.)
    monkeypatch.setattr(dspy, "cache", dspy.cache)  # restored after the test
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    logs = [tmp_path / f"server{i}.log" for i in range(2)]
    servers = [start_server(model, log) for log in logs]
    try:
        def run(urls: list[str]) -> dict:
            return run_module.main(["--lm", "openai/smollm2", "--api-base", *urls, "--data", str(data),
                                    "--limit", str(LIMIT), "--budget", str(BUDGET), "--max-tokens", "48",
                                    "--decoding", "free", "--threads", "2", "--experiment", "served"])
        one = run([servers[0][1]])
        alone = served(logs[0])
        two = run([url for _, url in servers])
    finally:
        for proc, _ in servers:
            proc.terminate()
        for proc, _ in servers:
            proc.wait(timeout=30)
    by_id = lambda out: {r["id"]: r for r in out["records"]}  # noqa: E731
    a, b = by_id(one), by_id(two)
    assert all(r["error"] is None and r["cache_hits"] == 0 for r in [*a.values(), *b.values()])
    calls = sum(r["calls"] for r in b.values())
    assert alone == sum(r["calls"] for r in a.values()) > 0
    # Both servers answered part of the routed run, and together exactly its calls.
    routed = [served(logs[0]) - alone, served(logs[1])]
    assert min(routed) > 0 and sum(routed) == calls
    # Greedy decoding of one model: the same calls and tokens whichever server answered.
    for qid in a:
        assert (a[qid]["calls"], a[qid]["prompt_tokens"], a[qid]["completion_tokens"]) == \
            (b[qid]["calls"], b[qid]["prompt_tokens"], b[qid]["completion_tokens"]), qid
