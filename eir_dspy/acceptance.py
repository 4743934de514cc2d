"""Which text a method accepts as its output: the paper's per-method parse rule.

- `extract`: a JSON object found anywhere in the output is read and the prose around it ignored
  (DSPy's JSONAdapter, which also mends small JSON slips). The paper's EIR; also Full Pool, whose one
  call is EIR's final call.
- `json_only`: the output, stripped of surrounding whitespace, must be one valid JSON object and
  nothing else. The paper's Direct and Reflexion (H.4); also SSR, whose proposal is Direct's, for
  every call it makes.

A Markdown code fence around the object (```json ... ```) is a choice H.4 leaves open. The default
reading, `text`, counts the fence as text around the object, so a JSON-only method refuses it
(`not_json_only`). The other reading, `stripped`, accepts an output that is exactly one fence whose
content is the JSON object alone. `json_only_problem(completion, fences=...)` takes either; the
adapter (eir_dspy/lm/decoding.py) calls it with the default.

Finding the object takes time linear in the output (`find_object`: one scan, where DSPy's recursive
pattern and json_repair took time growing with the square of nested braces: 7.75 s for 8,000
pairs, minutes for a 200,000-character output). A found object that is valid JSON is read by the
JSON decoder; one that is not is mended by json_repair only when it could be an object with slips
(`REPAIR_LIMIT` characters, `MEND_DEPTH` deep, no keyless object: json_repair's cost grows fast with
hostile structure), else the output is refused as `not_json` with the reason, a rejected turn like
any unusable output (benchmarks/parse_scaling.py measures both).

A method declares its rule as the class attribute `acceptance` of its dspy.Module. The program
gives it to the adapter it builds (`DecodingAdapter(decoding, acceptance=...)`,
eir_dspy/lm/decoding.py; programs/method_program.py) and runs its forward under that adapter, so a
method's nested calls (EIR's final answer, Reflexion's reflection, SSR's verifiers) follow the
method. An adapter given no rule: `extract`.
A refused output goes the one unusable-output path (eir_dspy/accounting/unusable.py) with its cause.
"""

from __future__ import annotations

import json
import re

import json_repair

from eir_dspy.rejection import NOT_JSON_ONLY

EXTRACT, JSON_ONLY = "extract", "json_only"
ACCEPTANCES = (EXTRACT, JSON_ONLY)
# json_repair mends the slips a model makes (quotes, commas, an output cut short) in milliseconds,
# but its time grows with the square of brace structure no JSON object has (7 s for 4,000 nested
# pairs, 1.3 s for 10,000 characters of keyless objects on 2 cores). It is given only output that
# could be an object with slips: at most REPAIR_LIMIT characters (every output the default
# --max-tokens of 2,048 allows), nested at most MEND_DEPTH deep, with no object opening straight
# into another brace or bracket where a key is due.
REPAIR_LIMIT = 10_000
MEND_DEPTH = 16
_SPECIAL = re.compile(r'[{}"\\]')
_STRUCTURE = re.compile(r'[{}\[\]"\\]')
_KEYLESS = re.compile(r"\s*[{\[]")

# How `json_only` reads a code fence around the object (H.4 is silent): the readings and what each means.
FENCE_TEXT, FENCE_STRIPPED = "text", "stripped"
FENCE_READINGS = (FENCE_TEXT, FENCE_STRIPPED)
DEFAULT_FENCE_READING = FENCE_TEXT
FENCE_READING_TEXT = {
    FENCE_TEXT: "a code fence around the JSON object is text around it, so a JSON-only method refuses the output "
                "(not_json_only)",
    FENCE_STRIPPED: "an output that is exactly one code fence (```json or ```) around the JSON object alone is "
                    "read as that object"}
