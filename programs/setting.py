"""Which environment a trial runs in: the question's pool, or a search over a corpus index."""

from __future__ import annotations

from eir_dspy.corpus_environment import TURNS, CorpusEnvironment
from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.environment import PoolEnvironment
from eir_dspy.episode import Environment
from eir_dspy.paragraphs import Paragraph


def new_environment(paragraphs: tuple[Paragraph, ...], corpus: CorpusIndex | None) -> Environment:
    """A fresh environment for one trial: nothing read (and nothing found) yet."""
    return CorpusEnvironment(corpus) if corpus is not None else PoolEnvironment(paragraphs)


def turn_limit(corpus: CorpusIndex | None, pool_limit: int | None) -> int | None:
    """Action turns per trial: the corpus setting's fixed 12, else the method's pool rule."""
    return TURNS if corpus is not None else pool_limit
