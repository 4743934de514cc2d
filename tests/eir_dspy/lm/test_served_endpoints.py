"""Served models at scale, for real: two llama-server processes with SmolLM2 on loopback, started as
the project starts its own (EmbeddedServer), one run spread over both through LiteLLM's Router,
against the same run on one server."""

from pathlib import Path

import dspy
import pytest

from eir_dspy.lm.embedded_server import EmbeddedServer, ServerConfig, stop_shared_server

pytestmark = pytest.mark.integration

LIMIT, BUDGET = 4, 2


def served(server: EmbeddedServer) -> int:
    """Chat completions a server answered: llama-server logs one slot launch a request."""
    return Path(server.log_path).read_text(errors="replace").count("launch_slot_")


def test_one_run_over_two_llama_servers_matches_one_server(tmp_path, monkeypatch, data_dir, llama_server):
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
    stop_shared_server()  # an earlier test's embedded server: these two are the only engines
    # One slot and one thread each: the two servers share this machine's two cores, and no batch
    # changes a greedy token. The second is started alongside the first on purpose (the engine
    # lock refuses a second engine otherwise): the Router needs two endpoints of one model.
    config = ServerConfig(str(model), alias="smollm2", slots=1, n_ctx=8192, threads=1)
    servers = [EmbeddedServer(config)]
    try:
        servers.append(EmbeddedServer(config, alongside=True))

        def run(urls: list[str]) -> dict:
            return run_module.main(["--lm", "openai/smollm2", "--api-base", *urls, "--data", str(data_dir),
                                    "--limit", str(LIMIT), "--budget", str(BUDGET), "--max-tokens", "48",
                                    "--decoding", "free", "--threads", "2", "--experiment", "served"])
        one = run([servers[0].url])
        alone = served(servers[0])
        two = run([s.url for s in servers])
        routed = [served(servers[0]) - alone, served(servers[1])]
    finally:
        for server in reversed(servers):
            server.close()
    by_id = lambda out: {r["id"]: r for r in out["records"]}  # noqa: E731
    a, b = by_id(one), by_id(two)
    assert all(r["error"] is None and r["cache_hits"] == 0 for r in [*a.values(), *b.values()])
    calls = sum(r["calls"] for r in b.values())
    assert alone == sum(r["calls"] for r in a.values()) > 0
    # Both servers answered part of the routed run, and together exactly its calls.
    assert min(routed) > 0 and sum(routed) == calls
    # The same questions and the same calls whichever server answered. Not the same tokens: a
    # llama-server that reuses a cached prompt prefix evaluates the rest in other batches, and the
    # float sums that changes can flip a greedy token (seen: 145 against 173 completion tokens on
    # one of 4 questions), so a question's first prompt is the last thing both runs must share.
    assert set(a) == set(b)
    for qid in a:
        assert a[qid]["calls"] == b[qid]["calls"], qid
        assert a[qid]["lm_calls"][0]["prompt_tokens"] == b[qid]["lm_calls"][0]["prompt_tokens"], qid
