"""One internal schema for a benchmark question, whatever file layout it came from."""

from __future__ import annotations

from dataclasses import dataclass, field

from eir_dspy.paragraphs import Paragraph


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: str
    aliases: tuple[str, ...]
    type: str
    paragraphs: tuple[Paragraph, ...]
    # (title, sentence index) pairs, titles as they appear in `paragraphs`.
    supporting_facts: tuple[tuple[str, int], ...]
    dataset: str
    # MuSiQue scores support over paragraph indices (Paragraph.source_index).
    supporting_paragraphs: tuple[int, ...] = field(default=())

    @property
    def answers(self) -> tuple[str, ...]:
        """The reference answer first, then its aliases (metrics take the max)."""
        return (self.answer, *[a for a in self.aliases if a != self.answer])

    @property
    def gold_titles(self) -> frozenset[str]:
        if self.supporting_paragraphs:
            by_index = {p.source_index: p.title for p in self.paragraphs}
            return frozenset(by_index[i] for i in self.supporting_paragraphs)
        return frozenset(t for t, _ in self.supporting_facts)
