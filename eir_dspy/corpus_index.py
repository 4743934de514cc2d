"""A BM25 index over a Wikipedia paragraph corpus (bm25s), plus the paragraphs' sentences.

Scoring is Lucene's BM25 with k1=0.9, b=0.4 (Anserini's defaults for Wikipedia passages, not
bm25s's 1.5/0.75), over title and text together with no title boost. Any query term can match
(OR); ties break by increasing paragraph id, so a ranking never depends on build order.

Layout of an index directory:
  bm25s files (data/indices/indptr .npy, vocab, params)  the score matrix, loaded memory-mapped
  docs.jsonl + offsets.npy   one JSON line per paragraph (id, title, sentences); byte offsets
  tie_keys.npy               int64 sort key of each paragraph id (ties)
  corpus.json                analyzer, BM25 parameters, counts, build statistics
"""

from __future__ import annotations

import json
import os
import time
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
from bm25s.tokenization import Tokenized
from tqdm import tqdm

from eir_dspy.paragraphs import Paragraph
from eir_dspy.text_analysis import ANALYZER_CONFIG, Analyzer
from eir_dspy.wiki_dump import DumpParagraph

K1, B, METHOD = 0.9, 0.4, "lucene"
FORMAT_VERSION = 1
SEARCH_K = 10


class CorpusIndexError(ValueError):
    """An index directory is missing, incomplete, or was built with a different analyzer."""


@dataclass(frozen=True)
class Hit:
    paragraph_id: str
    title: str
    row: int  # position in the index, for reading the paragraph back


class _TokenRows(Sequence):
    """Every paragraph's term ids as lists, backed by ONE flat int32 array plus offsets.

    bm25s iterates the corpus three times; lists of Python ints for millions of paragraphs
    would cost ~10x the memory of the flat array.
    """

    def __init__(self, flat: np.ndarray, offsets: np.ndarray) -> None:
        self.flat, self.offsets = flat, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        return self.flat[self.offsets[i]:self.offsets[i + 1]].tolist()

    def __iter__(self) -> Iterator[list[int]]:
        for i in range(len(self)):
            yield self.flat[self.offsets[i]:self.offsets[i + 1]].tolist()


def build_index(paragraphs: Iterable[DumpParagraph], out: str | Path, source: str = "",
                progress: bool = True) -> dict:
    """Stream `paragraphs` into an index at `out`; returns the build statistics.

    Sentences go to disk as they arrive; only term ids stay in memory until bm25s scores them.
    A paragraph id seen twice keeps its first paragraph (the count is reported).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    analyzer = Analyzer()
    vocab: dict[str, int] = {}
    flat, token_offsets, byte_offsets = array("i"), array("q", [0]), array("q", [0])
    ids: list[str] = []
    seen: set[str] = set()
    duplicates = 0
    t0 = time.perf_counter()
    with open(out / "docs.jsonl", "wb") as docs:
        for p in tqdm(paragraphs, desc="index: reading paragraphs", unit=" para", disable=not progress):
            if p.id in seen:
                duplicates += 1
                continue
            seen.add(p.id)
            ids.append(p.id)
            terms = analyzer.terms(p.title + "\n" + "".join(p.sentences))
            flat.extend(vocab.setdefault(t, len(vocab)) for t in terms)
            token_offsets.append(len(flat))
            line = json.dumps({"id": p.id, "title": p.title, "sentences": list(p.sentences)}, ensure_ascii=False)
            docs.write(line.encode("utf-8") + b"\n")
            byte_offsets.append(docs.tell())
    del seen
    if not ids:
        raise CorpusIndexError(f"{source or 'the source'} held no paragraphs with text; nothing to index")
    read_s = time.perf_counter() - t0
    rows = _TokenRows(np.frombuffer(flat, dtype=np.int32), np.frombuffer(token_offsets, dtype=np.int64))
    retriever = bm25s.BM25(k1=K1, b=B, method=METHOD)
    retriever.index(Tokenized(ids=rows, vocab=vocab), create_empty_token=False, show_progress=progress)
    retriever.save(str(out))
    np.save(out / "offsets.npy", np.frombuffer(byte_offsets, dtype=np.int64))
    np.save(out / "tie_keys.npy", tie_keys(ids))
    stats = {"paragraphs": len(ids), "duplicate_ids_skipped": duplicates, "vocabulary": len(vocab),
             "postings": int(retriever.scores["indptr"][-1]), "tokens": len(flat),
             "read_and_tokenize_s": round(read_s, 2), "build_s": round(time.perf_counter() - t0, 2)}
    meta = {"format": FORMAT_VERSION, "analyzer": ANALYZER_CONFIG, "k1": K1, "b": B, "method": METHOD,
            "source": source, "bm25s": bm25s.__version__, **stats}
    (out / "corpus.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def tie_keys(ids: list[str]) -> np.ndarray:
    """Paragraph ids as sortable integers: the id itself when all are numeric (Wikipedia page
    ids), else each id's rank in string order."""
    if all(i.isdigit() for i in ids):
        return np.array([int(i) for i in ids], dtype=np.int64)
    order = sorted(range(len(ids)), key=ids.__getitem__)
    keys = np.empty(len(ids), dtype=np.int64)
    keys[order] = np.arange(len(ids))
    return keys


