"""What an EIR question costs the embedded engine, and what the grammar adds to it.

    EIR_DATA_DIR=../shared/data/raw python benchmarks/eir_time_floor.py [--n 1]

Runs EIR (schema decoding, H=6, one question at a time) on the first N dev questions (HotpotQA
rpt_sample500_seed1, never the holdout) on the managed llama-server, keeping every request as
sent. Then replays those requests on the same server, one after another, twice: as sent (under
the grammar) and without the grammar, and prints the server's own timings: prompt tokens
evaluated and their speed, generated tokens and their speed, and how many outputs came out
identical to the run's. The speeds bound a question's time from below: at the same outputs, no
engine setting on this CPU makes a question cheaper than evaluated / prompt speed + generated /
generation speed.
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request

import dspy

from eir_dspy.lm import LMSpec, build_lm
from eir_dspy.lm.local_models import DEFAULT_MODEL
from eval.data.loaders import load_questions
from eval.runs.execute import run_question
from programs.registry import METHODS
from programs.run_context import RunContext


def replay(url: str, request: dict, grammar: bool) -> dict:
    body = {"model": request.get("model", "m"), "messages": request["messages"], "temperature": 0.0,
            **request.get("extra_body", {}), "cache_prompt": True}
    if request.get("response_format"):  # the schema the server turns into its grammar (schema decoding)
        body["response_format"] = request["response_format"]
    if not grammar:
        body.pop("grammar", None)
        body.pop("response_format", None)
    http = urllib.request.Request(f"{url}/chat/completions", data=json.dumps(body).encode(),
                                  headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(http, timeout=3600) as reply:
        return json.loads(reply.read())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lm", default=DEFAULT_MODEL)
    p.add_argument("--n", type=int, default=1)
    args = p.parse_args()
    spec = LMSpec(args.lm, decoding="schema", slots=1)
    lm = build_lm(spec)
    engine = lm.engine
    dspy.configure(lm=lm)
    program = METHODS["eir"].build(6, context=RunContext.for_lm(lm, spec))
    engine.trace = []
    t0 = time.perf_counter()
    for q in load_questions("hotpotqa", None, limit=args.n, seed=0):
        run_question(program, lm, q)
    wall = time.perf_counter() - t0
    rows = engine.trace
    evaluated = sum(r["prompt_evaluated"] for r in rows)
    generated = sum(r["generated"] for r in rows)
    print(f"EIR, {lm.model}, {args.n} question(s), {len(rows)} calls: {wall / args.n:.1f} s/q; "
          f"{evaluated / args.n:,.0f} prompt tokens evaluated and {generated / args.n:,.0f} generated a question")
    print("| replay | prompt tokens evaluated | prompt tok/s | generated tokens | generation tok/s | "
          "outputs as in the run | s/q |")
    print("|---|---|---|---|---|---|---|")
    for grammar in (True, False):
        p_n = p_ms = g_n = g_ms = same = 0
        for row in rows:
            out = replay(engine.server.url, row["request"], grammar)
            t = out["timings"]
            p_n, p_ms = p_n + t["prompt_n"], p_ms + t["prompt_ms"]
            g_n, g_ms = g_n + t["predicted_n"], g_ms + t["predicted_ms"]
            same += out["choices"][0]["message"]["content"] == row["text"]
        label = "as sent (grammar)" if grammar else "without the grammar"
        print(f"| {label} | {p_n / args.n:,.0f} | {p_n / p_ms * 1000:.1f} | {g_n / args.n:,.0f} | "
              f"{g_n / g_ms * 1000:.1f} | {same} of {len(rows)} | {(p_ms + g_ms) / 1000 / args.n:.1f} |")


if __name__ == "__main__":
    main()
