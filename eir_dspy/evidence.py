"""The evidence store: sentences copied verbatim from read paragraphs, never rewritten."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eir_dspy.paragraphs import Paragraph


@dataclass(frozen=True)
class EvidenceRecord:
    title: str
    sentence_index: int
    text: str
    turn: int  # the turn whose read produced this record


class EvidenceStore:
    """Append-only records keyed by (title, sentence index). Re-reading adds nothing."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, int], EvidenceRecord] = {}
        self._titles: list[str] = []  # in read order

    def add_paragraph(self, paragraph: Paragraph, turn: int) -> list[EvidenceRecord]:
        """Store the paragraph's sentences; return only the records that are new."""
        if paragraph.title in self._titles:
            return []
        self._titles.append(paragraph.title)
        new = [EvidenceRecord(paragraph.title, i, s, turn) for i, s in enumerate(paragraph.sentences)]
        for record in new:
            self._records[(record.title, record.sentence_index)] = record
        return new

    @classmethod
    def from_rows(cls, rows: list[list]) -> EvidenceStore:
        """A store holding recorded evidence ([title, sentence index, text] rows in read order, as
        eval.run records it): the same sentences under the same labels, rendered the same way."""
        store = cls()
        for title, index, text in rows:
            if title not in store._titles:
                store._titles.append(title)
            store._records[(title, int(index))] = EvidenceRecord(title, int(index), text, turn=0)
        return store

    def copy(self) -> EvidenceStore:
        other = EvidenceStore()
        other._records, other._titles = dict(self._records), list(self._titles)
        return other

    def has(self, title: str, sentence_index: int) -> bool:
        return (title, sentence_index) in self._records

    @property
    def titles(self) -> tuple[str, ...]:
        return tuple(self._titles)

    @property
    def records(self) -> tuple[EvidenceRecord, ...]:
        return tuple(self._records.values())

    def __len__(self) -> int:
        return len(self._records)

    def render(self, titles: Sequence[str] | None = None) -> str:
        """Evidence as the final answer call sees it: grouped by title, labelled by sentence index.
        `titles`: only these paragraphs, in that order."""
        if not self._records:
            return "(no evidence was read)"
        blocks = []
        for title in self._titles if titles is None else titles:
            lines = [f"[{r.sentence_index}] {r.text.strip()}" for r in self._records.values() if r.title == title]
            blocks.append(f"## {title}\n" + "\n".join(lines))
        return "\n\n".join(blocks)
