"""Finding the JSON object in an output, in one pass, with bounded mending (eir_dspy/acceptance.py).

The scan must find what JSONAdapter's recursive pattern finds (the balanced {...} that starts first)
without its time growing with the square of nested braces; an output that needs mending past
REPAIR_LIMIT characters is refused with the reason, a rejected turn like any unusable output.
Timings are benchmarks/parse_scaling.py's job, not asserted here.
"""

import json

import pytest
import regex

from eir_dspy.acceptance import REPAIR_LIMIT, NotAnObject, find_object, json_only_problem, read_object
from eir_dspy.lm import DecodingAdapter
from programs import EIR
from signatures.eir_turn import EIRTurn
from tests.fixtures.pool import record_of
from tests.scripted import final, turn

DSPY_PATTERN = regex.compile(r"\{(?:[^{}]|(?R))*\}", regex.DOTALL)  # JSONAdapter's own search


@pytest.mark.parametrize("text", [
    'say {"a": 1} then',
    '{ {"a": 1} }',
    '{ unclosed {"b": 2}',
    'x } { {} {"c": {"d": 3}} y',
    '{"a": {"b": [1, {"c": 2}]}} and {"e": 5}',
    'no braces here',
    '}}}{{{',
    '{{}{}}}',
])
def test_the_scan_finds_what_dspys_pattern_finds_when_no_string_holds_a_brace(text):
    found = find_object(text)
    match = DSPY_PATTERN.search(text)
    assert (found and text[found[0]:found[1]]) == (match and match.group(0))


def test_a_brace_inside_a_string_is_text():
    text = 'Answer: {"answer": "a } b", "note": "say \\"{\\" twice"} done'
    start, end = find_object(text)
    assert json.loads(text[start:end]) == {"answer": "a } b", "note": 'say "{" twice'}
    # DSPy's pattern cuts the object at the brace in the string.
    assert DSPY_PATTERN.search(text).group(0) == '{"answer": "a }'


def test_a_stray_quote_falls_back_to_braces_alone():
    text = '{"a": "unterminated} tail'
    assert find_object(text) == (0, text.index("}") + 1)


def test_reading_an_object_the_extract_way():
    assert read_object('{"a": 1}') == {"a": 1}
    assert read_object('Sure! {"a": 1} Hope that helps.') == {"a": 1}
    assert read_object("Here: {'a': 1,}") == {"a": 1}  # mended, as JSONAdapter mends it
    assert read_object('{"a": "cut short') == {"a": "cut short"}  # output stopped at max_tokens
    # A list of updates cut short is the outer object mended, as JSONAdapter mends the whole output
    # first, not the first complete inner object.
    cut = '{"requirement_updates": [' + '{"text": "x", "status": "open"}, ' * 200
    assert len(read_object(cut)["requirement_updates"]) == 200
    with pytest.raises(NotAnObject, match="no JSON object"):
        read_object("just prose")


def test_mending_stops_at_the_limit_and_says_so():
    long_invalid = "{" + "'k': 1, " * (REPAIR_LIMIT // 8 + 10) + "}"
    assert len(long_invalid) > REPAIR_LIMIT
    with pytest.raises(NotAnObject, match=f"too long to mend \\(limit {REPAIR_LIMIT:,}\\)"):
        read_object(long_invalid)
    # Valid JSON of any length is read by the decoder, unmended.
    long_valid = json.dumps({f"k{i}": i for i in range(REPAIR_LIMIT)})
    assert len(read_object("prefix " + long_valid)) == REPAIR_LIMIT


@pytest.mark.parametrize("hostile", [
    "{" * 100_000 + "}" * 100_000,  # the probe's nesting: 200,000 characters
    ("{" * 4 + "}" * 4) * 25_000,
    "x {" * 70_000,
    '{"a": "' + '\\"' * 100_000,
    '"' + "{" * 4_000 + "}" * 4_000,  # a quote before the braces must not hide them from the checks
    'He said "x ' + "{" * 4_000 + "}" * 4_000,
])
def test_hostile_outputs_are_refused_with_a_cause(hostile):
    with pytest.raises(NotAnObject):
        read_object(hostile)
    problem = json_only_problem(hostile)
    assert problem is not None and problem[0] == "not_json"


def test_an_eir_turn_whose_output_cannot_be_mended_is_a_rejected_turn_with_the_reason():
    hostile = "{" * 100_000 + "}" * 100_000
    record, engine = record_of(EIR(budget=2), [hostile, turn("submit", answer="Tulsa"), final("Tulsa")])
    turns = record["trajectory"]["turns"]
    assert [t["accepted"] for t in turns] == [False, True]
    assert turns[0]["rejection_cause"] == "not_json" and record["prediction"] == "Tulsa"
    assert "too long to mend (limit 10,000)" in engine.prompts[1]  # the model is told why


def test_a_long_string_where_a_list_is_due_is_decoded_not_mended():
    adapter = DecodingAdapter("free")
    updates = [{"id": None, "text": "x" * 50, "status": "open"}] * 200
    out = {"requirement_updates": json.dumps(updates), "conclusion_updates": [],
           "action": {"kind": "submit", "title": "", "answer": "x"}}
    assert len(out["requirement_updates"]) > REPAIR_LIMIT
    fields = adapter.parse(EIRTurn, json.dumps(out))
    assert fields["action"].kind == "submit" and len(fields["requirement_updates"]) == 200
