"""The corpus setting: no pool is given; the agent searches a BM25 index and reads what it found.

Rules (one trial; Appendix H.1):
  - search(terms): up to ten titles with paragraph ids; no text, scores or labels. Results
    accumulate over the trial. Every search runs and costs its turn (not a read):
      * one whose indexed terms (lowercased, stopwords removed, stemmed, words outside the index
        dropped, duplicates merged, order ignored) equal an earlier search's of the trial returns
        the same hits again; it adds nothing to the accumulated results, and its result says so;
      * one with no indexed word finds nothing and says "found no paragraph" with the reason.
    H.1 names no rejection for either (merging duplicate terms is about terms inside one query).
    `futile_searches="reject"` restores the project's earlier rule instead: both are rejected
    (causes `repeated_search`, `empty_search`), each costing the turn; a named option, not the paper.
  - read(id): the paragraph's sentences, only for an id some search of THIS trial returned.
    An invalid read consumes a read attempt as well as the turn. Re-reading is allowed: it
    consumes both and adds no evidence.
  - The last turn accepts only a submission; anything else ends the trial with no submission. The
    shared loop holds this rule (eir_dspy/episode.py `action_problem`, cause `submit_only_turn`) for
    every turn-limited trial, the pool's too: every corpus trial has its 12 turns.
A new trial (Reflexion) starts from a new CorpusEnvironment: nothing found, nothing read.
"""

from __future__ import annotations

import json

from eir_dspy.corpus_index import SEARCH_K, CorpusIndex, Hit
from eir_dspy.environment import citation_hint, render_sentences
from eir_dspy.rejection import EMPTY_SEARCH, REPEATED_SEARCH, UNKNOWN_ID, Rejection
from eir_dspy.turns import Action, EpisodeState, Outcome

TURNS, READS = 12, 6  # the corpus setting's defaults: action turns and read attempts per trial

# What happens to a search that repeats an earlier one's indexed terms, or has no indexed word.
FUTILE_RUN = "run"  # the paper (H.1): it runs (the same hits again, or no paragraph found)
FUTILE_REJECT = "reject"  # the project's earlier rule: it is rejected with a cause and costs the turn
FUTILE_SEARCHES = (FUTILE_RUN, FUTILE_REJECT)
DEFAULT_FUTILE_SEARCHES = FUTILE_RUN


