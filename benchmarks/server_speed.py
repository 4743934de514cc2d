"""Raw speed of the managed llama-server on this machine: prompt tok/s, and generation tok/s with
1, 2, 4, 8 sequences decoded together. Compares engines and CPU builds (the xllamacpp wheel's
AVX2 against a built AVX-512 binary) and picks --threads for the embedded model.

    python benchmarks/server_speed.py [--lm qwen2.5-coder-1.5b] [--binary wheel|PATH ...] [--parallel 1 2 4 8]

Each engine (default: the one the project would run, eir_dspy/lm/server_program.py; `wheel`: the
prebuilt engine; a path: that binary) is started as the project starts it (EmbeddedServer) with as
many slots as the largest --parallel. Per engine it prints the
cold prompt speed of a ~1,500-token prompt, then for each P: P requests sent at once, each with
its own ~700-token prompt (a question's paragraphs) and 96 generated tokens at temperature 0, then
the same with ~60-token prompts (generation alone); aggregate generated tok/s and the wall time
of the batch. Numbers come from the server's own
`timings` and the wall clock.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from eir_dspy.lm.embedded_server import EmbeddedServer, ServerConfig
from eir_dspy.lm.local_models import DEFAULT_MODEL, model_path

FILLER = ("The castle of {i} stands on a hill above the river, and its library holds letters, maps and the "
          "diaries of the families who lived there for four centuries. ")


def eir_turn_format() -> dict:
    """The response format an EIR turn is decoded under (schema decoding, the embedded default): its
    schema, which the server turns into a grammar."""
    from dspy.adapters.json_adapter import _get_structured_outputs_response_format

    from signatures.eir_turn import EIRTurn

    schema = _get_structured_outputs_response_format(EIRTurn).model_json_schema()
    return {"type": "json_schema", "json_schema": {"name": "EIRTurn", "schema": schema}}


def post(url: str, system: str, user: str, max_tokens: int, response_format: dict | None = None) -> dict:
    body = {"model": "m", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": max_tokens, "temperature": 0.0, "cache_prompt": False,
            "ignore_eos": response_format is None}
    if response_format:
        body["response_format"] = response_format
    request = urllib.request.Request(f"{url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=900) as reply:
        return json.loads(reply.read())


def measure(engine: str | None, model: Path, parallel: list[int]) -> list[str]:
    """`engine`: EIR_LLAMA_SERVER's value for this measurement (None: the project's default)."""
    if engine:
        os.environ["EIR_LLAMA_SERVER"] = engine
    server = EmbeddedServer(ServerConfig(str(model), alias="m", slots=max(parallel), n_ctx=4096))
    build = server.build.label
    lines = []
    try:
        post(server.url, "warm up", "hi", 2)
        out = post(server.url, "You gather evidence. " + FILLER.format(i="Varn") * 45, "Summarise.", 1)
        t = out["timings"]
        lines.append(f"| {build} | prompt | 1 | {t['prompt_n']} tokens | {t['prompt_per_second']:.1f} tok/s | |")
        for p in parallel:
            for label, repeat in (("prompt+generate", 20), ("generate", 1)):
                prompts = [FILLER.format(i=f"castle {k}-{p}") * repeat for k in range(p)]
                t0 = time.perf_counter()
                with ThreadPoolExecutor(p) as pool:
                    outs = list(pool.map(lambda text: post(server.url, "Answer briefly.", text + "\nDescribe it.", 96),
                                         prompts))
                wall = time.perf_counter() - t0
                generated = sum(o["timings"]["predicted_n"] for o in outs)
                prompt = sum(o["timings"]["prompt_n"] for o in outs)
                lines.append(f"| {build} | {label} | {p} | {prompt} prompt + {generated} generated tokens "
                             f"| {generated / wall:.1f} generated tok/s overall | {wall:.1f} s wall |")
            # The same generation under the EIR turn's grammar: per-token cost of constrained decoding.
            turn_format = eir_turn_format()
            ask = ("Write requirement_updates (a list of {id, text, status}), conclusion_updates and action "
                   "as JSON for the question: which castle is older?")
            t0 = time.perf_counter()
            with ThreadPoolExecutor(p) as pool:
                outs = list(pool.map(lambda k: post(server.url, "Answer in JSON.", f"{ask} ({k})", 160, turn_format),  # noqa: B023 (used at once)
                                     range(p)))
            wall = time.perf_counter() - t0
            generated = sum(o["timings"]["predicted_n"] for o in outs)
            per_token = sum(o["timings"]["predicted_ms"] for o in outs) / generated
            lines.append(f"| {build} | generate, EIR grammar | {p} | {generated} generated tokens "
                         f"| {generated / wall:.1f} generated tok/s overall ({per_token:.0f} ms/token/sequence) "
                         f"| {wall:.1f} s wall |")
    finally:
        server.close()
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lm", default=DEFAULT_MODEL)
    p.add_argument("--binary", nargs="*", default=None)
    p.add_argument("--parallel", nargs="+", type=int, default=[1, 2, 4, 8])
    args = p.parse_args()
    rows = ["| build | phase | sequences | work | speed | wall |", "|---|---|---|---|---|---|"]
    for engine in args.binary or [None]:
        rows += measure(engine, model_path(args.lm), args.parallel)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
