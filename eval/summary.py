"""`python -m eval.summary RESULTS.jsonl ...`: a run's table from its per-question records, for runs
still going or killed (the metrics themselves are eval.scoring.run_metrics's), with a warning under it
when the run degenerated (eval.scoring.health)."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from eval.files.question_record import read_record
from eval.files.results_file import ResultsFileError, read_run_records
from eval.runs.config import DEFAULT_MAX_TOKENS
from eval.runs.errors import RunError
from eval.scoring.health import method_of, render, warnings_for
from eval.scoring.run_metrics import BEHAVIOUR_KEYS, TABLE_KEYS, format_table, summarize


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
    try:
        runs = {f: {qid: read_record(row) for qid, row in run_records(Path(f)).items()} for f in args.results}
    except RunError as exc:
        raise SystemExit(f"error: {exc}") from None
    keep = set.intersection(*(set(r) for r in runs.values())) if args.common else None
    for f, records in runs.items():
        chosen = [r for i, r in records.items() if keep is None or i in keep]
        keys = BEHAVIOUR_KEYS if args.behaviour else TABLE_KEYS
        print(format_table(summarize(chosen), f"{f} (n={len(chosen)})", keys))
        print(served_by(chosen), end="")
        print(render(warnings_for(method_of(chosen) or f, chosen, max_tokens=args.max_tokens)))


def served_by(records) -> str:
    """The line naming the embedded model's server build(s) behind `records` (empty for other LMs);
    a run resumed on another build is named as mixed, since greedy outputs differ between builds."""
    counts = Counter(r.served_by or "not recorded" for r in records)
    if set(counts) <= {"not recorded"}:
        return ""
    line = "served by: " + ", ".join(f"{label} ({n} question{'s' * (n != 1)})" for label, n in counts.most_common())
    return line + ("  warning: mixed engines, not one condition\n" if len(counts) > 1 else "\n")


def run_records(path: Path) -> dict[str, dict]:
    """The records of the run a results file belongs to, by question id: the run named by its folder
    (runs/<run id>/), else by its first line that names one. A line that is not one of them (not
    JSON, not a record, another run's) is a RunError, named by file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RunError(f"{path}: {exc.strerror}") from None
    lines = read_run_records(text, {path.parent.name})
    if not lines.stamped:
        owner = next((json.loads(line).get("run_id") for line in text.splitlines()
                      if '"run_id"' in line and _object(line)), None)
        lines = read_run_records(text, {owner} if owner else {path.parent.name})
    if lines.bad:
        owner = next(iter({r.get("run_id") for r in lines.records.values()} - {None}), path.parent.name)
        raise RunError(str(ResultsFileError(str(path), owner, lines.bad)))
    return lines.records


def _object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


if __name__ == "__main__":
    main()
