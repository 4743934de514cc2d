"""The one token count the project uses for bounds (eval.grid --dry-run) and for a simulated endpoint.

`count_tokens(text)` is tiktoken's `o200k_base` (GPT-4.1's and GPT-4o's encoding), every character
read as text (special-token strings such as `<|endoftext|>` count as ordinary text). `chat_prompt_tokens`
adds OpenAI's documented chat overhead: 4 tokens a message and 3 priming the reply. A simulated
OpenAI-compatible endpoint reports `usage.prompt_tokens = chat_prompt_tokens(request messages)` and
`completion_tokens = count_tokens(reply text)`; the methods' token bounds (programs/token_bound.py) are
in this same unit. Claude's tokenizer counts the same text differently (docs/experiments.md, "Grids").

Offline: tiktoken downloads an encoding on first use. LiteLLM (a dependency) ships o200k_base in its
package under tiktoken's cache name; where no cache directory is set, tiktoken is pointed there, as
LiteLLM itself does when it loads (tiktoken checks the file's sha256 either way).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import tiktoken

ENCODING = "o200k_base"
MESSAGE_OVERHEAD = 4  # tokens around each message (role and separators), OpenAI's count
REPLY_PRIMING = 3  # tokens priming the assistant's reply
_CACHE_KEY = "fb374d419588a4632f3f557e76b4b70aebbca790"  # sha1 of o200k_base's URL: tiktoken's cache file name
_lock = threading.Lock()


def _bundled_cache() -> str | None:
    """LiteLLM's directory of tiktoken files, found without importing LiteLLM (slow to import)."""
    spec = importlib.util.find_spec("litellm")
    for root in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(root) / "litellm_core_utils" / "tokenizers"
        if (folder / _CACHE_KEY).is_file():
            return str(folder)
    return None


@functools.cache
def _encoding_locked() -> tiktoken.Encoding:
    if "TIKTOKEN_CACHE_DIR" not in os.environ and "DATA_GYM_CACHE_DIR" not in os.environ:
        bundled = _bundled_cache()
        if bundled:
            os.environ["TIKTOKEN_CACHE_DIR"] = bundled
    return tiktoken.get_encoding(ENCODING)


def encoding() -> tiktoken.Encoding:
    """o200k_base, loaded once per process."""
    with _lock:
        return _encoding_locked()


def count_tokens(text: str) -> int:
    """`text`'s o200k_base tokens."""
    return len(encoding().encode_ordinary(text)) if text else 0


def count_many(texts: Iterable[str]) -> list[int]:
    """`count_tokens` of each of `texts`, encoded in one batch (threads)."""
    texts = list(texts)
    return [len(t) for t in encoding().encode_ordinary_batch(texts)] if texts else []


def content_text(content) -> str:
    """A message's content as text: a string as it is; content parts (OpenAI's list of
    {"type": "text", "text": ...}) joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, Mapping):
            parts.append(str(part.get("text") or ""))
        else:
            parts.append(str(getattr(part, "text", part) or ""))
    return "".join(parts)


def chat_prompt_tokens(messages: Iterable[Mapping]) -> int:
    """A chat request's prompt tokens: each message's content tokens + 4, and 3 for the reply."""
    return sum(count_tokens(content_text(m.get("content"))) + MESSAGE_OVERHEAD for m in messages) + REPLY_PRIMING
