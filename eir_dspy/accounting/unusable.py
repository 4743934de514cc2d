"""Unusable output: the model answered, but what it wrote cannot be read as the signature's fields.

Every such output takes one path: `_unusable` classifies the parse error into UnusableOutput's
`cause` (`not_json`, `not_json_only`, `missing_field`, `wrong_type`, `unusable`, or the cause a
method's acceptance rule gave) with a detail short enough for the next prompt. Provider errors
and bugs are never turned into this (lm_call lets them fail the question).
"""

from __future__ import annotations

import dspy
from pydantic import ValidationError


class UnusableOutput(Exception):
    """The model answered, but what it wrote cannot be read as the signature's fields.

    The one path for every such output (not JSON, text around the JSON object where the method
    accepts JSON only, nesting too deep for the parser, a missing field, a value of the wrong type,
    ...): `cause` classifies it and `explanation` is the line the next prompt shows the model.
    Provider errors and bugs are never turned into this.
    """

    def __init__(self, role: str, cause: str, detail: str) -> None:
        self.role, self.cause, self.detail = role, cause, detail
        super().__init__(f"{role}: {cause}: {detail}")

    @property
    def explanation(self) -> str:
        what = {
            "not_json": "it is not a JSON object",
            "not_json_only": "it must be the JSON object alone, with no text or code fence around it",
            "missing_field": "a required field is missing",
            "wrong_type": "a field's value does not have the required type",
        }.get(self.cause, "it does not fit the required fields")
        return f"the output could not be used: {what}" + (f" ({self.detail})" if self.detail else "")


def _unusable(role: str, exc: Exception) -> UnusableOutput:
    """Classify why an answered call's output could not be parsed into the signature."""
    message = str(getattr(exc, "message", "") or exc)
    if getattr(exc, "cause", None):  # refused by the method's acceptance rule (eir_dspy/lm/decoding.py)
        cause, message = exc.cause, exc.detail
    elif isinstance(exc, dspy.utils.exceptions.AdapterParseError):
        if "cannot be serialized to a JSON object" in message:
            # The adapter's reason, when it gave one (eir_dspy/acceptance.py: read_object), e.g. too long to mend.
            cause, message = "not_json", message.split("a JSON object: ", 1)[1] if "a JSON object: " in message else ""
        elif message.startswith("Failed to parse field"):
            cause, message = "wrong_type", _type_error(exc) or message.removeprefix("Failed to parse ")
        else:
            parsed = getattr(exc, "parsed_result", None) or {}
            expected = getattr(getattr(exc, "signature", None), "output_fields", {})
            missing = [k for k in expected if k not in parsed]
            cause, message = "missing_field", "missing: " + ", ".join(missing) if missing else message
    elif isinstance(exc, RecursionError):
        cause, message = "not_json", "nested too deeply to parse"
    elif isinstance(exc, ValueError):
        cause = "not_json"  # the JSON parser itself gave up
    else:
        cause = "unusable"
    return UnusableOutput(role, cause, short_error(message))


def _type_error(exc: Exception) -> str | None:
    """`field.path: what is wrong` for the first validation error behind a field that failed to
    parse, so the next prompt names the value (e.g. a sentence position written as a string)."""
    error = exc.__cause__
    if not isinstance(error, ValidationError) or not error.errors():
        return None
    first = error.errors()[0]
    field = str(getattr(exc, "message", "")).removeprefix("Failed to parse field ").split(":", 1)[0]
    return ".".join(str(p) for p in (field, *first["loc"])) + ": " + first["msg"]


SHORT_ERROR_CHARS = 200  # the most characters of an error a prompt shows


def short_error(text: str) -> str:
    """The first line of an error, short enough for a prompt."""
    lines = str(text).strip().splitlines()
    return (lines[0] if lines else "")[:SHORT_ERROR_CHARS]
