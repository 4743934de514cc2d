"""Which environment a trial runs in: the question's pool, or a search over a corpus index."""

from __future__ import annotations

from eir_dspy.corpus_environment import DEFAULT_FUTILE_SEARCHES, FUTILE_SEARCHES, TURNS, CorpusEnvironment
from eir_dspy.corpus_index import CorpusIndex
from eir_dspy.environment import PoolEnvironment
from eir_dspy.episode import Environment
from eir_dspy.paragraphs import Paragraph

POOL, CORPUS = "pool", "corpus"
SETTINGS = (POOL, CORPUS)  # pool: each question's paragraphs; corpus: search an index
DEFAULT_BUDGET = 6  # the paper's read budget H (4.1): every method's default, and unnamed in a run's variant
FIXED_TURNS = {CORPUS: TURNS}  # a setting's own turn count per trial; the pool has none (the method's rule)


def new_environment(paragraphs: tuple[Paragraph, ...], corpus: CorpusIndex | None, *,
                    futile_searches: str = DEFAULT_FUTILE_SEARCHES) -> Environment:
    """A fresh environment for one trial: nothing read (and nothing found) yet.

    `futile_searches` (corpus only; eir_dspy.corpus_environment): "run", the paper's H.1 (a search
    repeating an earlier one's indexed terms, or with no indexed word, runs and costs its turn), or
    "reject", the project's earlier rule. A program passes its run context's (programs/run_context.py),
    which eval.run builds from the run's config for every method alike. The pool setting has no
    search; it checks the value only."""
    if futile_searches not in FUTILE_SEARCHES:
        raise ValueError(f"futile_searches must be one of {', '.join(FUTILE_SEARCHES)}, not {futile_searches!r}")
    if corpus is not None:
        return CorpusEnvironment(corpus, futile_searches=futile_searches)
    return PoolEnvironment(paragraphs)


def turn_limit(corpus: CorpusIndex | None, pool_limit: int | None) -> int | None:
    """Action turns per trial: the corpus setting's fixed 12, else the method's pool rule."""
    return TURNS if corpus is not None else pool_limit


def most_turns(setting: str, budget: int, pool_limit: int | None) -> int:
    """The most action turns one trial takes in `setting` (for the call bounds): `turn_limit`'s rule,
    and where the method gives no pool limit (EIR) H reads plus one more decision (eir_dspy/episode.py)."""
    limit = FIXED_TURNS.get(setting, pool_limit)
    return limit if limit is not None else budget + 1
