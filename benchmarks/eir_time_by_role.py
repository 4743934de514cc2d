"""Where an EIR question's time goes on the embedded model, per role (action turns vs final call).

    EIR_DATA_DIR=../shared/data/raw python benchmarks/eir_time_by_role.py [--n 3] [--decoding strict]

Runs the first N questions of the dev sample (HotpotQA rpt_sample500_seed1, never the holdout)
through EIR on the managed llama-server, one at a time, and prints, per role: calls, prompt tokens
evaluated vs served from the server's cache, generated tokens, and seconds split, by the server's
own timings, into prompt evaluation, generation (sampling and grammar included) and the rest
(the request's way to the server and back); then each question's seconds and answer (to check
greedy answers stay the same).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

import dspy

from eir_dspy.lm import DECODINGS, LMSpec, build_lm
from eir_dspy.lm.local_models import DEFAULT_MODEL
from eval.data.loaders import load_questions
from eval.runs.execute import run_question
from programs.registry import METHODS
from programs.run_context import RunContext

COLUMNS = ("calls", "prompt_tokens", "prompt_evaluated", "prompt_cached", "generated", "seconds", "prompt_s",
           "generate_s", "other_s")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--lm", default=DEFAULT_MODEL)
    p.add_argument("--n", type=int, default=3)
    p.add_argument("--method", default="eir")
    p.add_argument("--decoding", default="strict", choices=DECODINGS)
    p.add_argument("--json", default=None, help="also write the per-call rows here")
    args = p.parse_args()
    spec = LMSpec(args.lm, decoding=args.decoding, slots=1)
    lm = build_lm(spec)  # its trace has the server's timings
    engine = lm.engine
    dspy.configure(lm=lm)
    program = METHODS[args.method].build(6, context=RunContext.for_lm(lm, spec))
    questions = load_questions("hotpotqa", None, limit=args.n, seed=0)
    rows, per_question = [], []
    for q in questions:
        engine.trace = []
        t0 = time.perf_counter()
        record = run_question(program, lm, q)
        seconds = time.perf_counter() - t0
        if record["error"]:
            raise SystemExit(f"{q.id}: {record['error']}")
        roles = [c["role"] for c in record["lm_calls"]]
        assert len(roles) == len(engine.trace), "one engine call per recorded call"
        rows += [{"question": q.id, "role": r, **s} for r, s in zip(roles, engine.trace)]
        per_question.append((q.id, seconds, record["calls"], record["prediction"]))
    print(f"{args.method} on {len(questions)} questions, {lm.model}, decoding {args.decoding}")
    totals: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    for row in rows:
        t = totals[row["role"]]
        t["calls"] += 1
        for k in COLUMNS[1:]:
            t[k] += row[k]
    print("role     " + " ".join(f"{c:>16}" for c in COLUMNS) + "   (sums; per call in brackets)")
    for role, t in totals.items():
        print(f"{role:8} " + " ".join(f"{t[c]:>8.0f}" + f" ({t[c] / t['calls']:>5.1f})" if c != "calls" else f"{t[c]:>16.0f}"
                                      for c in COLUMNS))
    for qid, seconds, calls, answer in per_question:
        print(f"question {qid}: {seconds:.1f} s, {calls} calls, answer {answer!r}")
    mean = sum(s for _, s, _, _ in per_question) / len(per_question)
    print(f"mean seconds per question: {mean:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "questions": per_question}, f, indent=1)


if __name__ == "__main__":
    main()
