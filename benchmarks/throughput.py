"""Questions per hour of the embedded model: questions in flight on its server, same questions.

    EIR_DATA_DIR=../shared/data/raw python benchmarks/throughput.py \\
        --methods eir direct full_pool --n 10 --threads 1 2 4 8

Each (method, threads) cell is an ordinary `python -m eval.run` on the first N questions
of the dev sample (HotpotQA rpt_sample500_seed1, never the holdout), logged to the MLflow
experiment `throughput`. Per cell it prints the amortized seconds per question (the run's wall
time over N: what a batch of questions costs), questions/hour, the mean latency of one question,
calls, prompt and generated tokens per question, F1, and against the method's one-at-a-time cell
(threads 1; else its first): how many answers, call counts, token counts and reads changed. Batched
arithmetic may change a greedy token, so a changed answer is counted, not hidden.

Finished cells are kept in --json as they finish and skipped when the command is run again.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

METHODS = ("eir", "direct", "full_pool")


def run_cell(method: str, threads: int, n: int, extra: list[str]) -> dict:
    import eval.run as run_module
    from eval.files.results_file import wall_time

    result = run_module.main(["--method", method, "--limit", str(n), "--threads", str(threads),
                              "--experiment", "throughput", *extra])
    records = result["records"]
    wall = wall_time(records)
    return {
        "method": method, "engine": "server", "threads": threads, "n": len(records), "run_id": result["run_id"],
        "wall_s": wall, "s_per_q": wall / len(records), "q_per_hour": 3600 * len(records) / wall,
        "latency_s": sum(r["seconds"] for r in records) / len(records),
        "f1": 100 * sum(r["answer_f1"] for r in records) / len(records),
        "failed": sum(r["error"] is not None for r in records),
        "per_question": [{k: r[k] for k in ("id", "prediction", "calls", "prompt_tokens", "completion_tokens",
                                            "evidence_titles", "gold_read_share")} for r in records],
    }


def compare(cell: dict, reference: dict) -> dict:
    """How many questions differ from the reference cell, by what differs."""
    ref = {q["id"]: q for q in reference["per_question"]}
    pairs = [(q, ref[q["id"]]) for q in cell["per_question"] if q["id"] in ref]
    return {"answers": sum(a["prediction"] != b["prediction"] for a, b in pairs),
            "calls": sum(a["calls"] != b["calls"] for a, b in pairs),
            "tokens": sum((a["prompt_tokens"], a["completion_tokens"]) != (b["prompt_tokens"], b["completion_tokens"])
                          for a, b in pairs),
            "reads": sum(a["evidence_titles"] != b["evidence_titles"] for a, b in pairs), "of": len(pairs)}


def table(cells: list[dict]) -> str:
    head = ("| method | engine | threads | n | s/q (amortized) | questions/hour | latency s/q | calls/q | prompt tok/q "
            "| generated tok/q | F1 | vs one at a time: answers / calls / tokens / reads changed |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c in cells:
        same = [x for x in cells if x["method"] == c["method"]]
        reference = next((x for x in same if x["threads"] == 1), same[0])  # one at a time
        qs = c["per_question"]
        mean = lambda key: sum(q[key] for q in qs) / len(qs)  # noqa: E731, B023 (used at once)
        if reference is c:
            diff = "(reference)"
        else:
            d = compare(c, reference)
            diff = f"{d['answers']} / {d['calls']} / {d['tokens']} / {d['reads']} of {d['of']}"
        lines.append(f"| {c['method']} | {c['engine']} | {c['threads']} | {c['n']} | {c['s_per_q']:.1f} | "
                     f"{c['q_per_hour']:.0f} | {c['latency_s']:.1f} | {mean('calls'):.2f} | {mean('prompt_tokens'):,.0f} | "
                     f"{mean('completion_tokens'):,.0f} | {c['f1']:.1f} | {diff} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--n", type=int, default=10)
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2, 4, 8], help="questions in flight, one cell each")
    p.add_argument("--json", default="runs/throughput.json", help="cells kept here as they finish")
    p.add_argument("extra", nargs=argparse.REMAINDER, help="after --: more eval.run flags (e.g. --decoding strict)")
    args = p.parse_args()
    extra = [a for a in args.extra if a != "--"]
    path = Path(args.json)
    cells = json.loads(path.read_text()) if path.exists() else []
    for method in args.methods:
        for threads in args.threads:
            key = (method, "server", threads, args.n, extra)  # cells kept before issue 33 may name `inprocess`
            if any((c["method"], c["engine"], c["threads"], c["n"], c.get("extra", [])) == key for c in cells):
                continue
            cell = run_cell(method, threads, args.n, extra)
            cell["extra"] = extra
            cells.append(cell)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(cells, indent=1))
    wanted = [c for c in cells if c["method"] in args.methods and c["n"] == args.n and c.get("extra", []) == extra]
    print(table(wanted))


if __name__ == "__main__":
    main()
