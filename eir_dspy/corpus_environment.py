"""The corpus setting: no pool is given; the agent searches a BM25 index and reads what it found.

Rules (one trial):
  - search(terms): up to ten titles with paragraph ids; no text, scores or labels. Results
    accumulate over the trial. A search with the same indexed terms as an earlier one of the
    trial is rejected (it could only return the same titles; small models loop on it).
  - read(id): the paragraph's sentences, only for an id some search of THIS trial returned.
    An invalid read consumes a read attempt as well as the turn. Re-reading is allowed: it
    consumes both and adds no evidence.
  - The last turn accepts only a submission; anything else ends the trial with no submission.
A new trial (Reflexion) starts from a new CorpusEnvironment: nothing found, nothing read.
"""

from __future__ import annotations

import json

from eir_dspy.corpus_index import SEARCH_K, CorpusIndex, Hit
from eir_dspy.environment import citation_hint, render_sentences
from eir_dspy.rejection import EMPTY_SEARCH, REPEATED_SEARCH, SUBMIT_ONLY_TURN, UNKNOWN_ID, Rejection
from eir_dspy.turns import Action, EpisodeState, Outcome

TURNS, READS = 12, 6  # the corpus setting's defaults: action turns and read attempts per trial


class CorpusEnvironment:
    setting = "corpus"
    opening = "(nothing yet: search for a fact the question needs)"
    invalid_reads_cost_a_read = True

    def __init__(self, index: CorpusIndex, k: int = SEARCH_K) -> None:
        self.index = index
        self.k = k
        self.found: dict[str, Hit] = {}  # paragraph id -> hit, in the order searches found them
        self.read_ids: list[str] = []
        self.searched: dict[tuple[str, ...], int] = {}  # a search's indexed terms -> the turn it ran

    @property
    def unread_ids(self) -> list[str]:
        return [i for i in self.found if i not in self.read_ids]

    @property
    def has_unread(self) -> bool:
        return bool(self.unread_ids)

    def problem(self, action: Action, episode: EpisodeState) -> Rejection | None:
        if action.kind != "submit" and episode.on_last_turn:
            return Rejection(SUBMIT_ONLY_TURN, f"turn {episode.turn} is the last turn and accepts only a submission")
        if action.kind == "search":
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

    def search_key(self, query: str) -> tuple[str, ...]:
        """A search's indexed terms, order-free: two searches with the same key return the same hits."""
        return tuple(sorted(set(self.index.term_ids(query))))

    def _search(self, query: str, episode: EpisodeState) -> Outcome:
        episode.searches += 1
        self.searched[self.search_key(query)] = episode.turn
        hits = self.index.search(query, self.k)
        if not hits:
            text = f"Search {query!r} found no paragraph."
            return Outcome(text, text)
        new = [h for h in hits if h.paragraph_id not in self.found]
        for h in hits:
            self.found.setdefault(h.paragraph_id, h)
        lines = [f"{h.paragraph_id} | {h.title}" for h in hits]
        text = f"Search {query!r} found {len(hits)} paragraphs ({len(new)} new), as id | title:\n" + "\n".join(lines)
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

    def render_found(self) -> str:
        """Every paragraph this trial's searches found, as `id | title`, read ones marked."""
        if not self.found:
            return "(no searches yet)"
        return "\n".join(f"{i} | {h.title}" + (" (read)" if i in self.read_ids else "") for i, h in self.found.items())


def normalize_id(text: str) -> str:
    # Models wrap ids in brackets or quotes, or echo the "id | title" line.
    return str(text).split("|")[0].strip().strip("[]()\"'# ").strip()
