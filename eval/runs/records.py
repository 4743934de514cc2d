"""Per-question result records: the source of every metric. Written as they finish, so a killed
run can be resumed without redoing or double-counting a question. The lines are plain JSON objects
(a run's: QuestionRecord.row(); eval.analyze's call logs use the same file), read back as records
through eval.runs.record.from_legacy."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from eval.runs.record import QuestionRecord, as_records


class ResultsFile:
    """Append-only JSONL of per-question records, one line per finished question."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def load(self) -> dict[str, dict]:
        """Records already written, by question id (a later line for an id replaces an earlier one:
        a question retried on resume). A torn last line (killed mid-write) is ignored."""
        done: dict[str, dict] = {}
        if not self.path.exists():
            return done
        text = self.path.read_text()
        if text and not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]
            self.path.write_text(text)  # drop the torn tail so the next append starts a clean line
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            done[record["id"]] = record
        return done

    def append(self, record: dict) -> None:
        # One unbuffered O_APPEND write: nothing sits in a Python buffer, so even an immediate
        # exit (a second Ctrl-C) right after this returns keeps the line.
        # backslashreplace writes any lone surrogate as its JSON escape, so the line still parses.
        data = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8", "backslashreplace")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)


def wall_time(records: list[dict | QuestionRecord]) -> float:
    """Seconds of wall time that produced these records, summed over the run's parts (the first
    invocation and each --resume): per part, from its start to its last finished question."""
    parts: dict[float, float] = {}
    for r in as_records(records):
        start, end = r.part_started_at, r.finished_at
        if start is not None and end is not None:
            parts[start] = max(parts.get(start, start), end)
    return sum(end - start for start, end in parts.items())
