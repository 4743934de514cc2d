"""Replayed calls keep what they cost: DSPy's response cache, told to keep a hit's usage.

DSPy 3.4 clears `usage` on the copy of a cached response it hands back (dspy/clients/cache.py,
`_prepare_cached_response`: no model call was made, so nothing is billed to its usage tracker). A
run that reads its tokens from the history entry would then count a cached rerun, or the calls an
interrupted question replays on `--resume`, as free, and its tokens, costs and Table 9 come out low.
`keep_replayed_usage()` makes the configured cache store each response with its usage also under
an attribute of its own (`REPLAYED_USAGE`), which a hit's copy keeps; the copy's own `usage` stays
empty, so DSPy's usage tracker still bills nothing for it. The ledger
(eir_dspy/accounting/ledger.py) reads that attribute and records the call as a cache hit with the
tokens and cost it had when it was made.
"""

from __future__ import annotations

import copy

import dspy
from dspy.clients.cache import Cache

REPLAYED_USAGE = "eir_replayed_usage"  # the attribute a replayed response carries its original usage in


class UsageKeepingCache(Cache):
    """DSPy's cache, unchanged but for one step: an entry is stored with its usage under a second
    name, which DSPy's clearing of `usage` on a hit leaves alone (its copy keeps every attribute)."""

    def put(self, request, value, ignored_args_for_cache_key=None, enable_memory_cache=True) -> None:
        usage = plain_usage(getattr(value, "usage", None))
        if usage and not isinstance(value, dict):  # a provider response; lm15's records keep their usage
            value = copy.copy(value)  # the caller's response stays as it was
            # As DSPy stamps `cache_hit`: straight into the instance dict, which strict provider
            # models (pydantic) would otherwise refuse.
            object.__setattr__(value, REPLAYED_USAGE, usage)
        super().put(request, value, ignored_args_for_cache_key, enable_memory_cache)


def keep_replayed_usage() -> None:
    """Make the configured `dspy.cache` keep a hit's usage. Its storage and settings are kept as they
    are (disk directory, size limits, pickle restrictions): only the class changes, to a subclass that
    adds no state. Idempotent; call again after `dspy.configure_cache`, which makes a new cache."""
    cache = dspy.cache
    if type(cache) is Cache:
        cache.__class__ = UsageKeepingCache


def plain_usage(usage) -> dict:
    """{"prompt_tokens", "completion_tokens"} from a response's usage (a dict, LiteLLM's Usage, or an
    lm15 usage with input/output tokens); {} when it holds no tokens."""
    if usage is None:
        return {}
    if isinstance(usage, dict):
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    else:
        prompt = getattr(usage, "input_tokens", None) or getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "output_tokens", None) or getattr(usage, "completion_tokens", None)
    prompt, completion = int(prompt or 0), int(completion or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion} if prompt or completion else {}
