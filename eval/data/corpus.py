"""The offline corpus: every distinct paragraph inside the local HotpotQA files, in dump layout.

Why, what it holds and why it is only a demo: docs/corpus.md, "The offline corpus". Runs log which
corpus they searched (`corpus_name`) and paper grids refuse this one (`full_corpus_problem`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from eir_dspy.corpus_index import build_index
from eir_dspy.wiki_dump import DumpParagraph, read_dump, write_dump
from eval.data.loaders import BENCHMARK_DIRS, HOLDOUT_FILES, DataError, load_file

DEFAULT_INDEX_NAME = "hotpotqa-abstracts"
OFFLINE_REPORT = "hotpot_corpus.json"  # written into the offline corpus's index directory (build_default_index)

# The `corpus` param of a corpus-setting run: which corpus its index holds.
OFFLINE, FULL, PARTIAL = "offline-hotpotqa", "full", "partial"
# The paper's corpus is HotpotQA's 5.23M introductory paragraphs (the 2017-10 abstracts dump); an
# index of fewer than this is a shard, a sample or the offline corpus, never the paper's setting.
FULL_CORPUS_MIN_PARAGRAPHS = 5_000_000
PAPER_DUMP = "enwiki-20171001-pages-meta-current-withlinks-abstracts.tar.bz2"
BUILD_FULL_INDEX = f"python -m eval.index build --source {PAPER_DUMP} --out runs/corpus/enwiki-index"


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


def build_default_index(data: str | Path, index_dir: Path, progress: bool = True) -> dict:
    """The offline corpus from the HotpotQA files in `data`, written as a dump, then indexed."""
    paragraphs, report = hotpot_paragraphs(hotpot_files(data))
    dump = index_dir.with_name(index_dir.name.removesuffix("-index") + ".tar.bz2")
    write_dump(paragraphs, dump)
    meta = build_index(read_dump(dump), index_dir, source=str(dump), progress=progress)
    (index_dir / OFFLINE_REPORT).write_text(json.dumps(report, indent=2) + "\n")
    return meta


def default_index_dir(out_root: str | Path = "runs") -> Path:
    return Path(os.environ.get("EIR_INDEX_DIR") or Path(out_root) / "corpus" / f"{DEFAULT_INDEX_NAME}-index")


def corpus_name(index_dir: str | Path) -> str:
    """Which corpus a built index holds: OFFLINE (the HotpotQA files' own paragraphs, every
    question's gold ones among them), FULL (at least the paper's 5.23M paragraphs) or PARTIAL."""
    index_dir = Path(index_dir)
    meta = json.loads((index_dir / "corpus.json").read_text())
    offline_dump = Path(str(meta.get("source", ""))).name == f"{DEFAULT_INDEX_NAME}.tar.bz2"
    if (index_dir / OFFLINE_REPORT).exists() or offline_dump:
        return OFFLINE
    return FULL if int(meta.get("paragraphs", 0)) >= FULL_CORPUS_MIN_PARAGRAPHS else PARTIAL


def full_corpus_problem(index_dir: str | Path) -> str | None:
    """Why `index_dir` is not the paper's corpus (None when it is)."""
    index_dir = Path(index_dir)
    if not (index_dir / "corpus.json").is_file():
        return f"{index_dir} is not a built index (no corpus.json)"
    name = corpus_name(index_dir)
    paragraphs = json.loads((index_dir / "corpus.json").read_text()).get("paragraphs", 0)
    if name == OFFLINE:
        return (f"{index_dir} is the offline HotpotQA corpus ({paragraphs:,} paragraphs, every question's gold "
                "paragraphs among them), not the paper's")
    if name == PARTIAL:
        return (f"{index_dir} holds {paragraphs:,} paragraphs, fewer than the paper's 5.23M "
                f"(at least {FULL_CORPUS_MIN_PARAGRAPHS:,} counts as the full corpus)")
    return None
