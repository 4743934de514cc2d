"""Each method's acceptance rule (eir_dspy/acceptance.py) on a scripted LM, through the project's adapter.

The paper: EIR can extract an action from surrounding prose; Direct and Reflexion require JSON only.
Chosen where it is silent: SSR accepts as Direct (its proposal is Direct's), Full Pool as EIR (its one
call is EIR's final call). A refused output is a rejected turn with its cause, never a failed question,
and the analyses count it with the other unparseable outputs.
"""

import json

import pytest

from eir_dspy import rejection
from eir_dspy.acceptance import (
    ACCEPTANCES,
    DEFAULT_FENCE_READING,
    EXTRACT,
    FENCE_STRIPPED,
    FENCE_TEXT,
    JSON_ONLY,
    json_only_problem,
)
from eval.analyze import parse_failures, rejections
from programs import EIR, SSR, Direct, FullPool, Reflexion
from programs.registry import METHODS
from tests.fixtures.pool import POOL, Q, record_of
from tests.scripted import act, final, run_program, turn

BAND = "Tinted Windows (band)"
REFUSED = "the output could not be used: it must be the JSON object alone, with no text or code fence around it"


def prose(reply: dict) -> str:
    return "Sure! Here is my decision:\n" + json.dumps(reply) + "\nLet me know if you need more."


def fenced(reply: dict) -> str:
    return "```json\n" + json.dumps(reply) + "\n```"


@pytest.mark.parametrize("text, expected", [
    ('{"a": 1}', None),
    ('\n  {"a": {"b": [1, 2]}}  \n', None),  # surrounding whitespace is not text
    ('Sure: {"a": 1}', (rejection.NOT_JSON_ONLY, "text before the JSON object")),
    ('{"a": 1} Done.', (rejection.NOT_JSON_ONLY, "text after the JSON object")),
    ('```json\n{"a": 1}\n```', (rejection.NOT_JSON_ONLY, "text before and after the JSON object")),
    ('{"a": 1,}', ("not_json", "")),  # JSONAdapter would mend it; JSON only does not
    ('I will read the band page.', ("not_json", "")),
    ('[{"a": 1}]', ("not_json", "a JSON list, not an object")),
])
def test_json_only_accepts_one_json_object_and_nothing_else(text, expected):
    assert json_only_problem(text) == expected


@pytest.mark.parametrize("text, expected", [
    ('```json\n{"a": 1}\n```', None),  # one fence around the object alone: the object
    ('```\n{"a": 1}\n```', None),
    ('  ```JSON\n  {"a": {"b": 2}}\n```  ', None),
    ('Here:\n```json\n{"a": 1}\n```', (rejection.NOT_JSON_ONLY, "text before and after the JSON object")),  # prose
    ('```json\n{"a": 1}\n```\nDone.', (rejection.NOT_JSON_ONLY, "text before and after the JSON object")),
    ('```json\n{"a": 1} ok\n```', (rejection.NOT_JSON_ONLY, "text after the JSON object")),  # inside: text too
    ('```json\n[1, 2]\n```', ("not_json", "a JSON list, not an object")),
    ('{"a": 1}', None),
])
def test_the_stripped_fence_reading_accepts_one_fence_around_the_object_alone(text, expected):
    assert json_only_problem(text, fences=FENCE_STRIPPED) == expected


def test_the_default_fence_reading_is_text_and_the_reading_is_checked():
    fenced_object = '```json\n{"a": 1}\n```'
    assert DEFAULT_FENCE_READING == FENCE_TEXT
    assert json_only_problem(fenced_object) == json_only_problem(fenced_object, fences=FENCE_TEXT) == \
        (rejection.NOT_JSON_ONLY, "text before and after the JSON object")
    with pytest.raises(ValueError, match="fences must be one of text, stripped"):
        json_only_problem('{"a": 1}', fences="lenient")


def test_every_method_declares_the_papers_rule_or_the_named_choice():
    assert {name: m.acceptance for name, m in METHODS.items()} == {
        "eir": EXTRACT, "direct": JSON_ONLY, "reflexion": JSON_ONLY,  # the paper
        "ssr": JSON_ONLY, "full_pool": EXTRACT}  # the paper is silent: chosen
    assert {m.program.acceptance for m in METHODS.values()} <= set(ACCEPTANCES)


