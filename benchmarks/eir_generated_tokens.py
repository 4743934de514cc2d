"""Where an EIR question's generated tokens go, on the embedded model served by llama-server.

    EIR_DATA_DIR=../shared/data/raw python benchmarks/eir_generated_tokens.py [--n 3] [--threads 3]

Runs EIR on the first N dev questions (HotpotQA rpt_sample500_seed1, never the holdout), keeps
every call's output text, tokenises it with the server's own tokenizer (/tokenize with pieces)
and prints generated tokens per question by role and output field (requirement_updates,
conclusion_updates, action; the final call's answer and citations), split into layout whitespace
(tokens that are only spaces and newlines), and, for list fields, tokens of entries repeating an
entry the model had already written in that question.
"""

from __future__ import annotations

import argparse
import json
import urllib.request
from collections import defaultdict

import dspy

from eir_dspy.lm import LMSpec, build_lm
from eir_dspy.lm.local_models import DEFAULT_MODEL
from eval.data.loaders import load_questions
from eval.runs.execute import run_question
from programs.registry import METHODS
from programs.run_context import RunContext

FIELDS = ("requirement_updates", "conclusion_updates", "action", "answer", "citations")


def pieces(base_url: str, text: str) -> list[str]:
    body = json.dumps({"content": text, "with_pieces": True}).encode()
    request = urllib.request.Request(base_url.removesuffix("/v1") + "/tokenize", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return [t["piece"] if isinstance(t["piece"], str) else bytes(t["piece"]).decode("utf-8", "replace")
                for t in json.loads(reply.read())["tokens"]]


def field_spans(text: str) -> list[tuple[str, int, int]]:
    """(field, start, end) of each top-level output field, by the position of its key."""
    starts = sorted((text.find(f'"{f}"'), f) for f in FIELDS if text.find(f'"{f}"') >= 0)
    return [(f, s, starts[i + 1][0] if i + 1 < len(starts) else len(text)) for i, (s, f) in enumerate(starts)]


def repeated_entries(text: str, seen: set[str]) -> set[str]:
    """Entries of this output's lists that repeat one written earlier in the question (as JSON text)."""
    try:
        out = json.loads(text)
    except ValueError:
        return set()
    repeats = set()
    for name in ("requirement_updates", "conclusion_updates"):
        for entry in out.get(name) or []:
            key = json.dumps({k: v for k, v in entry.items() if k != "id"}, sort_keys=True)
            if key in seen:
                repeats.add(json.dumps(entry))
            seen.add(key)
    return repeats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lm", default=DEFAULT_MODEL)
    p.add_argument("--n", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    spec = LMSpec(args.lm, decoding="schema", slots=args.threads)
    lm = build_lm(spec)
    engine = lm.engine
    dspy.configure(lm=lm)
    program = METHODS["eir"].build(6, context=RunContext.for_lm(lm, spec))
    questions = load_questions("hotpotqa", None, limit=args.n, seed=0)
    engine.trace = []
    totals: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    generated = 0
    for q in questions:
        start = len(engine.trace)
        record = run_question(program, lm, q)
        rows = engine.trace[start:]
        roles = [c["role"] for c in record["lm_calls"]]
        seen: set[str] = set()
        for role, row in zip(roles, rows):
            text = row["text"]
            generated += row["generated"]
            repeats = repeated_entries(text, seen)
            offset, spans = 0, field_spans(text)
            for piece in pieces(engine.server.url, text):
                where = next((f for f, s, e in spans if s <= offset < e), "(before the first field)")
                cell = totals[(role, where)]
                cell["tokens"] += 1
                cell["layout"] += piece.strip() == ""
                offset += len(piece)
            for entry in repeats:
                totals[(role, "repeated list entries")]["tokens"] += len(pieces(engine.server.url, entry))
    n = len(questions)
    print(f"EIR, schema decoding, {lm.model}, {n} questions: {generated / n:.0f} generated tokens per question "
          f"(the server's count; the rows below re-tokenise the text)")
    print("| role | field | tokens/q | of which layout whitespace |")
    print("|---|---|---|---|")
    for (role, where), cell in sorted(totals.items()):
        layout = f"{cell['layout'] / n:.0f}" if where != "repeated list entries" else "–"
        print(f"| {role} | {where} | {cell['tokens'] / n:.0f} | {layout} |")


if __name__ == "__main__":
    main()
