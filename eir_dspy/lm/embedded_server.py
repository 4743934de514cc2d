"""The embedded model served by llama.cpp's own server, started and stopped by the project.

`llama-server` decodes the requests of every question in flight together (one slot a question,
continuous batching), with each request's own grammar and a prompt cache per slot plus a RAM cache
of earlier prompts. The user never starts it: `build_lm` asks `shared_server` for one, which

- picks a free loopback port (another if the server cannot bind it),
- loads the verified GGUF with one slot per question in flight (`--threads`), each slot with the
  run's full context,
- holds the machine's engine lock (eir_dspy/lm/engine_lock.py) while it runs,
- survives the terminal's Ctrl-C (its own session: the questions still running finish), dies
  with this process (PR_SET_PDEATHSIG), and is stopped at exit,
- and, if it dies mid-run, turns the next request into `EngineDied` with its exit code and the
  end of its log, which stops the run; the questions already finished are on disk (--resume).

The program is llama.cpp's server from the xllamacpp wheel, or a llama-server binary built by
scripts/build_llama_server.sh where this machine has one (eir_dspy/lm/server_program.py chooses);
both take the same flags, and the server records which build it is (`EmbeddedServer.build`).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from eir_dspy.lm.engine_lock import EngineLock
from eir_dspy.lm.local_models import cache_dir
from eir_dspy.lm.server_program import EngineBuild, EngineError, ServerProgram, server_program

# Questions in flight (one server slot each) when --threads is not given, by measurement
# (docs/lm.md, Throughput): on 2 cores, 8 questions decoded together ran EIR 3% faster than one at a
# time (153 against 159 s a question) at 4x the latency, and batched arithmetic changed 1 answer
# of 5, so a run's answers would depend on which questions shared a batch. One at a time keeps
# every run reproducible; raise --threads on a machine with more cores.
EMBEDDED_THREADS = 1
START_TIMEOUT_S = 180.0
PORT_ATTEMPTS = 3


class EngineDied(EngineError):
    pass


@dataclass(frozen=True)
class ServerConfig:
    model_path: str
    alias: str  # the model name the server answers to
    slots: int = 1  # questions decoded together
    n_ctx: int = 8192  # tokens of context per slot
    threads: int = 0  # CPU threads; 0: $EIR_LLAMA_THREADS, else every core
    cache_ram_mib: int = 4096  # prompt states kept in RAM across slots and roles
    extra_args: tuple[str, ...] = field(default=())  # e.g. speculative decoding (docs/lm.md, Throughput)

    def argv(self, command: tuple[str, ...], port: int) -> list[str]:
        """The server's command line: `command` (the program, eir_dspy/lm/server_program.py), then llama-server's flags."""
        threads = str(self.threads or int(os.environ.get("EIR_LLAMA_THREADS") or 0) or os.cpu_count() or 1)
        return [*command, "--model", self.model_path, "--alias", self.alias, "--host", "127.0.0.1", "--port", str(port),
                "--ctx-size", str(self.n_ctx * self.slots), "--parallel", str(self.slots), "--no-kv-unified",
                "--threads", threads, "--threads-batch", threads, "--cache-ram", str(self.cache_ram_mib),
                "--no-ui", *self.extra_args]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


try:  # resolved here, not in the forked child, where loading a library could deadlock
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _prctl = None


def _die_with_parent(parent: int):
    def in_child() -> None:  # runs in the child between fork and exec
        if _prctl is not None:
            _prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)
    return in_child


class EmbeddedServer:
    """One running llama-server process. `alongside`: start it although this process runs one
    already (two endpoints of one model, for tests/eir_dspy/lm/test_served_endpoints.py); anything
    else shares one server through `shared_server`."""

    def __init__(self, config: ServerConfig, alongside: bool = False) -> None:
        self.config = config
        self.program: ServerProgram = server_program()
        self.build: EngineBuild | None = None  # read from the server's log once it serves
        self.process: subprocess.Popen | None = None
        self._closed = False
        what = f"{self.program.describe()} for {Path(config.model_path).name}"
        EngineLock.acquire(what, alongside=alongside)
        try:
            self._start()
            EngineLock.describe(what, self.url, config.alias)
        except BaseException:  # Ctrl-C while loading included: no server outlives its start
            self._stop_process()
            EngineLock.release()
            raise

    def _start(self) -> None:
        logs = cache_dir().parent / "llama-server" / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        for _ in range(PORT_ATTEMPTS):
            self.port = free_port()
            fd, name = tempfile.mkstemp(prefix=f"port{self.port}-", suffix=".log", dir=logs)
            os.close(fd)
            self.log_path = Path(name)
            with self.log_path.open("w") as log:
                self.process = subprocess.Popen(
                    self.config.argv(self.program.command, self.port), stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent(os.getpid()))
            if self._wait_ready():
                self.build = self.program.build(self.log_path.read_text(errors="replace"))
                return
            if "bind" not in self.log_tail().lower():  # a port taken since we chose it: try another
                break
        raise EngineError(f"{self.program.describe()} did not start ({self.failure()})")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_S
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with direct.open(f"http://127.0.0.1:{self.port}/health", timeout=2) as reply:
                    if reply.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass  # still loading (503) or not listening yet
            time.sleep(0.25)
        self.process.kill()
        self.process.wait()
        return False

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def died(self, grace_s: float = 2.0) -> bool:
        """Whether the server has exited, waiting a moment: a dropped connection may come first."""
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def log_tail(self, lines: int = 12) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def failure(self) -> str:
        """Why the server is not serving: its exit code and the end of its log."""
        code = self.process.poll()
        state = "still running" if code is None else f"exit code {code}" + (
            f" (signal {signal.Signals(-code).name})" if code < 0 and -code in signal.Signals._value2member_map_ else "")
        return f"pid {self.process.pid}, port {self.port}, {state}; log {self.log_path}:\n{self.log_tail()}"

    def _stop_process(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop_process()
        EngineLock.release()


_running: EmbeddedServer | None = None


def shared_server(config: ServerConfig) -> EmbeddedServer:
    """This process's one server for `config`: the running one if it matches, runs the program this
    machine would choose now (eir_dspy/lm/server_program.py) and lives, else a new one."""
    global _running
    if _running is not None and _running.config == config and _running.program == server_program() and _running.alive():
        return _running
    stop_shared_server()
    _running = EmbeddedServer(config)
    return _running


def current_server() -> EmbeddedServer | None:
    """This process's shared server, if one has been started (benchmarks read its log)."""
    return _running


def stop_shared_server() -> None:
    global _running
    if _running is not None:
        server, _running = _running, None
        server.close()


atexit.register(stop_shared_server)
