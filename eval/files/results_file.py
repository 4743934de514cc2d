"""Per-question result records: the source of every metric. Written as they finish, so a killed
run can be resumed without redoing or double-counting a question. The lines are plain JSON objects
(a run's: QuestionRecord.row(), carrying the run's id; eval.analyze's call logs use the same file),
read back as records through eval.files.question_record.read_record (the current format only).

How a run guards its file (run ids on every line, bad lines named, one process per run):
docs/experiments.md, "Runs and MLflow"."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from eval.files.question_record import MIGRATE_HINT, QuestionRecord, RecordError, as_records, read_record

LOCK_NAME = "run.lock"  # next to results.jsonl: held (flock) by the process running the run, its pid inside
SHOWN_BAD_LINES = 10  # an error lists this many bad lines, then counts the rest


class BadLine(NamedTuple):
    number: int  # 1-based line number in the file
    problem: str


class ResultsFileError(ValueError):
    """Lines of a results file that are not its run's records: names the file, and each line with its problem."""

    def __init__(self, where: str, run_id: str | None, bad: list[BadLine], what: str | None = None) -> None:
        self.where, self.run_id, self.bad = where, run_id, bad
        what = what or f"records of run {run_id}"
        super().__init__(f"{where} has {len(bad)} line(s) that are not {what}:\n" + describe_bad_lines(where, bad))


class RunBusy(RuntimeError):
    """Another process holds the run's lock: it is running the run now. `holder`: what the lock file
    says, the pid of the process that took the lock ("" when it has not written it yet); `lock`: the file."""

    def __init__(self, run_id: str, holder: str, lock: Path) -> None:
        self.run_id, self.holder, self.lock = run_id, holder, lock
        super().__init__(f"run {run_id} is already running in another process "
                         f"(pid {holder or 'unknown'}, holding {lock})")

    @property
    def pid(self) -> int | None:
        return int(self.holder) if self.holder.isdigit() and 0 < int(self.holder) < 2**31 else None

    @property
    def holder_alive(self) -> bool | None:
        """Whether the process the lock file names is alive (None: it names none). A dead one's lock
        can still be held, by a process that inherited it (a fork)."""
        if self.pid is None:
            return None
        try:
            os.kill(self.pid, 0)  # signal 0: only asks whether the process exists
        except ProcessLookupError:
            return False
        except PermissionError:  # it exists, as another user's
            return True
        return True


def describe_bad_lines(where: str, bad: list[BadLine]) -> str:
    shown = "".join(f"  {where}:{b.number}: {b.problem}\n" for b in bad[:SHOWN_BAD_LINES])
    more = len(bad) - SHOWN_BAD_LINES
    return shown + (f"  ... and {more} more\n" if more > 0 else "")


@dataclass
class RunLines:
    """A results file read as one run's records (`read_run_records`)."""

    records: dict[str, dict] = field(default_factory=dict)  # by question id, in the current record form
    bad: list[BadLine] = field(default_factory=list)  # lines that are not the run's records
    stamped: bool = False  # some line carries the run's id


