"""Run questions on a small thread pool and keep every finished one, whatever stops the run.

Each finished record goes to `keep` at once; at most `threads` questions are in flight; Ctrl-C, a
failing run and a dead engine stop it: docs/experiments.md, "Runs and MLflow" (the runner).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

# The run stops when its first FAILING_AFTER finished questions (all of them, if fewer) failed
# with the same error type and none succeeded.
FAILING_AFTER = 3


@dataclass
class Stop:
    """Every finished question of a part, and why the run ended before every question was run
    (`interrupted` False and `failing` None: it was not stopped). Questions that finish after the run
    was found failing are counted too, so the message that stops it counts them all."""

    total: int = 0  # questions this part will run
    interrupted: bool = False
    failing: str | None = None  # the error the first questions of this part all failed with
    engine_failed: bool = False  # the embedded engine died (failing is its error)
    errors: list[str] = field(default_factory=list)  # the error of each question that failed
    types: list[str] = field(default_factory=list)  # their `error_type`s, as eval.runs.execute records them
    succeeded: int = 0  # how many questions of this part succeeded
    failing_type: str | None = None
    failing_after: int = 0  # how many had finished, all failed alike, when the run was found failing

    @property
    def failed(self) -> int:
        """How many questions of this part failed, whatever their error: every one, to the end."""
        return len(self.errors)

    @property
    def ran(self) -> int:
        """How many questions of this part finished (failed or not)."""
        return len(self.errors) + self.succeeded

    @property
    def same(self) -> int:
        """How many failed with the error type of `failing`."""
        return sum(t == self.failing_type for t in self.types) if self.failing_after else 0

    def add(self, record: dict) -> str | None:
        """Count `record`; the repeated error once the run is evidently failing (from then on,
        on every later call too), else None."""
        if record.get("error") is None:
            self.succeeded += 1
        else:
            self.errors.append(record["error"])
            self.types.append(record["error_type"])
        if self.failing is None and not self.succeeded:
            needed = min(FAILING_AFTER, self.total)
            if len(self.errors) >= needed and len(set(self.types)) == 1:
                self.failing, self.failing_type, self.failing_after = self.errors[0], self.types[0], len(self.errors)
        return self.failing

    @property
    def message(self) -> str | None:
        """Why the run failed, counted when it is asked (after the part, every question that was
        still running when the run was found failing is counted too); None when it is not failing."""
        if self.engine_failed:
            return f"the embedded engine stopped serving: {self.failing}"
        if not self.failing:
            return None
        if self.failed == self.same == self.ran:
            return f"{_questions(self.ran, 'the')} run failed with the same error and none succeeded: {self.failing}"
        # Questions already running when the run was found failing finished otherwise.
        later = [f"{self.failed} of the {self.ran} run failed"]
        if self.same != self.failed:
            later.append(f"{self.same} with that error")
        later.append(f"{self.succeeded} succeeded")
        return (f"the first {_questions(self.failing_after)} to finish failed with the same error and none "
                f"succeeded ({', '.join(later)}): {self.failing}")


def _questions(n: int, article: str = "") -> str:
    return f"{article + ' ' if article else ''}{n} question{'' if n == 1 else 's'}"


class Interrupts:
    """SIGINT handling for one run (main thread only; elsewhere Ctrl-C keeps Python's default)."""

    def __init__(self, on_abort: Callable[[], None], running: Callable[[], int]) -> None:
        self.requested = False
        self.on_abort = on_abort
        self.running = running
        self._previous = None

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum, frame) -> None:
        if self.requested:
            print("\nSecond Ctrl-C: exiting now; every finished question is saved.", file=sys.stderr, flush=True)
            try:
                self.on_abort()
            finally:
                os._exit(130)
        self.request()

    def request(self) -> None:
        if not self.requested:
            self.requested = True
            running = self.running()
            wait = f"waiting for the {running} running to finish (Ctrl-C again to exit now)" if running else "stopping"
            print(f"\nCtrl-C: no new question will start; {wait}.", file=sys.stderr, flush=True)


def run_all(todo: Iterable, run_one: Callable[[object], dict], keep: Callable[[dict], None], threads: int,
            on_abort: Callable[[], None], total: int) -> Stop:
    """Run `run_one` on each item of `todo`, `threads` at a time, handing each record to `keep`."""
    pending = iter(todo)
    running: set = set()
    stop = Stop(total)
    with ThreadPoolExecutor(max_workers=threads) as pool, Interrupts(on_abort, lambda: len(running)) as interrupts:

        def fill() -> None:
            while not interrupts.requested and stop.failing is None and len(running) < threads:
                item = next(pending, None)
                if item is None:
                    return
                running.add(pool.submit(run_one, item))

        fill()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                running.discard(future)
                try:
                    record = future.result()
                except KeyboardInterrupt:  # raised inside a question (not through the handler): same as Ctrl-C
                    interrupts.request()
                    continue
                keep(record)
                if record.get("engine_failed") and not stop.engine_failed:
                    stop.engine_failed, stop.failing = True, record["error"]
                stop.add(record)  # every record, also once the run is failing: its message counts them all
            fill()
    stop.interrupted = interrupts.requested
    return stop
