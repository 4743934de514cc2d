"""Strict decoding's grammar made two ways, paired on one embedded server (issue 44).

    EIR_DATA_DIR=../shared/data/raw python benchmarks/strict_converter.py [--n 5] [--method eir] [--budget 6] \
        [--data FILE] [--out runs/strict_converter]

Runs the same questions under `--decoding strict` in two arms that differ only in who turns each
call's schema (signatures/schemas.py, built from the live state) into the grammar the server decodes
under:
- `one_line`: the project's one-line GBNF (eir_dspy/lm/grammar.py), sent as `grammar`: strict today;
- `server`: the same schema sent as the `json_schema` response format, for llama-server's own
  converter (as `schema` decoding is sent).
The arm is the engine's `one_line` switch (eir_dspy/lm/server_engine.py). The LM is built as eval.run
builds it (LMConfig -> LMSpec -> build_lm, one slot) and each question runs through eval.run's
`run_question`, so the records are eval.run's.

Each question runs in both arms before the next starts, in alternating order (one_line first on the
1st, 3rd, ... question): the server's prompt cache still holds the first arm's prompts when the
second runs, and alternating spreads that saving over both arms (`generate s/q`, the server's own
generation time, does not include prompt evaluation). Each record is appended to OUT/records.jsonl
as it finishes; the same command again continues a killed run (finished question-arm pairs are
skipped; a larger --n adds questions) or, once all are done, prints the summary again. The
summary (also OUT/summary.json) covers the questions done in both arms.

DSPy's response cache is keyed on the request before the engine turns its schema into a grammar,
so the two arms' calls share keys and the second arm would replay the first's outputs. The embedded
LM is built with cache=False; here DSPy's cache is also switched off for the run, and a record with
a replayed call, or with fewer server requests than answered calls, stops the run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from statistics import mean

import dspy

from eir_dspy.lm import build_lm
from eir_dspy.lm.embedded_server import stop_shared_server
from eir_dspy.lm.local_models import DEFAULT_MODEL
from eval.data.loaders import load_questions
from eval.runs.config import LMConfig, options_for
from eval.runs.execute import run_question
from eval.scoring.run_metrics import summarize
from programs.registry import METHODS
from programs.run_context import RunContext

ARMS = {"one_line": True, "server": False}  # arm -> the engine's `one_line`
DEFAULT_DATA = "hotpotqa/hotpot_dev_distractor.rpt_sample500_seed1.jsonl"  # dev questions, never the holdout
SEED = 0  # eval.run's default shuffle


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=5, help="questions (the first N of seed 0's shuffle, as eval.run --limit)")
    p.add_argument("--method", default="eir", choices=sorted(METHODS))
    p.add_argument("--budget", type=int, default=6, help="H: paragraph reads per question")
    p.add_argument("--dataset", default="hotpotqa")
    p.add_argument("--data", default=None, help=f"questions file (default: $EIR_DATA_DIR/{DEFAULT_DATA})")
    p.add_argument("--lm", default=DEFAULT_MODEL, help="a local model key")
    p.add_argument("--lm-path", default=None, help="any local GGUF file")
    p.add_argument("--out", default="runs/strict_converter")
    return p.parse_args(argv)


def order(i: int) -> list[str]:
    """The arms of the i-th question (0-based), in the order they run."""
    arms = list(ARMS)
    return arms if i % 2 == 0 else arms[::-1]


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = args.data or default_data()
    check_same_condition(out / "meta.json", {"method": args.method, "budget": args.budget, "dataset": args.dataset,
                                             "data": str(data), "lm": args.lm, "lm_path": args.lm_path, "seed": SEED})
    questions = load_questions(args.dataset, data, limit=args.n, seed=SEED)
    path = out / "records.jsonl"
    done = {(r["id"], r["arm"]) for r in read_rows(path) if r["record"]["error"] is None}
    todo = [(q, arm) for i, q in enumerate(questions) for arm in order(i) if (q.id, arm) not in done]
    if todo:
        run(args, todo, path)
    summary = summary_of(read_rows(path), [q.id for q in questions])
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(render(summary))
    return summary


def default_data() -> Path:
    if not os.environ.get("EIR_DATA_DIR"):
        raise SystemExit("give --data FILE or set EIR_DATA_DIR (e.g. EIR_DATA_DIR=../shared/data/raw)")
    return Path(os.environ["EIR_DATA_DIR"]) / DEFAULT_DATA


def check_same_condition(path: Path, meta: dict) -> None:
    """A results directory holds one condition (only --n may change between runs into it)."""
    if path.exists() and (saved := json.loads(path.read_text())) != meta:
        raise SystemExit(f"{path.parent} holds another condition ({saved}); give another --out")
    path.write_text(json.dumps(meta, indent=1) + "\n")


def read_rows(path: Path) -> list[dict]:
    """The saved rows, the last one of each (question, arm) (a failed question run again replaces its row);
    a line cut short by a kill is left out."""
    rows: dict[tuple[str, str], dict] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        rows[row["id"], row["arm"]] = row
    return list(rows.values())


def run(args: argparse.Namespace, todo: list, path: Path) -> None:
    lm = build_lm(LMConfig(args.lm, args.lm_path, decoding="strict").spec(1))
    engine = lm.engine
    try:
        if not hasattr(engine, "one_line"):
            raise SystemExit(f"{engine!r} is not the embedded server's engine: only it sends strict's one-line grammar")
        if lm.cache:
            raise SystemExit("the embedded LM caches responses: the two arms would replay each other's calls")
        program = METHODS[args.method].build(args.budget, options_for(args.method), RunContext(decoding="strict"))
        served_by = engine.server.build.label
        kept_cache = dspy.cache
        dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
        try:
            with dspy.context(lm=lm), path.open("a") as f:
                for q, arm in todo:
                    engine.one_line, engine.trace = ARMS[arm], []
                    record = run_question(program, lm, q)
                    if record["engine_failed"]:
                        raise SystemExit(f"the engine failed on {q.id} ({arm}): {record['error']}; "
                                         "the pairs finished so far are kept: run the same command again")
                    row = {"id": q.id, "arm": arm, "served_by": served_by, "record": record,
                           "calls": [call_row(t) for t in engine.trace]}
                    check_reached(row)
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    print(f"{q.id} {arm}: F1 {record['answer_f1']:.2f}, {record['calls']} calls, "
                          f"{record['completion_tokens']} generated, {record['seconds']:.0f} s", file=sys.stderr)
        finally:
            dspy.cache = kept_cache
    finally:
        stop_shared_server()


def call_row(trace: dict) -> dict:
    """One server request of the engine's trace: how its grammar was sent, what came back, what it cost."""
    request = trace["request"]
    sent = ("grammar" if "grammar" in (request.get("extra_body") or {})
            else "response_format" if "response_format" in request else "none")
    return {"sent": sent, "text": trace["text"], "generated": trace["generated"],
            "prompt_evaluated": trace["prompt_evaluated"], "seconds": trace["seconds"], "generate_s": trace["generate_s"]}


