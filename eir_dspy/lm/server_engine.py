"""The DSPy engine in front of the managed llama-server (eir_dspy/lm/embedded_server.py).

Requests go through LiteLLM's OpenAI client to the server's loopback URL, like any served model;
the LM keeps its `local/<model>` name (priced at 0, paired with earlier local runs). Three things
differ from a generic OpenAI-compatible server:

- a response schema is sent as OpenAI's `json_schema` response format and llama-server converts
  it to a grammar, except under `--decoding strict` (`one_line`), whose schema is sent as the
  one-line grammar the project builds (eir_dspy/lm/grammar.py: the server's own lets JSON break lines);
- llama-server reads `max_tokens`, not LiteLLM's `max_completion_tokens`, and a seed;
- a failed request from a server that is no longer running raises `EngineDied` (not retried),
  which stops the run with the server's exit code and log.
"""

from __future__ import annotations

import json
import time

from eir_dspy.lm.embedded_server import EmbeddedServer, EngineDied
from eir_dspy.lm.grammar import one_line_gbnf
from eir_dspy.lm.typed_engine import TypedLiteLLMEngine


class EmbeddedServerEngine(TypedLiteLLMEngine):
    def __init__(self, server: EmbeddedServer, *, max_tokens: int, timeout: float, one_line: bool = False) -> None:
        super().__init__(wire_model=f"openai/{server.config.alias}", api_base=server.url, api_key="local",
                         timeout=timeout)
        self.server = server
        self.max_tokens = max_tokens
        self.one_line = one_line  # strict decoding: JSON on one line
        # Set `trace` to a list to get one dict per call: token counts, seconds (and the server's own split into
        # prompt evaluation and generation), output text and the request as sent (benchmarks/ replay it).
        self.trace: list[dict] | None = None

    def server_request(self, request: dict) -> dict:
        """The OpenAI-shaped request as llama-server should get it."""
        request = dict(request)
        extra = dict(request.get("extra_body") or {})
        # LiteLLM sends OpenAI's max_completion_tokens; llama-server reads max_tokens.
        extra["max_tokens"] = request.get("max_tokens") or request.get("max_completion_tokens") or self.max_tokens
        extra.setdefault("seed", request.get("seed") or 0)  # sampled calls (SSR's votes) repeat
        fmt = request.pop("response_format", None)
        schema = _schema(fmt)
        if schema is not None and self.one_line:
            extra["grammar"] = one_line_gbnf(json.dumps(schema))  # property order is the field order
        elif schema is not None:  # the server keeps the schema's property order too
            request["response_format"] = {"type": "json_schema", "json_schema": {"name": _name(fmt), "schema": schema}}
        elif fmt is not None:
            request["response_format"] = fmt  # JSON mode: any JSON object
        request["extra_body"] = extra
        return request

    def complete(self, request):
        from dspy.clients._litellm import get_litellm
        from dspy.clients.engines.litellm_errors import litellm_errors

        data = self.server_request(self._arguments(request))
        t0 = time.perf_counter()
        try:
            with litellm_errors(model=request.model):
                raw = get_litellm(feature="LiteLLM engine").completion(**data)
        except Exception as exc:
            if self.server.died():
                raise EngineDied(f"the embedded llama-server died mid-run ({self.server.failure()})") from exc
            raise
        if self.trace is not None:
            self.trace.append({**_trace_row(raw, time.perf_counter() - t0), "request": data})
        return self._response(raw, request)

    def __repr__(self) -> str:
        return f"EmbeddedServerEngine({self.server.url}, {self.server.config.slots} slots)"


def _schema(fmt) -> dict | None:
    """The JSON schema of a response_format, in OpenAI's shape or lm15's."""
    if not isinstance(fmt, dict):
        return None
    if fmt.get("type") == "json_schema":
        return fmt["json_schema"]["schema"]
    return fmt.get("schema")


def _name(fmt: dict) -> str:
    return (fmt.get("json_schema") or {}).get("name") or fmt.get("name") or "response"


def _trace_row(raw, seconds: float) -> dict:
    usage = getattr(raw, "usage", None) or {}
    if not isinstance(usage, dict):
        usage = usage.model_dump() if hasattr(usage, "model_dump") else dict(usage)
    prompt = usage.get("prompt_tokens", 0) or 0
    cached = ((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    choices = getattr(raw, "choices", None) or [None]
    text = getattr(getattr(choices[0], "message", None), "content", None) or ""
    timings = getattr(raw, "timings", None) or {}  # llama-server's own: prompt evaluation and generation
    prompt_s, generate_s = (timings.get("prompt_ms") or 0) / 1000, (timings.get("predicted_ms") or 0) / 1000
    return {"prompt_tokens": prompt, "prompt_evaluated": prompt - cached, "prompt_cached": cached,
            "generated": usage.get("completion_tokens", 0) or 0, "seconds": seconds, "prompt_s": prompt_s,
            "generate_s": generate_s, "other_s": seconds - prompt_s - generate_s, "text": text}
