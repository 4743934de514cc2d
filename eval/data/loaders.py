"""Load HotpotQA, 2WikiMultiHopQA and MuSiQue-Ans dev files into `Question`s.

Where the data comes from, the layouts read (detected per record from its keys) and what is refused
or warned about: docs/data-and-metrics.md, "Data".
"""

from __future__ import annotations

import json
import os
import random
import re
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from eir_dspy.paragraphs import Paragraph
from eval.data.schema import Question

DATASETS = ("hotpotqa", "2wiki", "musique")

BENCHMARK_DIRS = {"hotpotqa": "hotpotqa", "2wiki": "2wikimultihopqa", "musique": "musique"}

PREFERRED_FILES = {
    "hotpotqa": ("hotpot_dev_distractor_v1.json", "hotpot_dev_distractor.rpt_sample500_seed1.jsonl"),
    "2wiki": ("dev.json", "2wikimultihopqa_dev_first200.flashrag.jsonl"),
    "musique": ("musique_ans_v1.0_dev.jsonl", "musique_ans_v1.0_dev_sample100.kag.json"),
}

# Acceptance holdout: must only ever be read when a caller names it explicitly.
HOLDOUT_FILES = frozenset({"hotpot_dev_distractor.rpt_sample300_seed0.jsonl"})


class DataError(ValueError):
    """A data file could not be found, read or validated."""


class DataWarning(UserWarning):
    """A data file loaded, but with something a user should know about."""


# ---------------------------------------------------------------- public API


def load_questions(
    dataset: str,
    data: str | os.PathLike | None = None,
    limit: int | None = None,
    seed: int | None = 0,
) -> list[Question]:
    """Load `dataset` questions; shuffle with `random.Random(seed)` (None keeps file
    order), then keep the first `limit`."""
    source = resolve_data_file(dataset, data)
    questions = _load_from_hub(dataset) if source is None else load_file(source, dataset)

    if seed is not None:
        random.Random(seed).shuffle(questions)
    return questions if limit is None else questions[:limit]


def resolve_data_file(dataset: str, data: str | os.PathLike | None = None) -> Path | None:
    """The file `load_questions` reads: `data` (file or directory), else $EIR_DATA_DIR,
    else None, meaning the Hugging Face hub."""
    if dataset not in DATASETS:
        raise DataError(f"unknown dataset {dataset!r}; expected one of {DATASETS}")
    if data is not None:
        path = Path(data)
        if path.is_dir():
            return find_file(dataset, path)
        if path.is_file():
            return path
        raise DataError(f"--data {str(path)!r} is neither a file nor a directory")
    if os.environ.get("EIR_DATA_DIR"):
        env_dir = Path(os.environ["EIR_DATA_DIR"])
        if not env_dir.is_dir():
            raise DataError(f"EIR_DATA_DIR={str(env_dir)!r} is not a directory")
        return find_file(dataset, env_dir)
    return None


def find_file(dataset: str, directory: Path) -> Path:
    """The first preferred file for `dataset` in `directory` or its benchmark subfolder."""
    directory = Path(directory)
    looked = []
    for name in PREFERRED_FILES[dataset]:
        assert name not in HOLDOUT_FILES
        for base in (directory, directory / BENCHMARK_DIRS[dataset]):
            candidate = base / name
            looked.append(str(candidate))
            if candidate.is_file():
                return candidate
    raise DataError(f"no {dataset} file found in {str(directory)!r}; looked for: " + ", ".join(looked))


def load_file(path: str | os.PathLike, dataset: str) -> list[Question]:
    """Every record of one file, in file order, as `Question`s. Raises DataError on what
    docs/data-and-metrics.md ("Data") lists; warns (`DataWarning`, once each) about records with no
    supporting facts and about facts past a paragraph's end."""
    path = Path(path)
    if dataset not in DATASETS:
        raise DataError(f"unknown dataset {dataset!r}; expected one of {DATASETS}")
    questions = []
    for index, record in enumerate(_read_records(path)):
        try:
            questions.append(_parse_record(record, dataset))
        except (_RecordError, KeyError) as exc:
            reason = f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            raise DataError(f"{path}: record {index}: {reason}") from None
    _check_questions(questions, str(path))
    return questions


# Words whose trailing "." is almost never a sentence end in Wikipedia text. Titles,
# company suffixes and citation shorthand seen in MuSiQue paragraphs.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr prof gen col lt sgt capt rev hon gov sen rep pres mt ft no vs"
    " ca approx bros co corp ltd inc op vol ch sess stat pp fig".split()
)
# A candidate boundary: end punctuation, then either closing quotes/brackets and
# whitespace, or a PTB-style closing '' (MuSiQue writes `` ... '' and often spaces it
# off: "end. ''Next"), then something that can start a sentence.
_BOUNDARY = re.compile(
    r"[.!?](?:\s*''\s*|[\"'\u201d\u2019)\]]*\s+)(?=[A-Z0-9\"`\u201c\u2018(\[]|'(?!'))"
)


