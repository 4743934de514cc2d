"""The managed engine's life, offline: start on a free port, stop, a port taken under it, a second
process refused, and a server that dies mid-run. The binary is tests/fake_llama_server.py, started
by EmbeddedServer exactly as llama-server is (same flags, same health check)."""

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import mlflow
import pytest

import eval.run as run_module
from eir_dspy.lm import embedded_server, server_program
from eir_dspy.lm.embedded_server import EmbeddedServer, EngineError, ServerConfig, shared_server, stop_shared_server
from eir_dspy.lm.engine_lock import EngineBusy, EngineLock, lock_path
from tests.fixtures.served_runs import records_in, write_questions

ROOT = Path(__file__).resolve().parents[3]
FAKE = ROOT / "tests" / "fake_llama_server.py"


def describe_build(binary: Path, llama_cpp: str, cpu: str = "avx2") -> None:
    """What scripts/build_llama_server.sh writes beside a binary it built."""
    binary.with_name("build.json").write_text(json.dumps({"llama_cpp": llama_cpp, "cpu": cpu}))


@pytest.fixture
def fake_binary(tmp_path, monkeypatch):
    binary = tmp_path / "bin" / "llama-server"  # the stand-in, where a built binary would be
    binary.parent.mkdir()
    binary.symlink_to(FAKE)
    describe_build(binary, "4242")
    monkeypatch.setenv("EIR_LLAMA_SERVER", str(binary))
    monkeypatch.setenv("EIR_CACHE_DIR", str(tmp_path / "cache"))  # its own engine lock
    monkeypatch.setenv("FAKE_LLAMA_REQUESTS", str(tmp_path / "requests.jsonl"))
    stop_shared_server()
    # This test's own lock (an earlier in-process engine in this pytest process may hold the real one).
    monkeypatch.setattr(EngineLock, "_fd", None)
    monkeypatch.setattr(EngineLock, "_holders", 0)
    yield tmp_path
    stop_shared_server()
    assert EngineLock._fd is None  # every test leaves the lock released


