"""A DSPy 3.4 engine that runs a GGUF model in-process with llama-cpp-python.

Implements the canonical `complete(Request) -> Response` contract (dspy.clients.engines.base).
A JSON schema in the request's response_format becomes a llama.cpp grammar, so the local
model can only emit, for example, a title that is really in the pool.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from dspy.lm15 import ContextLengthError, InvalidRequestError, Message, Response, TextPart, Usage, response_to_events


def _bounded_ram_cache():
    from llama_cpp import LlamaRAMCache

    class BoundedRAMCache(LlamaRAMCache):
        """LlamaRAMCache counts only the KV bytes of a state, but each state also holds a copy of the
        logits buffer (n_batch x n_vocab floats: 311 MB for Qwen2.5), so its 2 GiB cap never bit and
        a 12-turn corpus run grew past 14 GB. Count every array a state keeps."""

        @property
        def cache_size(self) -> int:
            return sum(s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes for s in self.cache_state.values())

    return BoundedRAMCache


class LlamaEngine:
    """One llama context. It is not thread-safe, so calls are serialised by a lock."""

    constrained_decoding = True  # read by eir_dspy.lm.supports_grammar

    def __init__(self, model_path: str | Path, n_ctx: int = 8192, n_threads: int | None = None, seed: int = 0):
        from llama_cpp import Llama  # imported here so API-model users never need it

        self.model_path = str(model_path)
        self.n_ctx = n_ctx
        # llama-cpp-python defaults to half the cores; on a 2-core machine that halves speed.
        # $EIR_LLAMA_THREADS splits the cores when two runs share a machine.
        threads = n_threads or int(os.environ.get("EIR_LLAMA_THREADS") or 0) or os.cpu_count() or 1
        self._llama = Llama(
            model_path=self.model_path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, seed=seed,
            verbose=False,
        )
        # The context itself reuses the prefix of the previous call only; the RAM cache keeps
        # states of earlier prompts too, so alternating roles (turn, final, next question's turn)
        # each find their own long system prompt already evaluated.
        self._llama.set_cache(_bounded_ram_cache()(capacity_bytes=2 << 30))
        self._lock = threading.Lock()

    def complete(self, request) -> Response:
        messages = []
        if request.system is not None:
            system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system)
            messages.append({"role": "system", "content": system})
        messages.extend({"role": m.role, "content": m.text or ""} for m in request.messages)
        config = request.config
        kwargs = {
            "temperature": 0.0 if config.temperature is None else config.temperature,
            "max_tokens": config.max_tokens,
        }
        if config.seed is not None:
            kwargs["seed"] = config.seed
        fmt = config.response_format
        if fmt is not None:
            kwargs["response_format"] = {"type": "json_object", **({"schema": fmt["schema"]} if "schema" in fmt else {})}
        with self._lock:
            try:
                out = self._llama.create_chat_completion(messages=messages, **kwargs)
            except ValueError as exc:  # llama-cpp-python reports context overflow this way
                if "context" in str(exc).lower():
                    raise ContextLengthError(str(exc)) from exc
                raise InvalidRequestError(str(exc)) from exc
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        finish = choice.get("finish_reason") or "stop"
        return Response(
            id=out.get("id"),
            model=Path(self.model_path).name,
            message=Message.assistant([TextPart(choice["message"].get("content") or "")]),
            finish_reason=finish if finish in ("stop", "length") else "stop",
            usage=Usage(input_tokens=usage.get("prompt_tokens", 0), output_tokens=usage.get("completion_tokens", 0)),
        )

    def stream(self, request):
        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass
