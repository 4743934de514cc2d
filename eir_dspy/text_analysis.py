"""The one analyzer documents and queries both go through: lowercase, words of 2+ characters,
English stopwords removed, Snowball (Porter2) stemming via PyStemmer.

Using the same object on both sides is the point: a stemmed index queried with unstemmed
words silently misses every inflected match.
"""

from __future__ import annotations

import re

import Stemmer
from bm25s.stopwords import STOPWORDS_EN

WORD_PATTERN = r"(?u)\b\w\w+\b"  # bm25s's default splitter, kept so its tokens mean the same thing

# Written into every index; a loaded index whose analyzer differs is refused.
ANALYZER_CONFIG = {"lowercase": True, "pattern": WORD_PATTERN, "stopwords": "bm25s.STOPWORDS_EN",
                   "stemmer": "snowball-english (PyStemmer)"}


class Analyzer:
    def __init__(self) -> None:
        self._split = re.compile(WORD_PATTERN).findall
        self._stopwords = frozenset(STOPWORDS_EN)
        self._stemmer = Stemmer.Stemmer("english")

    def terms(self, text: str) -> list[str]:
        """Index terms of `text`, in order, repeats kept (term frequency counts them)."""
        words = [w for w in self._split(text.lower()) if w not in self._stopwords]
        return self._stemmer.stemWords(words)

    def query_terms(self, text: str) -> list[str]:
        """A query's terms with duplicates merged (first occurrence order): a word typed twice
        must not count twice."""
        return list(dict.fromkeys(self.terms(text)))