def test_a_prose_wrapped_direct_output_is_a_rejected_turn_with_its_cause_not_a_failed_question():
    record, engine = record_of(Direct(budget=3), [
        prose(act("read", BAND)),
        act("read", BAND),
        act("submit", answer="Tulsa", citations=[(BAND, 1)]),
    ])
    turns = record["trajectory"]["turns"]
    assert [t["accepted"] for t in turns] == [False, True, True]
    assert turns[0]["rejection_cause"] == rejection.NOT_JSON_ONLY and turns[0]["read_title"] is None
    assert record["rejections_by_cause"] == {rejection.NOT_JSON_ONLY: 1}
    assert record["prediction"] == "Tulsa" and record["calls"] == 3
    assert REFUSED + " (text before and after the JSON object)" in engine.prompts[1]


def test_a_fenced_direct_output_is_refused_too():
    record, _ = record_of(Direct(budget=1), [fenced(act("submit", answer="Tulsa"))])
    assert record["rejections_by_cause"] == {rejection.NOT_JSON_ONLY: 1} and record["prediction"] == ""


def test_a_prose_wrapped_eir_output_is_accepted():
    record, engine = record_of(EIR(budget=2), [
        prose(turn("read", BAND)),
        fenced(turn("submit", answer="Tulsa")),
        prose(final("Tulsa", [(BAND, 1)])),  # EIR's final call extracts too
    ])
    turns = record["trajectory"]["turns"]
    assert [t["accepted"] for t in turns] == [True, True] and turns[0]["read_title"] == BAND
    assert record["rejections_by_cause"] == {} and record["trajectory"]["final_parsed"] is True
    assert record["prediction"] == "Tulsa" and record["calls"] == 3


def test_a_prose_wrapped_reflexion_output_is_rejected_and_so_is_a_prose_wrapped_reflection():
    record, engine = record_of(Reflexion(budget=1, trials=2), [
        prose(act("submit", answer="Tulsa")),  # trial 1: refused, so the trial ends with no submit
        prose({"reflection": "QQLESSON submit as JSON"}),  # refused: the placeholder is passed on
        act("submit", answer="Tulsa"),  # trial 2: accepted
    ])
    first, second = record["trajectory"]["trials"]
    assert [t["rejection_cause"] for t in first["turns"]] == [rejection.NOT_JSON_ONLY] and first["forced_end"]
    assert first["reflection"] == "(the reflection could not be parsed)"
    assert [t["accepted"] for t in second["turns"]] == [True] and record["prediction"] == "Tulsa"
    assert "QQLESSON" not in engine.prompts[2] and REFUSED in engine.prompts[1]
    assert record["rejections_by_cause"] == {rejection.NOT_JSON_ONLY: 1}


def test_ssr_accepts_as_direct_does():
    pred, ledger, _ = run_program(SSR(budget=1), Q, POOL, [prose(act("read", BAND))])
    assert pred.episode.turns[0].rejection_cause == rejection.NOT_JSON_ONLY
    assert ledger.by_role() == {"action": 1}  # rejected before any verification


def test_full_pool_accepts_as_eirs_final_call_does():
    pred, ledger, _ = run_program(FullPool(), Q, POOL, [prose(final("Tulsa", [(BAND, 1)]))])
    assert pred.answer == "Tulsa" and pred.trajectory["final_parsed"] is True
    assert [c.unusable for c in ledger.calls] == [None]


def test_the_same_text_is_refused_by_direct_and_read_by_eir():
    text = prose(act("submit", answer="Tulsa"))  # a Direct-shaped output: EIR's turn needs other fields
    direct, _, _ = run_program(Direct(budget=1), Q, POOL, [text])
    eir, _, _ = run_program(EIR(budget=1), Q, POOL, [prose(turn("submit", answer="Tulsa")), final("Tulsa")])
    assert direct.episode.turns[0].rejection_cause == rejection.NOT_JSON_ONLY
    assert eir.episode.turns[0].accepted


def test_the_analyses_count_a_refused_output_as_unparseable():
    record, _ = record_of(Direct(budget=2), [prose(act("read", BAND)), fenced(act("submit", answer="Tulsa"))])
    assert record["trajectory"]["forced_end"]
    actions, counts, other = rejections.by_category([record])
    assert (actions, counts, other) == (2, {"unparseable output": 2}, {})  # Table 22
    assert parse_failures.status(record) == parse_failures.UNREADABLE  # C.2
