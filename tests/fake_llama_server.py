#!/usr/bin/env python
"""A stand-in for the llama-server binary, for offline tests of the managed engine: started by
EmbeddedServer exactly as the real one (EIR_LLAMA_SERVER points at this file), it takes the same
flags, answers /health and /v1/chat/completions with tests.fake_openai.eir_reply, and injects the
faults the tests need:

- FAKE_LLAMA_EXIT_AFTER=n: the process dies (exit code 3) on its n-th chat request, unanswered;
- FAKE_LLAMA_REQUESTS=file: each chat request body is appended to this file as a JSON line;
- FAKE_LLAMA_INDENT_SCHEMA=1: a reply to a request carrying a response_format is laid out over lines
  (indented JSON), as a model may write it under the server's own schema converter.

Like llama-server it fails to start, saying "couldn't bind", when its port is taken. What build it
is, the tests say in a build.json beside the path they start it by (eir_dspy/lm/server_program.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fake_openai import FakeOpenAI, eir_reply  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--alias", default="fake")
    args, _ = p.parse_known_args()
    exit_after = int(os.environ.get("FAKE_LLAMA_EXIT_AFTER") or 0)
    log = os.environ.get("FAKE_LLAMA_REQUESTS")
    indent_schema = bool(os.environ.get("FAKE_LLAMA_INDENT_SCHEMA"))
    fake = FakeOpenAI(eir_reply)
    count = {"n": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self._send(200, {"status": "ok"} if self.path == "/health" else {"data": [{"id": args.alias}]})

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            with lock:
                count["n"] += 1
                if log:
                    with open(log, "a") as f:
                        f.write(json.dumps(body) + "\n")
                if exit_after and count["n"] >= exit_after:
                    print(f"fake llama-server: dying on request {count['n']}", flush=True)
                    os._exit(3)
            status, payload = fake._respond(body, "")
            if indent_schema and "response_format" in body:
                laid_out(payload)
            self._send(status, payload)

        def _send(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    try:
        server = ThreadingHTTPServer((args.host, args.port), Handler)
    except OSError as exc:
        print(f"start: couldn't bind HTTP server socket, hostname: {args.host}, port: {args.port} ({exc})", flush=True)
        sys.exit(1)
    print(f"fake llama-server listening on {args.port}", flush=True)
    server.serve_forever()


def laid_out(payload: dict) -> None:
    """The reply's JSON indented over lines, its completion tokens counted again (the fake counts words)."""
    message = payload["choices"][0]["message"]
    message["content"] = json.dumps(json.loads(message["content"]), indent=2)
    usage = payload["usage"]
    usage["completion_tokens"] = len(message["content"].split())
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]


if __name__ == "__main__":
    main()
