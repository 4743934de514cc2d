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

A method declares its rule as the class attribute `acceptance` of its dspy.Module. The adapter
(eir_dspy/lm/decoding.py) reads it from the modules DSPy records as calling the predictor, the
outermost that declares one, so a method's nested calls (EIR's final answer, Reflexion's
reflection, SSR's verifiers) follow the method. With no method declaring one: `extract`.
A refused output goes the one unusable-output path (eir_dspy/accounting/unusable.py) with its cause.
"""

from __future__ import annotations

import json

import dspy
import regex

from eir_dspy.rejection import NOT_JSON_ONLY

EXTRACT, JSON_ONLY = "extract", "json_only"
ACCEPTANCES = (EXTRACT, JSON_ONLY)
_OBJECT = regex.compile(r"\{(?:[^{}]|(?R))*\}", regex.DOTALL)  # JSONAdapter's own "first {...}" pattern

# How `json_only` reads a code fence around the object (H.4 is silent): the readings and what each means.
FENCE_TEXT, FENCE_STRIPPED = "text", "stripped"
FENCE_READINGS = (FENCE_TEXT, FENCE_STRIPPED)
DEFAULT_FENCE_READING = FENCE_TEXT
FENCE_READING_TEXT = {
    FENCE_TEXT: "a code fence around the JSON object is text around it, so a JSON-only method refuses the output "
                "(not_json_only)",
    FENCE_STRIPPED: "an output that is exactly one code fence (```json or ```) around the JSON object alone is "
                    "read as that object"}
_FENCE = regex.compile(r"\A```[ \t]*(?:json)?[ \t]*\n(.*)\n[ \t]*```\Z", regex.DOTALL | regex.IGNORECASE)


def current_acceptance() -> str:
    """The rule of the outermost calling module that declares one (tests/eir_dspy/test_acceptance.py checks
    every method declares one of ACCEPTANCES), else EXTRACT."""
    for module in dspy.settings.caller_modules or ():
        rule = getattr(module, "acceptance", None)
        if rule is not None:
            return rule
    return EXTRACT


def json_only_problem(completion: str, fences: str = DEFAULT_FENCE_READING) -> tuple[str, str] | None:
    """(cause, detail) when `completion` is not one JSON object alone, else None. `fences`: how a code
    fence around the object is read (FENCE_READINGS)."""
    if fences not in FENCE_READINGS:
        raise ValueError(f"fences must be one of {', '.join(FENCE_READINGS)}, not {fences!r}")
    text = completion.strip()
    if fences == FENCE_STRIPPED and (fenced := _FENCE.match(text)):
        text = fenced.group(1).strip()
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    else:
        return None if isinstance(value, dict) else ("not_json", f"a JSON {type(value).__name__}, not an object")
    found = _OBJECT.search(text)
    if found is None or not _loads_object(found.group(0)):
        return "not_json", ""
    where = [w for w, extra in (("before", text[:found.start()]), ("after", text[found.end():])) if extra.strip()]
    return NOT_JSON_ONLY, f"text {' and '.join(where)} the JSON object"


def _loads_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False
