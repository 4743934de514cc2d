"""`python -m eval.summary RESULTS.jsonl ...`: a run's table from its per-question records, for runs
still going or killed (the metrics themselves are eval.scoring.summary's), with a warning under it
when the run degenerated (eval.scoring.health)."""

from __future__ import annotations

import argparse
import json

from eval.runs.config import DEFAULT_MAX_TOKENS
from eval.runs.record import from_legacy
from eval.scoring.health import method_of, render, warnings_for
from eval.scoring.summary import BEHAVIOUR_KEYS, TABLE_KEYS, format_table, summarize


def main(argv: list[str] | None = None) -> None:
    """`python -m eval.summary RESULTS.jsonl ...`: the table of runs still going or killed, from their
    per-question records (--common: only the questions every file has, so the rows are paired)."""
    p = argparse.ArgumentParser(prog="python -m eval.summary", description=main.__doc__.splitlines()[0])
    p.add_argument("results", nargs="+")
    p.add_argument("--common", action="store_true")
    p.add_argument("--behaviour", action="store_true", help="rejections by cause, submits, list use, tokens")
    p.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS,
                   help="the runs' --max-tokens, to warn when most answers stopped at it (default: eval.run's, "
                        f"{DEFAULT_MAX_TOKENS}; 0: do not look)")
    args = p.parse_args(argv)
    runs = {f: {r.id: r for r in map(from_legacy, map(json.loads, open(f, encoding="utf-8")))} for f in args.results}
    keep = set.intersection(*(set(r) for r in runs.values())) if args.common else None
    for f, records in runs.items():
        chosen = [r for i, r in records.items() if keep is None or i in keep]
        keys = BEHAVIOUR_KEYS if args.behaviour else TABLE_KEYS
        print(format_table(summarize(chosen), f"{f} (n={len(chosen)})", keys))
        print(render(warnings_for(method_of(chosen) or f, chosen, max_tokens=args.max_tokens)))


if __name__ == "__main__":
    main()
