"""Fuzzing every LM role with malformed outputs: whatever the model writes, no question may fail.

A fixed-seed generator answers every prompt of every method (pool: all five; corpus: the four
corpus methods) through the real dspy.LM / JSONAdapter path. Most outputs are broken on purpose:
not JSON, empty, truncated, nested thousands of levels deep, the wrong top-level type, missing
fields, wrong field types, bad enum values, 100k-character strings, hostile unicode, unknown list
ids, citations of sentences never read, reads of titles or ids that do not exist, searches of only
stopwords. Now and then a well-formed output lets the episode progress. The role of each prompt
(action, final, decompose, verify, refine, reflect) is read from its output-field line, so every
role receives every kind of malformed output that applies to it.

For every question run: the record has no error, every rejected turn explains itself, the calls
the record counts are exactly the calls the engine received (no hidden retries), and the record
can be saved as eval.run saves it (a record that cannot be written ends the whole run).
"""

from __future__ import annotations

import json

import pytest

import eir_dspy.accounting.calls as accounting_calls
from eval.files.results_file import ResultsFile
from eval.runs.execute import run_question
from programs.registry import CORPUS_METHODS, METHODS
from tests.fixtures.fuzzer import CORPUS_Q, DEFAULT, POOL_Q, Fuzzer
from tests.scripted import scripted_lm

SEED = 20240611
MIN_MALFORMED = 1000  # per session, over both settings

# SSR's later roles are reached only through the earlier ones: decompose after a usable proposal,
# verify after a usable decomposition, refine only when two votes reject a step with the same correction.
# This profile lets most turns get that far, so decompose and refine get their share of malformed outputs.
SSR_DEEP = {"valid": {**DEFAULT["valid"], "action": 0.75, "decompose": 0.5, "verify": 0.85, "refine": 0.05},
            "accept": 0.1}

# (method, options, questions, profile). Small budgets keep the file fast; SSR needs votes=2 for a
# step to qualify (two rejections); Reflexion's second trial needs a reflection.
POOL_PLAN = [
    ("eir", {}, 60, DEFAULT),
    ("direct", {}, 100, DEFAULT),
    ("full_pool", {}, 120, DEFAULT),
    ("ssr", {"votes": 2, "verifier_temperature": 0.7}, 12, DEFAULT),
    ("ssr", {"votes": 2, "verifier_temperature": 0.7}, 16, SSR_DEEP),
    ("reflexion", {"trials": 2}, 60, DEFAULT),
]
CORPUS_PLAN = [
    ("eir", {}, 8, DEFAULT),
    ("direct", {}, 8, DEFAULT),
    ("ssr", {"votes": 2, "verifier_temperature": 0.0}, 2, SSR_DEEP),
    ("reflexion", {"trials": 2}, 5, DEFAULT),
]
assert {p[0] for p in POOL_PLAN} == set(METHODS) and {p[0] for p in CORPUS_PLAN} == set(CORPUS_METHODS)


# ---------------------------------------------------------------------------------------------
# Running and checking.


def rejected_turns(record: dict) -> list[dict]:
    trajectory = record["trajectory"] or {}
    turns = list(trajectory.get("turns", []))
    for trial in trajectory.get("trials", []):  # Reflexion
        turns += trial["turns"]
    return [t for t in turns if not t["accepted"]]


def check(record: dict, received: int, results: ResultsFile, label: str) -> list[str]:
    """Every way a question's record can show that a model output broke something."""
    if record["error"] is not None:
        return [f"{label}: the question failed: {record['error']}\n{record['error_trace']}"]
    problems = []
    for t in rejected_turns(record):
        if not (t["feedback"] or "").strip() or not t.get("rejection_cause"):
            problems.append(f"{label}: rejected turn {t['turn']} has no explanation: {t!r:.300}")
    if record["calls"] != received or len(record["lm_calls"]) != received:
        problems.append(f"{label}: the record counts {record['calls']} calls, the engine received {received}")
    try:
        results.append(record)  # what eval.run does with every finished record
    except Exception as exc:
        problems.append(f"{label}: the record cannot be saved: {type(exc).__name__}: {exc}")
    return problems


