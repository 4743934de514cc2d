"""What a provider's API takes, as LiteLLM's table of supported parameters says (one place for
the single LM path, eir_dspy/lm/spec.py, and the Router, eir_dspy/lm/router.py)."""

from __future__ import annotations


def takes_seed(model: str) -> bool:
    """Whether the provider takes a sampling seed (LiteLLM's table of supported parameters). SSR's
    votes send one (programs/ssr.py); a provider without it (Anthropic) would refuse the whole call,
    so there the seed is dropped and the votes are unseeded samples (docs/lm.md, "Sampling seeds")."""
    import litellm

    provider, _, name = model.partition("/")
    try:
        return "seed" in (litellm.get_supported_openai_params(model=name or provider, custom_llm_provider=provider) or ())
    except Exception:  # a provider LiteLLM does not know: send it and let it answer
        return True
