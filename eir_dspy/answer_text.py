"""The answer normalization all three benchmarks' official scorers share.

It lives in the core because methods use it too (SSR decides whether two corrections agree by
it); eval.scoring.metrics scores with the same function.
"""

from __future__ import annotations

import re
import string

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: str) -> str:
    """Lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace
    (in that order, as every one of the three official scripts does)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())
