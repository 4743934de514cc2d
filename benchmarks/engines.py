"""The README's main job on each engine of the embedded model, back to back on one machine.

    EIR_DATA_DIR=../shared/data/raw python benchmarks/engines.py [--engines wheel binary] [--n 5] [-- EVAL_RUN_FLAGS]

Each engine (eir_dspy/lm/server_program.py: `wheel`, the prebuilt xllamacpp server; `binary`, the
llama-server scripts/build_llama_server.sh built; or a path to another binary) runs `python -m
eval.run` as the README gives it (EIR, the first N HotpotQA dev questions, the 1.5B), logged to the
MLflow experiment `engines`. Per engine it prints seconds per question, prompt and generated tok/s
(from the server's own timing lines, as benchmarks/server_log_costs.py reads them), calls and reads
per question, F1, and against the first engine how many answers, reads and call counts changed
(greedy outputs may differ between builds: counted, not hidden).

Finished cells are kept in --json as they finish and skipped when the command is run again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_log_costs import costs  # noqa: E402
from throughput import compare  # noqa: E402


def run_cell(engine: str, n: int, extra: list[str]) -> dict:
    import eval.run as run_module
    from eir_dspy.lm.embedded_server import current_server
    from eir_dspy.lm.server_program import BINARY, built_binary
    from eval.files.results_file import wall_time

    os.environ["EIR_LLAMA_SERVER"] = str(built_binary()) if engine == BINARY else engine
    result = run_module.main(["--limit", str(n), "--experiment", "engines", *extra])
    server = current_server()
    spent = costs(server.log_path)
    records = result["records"]
    wall = wall_time(records)
    return {
        "engine": engine, "build": server.build.label, "n": len(records), "args": extra, "run_id": result["run_id"],
        "s_per_q": wall / len(records),
        "prompt_tok_s": spent["prompt_evaluated"] / max(spent["prompt_s"], 1e-9),
        "generated_tok_s": spent["generated"] / max(spent["generation_s"], 1e-9),
        "prompt_evaluated_per_q": spent["prompt_evaluated"] / len(records),
        "generated_per_q": spent["generated"] / len(records),
        "calls_per_q": sum(r["calls"] for r in records) / len(records),
        "reads_per_q": sum(r.get("reads") or 0 for r in records) / len(records),
        "f1": 100 * sum(r["answer_f1"] for r in records) / len(records),
        "failed": sum(r.get("error") is not None for r in records),
        "per_question": [{k: r.get(k) for k in ("id", "prediction", "calls", "prompt_tokens", "completion_tokens",
                                                "evidence_titles")} for r in records],  # what throughput.compare reads
    }


def changed(cell: dict, reference: dict) -> str:
    d = compare(cell, reference)
    return f"{d['answers']} / {d['reads']} / {d['calls']} of {d['of']}"


def table(cells: list[dict]) -> str:
    head = ("| engine | build | n | s/q | prompt tok/s | generated tok/s | prompt evaluated tok/q | generated tok/q "
            "| calls/q | reads/q | F1 | vs the first: answers / reads / calls changed |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c in cells:
        versus = "(reference)" if c is cells[0] else changed(c, cells[0])
        lines.append(f"| {c['engine']} | {c['build']} | {c['n']} | {c['s_per_q']:.1f} | {c['prompt_tok_s']:.1f} "
                     f"| {c['generated_tok_s']:.1f} | {c['prompt_evaluated_per_q']:,.0f} | {c['generated_per_q']:,.0f} "
                     f"| {c['calls_per_q']:.2f} | {c['reads_per_q']:.2f} | {c['f1']:.1f} | {versus} |")
    if len(cells) > 1:
        ratio = cells[0]["s_per_q"] / cells[-1]["s_per_q"]
        lines.append(f"\n{cells[0]['engine']} s/q over {cells[-1]['engine']} s/q: {ratio:.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engines", nargs="+", default=["wheel", "binary"])
    p.add_argument("--n", type=int, default=5)
    p.add_argument("--json", type=Path, default=Path("runs/engines.json"))
    args = p.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    done = json.loads(args.json.read_text()) if args.json.exists() else []

    def same(c: dict, engine: str) -> bool:  # the cell these flags ask for
        return c["engine"] == engine and c["n"] == args.n and c.get("args", []) == extra

    for engine in args.engines:
        if any(same(c, engine) for c in done):
            print(f"{engine}: done (in {args.json})", file=sys.stderr)
            continue
        done.append(run_cell(engine, args.n, extra))
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(done, indent=1))
    print(table([c for e in args.engines for c in done if same(c, e)]))


if __name__ == "__main__":
    main()