def read_run_records(text: str, run_ids: Collection[str]) -> RunLines:
    """The records of the run (`run_ids`: its id, and for a variant run the run it came from) in a
    results file's text, by question id; a later line for an id replaces an earlier one (a question
    run again on resume). An unterminated last line (a writer killed mid-line) is dropped; blank lines
    are ignored. Every other line that is not one of the run's records is a `BadLine`: not JSON, not
    an object, no question id, not a valid record, another run's record, or a record without a run
    id (written before records carried run ids: scripts/migrate_runs.py adds them)."""
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    out = RunLines()
    rows: list[tuple[int, dict]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            out.bad.append(BadLine(number, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        if not isinstance(row, dict):
            out.bad.append(BadLine(number, f"a JSON {type(row).__name__}, not a record object"))
            continue
        if not isinstance(row.get("id"), str) or not row["id"]:
            out.bad.append(BadLine(number, "no question id"))
            continue
        try:
            rows.append((number, read_record(row).row()))
        except RecordError as exc:
            out.bad.append(BadLine(number, str(exc)))
    out.stamped = any(row.get("run_id") in run_ids for _, row in rows)
    this = " or ".join(sorted(run_ids))
    for number, row in rows:
        owner = row.get("run_id")
        if owner is None:
            out.bad.append(BadLine(number, f"record {row['id']!r} has no run id" + (
                f", though this file's records carry run {this}'s: it was not written by this run" if out.stamped
                else MIGRATE_HINT)))
        elif owner not in run_ids:
            out.bad.append(BadLine(number, f"record {row['id']!r} is run {owner}'s, not run {this}'s "
                                           "(a line from another run's results)"))
        else:
            out.records[row["id"]] = row
    out.bad.sort()
    return out


class ResultsFile:
    """Append-only JSONL of per-question records, one line per finished question."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.skipped: list[BadLine] = []  # the bad lines `load_records` skipped (they stay in the file)
        path.parent.mkdir(parents=True, exist_ok=True)

    def _text(self) -> str:
        """The file's text; a torn last line (killed mid-write) is dropped from the file too, so the
        next append starts a clean line."""
        if not self.path.exists():
            return ""
        text = self.path.read_text()
        if text and not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]
            self.path.write_text(text)  # drop the torn tail so the next append starts a clean line
        return text

    def load(self) -> dict[str, dict]:
        """Lines already written, by id (a later line for an id replaces an earlier one), as plain JSON
        objects: eval.analyze's call logs. A line that is not an object with an id raises
        ResultsFileError naming it. A run's own records are read with `load_records`."""
        done: dict[str, dict] = {}
        bad: list[BadLine] = []
        for number, line in enumerate(self._text().splitlines(), 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                bad.append(BadLine(number, f"not JSON ({exc.msg} at column {exc.colno})"))
                continue
            if not isinstance(record, dict) or not isinstance(record.get("id"), str):
                bad.append(BadLine(number, "not an object with a question id"))
                continue
            done[record["id"]] = record
        if bad:
            raise ResultsFileError(str(self.path), None, bad, what="entries of this log (JSON objects with an id)")
        return done

    def load_records(self, run_id: str, *, skip_bad_lines: bool = False) -> dict[str, dict]:
        """The run's records already written, by question id, in the current record form (see
        `read_run_records`). A bad line raises ResultsFileError, or with `skip_bad_lines` is left out
        (and in the file) and kept in `self.skipped`."""
        lines = read_run_records(self._text(), {run_id})
        if lines.bad and not skip_bad_lines:
            raise ResultsFileError(str(self.path), run_id, lines.bad)
        self.skipped = lines.bad
        return lines.records

    @contextmanager
    def loggable(self) -> Iterator[Path]:
        """The file to log as the run's results artifact: this one, or, when `load_records` skipped bad
        lines, a copy without them (the artifact holds only the run's records; this file keeps them)."""
        if not self.skipped:
            yield self.path
            return
        skipped = {b.number for b in self.skipped}
        lines = self._text().splitlines(keepends=True)
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / self.path.name
            copy.write_text("".join(line for n, line in enumerate(lines, 1) if n not in skipped))
            yield copy

    @contextmanager
    def hold(self, run_id: str) -> Iterator[None]:
        """Hold the run's lock (an exclusive flock on run.lock beside the results, with this process's
        pid in it) until the block ends, or raise RunBusy naming the process that holds it. The kernel
        releases a flock when its process dies, however it dies, so a lock file left by a killed run
        never blocks."""
        path = self.path.with_name(LOCK_NAME)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by child processes (PEP 446)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise RunBusy(run_id, holder, path) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # releases the lock

    @staticmethod
    def encode_line(record: dict) -> bytes:
        # backslashreplace writes any lone surrogate as its JSON escape, so the line still parses.
        return (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8", "backslashreplace")

    def append(self, record: dict) -> None:
        # One unbuffered O_APPEND write: nothing sits in a Python buffer, so even an immediate
        # exit (a second Ctrl-C) right after this returns keeps the line.
        data = self.encode_line(record)
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
