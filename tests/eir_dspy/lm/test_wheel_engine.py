"""The prebuilt engine for real (the xllamacpp wheel's server with SmolLM2): started by EmbeddedServer as
llama-server is, it gives up a taken port for another, serves OpenAI's chat API with a JSON schema and
llama.cpp's timings, records its build, and stops promptly when closed."""

import json
import socket
import time
import urllib.request

import pytest

from eir_dspy.lm import embedded_server
from eir_dspy.lm.embedded_server import EmbeddedServer, ServerConfig, stop_shared_server
from eir_dspy.lm.local_models import model_path

pytestmark = pytest.mark.integration


def chat(url: str, body: dict) -> dict:
    request = urllib.request.Request(f"{url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        return json.loads(reply.read())


def test_the_wheel_serves_a_schema_records_its_build_and_stops(llama_server, monkeypatch):
    assert llama_server.kind == "wheel"
    stop_shared_server()  # an earlier test's server: this one is the only engine
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    taken_port = taken.getsockname()[1]
    ports = iter([taken_port])
    real = embedded_server.free_port
    monkeypatch.setattr(embedded_server, "free_port", lambda: next(ports, None) or real())
    try:
        server = EmbeddedServer(ServerConfig(str(model_path("smollm2-135m")), alias="smol", n_ctx=2048))
    finally:
        taken.close()
    try:
        assert server.port != taken_port  # the taken port was given up for another
        assert server.build.engine == "wheel" and server.build.llama_cpp.isdigit() and server.build.cpu != "unknown"
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
        reply = chat(server.url, {"model": "smol", "max_tokens": 24, "temperature": 0, "seed": 0,
                                  "messages": [{"role": "user", "content": "The capital of France? Answer in JSON."}],
                                  "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}})
        content = reply["choices"][0]["message"]["content"]
        if reply["choices"][0]["finish_reason"] == "stop":
            assert set(json.loads(content)) == {"answer"}
        assert reply["usage"]["completion_tokens"] > 0 and reply["timings"]["predicted_n"] > 0
    finally:
        t0 = time.monotonic()
        server.close()
    assert not server.alive() and time.monotonic() - t0 < 10  # stopped by SIGTERM, not killed after the wait