def split_sentences(text: str) -> tuple[str, ...]:
    """Split a MuSiQue paragraph into sentences (MuSiQue ships unsplit text).

    Splits after `.`, `!` or `?` (plus any closing quote or bracket) when whitespace and
    then a capital, digit or opening quote follows. A `.` ending a common abbreviation
    (`Mr.`, `Dr.`, `St.`, `Ltd.`, ...) or a run of single-letter initials (`J.`, `U.S.`,
    `e.g.`) is not a boundary, so a sentence that really ends in `U.S.` stays joined to
    the next one (a merge costs less than a wrong split). Sentences are stripped; empty
    ones dropped."""
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        if text[match.start()] == "." and _is_abbreviation(text[start : match.start()]):
            continue
        sentences.append(text[start : match.end()])
        start = match.end()
    sentences.append(text[start:])
    return tuple(s.strip() for s in sentences if s.strip())


def _is_abbreviation(before_dot: str) -> bool:
    words = before_dot.split()
    if not words:
        return False
    word = words[-1].lstrip("\"'`([\u201c\u2018")
    # "J", "U.S", "e.g" (the final dot is the candidate boundary itself).
    return word.lower() in _ABBREVIATIONS or re.fullmatch(r"(?:[A-Za-z]\.)*[A-Za-z]", word) is not None


# ---------------------------------------------------------------- reading


EXPECTED_SHAPE = "expected a JSON list of records or JSONL (one JSON object per line)"


def _read_records(path: Path) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read: {exc}") from None
    if not text.strip():
        raise DataError(f"{path}: the file is empty: no records; {EXPECTED_SHAPE}")
    if text.lstrip().startswith("["):  # one JSON list
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: invalid JSON on line {exc.lineno}: {exc.msg}") from None
        if not records:
            raise DataError(f"{path}: an empty JSON list: no records")
    else:  # JSONL: one object per non-empty line
        records = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                if not records and exc.pos >= len(line.rstrip()):  # line 1 stops inside a value
                    _refuse_multiline_json(path, text)  # JSON written over several lines: say what it is
                raise DataError(
                    f"{path}: record {len(records)}: invalid JSON on line {lineno}: {exc.msg}"
                ) from None
        if len(records) == 1 and not isinstance(records[0], dict):
            raise DataError(f"{path}: the file is a single JSON value, {_json_kind(records[0])}, not records; "
                            f"{EXPECTED_SHAPE}")
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise DataError(f"{path}: record {index}: expected a JSON object (one question), "
                            f"got {_json_kind(record)}")
    return records


def _refuse_multiline_json(path: Path, text: str) -> None:
    """A file whose first line stops inside a JSON value, read as JSON written over several lines:
    say what it holds (one pretty-printed object, several) or where that JSON is invalid."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            break
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: invalid JSON on line {exc.lineno}: {exc.msg} (read as JSON written over "
                            f"several lines, as its first line is not a whole value); {EXPECTED_SHAPE}") from None
        values.append(value)
    lines = len([line for line in text.splitlines() if line.strip()])
    if len(values) == 1 and isinstance(values[0], dict):
        obj = values[0]
        keys = ", ".join(map(repr, list(obj)[:8])) + (", ..." if len(obj) > 8 else "") if obj else "none"
        hint = next((f"; its key {k!r} holds a list of {len(v)} objects: save that list as the file"
                     for k, v in obj.items() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)),
                    "; one question is a list of one record ([...]) or one line of JSONL")
        raise DataError(f"{path}: the file is one JSON object spread over {lines} lines (keys: {keys}), "
                        f"not records; {EXPECTED_SHAPE}{hint}")
    if all(isinstance(v, dict) for v in values):
        raise DataError(f"{path}: the file is {len(values)} JSON objects written over {lines} lines; "
                        f"{EXPECTED_SHAPE}: write each object on one line, or put them in a JSON list")
    kinds = ", ".join(_json_kind(v) for v in values[:3]) + (", ..." if len(values) > 3 else "")
    raise DataError(f"{path}: the file is JSON written over {lines} lines ({kinds}), not records; {EXPECTED_SHAPE}")


def _json_kind(value) -> str:
    """A JSON value's kind, as JSON names it, with the value shortened: `a number (42)`."""
    kind = ("null" if value is None else "a boolean" if isinstance(value, bool)
            else "a number" if isinstance(value, int | float) else "a string" if isinstance(value, str)
            else "a list" if isinstance(value, list) else "an object")
    if value is None:
        return kind
    shown = json.dumps(value, ensure_ascii=False)
    return f"{kind} ({shown if len(shown) <= 40 else shown[:37] + '...'})"