def check_reached(row: dict) -> None:
    """Every call of the record went to the server, under its arm's grammar."""
    calls = row["record"]["lm_calls"]
    if any(c["cache_hit"] for c in calls):
        raise RuntimeError(f"{row['id']} ({row['arm']}): a call was replayed from DSPy's cache")
    answered = sum(1 for c in calls if not c.get("error"))
    if len(row["calls"]) < answered:
        raise RuntimeError(f"{row['id']} ({row['arm']}): {answered} calls answered, {len(row['calls'])} sent")
    expected = "grammar" if ARMS[row["arm"]] else "response_format"
    if any(c["sent"] != expected for c in row["calls"]):
        raise RuntimeError(f"{row['id']} ({row['arm']}): a request was not sent as {expected}")


def summary_of(rows: list[dict], ids: list[str]) -> dict:
    """Per arm and paired, over the questions of `ids` done in both arms."""
    by_arm = {arm: {r["id"]: r for r in rows if r["arm"] == arm} for arm in ARMS}
    paired_ids = [i for i in ids if all(i in by_arm[arm] for arm in ARMS)]
    served = sorted({r["served_by"] for r in rows if r["id"] in paired_ids})
    arms = {arm: arm_summary([by_arm[arm][i] for i in paired_ids]) for arm in ARMS} if paired_ids else {}
    return {"n": len(paired_ids), "served_by": served, "arms": arms,
            "paired": paired([by_arm[arm] for arm in ARMS], paired_ids)}


