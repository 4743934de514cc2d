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

import copy
import json
import random
import re
from collections import Counter

import dspy
import pytest

import eir_dspy.accounting.calls as accounting_calls
from eir_dspy.paragraphs import Paragraph
from eval.data.schema import Question
from eval.files.results_file import ResultsFile
from eval.runs.execute import run_question
from programs.registry import CORPUS_METHODS, METHODS
from signatures.search_turns import PLAN_FIELDS
from tests.scripted import field, scripted_lm

SEED = 20240611
MIN_MALFORMED = 1000  # per session, over both settings

POOL = (
    Paragraph("Tinted Windows (album)", ("Tinted Windows is the debut album of Tinted Windows.",), 0),
    Paragraph("Tinted Windows (band)", ("Tinted Windows is a supergroup.", " Their first show was in Tulsa."), 1),
    Paragraph('"Heroes" (David Bowie album)', ("Heroes is an album.",), 2),
    Paragraph("Café Ñandú 🦄", ("A café.", " It is in Tulsa."), 3),
)
POOL_Q = Question("pool", "The band who released the debut album Tinted Windows had their first performance in what city?",
                  "Tulsa", (), "bridge", POOL, (("Tinted Windows (band)", 1),), "hotpotqa")
CORPUS_Q = Question("corpus", "Which city hosts a film festival and is a port?", "Busan", (), "bridge", (),
                    (("Busan", 0), ("Busan", 1)), "hotpotqa")

# How often each role gets a well-formed output (else a malformed one), and how often a well-formed
# verdict accepts. The default keeps most outputs malformed yet lets episodes read, submit and reflect.
DEFAULT = {"valid": {"action": 0.15, "final": 0.1, "decompose": 0.35, "verify": 0.4, "refine": 0.2, "reflect": 0.2},
           "accept": 0.3}
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
# Reading the prompt: which role, which setting, what is there to read.

_FORMAT_LINE = "Respond with a JSON object in the following order of fields: "


def output_fields(prompt: str) -> list[str]:
    """The signature's output fields, from the adapter's last format line (after any echoed model text)."""
    line = prompt.rsplit(_FORMAT_LINE, 1)[1].split("\n", 1)[0]
    return re.findall(r"`(\w+)`", line)


def role_of(prompt: str) -> str:
    fields = set(output_fields(prompt))
    if fields == {"answer", "citations"}:
        return "final"
    if fields == {"facts", "justification", "action"}:
        return "decompose"
    if fields == {"verdict", "correction", "confidence"}:
        return "verify"
    if fields == {"reflection"}:
        return "reflect"
    if fields == {"thought", "action"} or fields == {"thought", *PLAN_FIELDS, "action"}:  # plan: Direct's corpus turn
        return "refine" if "[[ ## correction ## ]]" in prompt else "action"
    if fields == {"requirement_updates", "conclusion_updates", "action"}:
        return "action"
    raise AssertionError(f"unknown prompt with output fields {sorted(fields)}")


def is_corpus(prompt: str) -> bool:
    return "[[ ## search_results ## ]]" in prompt or "[[ ## recent_paragraphs ## ]]" in prompt


def is_eir(prompt: str) -> bool:
    return "requirement_updates" in output_fields(prompt)


def found_ids(prompt: str) -> list[str]:
    """Paragraph ids the prompt shows as `id | title` (search results, or a trajectory's search results)."""
    return sorted(set(re.findall(r"(?m)^(\d+) \| ", prompt)))


def pool_titles(prompt: str) -> list[str]:
    for name in ("unread_titles", "titles"):
        if f"[[ ## {name} ## ]]" in prompt:
            return [t for t in field(prompt, name).splitlines() if t and not t.startswith("(")]
    return [p.title for p in POOL]


# ---------------------------------------------------------------------------------------------
# The generator.

PLAN = {name: "p" for name in PLAN_FIELDS}  # Direct's corpus turn writes them; other signatures ignore them

CONTENT_QUERIES = ["busan port", "film festival", "seoul capital", "running man show", "zebra crossing", "port city"]
STOPWORD_QUERIES = ["the of and", "a an the", "", "   ", "is it was", "!!! ???", "and or but if"]
UNICODE = ["🦄🔥💥", "\u202eevil\u202c", "مرحبا بالعالم", "שלום", "e\u0301\u0301\u0301", "\u200b\u200c\ufeff",
           "\u0000", "a\u0000b", "\ud800", "x\udfffy", "\udbff\udc00", "𝕿𝖚𝖑𝖘𝖆", "ｔｕｌｓａ", "\\", '"', "\n\t\r"]