def _load_from_hub(dataset: str) -> list[Question]:
    hint = (
        f"pass --data PATH (a file or a directory) or set EIR_DATA_DIR to a directory holding "
        f"one of: {', '.join(PREFERRED_FILES[dataset])} (directly or under {BENCHMARK_DIRS[dataset]}/)"
    )
    if dataset != "hotpotqa":
        raise DataError(f"{dataset} has no official Hugging Face hub copy; {hint}")
    try:
        import datasets

        rows = datasets.load_dataset("hotpot_qa", "distractor", split="validation")
        questions = [_parse_record(dict(row), dataset) for row in rows]
    except Exception as exc:  # offline, missing package, changed hub layout, ...
        raise DataError(
            f"could not load hotpotqa from the Hugging Face hub ({type(exc).__name__}: {exc}); {hint}"
        ) from exc
    _check_questions(questions, "hotpot_qa (Hugging Face hub)")
    return questions


NAMED_RECORDS = 5  # a warning about records names this many of them, then counts the rest


def _check_questions(questions: list[Question], where: str) -> None:
    """Whole-file checks: ids are unique (records are matched by id when resuming and
    comparing runs); warn once about records with no gold support and once about supporting
    facts past the end of their paragraph."""
    first_seen: dict[str, int] = {}
    for index, q in enumerate(questions):
        if q.id in first_seen:
            raise DataError(f"{where}: records {first_seen[q.id]} and {index} share the id {q.id!r}")
        first_seen[q.id] = index
    unsupported = [(index, q.id) for index, q in enumerate(questions)
                   if not q.supporting_facts and not q.supporting_paragraphs]
    if unsupported:
        named = ", ".join(f"record {index} (id {qid!r})" for index, qid in unsupported[:NAMED_RECORDS])
        more = f" and {len(unsupported) - NAMED_RECORDS} more" if len(unsupported) > NAMED_RECORDS else ""
        warnings.warn(
            f"{where}: {len(unsupported)} record(s) have no supporting facts (MuSiQue: no paragraph "
            f"is_supporting): {named}{more}; loaded as given, but their support scores "
            "(support_f1, sp_em, joint) mean nothing",
            DataWarning, stacklevel=3,
        )
    past_end = sum(_facts_past_end(q) for q in questions)
    if past_end:
        warnings.warn(
            f"{where}: {past_end} supporting fact(s) point past the end of their paragraph; "
            "kept as given (the official scorers compare (title, sentence) pairs)",
            DataWarning, stacklevel=3,
        )


def _facts_past_end(q: Question) -> int:
    sentences = {p.title: len(p.sentences) for p in q.paragraphs}
    return sum(1 for title, sent_id in q.supporting_facts if sent_id >= sentences[title])


# ---------------------------------------------------------------- parsing


class _RecordError(ValueError):
    pass


def _parse_record(record: dict, dataset: str) -> Question:
    if "paragraphs" in record:
        return _parse_musique(record, dataset)
    if "golden_answers" in record and "metadata" in record:  # 2Wiki FlashRAG
        meta = _field(record, "metadata", dict)
        answers = _field(record, "golden_answers", list)
        if not answers:
            raise _RecordError("field 'golden_answers' is empty")
        context, facts = _field(meta, "context", dict), _field(meta, "supporting_facts", dict)
        answer, aliases, qtype = answers[0], answers[1:], _field(meta, "type", str)
        sentences = "content"
    elif "context" in record or "supporting_facts" in record:  # HotpotQA / 2Wiki original, HotpotQA Hugging Face
        context, facts = record["context"], _field(record, "supporting_facts", (list, dict))
        answer, aliases, qtype, sentences = None, [], None, "sentences"
    else:
        raise _RecordError(f"unrecognised record layout; keys seen: {sorted(record)}")
    pairs, fact_pairs = _pairs(context, "title", sentences, "context"), _pairs(facts, "title", "sent_id", "supporting_facts")
    if answer is None:
        answer, qtype = _field(record, "answer", str), _field(record, "type", str)
    return _build(record, dataset, answer, aliases, qtype, pairs, fact_pairs)


def _build(record, dataset, answer, aliases, qtype, context_pairs, fact_pairs) -> Question:
    qid = record["_id"] if "_id" in record else record["id"]
    question = _question_text(record)
    answer = _check_answer(answer)
    paragraphs, first_title = _dedup([(t, s, i) for i, (t, s) in enumerate(context_pairs)])
    facts = []
    for title, sent_id in fact_pairs:
        if not isinstance(title, str) or title not in first_title:
            raise _RecordError(f"supporting fact title {title!r} not in context")
        # Past the paragraph's end is kept (the official scorers compare (title, index) pairs); load_file warns.
        if not isinstance(sent_id, int) or isinstance(sent_id, bool) or sent_id < 0:
            raise _RecordError(f"supporting fact sent_id {sent_id!r} for {title!r} is not a sentence index")
        facts.append((first_title[title], sent_id))
    return Question(
        id=str(qid), question=question, answer=answer,
        aliases=tuple(_check_str(a, "alias") for a in aliases), type=qtype,
        paragraphs=paragraphs, supporting_facts=tuple(facts), dataset=dataset,
    )


