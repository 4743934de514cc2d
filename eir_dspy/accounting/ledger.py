"""The ledger: one CallRecord per model call (role, model, tokens, latency, cache hit, dollar cost),
collected in the Ledger that `recording` makes active for the current context.

A record is made from the LM history entry the call appended (`_record`). A cache hit keeps the
tokens and cost of the call that produced the response it replays (replay.py keeps them through
DSPy's cache), so a cached rerun, or a question resumed mid-way, reports the same calls, tokens and
cost as the original run; the call is flagged as a cache hit, not dropped, and a run reports how
many of its calls and tokens were paid and how many replayed.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from eir_dspy.accounting.prices import price_call
from eir_dspy.accounting.replay import REPLAYED_USAGE, plain_usage


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


def active_ledger() -> Ledger | None:
    """The ledger `recording` made active in this context, or None (calls then go unrecorded)."""
    return _active.get()


def calls_so_far() -> int:
    """How many calls the active ledger holds: a program marks a point (e.g. a trial's end) with it."""
    ledger = _active.get()
    return ledger.n_calls if ledger is not None else 0


def _record(role: str, model: str, entry: dict, latency: float, error: str | None,
            unusable: str | None = None) -> CallRecord:
    response = entry.get("response")
    # A cache hit's original usage (replay.py); a fresh call's response is stored with it too, but
    # keeps its own usage.
    replayed = None if entry.get("usage") else getattr(response, REPLAYED_USAGE, None)
    prompt, completion = _tokens(response)
    if replayed:
        prompt, completion = replayed["prompt_tokens"], replayed["completion_tokens"]
    # A hit is marked by DSPy (`cache_hit`) or by the usage replay.py kept; a hit whose response still
    # carries its usage (lm15's native responses) shows as an entry with an empty usage.
    cache_hit = bool(replayed) or bool(getattr(response, "cache_hit", False)) or \
        (not entry.get("usage") and (prompt + completion) > 0)
    # Not DSPy's entry["cost"]: LiteLLM reports 0.0 for a model it has no prices for once a Router
    # has registered it, which would turn "unknown" into "free". A hit is priced as the call it replays.
    cost = price_call(model, prompt, completion)
    return CallRecord(role, model, prompt, completion, latency, cache_hit, cost, error, unusable)


def _tokens(response) -> tuple[int, int]:
    usage = plain_usage(getattr(response, "usage", None))
    return usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