class CorpusEnvironment:
    setting = "corpus"
    opening = "(nothing yet: search for a fact the question needs)"
    invalid_reads_cost_a_read = True
    action_kinds = ("search", "read", "submit")
    compact_trajectory = True  # a read's paragraph can be long: a trajectory shows its one-line brief

    def __init__(self, index: CorpusIndex, k: int = SEARCH_K, futile_searches: str = DEFAULT_FUTILE_SEARCHES) -> None:
        if futile_searches not in FUTILE_SEARCHES:
            raise ValueError(f"futile_searches must be one of {', '.join(FUTILE_SEARCHES)}, not {futile_searches!r}")
        self.index = index
        self.k = k
        self.futile_searches = futile_searches
        self.found: dict[str, Hit] = {}  # paragraph id -> hit, in the order searches found them
        self.read_ids: list[str] = []
        self.searched: dict[tuple[int, ...], int] = {}  # a search's indexed terms -> the first turn it ran

    @property
    def unread_ids(self) -> list[str]:
        return [i for i in self.found if i not in self.read_ids]

    @property
    def has_unread(self) -> bool:
        return bool(self.unread_ids)

    def problem(self, action: Action, episode: EpisodeState) -> Rejection | None:
        if action.kind == "search" and self.futile_searches == FUTILE_REJECT:
            terms = self.search_key(action.query)
            if not terms:
                return Rejection(EMPTY_SEARCH, f"the search {action.query!r} has no indexed word (after lowercasing, "
                                 "stopword removal and stemming); search with content words such as names, places or dates")
            if terms in self.searched:
                hint = f" (e.g. {self.unread_ids[0]})" if self.unread_ids else ""
                return Rejection(REPEATED_SEARCH, f"the search {action.query!r} repeats your search of turn "
                                 f"{self.searched[terms]} and would find the same paragraphs; read one of your search "
                                 f"results{hint} or search other words")
        if action.kind == "read" and normalize_id(action.paragraph_id) not in self.found:
            return Rejection(UNKNOWN_ID, f"paragraph id {action.paragraph_id!r} was not returned by any search in this "
                             "trial; read an id from your search results")
        return None

    def execute(self, action: Action, episode: EpisodeState) -> Outcome:
        if action.kind == "search":
            return self._search(action.query, episode)
        return self._read(normalize_id(action.paragraph_id), episode)

    def search_key(self, query: str) -> tuple[int, ...]:
        """A search's indexed terms, order-free: two searches with the same key return the same hits."""
        return tuple(sorted(set(self.index.term_ids(query))))

    def _search(self, query: str, episode: EpisodeState) -> Outcome:
        episode.searches += 1
        terms = self.search_key(query)
        earlier = self.searched.get(terms)
        self.searched.setdefault(terms, episode.turn)
        if not terms:
            text = (f"Search {query!r} found no paragraph: none of its words is indexed (after lowercasing, stopword "
                    "removal and stemming); search with content words such as names, places or dates.")
            return Outcome(text, f"Search {query!r} found no paragraph (no indexed word).")
        hits = self.index.search(query, self.k)
        if not hits:
            text = f"Search {query!r} found no paragraph."
            return Outcome(text, text)
        new = [h for h in hits if h.paragraph_id not in self.found]
        for h in hits:
            self.found.setdefault(h.paragraph_id, h)
        lines = [f"{h.paragraph_id} | {h.title}" for h in hits]
        again = (f"; the same search as your turn {earlier}, so the same paragraphs, none added to your results"
                 if earlier is not None else "")
        text = (f"Search {query!r} found {len(hits)} paragraphs ({len(new)} new{again}), as id | title:\n"
                + "\n".join(lines))
        return Outcome(text, text)

    def _read(self, paragraph_id: str, episode: EpisodeState) -> Outcome:
        hit = self.found[paragraph_id]
        episode.reads += 1
        paragraph = self.index.paragraph(hit.row)
        again = paragraph_id in self.read_ids
        if not again:
            self.read_ids.append(paragraph_id)
        episode.evidence.add_paragraph(paragraph, episode.turn)  # a re-read adds no records
        header = f"Read {paragraph_id} {json.dumps(paragraph.title)}" + (" again (no new evidence)" if again else "")
        head = f"{header} ({episode.reads_left} reads left)"
        return Outcome(f"{head}. {citation_hint(paragraph.title)}:\n" + render_sentences(paragraph),
                       f"{head}: {len(paragraph.sentences)} sentences", paragraph.title)

    def catalogue(self) -> dict[str, str]:
        return {"search_results": self.render_found()}

    def render_known(self) -> str:
        return self.render_found()

    def last_result(self, episode: EpisodeState) -> str:
        """As the loop recorded it: a read's result says the reads left, and no result the turns left."""
        return episode.last_feedback

    def read_named(self, text: str) -> Action | None:
        found = normalize_id(text)
        return Action("read", paragraph_id=found) if found in self.found else None

    def runs_as_written(self, action: Action, episode: EpisodeState) -> bool:
        return self.problem(action, episode) is None

    def render_found(self) -> str:
        """Every paragraph this trial's searches found, as `id | title`, read ones marked."""
        if not self.found:
            return "(no searches yet)"
        return "\n".join(f"{i} | {h.title}" + (" (read)" if i in self.read_ids else "") for i, h in self.found.items())


def normalize_id(text: str) -> str:
    # Models wrap ids in brackets or quotes, or echo the "id | title" line.
    return str(text).split("|")[0].strip().strip("[]()\"'# ").strip()
