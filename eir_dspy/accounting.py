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

# USD per 1M (prompt, completion) tokens. Local models cost nothing.
PRICES: dict[str, tuple[float, float]] = {
    "openai/gpt-4.1": (2.00, 8.00),
    "openai/gpt-4.1-mini": (0.40, 1.60),
    "openai/gpt-4.1-nano": (0.10, 0.40),
    "openai/gpt-4o-mini": (0.15, 0.60),
    "openai/gpt-4o": (2.50, 10.00),
    "anthropic/claude-haiku-4-5": (1.00, 5.00),
    "anthropic/claude-sonnet-4-5": (3.00, 15.00),
}


def price_call(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    if model.startswith("local/"):
        return 0.0
    if model not in PRICES:
        return None
    p, c = PRICES[model]
    return (prompt_tokens * p + completion_tokens * c) / 1e6


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


def lm_call(role: str, predictor, **inputs):
    """Run one DSPy predictor and record the model calls it made under `role`."""
    lm = dspy.settings.lm
    ledger = _active.get()
    if ledger is None or lm is None:
        return predictor(**inputs)
    start = len(lm.history)
    t0 = time.perf_counter()
    error = None
    try:
        return predictor(**inputs)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
        raise
    finally:
        elapsed = time.perf_counter() - t0
        entries = lm.history[start:]
        for entry in entries:
            ledger.calls.append(_record(role, lm.model, entry, elapsed / len(entries), error))
        if not entries and error is not None:
            # The request never produced a response (e.g. the provider failed after retries):
            # it was still an attempted model call.
            ledger.calls.append(CallRecord(role, lm.model, 0, 0, elapsed, False, price_call(lm.model, 0, 0), error))


def _record(role: str, model: str, entry: dict, latency: float, error: str | None) -> CallRecord:
    prompt, completion = _tokens(entry.get("response"))
    # DSPy's history keeps an empty usage dict for a cache hit, but the replayed response
    # still carries the usage of the call that produced it.
    cache_hit = not entry.get("usage") and (prompt + completion) > 0
    cost = price_call(model, prompt, completion)
    if cost is None and entry.get("cost") is not None and not cache_hit:
        cost = float(entry["cost"])
    return CallRecord(role, model, prompt, completion, latency, cache_hit, cost, error)


def _tokens(response) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0
    if isinstance(usage, dict):
        return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    prompt = getattr(usage, "input_tokens", None) or getattr(usage, "prompt_tokens", None) or 0
    completion = getattr(usage, "output_tokens", None) or getattr(usage, "completion_tokens", None) or 0
    return int(prompt), int(completion)