def _parse_musique(record: dict, dataset: str) -> Question:
    qid = _field(record, "id", str)
    question = _question_text(record)
    answer = _check_answer(_field(record, "answer", str))
    triples, supporting, seen_idx = [], [], set()
    for item in _field(record, "paragraphs", list):
        if not isinstance(item, dict):
            raise _RecordError("each entry of 'paragraphs' must be an object")
        idx = _field(item, "idx", int)
        if idx in seen_idx:
            raise _RecordError(f"duplicate paragraph idx {idx}")
        seen_idx.add(idx)
        title = _field(item, "title", str)
        sentences = split_sentences(_field(item, "paragraph_text", str))
        if not sentences:
            raise _RecordError(f"paragraph {title!r} has an empty paragraph_text")
        # Stripped sentences would glue together in Paragraph.text (a plain join), so
        # follow the HotpotQA convention: sentences after the first lead with a space.
        sentences = sentences[:1] + tuple(" " + s for s in sentences[1:])
        triples.append((title, sentences, idx))
        if _field(item, "is_supporting", bool):
            supporting.append(idx)
    paragraphs, _ = _dedup(triples)
    return Question(
        id=qid, question=question, answer=answer,
        aliases=tuple(_check_str(a, "alias") for a in record.get("answer_aliases") or ()),
        type=qid.split("__", 1)[0] if "__" in qid else "",
        paragraphs=paragraphs, supporting_facts=(), dataset=dataset,
        supporting_paragraphs=tuple(supporting),
    )


def _dedup(triples: Iterable[tuple[str, Any, int]]) -> tuple[tuple[Paragraph, ...], dict[str, str]]:
    """Paragraphs with unique titles: a repeated title gets " (2)", " (3)", ...
    Also returns original title -> title of its first occurrence."""
    paragraphs, first, counts, used = [], {}, {}, set()
    for title, sentences, source_index in triples:
        _check_str(title, "paragraph title")
        sentences = tuple(_check_str(s, f"sentence of {title!r}") for s in _check_list(sentences, title))
        if not sentences:  # an empty sentence (real HotpotQA has " ") is fine; none at all is not
            raise _RecordError(f"paragraph {title!r} has no sentences")
        counts[title] = counts.get(title, 0) + 1
        unique, n = title, counts[title]
        while unique in used:  # also steps over a real title that already reads "X (2)"
            unique = f"{title} ({n})"
            n += 1
        used.add(unique)
        first.setdefault(title, unique)
        paragraphs.append(Paragraph(title=unique, sentences=sentences, source_index=source_index,
                                    source_title=title if unique != title else None))
    if not paragraphs:
        raise _RecordError("the context has no paragraphs")
    return tuple(paragraphs), first


def _question_text(record: dict) -> str:
    question = _field(record, "question", str)
    if not question.strip():
        raise _RecordError("the question is blank")
    return question


def _check_answer(answer) -> str:
    if not _check_str(answer, "answer").strip():
        raise _RecordError("the gold answer is empty")
    return answer


def _field(obj: dict, name: str, kind):
    value = obj[name]  # KeyError -> "missing field"
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise _RecordError(f"field {name!r} must be {names}, got {type(value).__name__}")
    return value


def _pairs(value, a: str, b: str, where: str) -> list[tuple]:
    """[title, value] pairs: an object of two parallel lists `a` and `b` (Hugging Face, FlashRAG), or a list of
    [title, value] pairs (the original layout)."""
    if isinstance(value, dict):
        left, right = _field(value, a, list), _field(value, b, list)
        if len(left) != len(right):
            raise _RecordError(f"{where}: {a!r} has {len(left)} entries but {b!r} has {len(right)}")
        return list(zip(left, right))
    if not isinstance(value, list):
        raise _RecordError(f"field {where!r} must be a list or an object, got {type(value).__name__}")
    for item in value:
        if not isinstance(item, list) or len(item) != 2:
            raise _RecordError(f"{where}: expected [title, value] pairs, got {item!r:.80}")
    return [tuple(item) for item in value]


def _check_str(value, what: str) -> str:
    if not isinstance(value, str):
        raise _RecordError(f"{what} must be a string, got {type(value).__name__}")
    return value


def _check_list(value, title: str) -> list:
    if not isinstance(value, list | tuple):
        raise _RecordError(f"sentences of {title!r} must be a list, got {type(value).__name__}")
    return value