_FENCE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\n(.*)\n[ \t]*```\Z", re.DOTALL | re.IGNORECASE)


def json_only_problem(completion: str, fences: str = DEFAULT_FENCE_READING) -> tuple[str, str] | None:
    """(cause, detail) when `completion` is not one JSON object alone, else None. `fences`: how a code
    fence around the object is read (FENCE_READINGS)."""
    if fences not in FENCE_READINGS:
        raise ValueError(f"fences must be one of {', '.join(FENCE_READINGS)}, not {fences!r}")
    text = completion.strip()
    if fences == FENCE_STRIPPED and (fenced := _FENCE.match(text)):
        text = fenced.group(1).strip()
    value = _loads(text)
    if value is not None or text == "null":
        return None if isinstance(value, dict) else ("not_json", f"a JSON {type(value).__name__}, not an object")
    found = find_object(text)
    if found is None or not _loads_object(text[found[0]:found[1]]):
        return "not_json", ""
    where = [w for w, extra in (("before", text[:found[0]]), ("after", text[found[1]:])) if extra.strip()]
    return NOT_JSON_ONLY, f"text {' and '.join(where)} the JSON object"


class NotAnObject(ValueError):
    """No JSON object could be read from an output; the message says why."""


def read_object(completion: str) -> dict:
    """The JSON object in `completion`, by the `extract` rule and in JSONAdapter's order: the whole
    output as JSON; else the whole output mended by json_repair (prose around an object, an output
    cut short); else the first balanced {...} in it, as JSON, then mended. Mending is attempted only
    on text that could be an object with slips (`_unmendable`). Raises NotAnObject, with the reason
    mending was not tried when that is why. Linear in the output but for the bounded mending."""
    text = completion.strip()
    whole = _loads(text)
    if isinstance(whole, dict):
        return whole
    why = _unmendable(text)
    if why is None and isinstance(mended := _mended(text), dict):
        return mended
    found = find_object(text)
    if found is not None:
        span = text[found[0]:found[1]]
        value = _loads(span)
        if isinstance(value, dict):
            return value
        why = _unmendable(span)
        if why is None and isinstance(mended := _mended(span), dict):
            return mended
    if why is not None and "{" in text:
        raise NotAnObject(f"not valid JSON, and {why}")
    raise NotAnObject("no JSON object in the output")


def _mended(text: str):
    try:
        return json_repair.loads(text)
    except (ValueError, RecursionError):
        return None


def find_object(text: str) -> tuple[int, int] | None:
    """(start, end) of the first balanced {...} in `text`: the one that starts first, as JSONAdapter's
    recursive pattern finds it, but in one pass. Quotes count inside braces (a brace in a string is
    text); if that reading finds none (a stray quote), braces alone decide, as the pattern does."""
    return _first_span(text, strings=True) or _first_span(text, strings=False)


def _first_span(text: str, strings: bool) -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    opened: list[int] = []
    in_string = escaped = False
    for match in _SPECIAL.finditer(text):
        char, at = match.group(), match.start()
        if in_string:
            if escaped and at == escaped:
                continue  # the character after a backslash
            if char == "\\":
                escaped = at + 1
            elif char == '"':
                in_string = False
            continue
        if char == "{":
            opened.append(at)
        elif char == "}" and opened:
            start = opened.pop()
            if best is None or start < best[0]:
                best = (start, at + 1)
        elif char == '"' and strings and opened:
            in_string, escaped = True, False
    return best


def _unmendable(text: str) -> str | None:
    """Why json_repair is not given `text` (see REPAIR_LIMIT), or None."""
    if len(text) > REPAIR_LIMIT:
        return f"at {len(text):,} characters too long to mend (limit {REPAIR_LIMIT:,})"
    depth = deepest = 0
    in_string = escaped = False
    for match in _STRUCTURE.finditer(text):
        char, at = match.group(), match.start()
        if in_string:
            if escaped and at == escaped:
                continue
            if char == "\\":
                escaped = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string, escaped = depth > 0, False  # a quote in the prose around the object is text
        elif char in "{[":
            depth += 1
            deepest = max(deepest, depth)
            if char == "{" and _KEYLESS.match(text, at + 1):
                return "an object opens straight into another where a key is due: not mended"
        elif char in "}]":
            depth = max(depth - 1, 0)
    if deepest > MEND_DEPTH:
        return f"nested {deepest} deep: too deep to mend (limit {MEND_DEPTH})"
    return None


def _loads(text: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the decoder goes
        return None


def _loads_object(text: str) -> bool:
    return isinstance(_loads(text), dict)
