"""A DSPy 3.4 engine that runs a GGUF model in-process with llama-cpp-python.

Implements the canonical `complete(Request) -> Response` contract (dspy.clients.engines.base).
A JSON schema in the request's response_format becomes a llama.cpp grammar, so the local
model can only emit, for example, a title that is really in the pool.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from pathlib import Path

from dspy.lm15 import ContextLengthError, InvalidRequestError, Message, Response, TextPart, Usage, response_to_events

from eir_dspy.lm.grammar import schema_gbnf


def _bounded_ram_cache():
    from llama_cpp import LlamaRAMCache

    class BoundedRAMCache(LlamaRAMCache):
        """LlamaRAMCache counts only the KV bytes of a state; count every array a state keeps. (Its
        logits copy, 311 MB for Qwen2.5, once let a 12-turn corpus run grow past 14 GB; the engine now
        saves states without it, and this count stays right whatever a state holds.)"""

        @property
        def cache_size(self) -> int:
            return sum(s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes for s in self.cache_state.values())

    return BoundedRAMCache


class LlamaEngine:
    """One llama context. It is not thread-safe, so calls are serialised by a lock."""

    def __init__(self, model_path: str | Path, n_ctx: int = 8192, n_threads: int | None = None, seed: int = 0,
                 compact_json: bool = False):
        from llama_cpp import Llama  # imported here so API-model users never need it

        self.model_path = str(model_path)
        self.n_ctx = n_ctx
        # llama-cpp-python's schema converter lets JSON have one optional space between tokens and no
        # newline. Forced onto one line, the 1.5B writes `[]` for every list (it lays lists out over
        # lines); OpenAI's structured outputs and upstream llama.cpp allow JSON's whitespace. Only
        # `--decoding strict` keeps the compact grammar (its behaviour before decoding modes existed).
        self.compact_json = compact_json
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
        # Set `trace` to a list to get one dict of timings and token counts per call (benchmarks/eir_time_by_role.py).
        self.trace: list[dict] | None = None
        self._evals: list[tuple[int, float]] = []
        self._no_logits = None
        self._state_s = 0.0  # seconds spent saving/restoring cached states this call
        self._llama.eval = self._counting(self._llama.eval)
        self._llama.save_state = self._timed_state(self._save_state_without_logits)
        self._llama.load_state = self._timed_state(self._llama.load_state)

    def _save_state_without_logits(self):
        """Llama.save_state, minus its copy of the logits buffer (311 MB for Qwen2.5 at n_batch 512).

        A restored state is always re-evaluated from at least its last token before sampling
        (Llama.generate sets _requires_eval on load_state), so the saved logits are never read.
        Without them a state is the KV cells alone (~30 KB a token): saving is one copy instead of
        four, and the cache holds dozens of states instead of six, enough to keep every role's
        long system prompt (the final call's too) between questions.
        """
        import ctypes

        import llama_cpp
        import numpy as np

        llama = self._llama
        size = llama_cpp.llama_state_get_size(llama._ctx.ctx)
        buffer = (ctypes.c_uint8 * int(size))()
        n_bytes = int(llama_cpp.llama_state_get_data(llama._ctx.ctx, buffer, size))
        if n_bytes > int(size):
            raise RuntimeError("llama_state_get_data wrote past its buffer")
        if self._no_logits is None:
            self._no_logits = np.zeros((1, llama.n_vocab()), dtype=np.single)  # broadcasts in load_state
        return llama_cpp.llama.LlamaState(input_ids=llama.input_ids.copy(), scores=self._no_logits,
                                          n_tokens=llama.n_tokens, llama_state=ctypes.string_at(buffer, n_bytes),
                                          llama_state_size=n_bytes, seed=llama._seed)

    def _timed_state(self, method):
        def timed(*args):
            t0 = time.perf_counter()
            try:
                return method(*args)
            finally:
                self._state_s += time.perf_counter() - t0
        return timed

    def _counting(self, evaluate):
        """Wrap Llama.eval: generate() evaluates the prompt suffix the cache could not serve in its
        first eval, then one token per generated token, so the first size is the prompt work."""
        def counted(tokens):
            t0 = time.perf_counter()
            out = evaluate(tokens)
            self._evals.append((len(tokens), time.perf_counter() - t0))
            return out
        return counted

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
        if fmt is not None and "schema" in fmt:
            kwargs["grammar"] = _grammar(json.dumps(fmt["schema"]), self.compact_json)  # property order is the field order
        elif fmt is not None:
            kwargs["response_format"] = {"type": "json_object"}  # any JSON object
        with self._lock:
            self._evals.clear()
            self._state_s = 0.0
            t0 = time.perf_counter()
            try:
                out = self._llama.create_chat_completion(messages=messages, **kwargs)
            except ValueError as exc:  # llama-cpp-python reports context overflow this way
                if "context" in str(exc).lower():
                    raise ContextLengthError(str(exc)) from exc
                raise InvalidRequestError(str(exc)) from exc
            seconds = time.perf_counter() - t0
            usage = out.get("usage") or {}
            if self.trace is not None:
                self.trace.append(self._stats(usage, seconds))
        choice = out["choices"][0]
        finish = choice.get("finish_reason") or "stop"
        return Response(
            id=out.get("id"),
            model=Path(self.model_path).name,
            message=Message.assistant([TextPart(choice["message"].get("content") or "")]),
            finish_reason=finish if finish in ("stop", "length") else "stop",
            usage=Usage(input_tokens=usage.get("prompt_tokens", 0), output_tokens=usage.get("completion_tokens", 0)),
        )

    def _stats(self, usage: dict, seconds: float) -> dict:
        prompt = usage.get("prompt_tokens", 0)
        evaluated, prompt_s = self._evals[0] if self._evals else (0, 0.0)
        generate_s = sum(t for _, t in self._evals[1:])
        return {"prompt_tokens": prompt, "prompt_evaluated": evaluated, "prompt_cached": prompt - evaluated,
                "generated": usage.get("completion_tokens", 0), "seconds": seconds, "prompt_s": prompt_s,
                "generate_eval_s": generate_s, "state_cache_s": self._state_s,
                "other_s": seconds - prompt_s - generate_s - self._state_s}

    def stream(self, request):
        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass


@functools.lru_cache(maxsize=64)
def _grammar(schema_json: str, compact: bool):
    """The llama.cpp grammar of a JSON schema; cached, as schema decoding sends the same one every turn."""
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(schema_gbnf(schema_json, compact), verbose=False)