def run_plan(fuzzer: Fuzzer, plan, results: ResultsFile, corpus=None) -> tuple[list[str], int]:
    problems, questions = [], 0
    q = CORPUS_Q if corpus is not None else POOL_Q
    for method, options, n, profile in plan:
        program = METHODS[method].build(2, options)
        fuzzer.profile = profile
        for i in range(n):
            lm = scripted_lm(fuzzer)  # a fresh engine per question: its prompts die with it
            before = fuzzer.calls
            record = run_question(program, lm, q, corpus)
            received = fuzzer.calls - before
            assert received == len(lm.engine.prompts)
            problems += check(record, received, results, f"{'corpus' if corpus else 'pool'}/{method} #{i}")
            questions += 1
    return problems, questions


@pytest.mark.slow  # thousands of calls, ~10 s
def test_no_malformed_output_fails_a_question_in_either_setting(tiny_corpus, tmp_path):
    fuzzer, results = Fuzzer(SEED), ResultsFile(tmp_path / "results.jsonl")
    pool_problems, pool_n = run_plan(fuzzer, POOL_PLAN, results)
    pool_malformed = fuzzer.malformed
    corpus_problems, corpus_n = run_plan(fuzzer, CORPUS_PLAN, results, tiny_corpus)
    print(f"\n{pool_n + corpus_n} questions, {fuzzer.calls} calls, {fuzzer.malformed} malformed outputs "
          f"({pool_malformed} pool, {fuzzer.malformed - pool_malformed} corpus)")
    print(json.dumps(dict(sorted(fuzzer.kinds.items())), indent=1))
    problems = pool_problems + corpus_problems
    assert not problems, f"{len(problems)} problems, the first ones:\n" + "\n".join(problems[:4])

    assert fuzzer.malformed >= MIN_MALFORMED, dict(fuzzer.kinds)
    assert pool_malformed >= 500 and fuzzer.malformed - pool_malformed >= 200
    # Every role received malformed outputs of many kinds, and every kind was generated.
    roles = {role for role, _ in fuzzer.by_role}
    assert roles == {"action", "final", "decompose", "verify", "refine", "reflect"}, roles
    for role in roles:
        kinds = {k for r, k in fuzzer.by_role if r == role and k != "valid"}
        assert len(kinds) >= 8, (role, kinds)
    every_kind = {k for role in roles for corpus in (False, True) for eir in (False, True)
                  for k in fuzzer.kinds_for(role, corpus, eir)}
    assert set(fuzzer.kinds) - {"valid"} == every_kind


def test_the_checks_fail_when_lm_call_lets_unusable_output_through(monkeypatch, tmp_path):
    """The fuzz can fail: with lm_call re-raising parse errors instead of UnusableOutput, questions fail."""

    def reraise(role, exc):
        raise exc

    monkeypatch.setattr(accounting_calls, "_unusable", reraise)  # where lm_call looks it up
    problems, _ = run_plan(Fuzzer(SEED), [("direct", {}, 5, DEFAULT), ("full_pool", {}, 5, DEFAULT)],
                           ResultsFile(tmp_path / "results.jsonl"))
    assert any("the question failed" in p for p in problems)


# A lone surrogate is valid JSON ("\ud800" is a legal escape) but not valid Unicode: no provider
# can receive it in a prompt, and it cannot be encoded as UTF-8 into the results file.
SURROGATE_THOUGHT = '{"thought": "x\\udfffy", "action": {"kind": "read", "title": "Nowhere", "answer": "", "citations": []}}'
SUBMIT = '{"thought": "t", "action": {"kind": "submit", "title": "", "answer": "Tulsa", "citations": []}}'


def test_a_lone_surrogate_in_an_output_does_not_fail_the_next_call():
    lm = scripted_lm([SURROGATE_THOUGHT, SUBMIT])
    record = run_question(METHODS["direct"].build(2), lm, POOL_Q)
    assert record["error"] is None, record["error"]
    assert record["calls"] == len(lm.engine.prompts) == 2


def test_a_lone_surrogate_in_an_answer_does_not_break_the_results_file(tmp_path):
    lm = scripted_lm(['{"answer": "Tulsa \\ud800", "citations": []}'])
    record = run_question(METHODS["full_pool"].build(2), lm, POOL_Q)
    assert record["error"] is None
    ResultsFile(tmp_path / "results.jsonl").append(record)
