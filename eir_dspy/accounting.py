"""Per-call accounting, in one place: role, tokens, latency, cache hit and dollar cost.

Every LM decision goes through `lm_call`, which reads the entries the call appended to the
LM's history. The runner gives each question its own `lm.copy()` (DSPy isolates history per
copy), so the slice is exactly this call's model calls: a JSONAdapter retry or any other extra
request shows up as an extra entry and is counted. Provider retries happen inside one entry.
A cache hit keeps the tokens of the response it replays, so a cached rerun reports the same
calls, tokens and cost as the original run; it is flagged, not dropped.
"""

from __future__ import annotations

import contextvars
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import dspy
from pydantic import BaseModel, ValidationError

# USD per 1M (prompt, completion) tokens: the paper's models, and any registered with
# `register_price` (eval.run's --price-in/--price-out). Other models are priced from LiteLLM's
# cost map; a model neither knows costs None (reported as unknown, never as 0). Local models cost nothing.
PRICES: dict[str, tuple[float, float]] = {
    "openai/gpt-4.1": (2.00, 8.00),
    "openai/gpt-4.1-mini": (0.40, 1.60),
    "openai/gpt-4.1-nano": (0.10, 0.40),
    "openai/gpt-4o-mini": (0.15, 0.60),
    "openai/gpt-4o": (2.50, 10.00),
    "anthropic/claude-haiku-4-5": (1.00, 5.00),
    "anthropic/claude-sonnet-4-5": (3.00, 15.00),
}


def register_price(model: str, prompt_per_million: float, completion_per_million: float) -> None:
    PRICES[model] = (prompt_per_million, completion_per_million)


def price_call(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    if model.startswith("local/"):
        return 0.0
    rates = PRICES.get(model) or _litellm_rates(model)
    if rates is None:
        return None
    p, c = rates
    return (prompt_tokens * p + completion_tokens * c) / 1e6


def _litellm_rates(model: str) -> tuple[float, float] | None:
    import litellm

    entry = litellm.model_cost.get(model) or litellm.model_cost.get(model.split("/", 1)[-1])
    if not entry or entry.get("input_cost_per_token") is None or entry.get("output_cost_per_token") is None:
        return None
    return entry["input_cost_per_token"] * 1e6, entry["output_cost_per_token"] * 1e6


@dataclass
class CallRecord:
    role: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cache_hit: bool
    cost_usd: float | None
    error: str | None = None
    unusable: str | None = None  # the model answered but its output could not be used: the cause


@dataclass
class Ledger:
    calls: list[CallRecord] = field(default_factory=list)

    @property
    def n_calls(self) -> int:
        return len(self.calls)

    def totals(self) -> dict:
        costs = [c.cost_usd for c in self.calls]
        return {
            "calls": len(self.calls),
            "prompt_tokens": sum(c.prompt_tokens for c in self.calls),
            "completion_tokens": sum(c.completion_tokens for c in self.calls),
            "cost_usd": None if any(x is None for x in costs) else sum(costs),
            "cache_hits": sum(c.cache_hit for c in self.calls),
            "lm_seconds": sum(c.latency_s for c in self.calls),
        }

    def by_role(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.calls:
            out[c.role] = out.get(c.role, 0) + 1
        return out

    def to_list(self) -> list[dict]:
        return [asdict(c) for c in self.calls]


_active: contextvars.ContextVar[Ledger | None] = contextvars.ContextVar("eir_ledger", default=None)


@contextmanager
def recording(ledger: Ledger):
    token = _active.set(ledger)
    try:
        yield ledger
    finally:
        _active.reset(token)


def calls_so_far() -> int:
    """How many calls the active ledger holds: a program marks a point (e.g. a trial's end) with it."""
    ledger = _active.get()
    return ledger.n_calls if ledger is not None else 0


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


_RAISE = object()


def lm_call(role: str, predictor, *, on_unusable=_RAISE, **inputs):
    """Run one DSPy predictor and record the model calls it made under `role`.

    An output the model wrote that cannot be used raises UnusableOutput, or returns `on_unusable`
    when the caller has a fallback (an invalid vote, an empty final answer, ...).
    """
    lm = dspy.settings.lm
    ledger = _active.get()
    start = len(lm.history) if lm is not None else 0
    t0 = time.perf_counter()
    error = unusable = None
    try:
        return _valid_unicode(predictor(**inputs))
    except Exception as exc:
        answered = lm is not None and len(lm.history) > start
        if not answered or isinstance(exc, dspy.utils.exceptions.LMError):
            error = f"{type(exc).__name__}: {exc}"[:500]
            raise  # the provider failed (after its retries), or a bug: the question fails
        unusable = _unusable(role, exc)
        if on_unusable is _RAISE:
            raise unusable from exc
        return on_unusable
    finally:
        if ledger is not None and lm is not None:
            elapsed = time.perf_counter() - t0
            entries = lm.history[start:]
            for entry in entries:
                ledger.calls.append(_record(role, lm.model, entry, elapsed / len(entries), error,
                                            unusable.cause if unusable else None))
            if not entries and error is not None:
                # The request never produced a response (e.g. the provider failed after retries):
                # it was still an attempted model call.
                ledger.calls.append(CallRecord(role, lm.model, 0, 0, elapsed, False, price_call(lm.model, 0, 0), error))


def _valid_unicode(prediction):
    """The parsed output with every lone surrogate (a JSON escape like \\ud800 that is no character)
    replaced by "?". Left in, it would make the next prompt unsendable and the record unwritable."""
    for key in list(prediction.keys()):
        prediction[key] = _repair(prediction[key])
    return prediction


def _repair(value):
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_repair(v) for v in value]
    if isinstance(value, dict):
        return {k: _repair(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        dumped = value.model_dump()
        repaired = _repair(dumped)
        return value if repaired == dumped else type(value).model_validate(repaired)
    return value


def _unusable(role: str, exc: Exception) -> UnusableOutput:
    """Classify why an answered call's output could not be parsed into the signature."""
    message = str(getattr(exc, "message", "") or exc)
    if getattr(exc, "cause", None):  # refused by the method's acceptance rule (eir_dspy/lm/decoding.py)
        cause, message = exc.cause, exc.detail
    elif isinstance(exc, dspy.utils.exceptions.AdapterParseError):
        if "cannot be serialized to a JSON object" in message:
            cause, message = "not_json", ""
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


def short_error(text: str) -> str:
    """The first line of an error, short enough for a prompt."""
    lines = str(text).strip().splitlines()
    return (lines[0] if lines else "")[:200]


def _record(role: str, model: str, entry: dict, latency: float, error: str | None,
            unusable: str | None = None) -> CallRecord:
    prompt, completion = _tokens(entry.get("response"))
    # DSPy's history keeps an empty usage dict for a cache hit, but the replayed response
    # still carries the usage of the call that produced it.
    cache_hit = not entry.get("usage") and (prompt + completion) > 0
    # Not DSPy's entry["cost"]: LiteLLM reports 0.0 for a model it has no prices for once a Router
    # has registered it, which would turn "unknown" into "free".
    cost = price_call(model, prompt, completion)
    return CallRecord(role, model, prompt, completion, latency, cache_hit, cost, error, unusable)


def _tokens(response) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0
    if isinstance(usage, dict):
        return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    prompt = getattr(usage, "input_tokens", None) or getattr(usage, "prompt_tokens", None) or 0
    completion = getattr(usage, "output_tokens", None) or getattr(usage, "completion_tokens", None) or 0
    return int(prompt), int(completion)