class CorpusIndex:
    """A built index, loaded memory-mapped: the score matrix and offsets stay on disk until touched."""

    def __init__(self, directory: str | Path, mmap: bool = True) -> None:
        self.directory = Path(directory)
        meta_path = self.directory / "corpus.json"
        if not meta_path.is_file():
            raise CorpusIndexError(f"{self.directory}: not an index directory (no corpus.json); "
                              f"build one with `python -m eval.index build --source DUMP --out {self.directory}`")
        self.meta = json.loads(meta_path.read_text())
        if self.meta.get("format") != FORMAT_VERSION or self.meta.get("analyzer") != ANALYZER_CONFIG:
            raise CorpusIndexError(f"{self.directory}: built with format {self.meta.get('format')} / analyzer "
                              f"{self.meta.get('analyzer')}, this code queries with format {FORMAT_VERSION} / "
                              f"{ANALYZER_CONFIG}; rebuild the index")
        self.retriever = bm25s.BM25.load(str(self.directory), mmap=mmap)
        self.offsets = np.load(self.directory / "offsets.npy", mmap_mode="r" if mmap else None)
        self.keys = np.load(self.directory / "tie_keys.npy", mmap_mode="r" if mmap else None)
        self.analyzer = Analyzer()
        self._fd = os.open(self.directory / "docs.jsonl", os.O_RDONLY)

    def __len__(self) -> int:
        return int(self.meta["paragraphs"])

    def term_ids(self, query: str) -> list[int]:
        vocab = self.retriever.vocab_dict
        return [vocab[t] for t in self.analyzer.query_terms(query) if t in vocab]

    def search(self, query: str, k: int = SEARCH_K) -> list[Hit]:
        """The top `k` paragraphs for `query` (only those matching at least one term)."""
        ids = self.term_ids(query)
        if not ids:
            return []
        scores = self.retriever.get_scores_from_ids(ids)
        return [self._hit(int(row)) for row in top_rows(scores, self.keys, k)]

    def _record(self, row: int) -> dict:
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        return json.loads(os.pread(self._fd, end - start, start))  # pread: safe across threads

    def _hit(self, row: int) -> Hit:
        record = self._record(row)
        return Hit(record["id"], record["title"], row)

    def paragraph(self, row: int) -> Paragraph:
        record = self._record(row)
        return Paragraph(record["title"], tuple(record["sentences"]), row)

    def close(self) -> None:
        os.close(self._fd)


def top_rows(scores: np.ndarray, keys: np.ndarray, k: int) -> np.ndarray:
    """Rows of the `k` highest positive scores, best first, equal scores by increasing key.

    Exact at the cut: every row tied with the k-th score competes on its key, not on
    whichever of them argpartition happened to keep.
    """
    positive = np.flatnonzero(scores > 0)
    if len(positive) == 0:
        return positive
    s = scores[positive]
    k = min(k, len(positive))
    kth = np.partition(s, len(s) - k)[len(s) - k]
    above = positive[s > kth]
    tied = positive[s == kth]
    tied = tied[np.argsort(keys[tied], kind="stable")][: k - len(above)]
    chosen = np.concatenate([above, tied])
    return chosen[np.lexsort((keys[chosen], -scores[chosen]))]
