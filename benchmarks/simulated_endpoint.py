"""A simulated API model on 127.0.0.1: OpenAI's chat completions and Anthropic's messages, answered
by a competent agent that knows the gold (benchmarks/simulated_agent.py), at a set latency and fault rate.

It stands in for the model so the harness can run the paper's grid at the paper's scale in minutes:
eval.run and eval.grid talk to it through DSPy and LiteLLM exactly as to an API
(`--lm openai/gpt-4.1-mini --api-base URL/v1`, `--lm anthropic/claude-haiku-4-5 --api-base URL`).

    python benchmarks/simulated_endpoint.py --data hotpotqa=FILE 2wiki=FILE --latency 0.02 --faults 0.01

prints its URL and serves until killed. Deterministic under --seed: a reply is a function of the seed
and the request, so a rerun, a resumed run or another thread order gets the same answers. Faults,
at --faults of requests, a quarter each:
- 429 and 500 (retried by the client), and a hang of --hang seconds with no answer (the client's
  timeout gives up and retries): decided per attempt, so a retry of the same request gets through;
- a malformed JSON reply (200, cut short): decided per request, so the same request always gets it.
Usage is counted with eir_dspy/accounting/tokens.py (o200k_base), the unit of eval.grid --dry-run's
bound. GET /stats returns what it served: requests, faults by kind, tokens, requests it could not place.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from benchmarks.simulated_agent import Gold, Policy, SimulatedAgent, key  # noqa: E402
from eir_dspy.accounting.tokens import chat_prompt_tokens, content_text, count_tokens  # noqa: E402

FAULTS = ("429", "500", "hang", "malformed")


class SimulatedEndpoint:
    def __init__(self, agent: SimulatedAgent, *, seed: int = 0, latency: float = 0.0, jitter: float = 0.0,
                 faults: float = 0.0, hang: float = 30.0, port: int = 0) -> None:
        self.agent, self.seed, self.latency, self.jitter = agent, seed, latency, jitter
        self.faults, self.hang = faults, hang
        self._lock = threading.Lock()
        self._attempts: dict[bytes, int] = {}
        self.stats = {"requests": 0, "answered": 0, "faults": dict.fromkeys(FAULTS, 0), "prompt_tokens": 0,
                      "completion_tokens": 0, "by_model": {}, "agent_errors": 0}
        count_tokens("warm up")  # load the tokenizer now, not in the first request's time
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True
        self.server.request_queue_size = 128

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    # ------------------------------------------------------------ one request

    def answer(self, raw: bytes, anthropic: bool) -> tuple[int, dict | str | None]:
        """(status, body): body None means hang up without answering."""
        body = json.loads(raw or b"{}")
        digest = hashlib.blake2b(raw, digest_size=16).digest()
        with self._lock:
            attempt = self._attempts.get(digest, 0)
            self._attempts[digest] = attempt + 1
            self.stats["requests"] += 1
        fault = self._fault(digest, attempt)
        if fault in ("429", "500"):
            self._count(fault)
            kind = "rate_limit_error" if fault == "429" else "api_error"
            return int(fault), {"error": {"message": f"simulated {fault}", "type": kind}}
        if fault == "hang":
            self._count(fault)
            time.sleep(self.hang)
            return 0, None
        time.sleep(self.latency + self.jitter * key(self.seed, "latency", digest.hex(), attempt))
        messages = _messages(body, anthropic)
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        try:
            text = json.dumps(self.agent.reply(system, user))
        except Exception as exc:  # the simulation's own bug: a 500 the rehearsal sees, counted apart
            with self._lock:
                self.stats["agent_errors"] += 1
            print(f"agent error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return 500, {"error": {"message": f"simulated agent failed: {exc}", "type": "api_error"}}
        if key(self.seed, "malformed", digest.hex()) < self.faults / len(FAULTS):
            self._count("malformed")
            text = text[: max(1, len(text) // 2)]
        prompt, completion = chat_prompt_tokens(messages), count_tokens(text)
        model = body.get("model", "?")
        with self._lock:
            self.stats["answered"] += 1
            self.stats["prompt_tokens"] += prompt
            self.stats["completion_tokens"] += completion
            self.stats["by_model"][model] = self.stats["by_model"].get(model, 0) + 1
        if anthropic:
            return 200, {"id": f"msg_{digest.hex()}", "type": "message", "role": "assistant", "model": model,
                         "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                         "stop_sequence": None, "usage": {"input_tokens": prompt, "output_tokens": completion}}
        return 200, {"id": f"chatcmpl-{digest.hex()}", "object": "chat.completion", "created": 0, "model": model,
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": text}}],
                     "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                               "total_tokens": prompt + completion}}

    def _fault(self, digest: bytes, attempt: int) -> str | None:
        """A transient fault for this attempt (429, 500, hang), at 3/4 of the fault rate."""
        if key(self.seed, "fault", digest.hex(), attempt) >= self.faults * 3 / len(FAULTS):
            return None
        return FAULTS[int(key(self.seed, "fault-kind", digest.hex(), attempt) * 3)]

    def _count(self, fault: str) -> None:
        with self._lock:
            self.stats["faults"][fault] += 1

    def snapshot(self) -> dict:
        with self._lock:
            return json.loads(json.dumps({**self.stats, "unplaced": dict(self.agent.unknown)}))

    # ------------------------------------------------------------ HTTP

    def _handler(self):
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as API clients use it

            def do_GET(self):  # noqa: N802 (http.server's name)
                self._send(200, endpoint.snapshot()) if self.path.rstrip("/") == "/stats" else self._send(404, {})

            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.path.endswith(("/chat/completions", "/messages")):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                status, payload = endpoint.answer(raw, anthropic=self.path.endswith("/messages"))
                if payload is None:  # a hang: the client has given up by now
                    self.close_connection = True
                    return
                self._send(status, payload)

            def _send(self, status: int, payload) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    if status == 429:
                        self.send_header("Retry-After", "1")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        return Handler


def _messages(body: dict, anthropic: bool) -> list[dict]:
    """The request's messages as {"role", "content": text}, the system prompt first."""
    messages = [{"role": m.get("role", "user"), "content": content_text(m.get("content"))} for m in body.get("messages", [])]
    if anthropic and body.get("system"):
        messages.insert(0, {"role": "system", "content": content_text(body["system"])})
    return messages


