"""The distractor setting: a fixed pool of paragraphs the agent reads by title.

Every environment gives the shared episode loop the same three things (eir_dspy.turns.Environment):
`problem` (why an action cannot run here), `execute` (run it, store evidence) and `opening` (the
first turn's result). eir_dspy.corpus_environment is the other setting.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from eir_dspy.paragraphs import Paragraph
from eir_dspy.rejection import ALL_READ, SEARCH_IN_POOL, Rejection
from eir_dspy.turns import Action, EpisodeState, Outcome


@dataclass(frozen=True)
class ReadResult:
    paragraph: Paragraph
    requested: str
    fell_back: bool  # the request matched no unread title, so the first unread one was read


class PoolEnvironment:
    """Question-side view of a paragraph pool. The agent starts knowing only the titles."""

    setting = "pool"
    opening = "(nothing yet: choose a paragraph to read)"
    invalid_reads_cost_a_read = False  # an unknown title falls back to the first unread paragraph
    action_kinds = ("read", "submit")
    compact_trajectory = False  # a trajectory shows every result whole

    def __init__(self, paragraphs: tuple[Paragraph, ...]) -> None:
        self.paragraphs = paragraphs
        self._by_title = {p.title: p for p in paragraphs}
        self._read: set[str] = set()

    @property
    def titles(self) -> tuple[str, ...]:
        return tuple(p.title for p in self.paragraphs)

    @property
    def unread_titles(self) -> tuple[str, ...]:
        return tuple(p.title for p in self.paragraphs if p.title not in self._read)

    @property
    def has_unread(self) -> bool:
        return bool(self.unread_titles)

    def find_unread(self, requested: str) -> str | None:
        """The unread title `requested` names (same matching as a read), or None."""
        return match_title(requested, self.unread_titles)

    def read(self, requested: str) -> ReadResult | None:
        """Read the unread paragraph named `requested`; a title that matches no unread
        paragraph reads the first unread one in pool order. None when all are read."""
        unread = self.unread_titles
        if not unread:
            return None
        title = match_title(requested, unread)
        fell_back = title is None
        title = title or unread[0]
        self._read.add(title)
        return ReadResult(self._by_title[title], requested, fell_back)

    def catalogue(self) -> dict[str, str]:
        return {"unread_titles": "\n".join(self.unread_titles) or "(all paragraphs have been read)"}

    def render_known(self) -> str:
        return "\n".join(self.titles)

    def last_result(self, episode: EpisodeState) -> str:
        """A turn-limited episode (Direct, SSR, Reflexion: H turns, the submit among them) is told its
        turns left with every result: a read's result says it already (`execute`); the opening and a
        rejection get the same note here, so the last turn always says that only a submit counts on
        it. EIR (no turn limit) is told its reads left with a read's result, and sees the rest as it is."""
        text = episode.last_feedback
        if episode.turn_limit is None:
            return text
        previous = episode.turns[-1] if episode.turns else None
        if previous is not None and previous.accepted and previous.read_title is not None:
            return text
        return f"{text} {budget_note(episode, episode.turn - 1)}"

    def read_named(self, text: str) -> Action | None:
        title = self.find_unread(text)
        return Action("read", title=title) if title else None

    def runs_as_written(self, action: Action, episode: EpisodeState) -> bool:
        """A read whose title names no unread paragraph would run, reading the first unread one instead."""
        if action.kind == "read" and self.find_unread(action.title) is None:
            return False
        return self.problem(action, episode) is None

    def problem(self, action: Action, episode: EpisodeState) -> Rejection | None:
        if action.kind == "search":
            return Rejection(SEARCH_IN_POOL, "there is no search in the pool setting: read one of the titles, or submit")
        if action.kind == "read" and not self.unread_titles:
            return Rejection(ALL_READ, "every paragraph has been read; the only valid action now is submit")
        return None

    def execute(self, action: Action, episode: EpisodeState) -> Outcome:
        result = self.read(action.title)
        episode.reads += 1
        paragraph = result.paragraph
        episode.evidence.add_paragraph(paragraph, episode.turn)
        text = read_text(paragraph, budget_note(episode, episode.turn), action.title if result.fell_back else None)
        return Outcome(text, text, paragraph.title, result.fell_back)