def arm_summary(rows: list[dict]) -> dict:
    m = summarize([r["record"] for r in rows])  # eval.run's own run metrics
    calls = [c for r in rows for c in r["calls"]]
    return {
        "answer_f1": m["answer_f1"], "em": m["em"], "support_f1": m["support_f1"],
        "reads_per_question": m["reads_per_question"],
        "turns_per_question": mean(r["record"]["turns"] or 0 for r in rows),
        "rejected_turn_share": m["rejected_action_rate"],
        "no_submission_share": m.get("no_submission_rate"),
        # Entries in the final lists (EIR); None for a method without lists.
        "requirements_per_question": m.get("requirements_per_question"),
        "conclusions_per_question": m.get("conclusions_per_question"),
        "seconds_per_question": m["seconds_per_question"],
        "generate_seconds_per_question": sum(c["generate_s"] for c in calls) / len(rows),
        "prompt_evaluated_per_question": sum(c["prompt_evaluated"] for c in calls) / len(rows),
        "completion_tokens_per_question": m["completion_tokens_per_question"],
        "calls_per_question": m["calls_per_question"],
        "failed_questions": m["failed_questions"],
    }


def paired(arms: list[dict[str, dict]], ids: list[str]) -> dict:
    """Where the arms' outputs part: answers, and calls compared in order (a call only one arm made differs)."""
    a, b = arms
    answers, first, calls, differ, content = [], {}, 0, 0, 0
    for i in ids:
        if a[i]["record"]["prediction"] != b[i]["record"]["prediction"]:
            answers.append(i)
        ta, tb = [c["text"] for c in a[i]["calls"]], [c["text"] for c in b[i]["calls"]]
        calls += max(len(ta), len(tb))
        parted = [k for k in range(max(len(ta), len(tb))) if k >= len(ta) or k >= len(tb) or ta[k] != tb[k]]
        differ += len(parted)
        content += sum(1 for k in parted if k >= len(ta) or k >= len(tb) or parsed(ta[k]) != parsed(tb[k]))
        roles = [c["role"] for c in a[i]["record"]["lm_calls"]]
        first[i] = None if not parted else {"call": parted[0] + 1,
                                             "role": roles[parted[0]] if parted[0] < len(roles) else None}
    return {"answers_differ": answers, "calls": calls, "calls_differ": differ,
            # of those, calls whose JSON differs too (not only its layout)
            "calls_differ_in_content": content, "first_differing_call": first}


def parsed(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text


ROWS = [("Answer F1", "answer_f1", "{:.1f}"), ("EM", "em", "{:.1f}"), ("Support F1", "support_f1", "{:.1f}"),
        ("reads/q", "reads_per_question", "{:.2f}"), ("turns/q", "turns_per_question", "{:.2f}"),
        ("rejected turns", "rejected_turn_share", "{:.1%}"), ("no submission", "no_submission_share", "{:.1%}"),
        ("requirements/q", "requirements_per_question", "{:.2f}"),
        ("conclusions/q", "conclusions_per_question", "{:.2f}"), ("s/q", "seconds_per_question", "{:.1f}"),
        ("generate s/q", "generate_seconds_per_question", "{:.1f}"),
        ("prompt evaluated tok/q", "prompt_evaluated_per_question", "{:,.0f}"),
        ("generated tok/q", "completion_tokens_per_question", "{:,.0f}"), ("calls/q", "calls_per_question", "{:.2f}"),
        ("failed questions", "failed_questions", "{:.0f}")]


def render(summary: dict) -> str:
    if not summary["n"]:
        return "no question is done in both arms yet"
    lines = [f"strict decoding, one_line GBNF vs the server's converter: {summary['n']} questions in both arms, "
             f"served by {', '.join(summary['served_by'])}", "", "| | " + " | ".join(ARMS) + " |",
             "|---|" + "---|" * len(ARMS)]
    for label, key, fmt in ROWS:
        cells = [summary["arms"][arm][key] for arm in ARMS]
        lines.append(f"| {label} | " + " | ".join("-" if v is None else fmt.format(v) for v in cells) + " |")
    p = summary["paired"]
    firsts = ", ".join(f"{i}: " + ("same" if f is None else f"call {f['call']} ({f['role']})")
                       for i, f in p["first_differing_call"].items())
    lines += ["", f"answers that differ: {len(p['answers_differ'])} of {summary['n']}"
                  + (f" ({', '.join(p['answers_differ'])})" if p["answers_differ"] else ""),
              f"calls whose output text differs: {p['calls_differ']} of {p['calls']} "
              f"({p['calls_differ_in_content']} in content, the rest in layout only)",
              f"first differing call per question: {firsts}"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