PROSE = ["I think the answer is Tulsa.", "Let me read the band page first.", "Sure! Here is the JSON you asked for:",
         "```python\nprint('read')\n```", "<action kind='read'>band</action>", "[[ ## thought ## ]]\nread it",
         "read: Tinted Windows (band)", "null-ish", "TODO", "action = read", "{{template}}", "}{", "][", "\x00\x00",
         "kind: fly", "undefined", "NaN"]
WRONG_VALUES = [0, 7, -3.5, 1e308, True, False, None, [], [1, 2], ["a", "b"], {}, {"x": 1}, "", "a string",
                [{"title": 1}], "[1, 2]", '{"kind": "read"}']
BAD_ENUM = ["fly", "READ ", "Submit!", "", "read|submit", "search submit", "open?", "done", "maybe", "yes", "ACCEPT",
            "supported-ish", 1, None, ["read"]]
BAD_SENTENCES = [-1, -10**9, 10**12, 10**30, 2**63, 1.5, "two", None, "0", -0.0]
HUGE_DIGITS = "9" * 5000  # past Python's int-from-string limit


def huge_string(rng: random.Random) -> str:
    return rng.choice([
        lambda: "x" * 100_000,
        lambda: ("word " * 20_000).strip(),
        lambda: "🦄" * 100_000,
        lambda: "".join(rng.choices("abc{}[]\"\\ :,", k=100_000)),
    ])()


