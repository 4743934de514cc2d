"""Per-question result records: the source of every metric. Written as they finish, so a killed
run can be resumed without redoing or double-counting a question."""

from __future__ import annotations

import json
import threading
from pathlib import Path


class ResultsFile:
    """Append-only JSONL of per-question records, one line per finished question."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def load(self) -> dict[str, dict]:
        """Records already written, by question id. A torn last line (killed mid-write) is ignored."""
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
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock, open(self.path, "a") as f:
            f.write(line + "\n")
            f.flush()