def read_text(paragraph: Paragraph, note: str, requested: str | None = None) -> str:
    """A read's result: which paragraph was read (`requested`: the title asked for, when it matched no
    unread title and this one was read instead), the budget `note`, how to cite it, its sentences."""
    header = f"Read {json.dumps(paragraph.title)}"
    if requested is not None:
        header = f"No unread title matches {json.dumps(requested)}; read {json.dumps(paragraph.title)} instead"
    return f"{header} {note}. {citation_hint(paragraph.title)}:\n" + render_sentences(paragraph)


def budget_note(episode: EpisodeState, turns_done: int) -> str:
    """What a result says of the budget left once `turns_done` turns have been used.

    EIR (no turn limit: H reads, then one more decision) is told its reads left. A turn-limited
    agent (Direct, SSR, Reflexion: H turns in all, the submit among them; sections 4.2 and H.2) is
    told the turns it has left counting the submit, and, when one turn is left, that only a submit
    counts on it: anything else there is refused (`submit_only_turn`, eir_dspy/episode.py
    `action_problem`) and the episode ends with nothing submitted. The paper does not say what these
    agents are told; this tells them the rule they are scored under. SSR's verify and refine calls
    get the same text (programs/ssr.py)."""
    if episode.turn_limit is None:
        # B.1: after its H reads EIR has one more decision, and only a submit can run on it.
        return f"({episode.reads_left} reads left)" if episode.reads_left else "(0 reads left: your next action must be submit)"
    turns_left = episode.turn_limit - turns_done
    if turns_left <= 0:
        return "(no turns left)"
    if turns_left == 1:
        return "(1 turn left, the last: only a submit counts on it)"
    reads = episode.reads_left
    # The reads bind only when fewer are left than the turns before the last one (not with Direct's H = H).
    if reads >= turns_left - 1:
        limit = ""
    else:
        limit = f"; {reads} read{'' if reads == 1 else 's'} left" if reads else "; no reads left: only a submit counts"
    return f"({turns_left} turns left, counting the submit{limit})"


def citation_hint(title: str) -> str:
    """How a sentence of this paragraph is cited: the title as written and the sentence's [number]."""
    return f'Cite a sentence below as {{"title": {json.dumps(title)}, "sentence": <its [number]>}}'


def render_sentences(paragraph: Paragraph) -> str:
    return "\n".join(f"[{i}] {s.strip()}" for i, s in enumerate(paragraph.sentences))


def match_title(requested: str, titles: tuple[str, ...]) -> str | None:
    """The title `requested` names: itself if in `titles`, else the first title equal to it
    up to case, whitespace and quotes around words."""
    if requested in titles:
        return requested
    # Models often change case and drop or add quotes ('Heroes (David Bowie album)' for the
    # pool's '"Heroes" (David Bowie album)'); that is still the same title.
    key = _title_key(requested)
    return next((t for t in titles if _title_key(t) == key), None)


# Curly quotes read as straight ones, so a typed "Schindler's" names "Schindler’s".
_STRAIGHT_QUOTES = str.maketrans("\u201c\u201d\u2018\u2019", "\"\"''")
# A quote mark not between two letters opens or closes a quotation ("Heroes", 'Allo 'Allo!)
# and is dropped; the apostrophe in "Schindler's" stays.
_WRAPPING_QUOTE = re.compile(r"(?<!\w)[\"']|[\"'](?!\w)")


def _title_key(title: str) -> str:
    title = _WRAPPING_QUOTE.sub("", title.translate(_STRAIGHT_QUOTES))
    return " ".join(title.split()).casefold()