def load_gold(specs: list[str]) -> Gold:
    from eval.data.loaders import load_file

    questions = []
    for spec in specs:
        dataset, _, path = spec.partition("=")
        questions += load_file(path, dataset)
    return Gold(questions)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", nargs="+", required=True, metavar="DATASET=FILE", help="the questions it knows")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--latency", type=float, default=0.02, help="seconds before each answer")
    p.add_argument("--jitter", type=float, default=0.0, help="up to this many seconds more, by a hash")
    p.add_argument("--faults", type=float, default=0.0, help="share of requests that fault (429, 500, hang, malformed)")
    p.add_argument("--hang", type=float, default=30.0, help="seconds a hang holds the request without answering")
    p.add_argument("--wrong", type=float, default=Policy.wrong, help="share of questions first answered wrong")
    p.add_argument("--distract", type=float, default=Policy.distract, help="share of questions a distractor is read first")
    p.add_argument("--disagree", type=float, default=Policy.disagree, help="share of SSR verifications that reject")
    p.add_argument("--improve", type=float, default=Policy.improve, help="share of later Reflexion trials that answer right")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args(argv)
    policy = Policy(seed=args.seed, wrong=args.wrong, distract=args.distract, disagree=args.disagree,
                    improve=args.improve)
    endpoint = SimulatedEndpoint(SimulatedAgent(load_gold(args.data), policy), seed=args.seed, latency=args.latency,
                                 jitter=args.jitter, faults=args.faults, hang=args.hang, port=args.port)
    print(endpoint.url, flush=True)
    try:
        endpoint.server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
