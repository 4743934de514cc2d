"""Dollar prices of model calls.

A model with no known price costs None (reported as unknown, never as 0), so a total over calls
that include one is unknown too; a local model costs nothing.
"""

from __future__ import annotations

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