def run_here(tmp_path: Path, monkeypatch, questions: int) -> Path:
    """An eval.run working directory: its own MLflow store, `questions` fake questions, a model file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    write_questions(tmp_path / "data.jsonl", n=questions)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    return model


def config(tmp_path, slots=2) -> ServerConfig:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    return ServerConfig(str(model), alias="tiny", slots=slots, n_ctx=1024)


def health(url: str) -> int:
    with urllib.request.urlopen(url.replace("/v1", "/health"), timeout=2) as reply:
        return reply.status


@pytest.mark.slow  # a server process on loopback
def test_server_starts_on_a_free_port_with_one_slot_per_question_and_stops(fake_binary):
    server = EmbeddedServer(config(fake_binary, slots=3))
    try:
        assert health(server.url) == 200 and server.alive()
        argv = server.config.argv(("llama-server",), server.port)
        assert argv[argv.index("--parallel") + 1] == "3" and argv[argv.index("--ctx-size") + 1] == str(3 * 1024)
        holder = json.loads(lock_path().read_text())
        assert holder["pid"] == os.getpid() and holder["url"] == server.url
    finally:
        server.close()
    assert not server.alive() and EngineLock._fd is None
    with pytest.raises(OSError):
        health(server.url)


@pytest.mark.slow  # server processes on loopback
def test_shared_server_is_reused_for_the_same_config_and_replaced_for_another(fake_binary):
    first = shared_server(config(fake_binary, slots=2))
    assert shared_server(config(fake_binary, slots=2)) is first
    second = shared_server(config(fake_binary, slots=4))
    assert second is not first and not first.alive() and second.alive()


@pytest.mark.slow  # a server process on loopback
def test_a_port_taken_before_the_server_binds_it_is_given_up_for_another(fake_binary, monkeypatch):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    real = embedded_server.free_port
    monkeypatch.setattr(embedded_server, "free_port", lambda: next(ports, None) or real())
    try:
        server = EmbeddedServer(config(fake_binary))
        assert server.port != taken.getsockname()[1] and health(server.url) == 200
        server.close()
    finally:
        taken.close()


@pytest.mark.slow  # a server process
def test_a_server_that_cannot_start_is_a_clear_error_naming_its_log(fake_binary, monkeypatch):
    broken = fake_binary / "broken-server"
    broken.write_text("#!/bin/sh\necho 'error: model file is not GGUF' >&2\nexit 7\n")
    broken.chmod(0o755)
    monkeypatch.setenv("EIR_LLAMA_SERVER", str(broken))
    with pytest.raises(EngineError, match=r"exit code 7.*\n.*model file is not GGUF"):
        EmbeddedServer(config(fake_binary))
    assert EngineLock._fd is None


def test_without_a_wheel_or_a_binary_the_error_says_how_to_get_either(fake_binary, monkeypatch):
    monkeypatch.delenv("EIR_LLAMA_SERVER")
    monkeypatch.setattr(server_program, "find_spec", lambda name: None)  # xllamacpp not installed
    with pytest.raises(EngineError, match=r"xllamacpp wheel: `pip install -e .`.*scripts/build_llama_server.sh"):
        EmbeddedServer(config(fake_binary))
    assert EngineLock._fd is None


def test_a_second_engine_in_one_process_is_refused_unless_asked_for_alongside(fake_binary):
    EngineLock.acquire("llama-server for a.gguf")
    try:
        with pytest.raises(EngineBusy, match=r"this process already runs .*llama-server for a.gguf.*b.gguf"):
            EngineLock.acquire("llama-server for b.gguf")
        EngineLock.acquire("llama-server for b.gguf", alongside=True)  # the two-endpoint test's servers
        EngineLock.release()
    finally:
        EngineLock.release()


@pytest.mark.slow  # a second process, a server process
def test_a_second_process_wanting_an_engine_is_refused_with_the_holders_url(fake_binary):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]);"
         "from eir_dspy.lm.engine_lock import EngineLock; EngineLock.acquire('llama-server for x.gguf');"
         "EngineLock.describe('llama-server for x.gguf', 'http://127.0.0.1:5999/v1', 'x'); print('held', flush=True);"
         "time.sleep(60)", str(ROOT)],
        env={**os.environ}, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(EngineBusy, match=rf"pid {holder.pid}, llama-server for x.gguf.*"
                                             r"--lm openai/x --api-base http://127.0.0.1:5999/v1 --decoding schema"):
            EmbeddedServer(config(fake_binary))
    finally:
        holder.kill()
        holder.wait()
    server = EmbeddedServer(config(fake_binary))  # the lock went with its process
    server.close()


@pytest.mark.slow  # a server process on loopback
def test_an_engine_dying_mid_run_stops_the_run_keeps_finished_questions_and_resume_completes(fake_binary, monkeypatch):
    model = run_here(fake_binary, monkeypatch, questions=8)
    # Each question takes 3 calls; the server dies on the 10th call, inside the 4th question.
    monkeypatch.setenv("FAKE_LLAMA_EXIT_AFTER", "10")
    args = ["--lm-path", str(model), "--data", "data.jsonl", "--limit", "8", "--threads", "1",
            "--experiment", "test"]
    with pytest.raises(SystemExit) as stopped:
        run_module.main(args)
    assert "the embedded engine stopped serving: EngineDied" in str(stopped.value)
    assert "exit code 3" in str(stopped.value) and "dying on request 10" in str(stopped.value)
    run_id = mlflow.search_runs(experiment_names=["test"], output_format="list")[0].info.run_id
    assert mlflow.get_run(run_id).info.status == "FAILED"
    path = next((fake_binary / "runs").glob("*/results.jsonl"))
    saved = records_in(path)
    assert [r["error"] is None for r in saved] == [True, True, True, False]  # nothing after the dead engine started
    assert saved[3]["engine_failed"] and saved[3]["error"].startswith("EngineDied")

    monkeypatch.delenv("FAKE_LLAMA_EXIT_AFTER")
    out = run_module.main(["--resume", run_id, "--experiment", "test"])
    assert out["metrics"]["n"] == 8 and out["metrics"]["failed_questions"] == 0 and out["metrics"]["em"] == 100.0
    requests = [json.loads(line) for line in (fake_binary / "requests.jsonl").read_text().splitlines()]
    assert len(requests) == 10 + 3 * 5  # the finished 3 questions were not asked again
    assert {r["model"] for r in requests} == {"tiny"} and all(r["max_tokens"] == 2048 for r in requests)


@pytest.mark.slow  # a server process on loopback
def test_a_default_run_serves_its_questions_in_flight_from_one_server_slot_each(fake_binary, monkeypatch):
    model = run_here(fake_binary, monkeypatch, questions=3)
    out = run_module.main(["--lm-path", str(model), "--data", "data.jsonl", "--limit", "3", "--experiment", "test"])
    assert embedded_server._running.config.slots == embedded_server.EMBEDDED_THREADS
    params = mlflow.get_run(out["run_id"]).data.params
    assert params["threads"] == str(embedded_server.EMBEDDED_THREADS) and params["engine"] == "server"
    assert params["lm"] == "local/tiny" and params["decoding"] == "schema"
    requests = [json.loads(line) for line in (fake_binary / "requests.jsonl").read_text().splitlines()]
    # Schema decoding: the signature's schema, as OpenAI's response format, for the server to convert.
    assert len(requests) == 9 and all("grammar" not in r for r in requests)
    assert all(r["response_format"]["type"] == "json_schema" and r["response_format"]["json_schema"]["schema"]["properties"]
               for r in requests)
    assert out["metrics"]["em"] == 100.0 and out["metrics"]["cost_usd"] == 0.0
    # Which build served it, as the server logged it: params, the config tag and every record.
    assert (params["engine_build"], params["llama_cpp_build"], params["cpu_variant"]) == ("binary", "4242", "avx2")
    assert {r["served_by"] for r in out["records"]} == {"binary b4242 avx2"}


@pytest.mark.slow  # server processes on loopback
def test_a_run_is_resumed_only_on_the_build_that_served_it(fake_binary, monkeypatch, capsys):
    model = run_here(fake_binary, monkeypatch, questions=4)
    monkeypatch.setenv("FAKE_LLAMA_EXIT_AFTER", "4")  # dies inside the 2nd question: 1 question saved
    args = ["--lm-path", str(model), "--data", "data.jsonl", "--limit", "4", "--experiment", "test"]
    with pytest.raises(SystemExit):
        run_module.main(args)
    monkeypatch.delenv("FAKE_LLAMA_EXIT_AFTER")
    run_id = mlflow.search_runs(experiment_names=["test"], output_format="list")[0].info.run_id
    describe_build(fake_binary / "bin" / "llama-server", "4243")  # another llama.cpp build now serves
    with pytest.raises(SystemExit) as refused:
        run_module.main(["--resume", run_id, "--experiment", "test"])
    assert "ran on binary b4242 avx2" in str(refused.value) and "binary b4243 avx2" in str(refused.value)
    assert len(records_in(next((fake_binary / "runs").glob("*/results.jsonl")))) == 2  # nothing more was run
    describe_build(fake_binary / "bin" / "llama-server", "4242")
    stop_shared_server()  # as a new process would: the running stand-in's program is unchanged, only its build.json
    out = run_module.main(["--resume", run_id, "--experiment", "test"])
    assert out["metrics"]["n"] == 4 and {r["served_by"] for r in out["records"]} == {"binary b4242 avx2"}


@pytest.mark.slow  # a server process on loopback
def test_a_strict_run_sends_the_one_line_grammar_and_no_schema(fake_binary, monkeypatch):
    model = run_here(fake_binary, monkeypatch, questions=1)
    out = run_module.main(["--lm-path", str(model), "--data", "data.jsonl", "--limit", "1", "--decoding", "strict",
                           "--experiment", "test"])
    requests = [json.loads(line) for line in (fake_binary / "requests.jsonl").read_text().splitlines()]
    assert len(requests) == 3 and all("response_format" not in r for r in requests)
    assert all(r["grammar"].startswith("root ::= ") and 'space ::= " "?' in r["grammar"] for r in requests)
    assert out["metrics"]["em"] == 100.0
