"""One embedded engine per machine.

Two llama.cpp engines on a 2-core machine slow each other several-fold, so the managed
llama-server runs only while its process holds an exclusive lock on one file. A second run that
wants an engine gets a clear error naming the holder, and the kernel drops the lock when the
holding process ends, however it ends. Within the process the lock counts its engines: a second
one is refused too unless asked for by name (`alongside`: the test that routes one run over two
servers).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from eir_dspy.lm.local_models import cache_dir


class EngineBusy(RuntimeError):
    """Another process on this machine runs an embedded engine."""


def lock_path() -> Path:
    return cache_dir().parent / "engine.lock"


class EngineLock:
    """Held by this process while it runs an embedded engine; `_holders`: the engines it runs."""

    _fd: int | None = None
    _holders = 0

    @classmethod
    def acquire(cls, what: str, alongside: bool = False) -> None:
        """Hold the lock for one more engine, `what`; `alongside`: even if this process runs one already."""
        if cls._holders and not alongside:
            raise EngineBusy(f"this process already runs an embedded engine ({_describe(_read(cls._fd))}); "
                             f"a second one ({what}) on these cores would slow both several-fold")
        if cls._fd is None:
            path = lock_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read(fd)
                os.close(fd)
                hint = (f", or send this run to its server with --lm openai/{holder.get('alias')} --api-base "
                        f"{holder['url']} --decoding schema" if holder.get("url") else "")
                raise EngineBusy(
                    f"another process runs the embedded LM on this machine ({_describe(holder)}; lock {path}). "
                    f"Two llama.cpp engines on these cores slow each other several-fold: wait for it to finish{hint}."
                ) from None
            cls._fd = fd
        cls._holders += 1
        cls.describe(what)

    @classmethod
    def describe(cls, what: str, url: str | None = None, alias: str | None = None) -> None:
        """Say in the lock file who holds it (read by the error another run gets)."""
        if cls._fd is None:
            return
        text = json.dumps({"pid": os.getpid(), "what": what, "url": url, "alias": alias,
                           "since": time.strftime("%Y-%m-%d %H:%M:%S")})
        os.ftruncate(cls._fd, 0)
        os.pwrite(cls._fd, text.encode(), 0)

    @classmethod
    def release(cls) -> None:
        if cls._fd is None:
            return
        cls._holders -= 1
        if cls._holders <= 0:
            os.close(cls._fd)  # closing the descriptor drops the flock
            cls._fd, cls._holders = None, 0


def _read(fd: int) -> dict:
    try:
        return json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        return {}


def _describe(holder: dict) -> str:
    if not holder:
        return "holder unknown"
    return f"pid {holder.get('pid')}, {holder.get('what')}, since {holder.get('since')}"
