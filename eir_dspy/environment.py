"""The distractor setting: a fixed pool of paragraphs the agent reads by title."""

from __future__ import annotations

from dataclasses import dataclass

from eir_dspy.paragraphs import Paragraph


@dataclass(frozen=True)
class ReadResult:
    paragraph: Paragraph
    requested: str
    fell_back: bool  # the request matched no unread title, so the first unread one was read


class PoolEnvironment:
    """Question-side view of a paragraph pool. The agent starts knowing only the titles."""

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

    def find_unread(self, requested: str) -> str | None:
        """The unread title `requested` names (same matching as a read), or None."""
        return _match(requested, self.unread_titles)

    def read(self, requested: str) -> ReadResult | None:
        """Read the unread paragraph named `requested`; a title that matches no unread
        paragraph reads the first unread one in pool order. None when all are read."""
        unread = self.unread_titles
        if not unread:
            return None
        title = _match(requested, unread)
        fell_back = title is None
        title = title or unread[0]
        self._read.add(title)
        return ReadResult(self._by_title[title], requested, fell_back)


def _match(requested: str, titles: tuple[str, ...]) -> str | None:
    if requested in titles:
        return requested
    # Models often change case or drop surrounding quotes; that is still the same title.
    key = requested.strip().strip("\"'").casefold()
    return next((t for t in titles if t.casefold() == key), None)
