"""Prompt and generation throughput of an embedded local model, and what prefix reuse saves.

    python benchmarks/local_lm_speed.py [--lm qwen2.5-coder-1.5b]

Prints: cold prompt tok/s, generation tok/s, and the latency of a call whose long prefix was
evaluated two calls earlier (served by the engine's RAM state cache) against a cold one.
"""

from __future__ import annotations

import argparse
import time

from dspy.lm15 import Config, Message, Request

from eir_dspy.lm.llama_engine import LlamaEngine
from eir_dspy.lm.local_models import DEFAULT_MODEL, model_path


def timed(engine: LlamaEngine, system: str, user: str, max_tokens: int) -> tuple[float, int, int]:
    request = Request(model="local", system=system, messages=(Message.user(user),),
                      config=Config(max_tokens=max_tokens, temperature=0.0))
    t0 = time.perf_counter()
    response = engine.complete(request)
    return time.perf_counter() - t0, response.usage.input_tokens, response.usage.output_tokens


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--lm", default=DEFAULT_MODEL)
    args = p.parse_args()
    t0 = time.perf_counter()
    engine = LlamaEngine(model_path(args.lm))
    print(f"model {args.lm}: load {time.perf_counter() - t0:.1f} s")
    timed(engine, "warm up", "hi", 2)  # pages the weights in
    a = "You gather evidence for multi-hop questions. " + "Read paragraphs one at a time and cite sentences. " * 60
    b = "You answer from evidence sentences only. " + "Give the shortest correct answer with citations. " * 50
    cold, n, _ = timed(engine, a, "question one", 1)
    print(f"cold prompt: {n} tokens in {cold:.1f} s = {n / cold:.1f} tok/s")
    gen, _, m = timed(engine, "Be verbose.", "Write a long story about a lighthouse keeper.", 64)
    print(f"generation: {m} tokens in {gen:.1f} s = {m / gen:.1f} tok/s (incl. a short prompt)")
    cold_b, nb, _ = timed(engine, b, "question two", 1)
    warm_a, _, _ = timed(engine, a, "question three", 1)  # prefix last seen two calls ago
    print(f"alternating roles: cold {nb}-token prompt {cold_b:.1f} s; revisited {n}-token prefix {warm_a:.1f} s")


if __name__ == "__main__":
    main()
