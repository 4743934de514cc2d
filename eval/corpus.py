"""The offline corpus: every distinct paragraph inside the local HotpotQA files, in dump layout.

No Wikipedia dump is reachable here, so the default corpus setting searches the real abstracts
the benchmark files carry (deduplicated by title), written as a dump-format .tar.bz2 so that
the index is built by exactly the code path a downloaded dump goes through.
The acceptance holdout is skipped unless a caller names that file explicitly.
"""

from __future__ import annotations

import os
from pathlib import Path

from eir_dspy.wiki_dump import DumpParagraph
from eval.data import BENCHMARK_DIRS, HOLDOUT_FILES, DataError, load_file

DEFAULT_INDEX_NAME = "hotpotqa-abstracts"


def hotpot_files(data: str | Path) -> list[Path]:
    """HotpotQA files with paragraphs under `data` (a directory) or `data` itself (a file)."""
    path = Path(data)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DataError(f"{path}: neither a HotpotQA file nor a directory")
    folder = path / BENCHMARK_DIRS["hotpotqa"] if (path / BENCHMARK_DIRS["hotpotqa"]).is_dir() else path
    files = [f for f in sorted(folder.iterdir()) if f.suffix in (".json", ".jsonl") and f.name not in HOLDOUT_FILES]
    if not files:
        raise DataError(f"{folder}: no HotpotQA .json/.jsonl files")
    return files


def hotpot_paragraphs(files: list[Path]) -> tuple[list[DumpParagraph], dict]:
    """Distinct paragraphs (first occurrence of each title) sorted by title, ids 1..N in that
    order (the files do not carry Wikipedia page ids); plus what was read from where."""
    by_title: dict[str, tuple[str, ...]] = {}
    report = {"files": {}, "skipped_files": {}}
    for f in files:
        try:
            questions = load_file(f, "hotpotqa")
        except DataError as exc:  # e.g. a question-only file: it has no paragraphs to give
            report["skipped_files"][f.name] = str(exc)
            continue
        before = len(by_title)
        for q in questions:
            for p in q.paragraphs:
                by_title.setdefault(p.title, p.sentences)
        report["files"][f.name] = {"questions": len(questions), "new_paragraphs": len(by_title) - before}
    if not by_title:
        raise DataError("no HotpotQA paragraphs found in: " + ", ".join(str(f) for f in files))
    paragraphs = [DumpParagraph(str(i), t, by_title[t]) for i, t in enumerate(sorted(by_title), 1)]
    report["paragraphs"] = len(paragraphs)
    return paragraphs, report


def default_index_dir(out_root: str | Path = "runs") -> Path:
    return Path(os.environ.get("EIR_INDEX_DIR") or Path(out_root) / "corpus" / f"{DEFAULT_INDEX_NAME}-index")
