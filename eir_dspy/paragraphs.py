"""The unit every setting reads: a titled paragraph already split into sentences."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paragraph:
    """One pool paragraph. `title` is unique within a pool; `source_index` is its
    position in the benchmark record (MuSiQue scores support by it)."""

    title: str
    sentences: tuple[str, ...]
    source_index: int
    source_title: str | None = None  # the benchmark's title, when `title` had to be made unique ("X (2)")

    @property
    def benchmark_title(self) -> str:
        """The title as the benchmark file wrote it: what its official scorer compares."""
        return self.source_title or self.title

    @property
    def text(self) -> str:
        return "".join(self.sentences)
