"""Read (and write) HotpotQA's Wikipedia abstracts dump in the layout users download it in.

`enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2` holds folders of
bz2-compressed JSONL shards (`AA/wiki_00.bz2`, ...). Each line is one article's introductory
paragraph: `id`, `url`, `title`, and `text`, a list of sentences (the benchmark's supporting
facts index into exactly this list). Reading streams: one shard member and one line at a time.
"""

from __future__ import annotations

import bz2
import io
import json
import re
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

DUMP_ROOT = "enwiki-20171001-pages-meta-current-withlinks-abstracts"
_LINK_TAG = re.compile(r"</?a\b[^>]*>")


@dataclass(frozen=True)
class DumpParagraph:
    id: str
    title: str
    sentences: tuple[str, ...]


class DumpError(ValueError):
    """A dump file or line could not be read; the message names the file and line."""


def read_dump(source: str | Path) -> Iterator[DumpParagraph]:
    """Every paragraph in `source`: a .tar.bz2 dump, a directory of shards, or one shard
    (.bz2 or plain .jsonl). Paragraphs with no sentences are skipped."""
    path = Path(source)
    if path.is_dir():
        shards = sorted(p for p in path.rglob("*") if p.is_file() and _is_shard(p.name))
        if not shards:
            raise DumpError(f"{path}: no shard files (*.bz2, *.jsonl) found in this directory")
        for shard in shards:
            with open(shard, "rb") as raw:
                yield from _read_shard(raw, shard.name.endswith(".bz2"), str(shard))
    elif path.is_file() and path.name.endswith((".tar.bz2", ".tbz2", ".tar")):
        # "r|*" streams: members are read in order, never all at once.
        with tarfile.open(path, mode="r|*") as tar:
            for member in tar:
                if member.isfile() and _is_shard(member.name):
                    yield from _read_shard(tar.extractfile(member), member.name.endswith(".bz2"), f"{path}:{member.name}")
    elif path.is_file():
        with open(path, "rb") as raw:
            yield from _read_shard(raw, path.name.endswith(".bz2"), str(path))
    else:
        raise DumpError(f"{path}: no such file or directory")


def _is_shard(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return not base.startswith(".") and (base.startswith("wiki_") or base.endswith((".bz2", ".jsonl")))


def _read_shard(raw, compressed: bool, where: str) -> Iterator[DumpParagraph]:
    # Bytes lines, decoded one by one: a tar stream member cannot seek, which TextIOWrapper wants.
    stream = bz2.BZ2File(raw) if compressed else raw
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
            sentences = tuple(_LINK_TAG.sub("", s) for s in record["text"])  # the with-links variant's anchors
            paragraph = DumpParagraph(str(record["id"]), record["title"], sentences)
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DumpError(f"{where}: line {number}: not a dump record with id, title and text ({exc})") from None
        if any(s.strip() for s in paragraph.sentences):
            yield paragraph


def write_dump(paragraphs: Iterable[DumpParagraph], out: str | Path, per_shard: int = 1000) -> int:
    """Write `paragraphs` as a dump-layout .tar.bz2 (bz2 JSONL shards under DUMP_ROOT/AA/);
    returns how many were written."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    count, shard, lines = 0, 0, []
    with tarfile.open(out, mode="w:bz2") as tar:  # like the real dump: bz2 shards inside a tar.bz2
        def flush() -> None:
            nonlocal shard, lines
            data = bz2.compress("".join(lines).encode("utf-8"), compresslevel=9)
            info = tarfile.TarInfo(f"{DUMP_ROOT}/{_folder(shard)}/wiki_{shard % 100:02d}.bz2")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            shard, lines = shard + 1, []

        for p in paragraphs:
            url = f"https://en.wikipedia.org/wiki?curid={p.id}"
            lines.append(json.dumps({"id": p.id, "url": url, "title": p.title, "text": list(p.sentences)},
                                    ensure_ascii=False) + "\n")
            count += 1
            if len(lines) == per_shard:
                flush()
        if lines:
            flush()
    return count


def _folder(shard: int) -> str:
    # The dump's folders run AA, AB, ... with 100 shards each.
    n = shard // 100
    return chr(ord("A") + n // 26) + chr(ord("A") + n % 26)
