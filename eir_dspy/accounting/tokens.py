"""Token counts for bounds and simulated endpoints: o200k_base (placeholder until the bound branch lands)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _encoding():
    import os

    import litellm
    import tiktoken

    # LiteLLM ships tiktoken's encoding files; tiktoken alone would download them
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", os.path.join(os.path.dirname(litellm.__file__),
                                                             "litellm_core_utils", "tokenizers"))

    return tiktoken.get_encoding("o200k_base")


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text or "", disallowed_special=()))


def chat_prompt_tokens(messages: list[dict]) -> int:
    total = 3
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        total += count_tokens(content or "") + 4
    return total