def paths(obj, path=()):
    """Every node under the root, as a key path."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        yield path + (k,)
        yield from paths(v, path + (k,))


def set_path(obj, path, value):
    obj = copy.deepcopy(obj)
    node = obj
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return obj


def drop_path(obj, path):
    obj = copy.deepcopy(obj)
    node = obj
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    return obj


class Fuzzer:
    """The scripted model: answers each prompt with a malformed output, or now and then a valid one."""

    COMMON = {"not_json": 3, "empty": 2, "truncated_json": 3, "deep_array": 2, "deep_object": 2, "deep_in_field": 2,
              "wrong_top_type": 3, "missing_field": 3, "wrong_type": 5, "huge_string": 1, "unicode": 3}

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.profile = DEFAULT
        self.calls = 0
        self.kinds: Counter[str] = Counter()
        self.by_role: Counter[tuple[str, str]] = Counter()  # (role, kind), "valid" included

    @property
    def malformed(self) -> int:
        return sum(n for k, n in self.kinds.items() if k != "valid")

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        role, corpus, eir = role_of(prompt), is_corpus(prompt), is_eir(prompt)
        rng = self.rng
        if rng.random() < self.profile["valid"][role]:
            kind, text = "valid", json.dumps(self.valid(role, corpus, eir, prompt))
        else:
            kinds = self.kinds_for(role, corpus, eir)
            kind = rng.choices(list(kinds), weights=list(kinds.values()))[0]
            text = self.malformed_output(kind, role, corpus, eir, prompt)
        self.kinds[kind] += 1
        self.by_role[role, kind] += 1
        return text

    def kinds_for(self, role: str, corpus: bool, eir: bool) -> dict[str, int]:
        kinds = dict(self.COMMON)
        if role in ("action", "refine", "verify"):
            kinds["bad_enum"] = 3
        if role in ("action", "refine"):
            kinds["bad_read"] = 3
            kinds["stopword_search" if corpus else "search_in_pool"] = 2
            if not eir:
                kinds["bad_citations"] = 3
                kinds["empty_answer"] = 1
        if role == "action" and eir:
            kinds["unknown_list_ids"] = 3
            kinds["bad_list_citations"] = 3
            kinds["huge_list"] = 1
        if role == "final":
            kinds["bad_citations"] = 4
        if role == "verify":
            kinds["bad_confidence"] = 3
            kinds["unusable_correction"] = 3
        return kinds

    # -- well-formed outputs ---------------------------------------------------------------

    def valid_action(self, corpus: bool, prompt: str, citing: bool) -> dict:
        rng = self.rng
        if corpus:
            ids, r = found_ids(prompt), rng.random()
            if ids and r < 0.5:
                action = {"kind": "read", "query": "", "paragraph_id": rng.choice(ids), "answer": ""}
            elif r < 0.8:
                action = {"kind": "search", "query": rng.choice(CONTENT_QUERIES), "paragraph_id": "", "answer": ""}
            else:
                action = {"kind": "submit", "query": "", "paragraph_id": "", "answer": "Busan"}
        elif rng.random() < 0.65:
            action = {"kind": "read", "title": rng.choice(pool_titles(prompt)), "answer": ""}
        else:
            action = {"kind": "submit", "title": "", "answer": rng.choice(["Tulsa", "Seoul"])}
        if citing:
            action["citations"] = []
        return action

    def valid(self, role: str, corpus: bool, eir: bool, prompt: str) -> dict:
        rng = self.rng
        if role == "final":
            return {"answer": rng.choice(["Tulsa", "Busan", "x"]), "citations": []}
        if role == "decompose":
            return {"facts": "nothing read yet", "justification": "the band page names the city", "action": "read it"}
        if role == "verify":
            step = field(prompt, "step")
            if rng.random() < self.profile["accept"]:
                return {"verdict": "accept", "correction": "", "confidence": 0.9}
            # Deterministic per step, so two votes can agree and the step qualifies for refine.
            correction = {"action": "search: busan port" if corpus else f"read: {POOL[1].title}"}.get(step, "fix it")
            return {"verdict": "reject", "correction": correction, "confidence": 0.8}
        if role == "reflect":
            return {"reflection": "Read the band page, then submit the city."}
        if eir:
            return {"requirement_updates": [{"id": None, "text": "the city", "status": "open"}],
                    "conclusion_updates": [], "action": self.valid_action(corpus, prompt, citing=False)}
        return {"thought": "t", **PLAN, "action": self.valid_action(corpus, prompt, citing=True)}

    def template(self, role: str, corpus: bool, eir: bool) -> dict:
        """A rich output of the role (nested lists and objects) for mutations to work on."""
        title = self.rng.choice([p.title for p in POOL] + ["Busan", "Seoul"])
        cites = [{"title": title, "sentence": 0}, {"title": title, "sentence": 1}]
        if corpus:
            action = {"kind": "search", "query": "busan", "paragraph_id": "12", "answer": "Busan"}
        else:
            action = {"kind": "read", "title": title, "answer": "Tulsa"}
        if role == "final":
            return {"answer": "Tulsa", "citations": cites}
        if role == "decompose":
            return {"facts": "f", "justification": "j", "action": "read: x"}
        if role == "verify":
            return {"verdict": "reject", "correction": f"read: {title}", "confidence": 0.7}
        if role == "reflect":
            return {"reflection": "try again"}
        if eir and role == "action":
            return {"requirement_updates": [{"id": None, "text": "r", "status": "open"}],
                    "conclusion_updates": [{"id": None, "claim": "c", "status": "supported", "citations": cites}],
                    "action": action}
        return {"thought": "t", **PLAN, "action": {**action, "citations": cites}}

    # -- malformed outputs -----------------------------------------------------------------

    def deep(self, opener: str) -> str:
        depth, closed = self.rng.randint(200, 5000), self.rng.random() < 0.5
        if opener == "[":
            return "[" * depth + ("]" * depth if closed else "")
        return '{"a":' * depth + ("1" + "}" * depth if closed else "")

    def malformed_output(self, kind: str, role: str, corpus: bool, eir: bool, prompt: str) -> str:
        rng = self.rng
        base = self.template(role, corpus, eir)
        nodes = list(paths(base))
        strings = [p for p in nodes if isinstance(_get(base, p), str)]
        if kind == "not_json":
            return rng.choice(PROSE) + rng.choice(["", " " + rng.choice(PROSE), "\n" + rng.choice(UNICODE)])
        if kind == "empty":
            return rng.choice(["", " ", "\n\n", "\t"])
        if kind == "truncated_json":
            text = json.dumps(base)
            return text[: rng.randrange(1, len(text) - 1)]
        if kind == "deep_array":
            return self.deep("[")
        if kind == "deep_object":
            return self.deep("{")
        if kind == "deep_in_field":
            text = json.dumps(set_path(base, rng.choice(nodes), "__DEEP__"))
            return text.replace('"__DEEP__"', self.deep(rng.choice("[{")))
        if kind == "wrong_top_type":
            return json.dumps(rng.choice([[base], [], 42, -1.5, 1e300, "a string", json.dumps(base), None, True,
                                          [1, 2, 3], list(base)]))
        if kind == "missing_field":
            if rng.random() < 0.2:
                return rng.choice(["{}", '{"unrelated": 1}', '{"Action": {"kind": "read"}}'])
            return json.dumps(drop_path(base, rng.choice([p for p in nodes if not isinstance(p[-1], int)])))
        if kind == "wrong_type":
            return json.dumps(set_path(base, rng.choice(nodes), copy.deepcopy(rng.choice(WRONG_VALUES))))
        if kind == "bad_enum":
            enums = [p for p in nodes if p[-1] in ("kind", "status", "verdict")]
            return json.dumps(set_path(base, rng.choice(enums), rng.choice(BAD_ENUM)))
        if kind == "huge_string":
            return json.dumps(set_path(base, rng.choice(strings), huge_string(rng)))
        if kind == "unicode":
            value = "".join(rng.choice(UNICODE) for _ in range(rng.randint(1, 4)))
            surrogate = any(0xD800 <= ord(c) <= 0xDFFF for c in value)
            # A model's bytes decode to text without lone surrogates; it can only write them as escapes.
            return json.dumps(set_path(base, rng.choice(strings), value),
                              ensure_ascii=surrogate or rng.random() < 0.5)
        if kind == "bad_read":
            if corpus:
                pid = rng.choice(["999999", "0", "-1", "", "abc", "12 | Busan", "[12]", "#7", "1e3", "𝟙𝟚", "\u0000"])
                action = {"kind": "read", "query": "", "paragraph_id": pid, "answer": "", "citations": []}
            else:
                title = rng.choice(["Nowhere", "", "tinted windows", "TINTED WINDOWS (BAND)", "Heroes (David Bowie album)",
                                    "Busan", "\ud800", "Cafe Nandu", " " * 5, "x" * 300])
                action = {"kind": "read", "title": title, "answer": "", "citations": []}
            return self.with_action(role, eir, action)
        if kind == "search_in_pool":
            return self.with_action(role, eir, {"kind": "search", "query": "busan", "title": "", "answer": ""})
        if kind == "stopword_search":
            action = {"kind": "search", "query": rng.choice(STOPWORD_QUERIES), "paragraph_id": "", "answer": ""}
            return self.with_action(role, eir, action)
        if kind == "empty_answer":
            return self.with_action(role, eir, {"kind": "submit", "answer": rng.choice(["", "   ", "\n"]),
                                                "title": "", "citations": []})
        if kind in ("bad_citations", "bad_list_citations"):
            cites = [self.bad_citation() for _ in range(rng.randint(1, 3))]
            if kind == "bad_list_citations":
                out = self.template(role, corpus, eir)
                out["conclusion_updates"][0]["citations"] = cites
            elif role == "final":
                out = {"answer": "Tulsa", "citations": cites}
            else:
                out = json.loads(self.with_action(role, eir, {"kind": "submit", "title": "", "answer": "Tulsa",
                                                              "citations": cites}))
            text = json.dumps(out)
            return text.replace('"__HUGE_DIGITS__"', HUGE_DIGITS)
        if kind == "unknown_list_ids":
            out = self.template(role, corpus, eir)
            out["requirement_updates"][0]["id"] = rng.choice(["R99", "C1", "r1", "0", "R1 ", "-1", "🦄"])
            out["conclusion_updates"][0]["id"] = rng.choice(["C42", "R1", "c1", None])
            return json.dumps(out)
        if kind == "huge_list":
            out = self.template(role, corpus, eir)
            out["requirement_updates"] = [{"id": None, "text": f"r{i}", "status": "open"} for i in range(1000)]
            out["conclusion_updates"] = []
            return json.dumps(out)
        if kind == "bad_confidence":
            return json.dumps(set_path(base, ("confidence",), rng.choice([-1, 7, 1e308, "high", None, [0.5], "0.9"])))
        if kind == "unusable_correction":
            return json.dumps(set_path(base, ("correction",),
                                       rng.choice(["fly: away", "read: Nowhere", "read:", "submit:", "search: ",
                                                   "read: 999999", "search: the of", "", "\ud800", "READ"])))
        raise AssertionError(kind)

    def bad_citation(self) -> dict:
        rng = self.rng
        title = rng.choice([p.title for p in POOL] + ["Busan", "No Such Title", "", "\ud800", "🦄"])
        sentence = rng.choice(BAD_SENTENCES + [0, 1, "__HUGE_DIGITS__"])
        return {"title": title, "sentence": sentence}

    @staticmethod
    def with_action(role: str, eir: bool, action: dict) -> str:
        if eir and role == "action":
            action = {k: v for k, v in action.items() if k != "citations"}
            return json.dumps({"requirement_updates": [], "conclusion_updates": [], "action": action})
        return json.dumps({"thought": "t", **PLAN, "action": action})


def _get(obj, path):
    for k in path:
        obj = obj[k]
    return obj


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
    with dspy.context(adapter=dspy.JSONAdapter()):  # as eval.run configures it
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
    with dspy.context(adapter=dspy.JSONAdapter()):
        record = run_question(METHODS["direct"].build(2), lm, POOL_Q)
    assert record["error"] is None, record["error"]
    assert record["calls"] == len(lm.engine.prompts) == 2


def test_a_lone_surrogate_in_an_answer_does_not_break_the_results_file(tmp_path):
    lm = scripted_lm(['{"answer": "Tulsa \\ud800", "citations": []}'])
    with dspy.context(adapter=dspy.JSONAdapter()):
        record = run_question(METHODS["full_pool"].build(2), lm, POOL_Q)
    assert record["error"] is None
    ResultsFile(tmp_path / "results.jsonl").append(record)
