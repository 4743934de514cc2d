"""Strict decoding's one-line grammar (eir_dspy/lm/grammar.py), read without a model.

tests/fixtures/strict_grammars.jsonl holds schemas the project decodes under strict (every
signature's, and signatures/schemas.py's per-call ones on made-up states: non-ASCII titles, a
title with quotes, nothing read, no read left, the repair ablation, the corpus setting), each with
the grammar llama-cpp-python 0.3.36's converter made of it (`json_schema_to_gbnf(json.dumps(schema))`:
what strict decoded under until issue 33, recorded before that package was dropped). The project's
grammar must accept exactly the strings that one accepted: then greedy decoding under it writes
what it wrote before."""

import json
from pathlib import Path

import pytest

from eir_dspy.lm.grammar import UnsupportedSchema, one_line_gbnf
from tests.eir_dspy.lm.gbnf_check import Grammar, same_language

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "strict_grammars.jsonl"
CASES = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
# A quick subset for the default run: a signature's schema ($defs, anyOf with null, enums), per-call
# schemas with enums of real titles and sentence indices, consts, numbers, arrays with minItems.
QUICK = ("signature eir turn", "signature direct search_turn", "strict direct turn", "strict final answer",
         "strict verify", "strict repair", "strict select reads", "strict eir search turn, last turn")


def case_id(case: dict) -> str:
    return case["case"]


@pytest.mark.parametrize("case", [c for c in CASES if c["case"] in QUICK], ids=case_id)
def test_strict_grammars_accept_what_they_accepted_before(case):
    assert same_language(one_line_gbnf(json.dumps(case["schema"])), case["llama_cpp_python_0_3_36"], samples=5) == []


@pytest.mark.slow  # ~1 minute: every recorded schema, more samples
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_recorded_strict_grammar_accepts_what_it_accepted_before(case):
    assert same_language(one_line_gbnf(json.dumps(case["schema"])), case["llama_cpp_python_0_3_36"], samples=20) == []


TURN = {"type": "object", "properties": {"thought": {"type": "string", "maxLength": 20},
                                         "action": {"enum": ["read", "submit"]},
                                         "titles": {"type": "array", "items": {"enum": ["Beyoncé", "Seoul"]},
                                                    "maxItems": 2}},
        "required": ["thought", "action", "titles"]}


def test_json_stays_on_one_line_in_the_schemas_order_and_values():
    g = Grammar(one_line_gbnf(json.dumps(TURN)))
    assert g.accepts('{"thought": "x", "action": "read", "titles": ["Beyoncé", "Seoul"]}')
    assert g.accepts('{"thought":"x","action":"submit","titles":[]} ')
    assert not g.accepts('{\n  "thought": "x", "action": "read", "titles": []}')  # no newline between tokens
    assert not g.accepts('{"thought":  "x", "action": "read", "titles": []}')  # at most one space
    assert not g.accepts('{"action": "read", "thought": "x", "titles": []}')  # the schema's order
    assert not g.accepts('{"thought": "x", "action": "read", "titles": ["Busan"]}')  # only the enum's values
    assert not g.accepts('{"thought": "x", "action": "read", "titles": ["Seoul", "Seoul", "Seoul"]}')  # maxItems
    assert not g.accepts('{"thought": "' + "x" * 21 + '", "action": "read", "titles": []}')  # maxLength
    assert not g.accepts('{"thought": "x", "action": "read" , "titles": []}')  # as before: no space after an enum


def test_the_reader_tells_a_newline_rule_from_the_one_line_rule():
    """So an empty list of disagreements above means the grammars agree, not that the reader is blind."""
    one_line = one_line_gbnf(json.dumps(TURN))
    with_newlines = one_line.replace('space ::= " "?', 'space ::= | " " | "\\n" [ \\t]{0,20}')
    assert same_language(one_line, with_newlines, samples=5)


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^a+$"},
    {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
    {"$ref": "https://example.org/schema.json"},
    {"type": "string", "format": "date"},
    {"description": "no type"},
])
def test_a_keyword_the_grammar_cannot_hold_is_an_error_not_a_looser_grammar(schema):
    with pytest.raises(UnsupportedSchema):
        one_line_gbnf(json.dumps(schema))


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": "string"}}, "allOf": [{"required": ["a"]}]},
    {"type": "array", "items": {"type": "string"}, "prefixItems": [{"const": "x"}]},
    {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    {"type": "array", "maxItems": 2},  # a bound with no items schema to put it on
    {"type": "string", "format": "email"},
    {"type": "number", "minimum": 0, "maximum": 1},  # only an integer's bounds are read as none (see the module)
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]},
    {"type": "object", "required": ["a"]},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}, "$defs": {}},
    {"not": {"type": "null"}},
    {"enum": []},  # a choice among nothing would be an empty group, which matches the empty string
    {"oneOf": []},
])
def test_a_keyword_read_nowhere_is_an_error_too(schema):
    with pytest.raises(UnsupportedSchema):
        one_line_gbnf(json.dumps(schema))


def test_a_list_of_types_keeps_the_schemas_other_keywords():
    g = Grammar(one_line_gbnf(json.dumps({"type": ["string", "null"], "maxLength": 3})))
    assert g.accepts('"abc"') and g.accepts("null")
    assert not g.accepts('"abcd"')


def test_a_const_or_enum_string_is_its_json_text_escapes_and_all():
    values = ['say "hi"', "back\\slash", "line\nbreak\ttab", "Beyoncé 🦄", "\x01"]
    g = Grammar(one_line_gbnf(json.dumps({"enum": values})))
    for value in values:
        assert g.accepts(json.dumps(value, ensure_ascii=False)), value
    assert not g.accepts('"Beyonc\\u00e9 🦄"')  # non-ASCII as the character itself, as before
    assert not g.accepts('"say "hi""') and not g.accepts('"line\nbreak\ttab"')  # no unescaped quote or newline
    assert Grammar(one_line_gbnf(json.dumps({"const": 'a"b'}))).accepts('"a\\"b"')
