"""A fake OpenAI-compatible chat server on loopback, for runner tests through the real provider path.

`--lm openai/fake --api-base <url>` sends requests through DSPy and LiteLLM exactly as an API
model would; the server answers with `reply(prompt) -> dict | str`, after `delay` seconds, or
injects a fault: `fail=(status, message)` on every request, or `hang_first=n` requests that
sleep `hang_seconds` before answering (a client with a shorter timeout gives up on them).

Run as a script it serves until killed and prints its URL (for subprocess tests):
    python -m tests.fake_openai --delay 0.5
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    def __init__(self, reply: Callable[[str], dict | str], delay: float = 0.0, fail: tuple[int, str] | None = None,
                 hang_first: int = 0, hang_seconds: float = 5.0) -> None:
        self.reply, self.delay, self.fail = reply, delay, fail
        self.hang_first, self.hang_seconds = hang_first, hang_seconds
        self.requests: list[dict] = []
        self.authorizations: list[str] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _respond(self, body: dict, authorization: str) -> tuple[int, dict]:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            n = len(self.requests)
        if self.fail:
            status, message = self.fail
            return status, {"error": {"message": message, "type": "invalid_request_error", "code": status}}
        time.sleep(self.hang_seconds if n <= self.hang_first else self.delay)
        prompt = "\n".join(_text(m.get("content")) for m in body.get("messages", []))
        out = self.reply(prompt)
        text = out if isinstance(out, str) else json.dumps(out)
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return 200, {"id": f"fake-{n}", "object": "chat.completion", "created": int(time.time()),
                     "model": body.get("model", "fake"), "usage": usage,
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": text}}]}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, payload = fake._respond(body, self.headers.get("Authorization", ""))
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, *args):
                pass

        return Handler


def _text(content) -> str:
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def eir_reply(prompt: str) -> dict:
    """A model that reads once by an unknown title (the pool falls back to the first paragraph),
    then submits; the final call answers "Varn" citing the first sentence it was shown."""
    if "[[ ## evidence ## ]]" in prompt:
        evidence = prompt.rsplit("[[ ## evidence ## ]]", 1)[1]
        title = next((line[3:].strip() for line in evidence.splitlines() if line.startswith("## ")), "")
        return {"answer": "Varn", "citations": [{"title": title, "sentence": 0}] if title else []}
    last = prompt.rsplit("[[ ## last_result ## ]]", 1)[1]
    kind = "submit" if "reads left" in last else "read"
    return {"requirement_updates": [], "conclusion_updates": [],
            "action": {"kind": kind, "title": "no such title", "answer": "Varn"}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = p.parse_args()
    with FakeOpenAI(eir_reply, delay=args.delay) as fake:
        print(fake.url, flush=True)
        try:
            fake.thread.join()
        except KeyboardInterrupt:
            pass
    sys.exit(0)


if __name__ == "__main__":
    main()
