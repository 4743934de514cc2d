"""What the managed llama-server spent, read from its own log: prompt tokens it evaluated (the
prefix cache leaves the rest out), tokens it generated, and the seconds each took.

    python benchmarks/server_log_costs.py ~/.cache/eir-dspy/llama-server/logs/portNNNN-XXXX.log [...] [--questions N]

Each run's server writes one log (its path is in the run's error messages and in `ls -t` of the
log folder). A run's records count every prompt token sent; only the server knows how many the
prefix cache saved, which is what demonstrations in a compiled program's stable prefix cost
(issue 22: the cost per question before and after).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

TIMING = re.compile(r"(prompt eval|\s{2,}eval) time =\s*([\d.]+) ms /\s*(\d+) tokens")


def costs(log: Path) -> dict[str, float]:
    out = {"calls": 0, "prompt_evaluated": 0, "prompt_s": 0.0, "generated": 0, "generation_s": 0.0}
    for line in log.read_text(errors="replace").splitlines():
        m = TIMING.search(line)
        if not m:
            continue
        ms, tokens = float(m.group(2)), int(m.group(3))
        if m.group(1) == "prompt eval":
            out["calls"] += 1
            out["prompt_evaluated"] += tokens
            out["prompt_s"] += ms / 1000
        else:
            out["generated"] += tokens
            out["generation_s"] += ms / 1000
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("logs", type=Path, nargs="+", help="one run's server log, or every log of a run resumed several times")
    p.add_argument("--questions", type=int, default=None, help="divide by this many questions")
    args = p.parse_args(argv)
    c = {k: 0 for k in ("calls", "prompt_evaluated", "prompt_s", "generated", "generation_s")}
    for log in args.logs:
        one = costs(log)
        if not one["calls"]:
            raise SystemExit(f"error: {log} holds no llama-server timing lines")
        c = {k: c[k] + one[k] for k in c}
    n = args.questions or 1
    per = "" if args.questions is None else f" per question (n = {n})"
    name = args.logs[0].name if len(args.logs) == 1 else f"{len(args.logs)} logs"
    print(f"{name}: {c['calls']} calls")
    print(f"  prompt evaluated{per}: {c['prompt_evaluated'] / n:,.0f} tokens in {c['prompt_s'] / n:.1f} s "
          f"({c['prompt_evaluated'] / max(c['prompt_s'], 1e-9):.1f} tok/s)")
    print(f"  generated{per}: {c['generated'] / n:,.0f} tokens in {c['generation_s'] / n:.1f} s "
          f"({c['generated'] / max(c['generation_s'], 1e-9):.1f} tok/s)")


if __name__ == "__main__":
    main()
