"""llama.cpp's server from the `xllamacpp` wheel, behind llama-server's own command line.

`python eir_dspy/lm/wheel_server.py --model FILE --port N ...` (or `python -m eir_dspy.lm.wheel_server`)
is the prebuilt engine of the embedded model. The project starts it as it starts a built
`llama-server` binary (eir_dspy/lm/embedded_server.py: same flags, health check and log). The two
differ in their llama.cpp release, their CPU kernels (the wheel: AVX2, for any x86-64 CPU; the built
binary: AVX-512 where the CPU has it) and the wheel's LLGuidance for JSON schemas (docs/lm.md,
"Engines"). xllamacpp runs llama.cpp's C++ server in this process and listens on the port itself;
this module only turns the flags into its `CommonParams` and keeps the process alive until stopped.

Only the flags the project passes, and the few `--server-args` documented in docs/lm.md, are
understood; any other is refused by name (exit code 2), so a flag is never silently dropped.
The log starts with a `build:` line and a `system_info:` line (the CPU features in use), which
eir_dspy/lm/server_program.py reads to record which engine served a run.
"""

from __future__ import annotations

import argparse
import signal
import sys
from importlib.metadata import version

WHEEL = "xllamacpp"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m eir_dspy.lm.wheel_server", allow_abbrev=False,  # a flag whole or not at all
                                description="llama.cpp's server from the xllamacpp wheel, with llama-server's flags")
    p.add_argument("--version", action="store_true", help="print the build line and exit")
    p.add_argument("--model", "-m")
    p.add_argument("--alias", "-a")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--ctx-size", "-c", type=int, default=4096)
    p.add_argument("--parallel", "-np", type=int, default=1)
    p.add_argument("--threads", "-t", type=int, default=-1)
    p.add_argument("--threads-batch", "-tb", type=int, default=-1)
    p.add_argument("--cache-ram", "-cram", type=int, default=None)
    p.add_argument("--batch-size", "-b", type=int, default=None)
    p.add_argument("--ubatch-size", "-ub", type=int, default=None)
    p.add_argument("--spec-type", default=None, help="speculative decoding without a draft model, e.g. ngram-simple")
    p.add_argument("--draft-max", type=int, default=None)
    p.add_argument("--no-kv-unified", action="store_true")
    p.add_argument("--no-ui", action="store_true")
    p.add_argument("--no-warmup", action="store_true")
    return p


def llama_cpp_build() -> str:
    """The llama.cpp release the wheel vendors: xllamacpp versions end in its bNNNN tag number."""
    return version(WHEEL).rsplit(".", 1)[-1]


def build_line() -> str:
    """llama-server's first log line, in its own shape (`build: NNNN (commit) with ...`)."""
    return f"build: {llama_cpp_build()} ({WHEEL} {version(WHEEL)} prebuilt wheel)"


def params_from(args: argparse.Namespace, xlc):
    """xllamacpp's CommonParams for llama-server's flags (`xlc`: the xllamacpp module)."""
    params = xlc.CommonParams()
    params.model.path = args.model
    if args.alias:
        params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx_size
    params.n_parallel = args.parallel
    batch_threads = args.threads_batch if args.threads_batch > 0 else args.threads  # llama-server's fallback
    if args.threads > 0:  # else xllamacpp's own default, as llama-server's
        params.cpuparams.n_threads = args.threads
    if batch_threads > 0:
        params.cpuparams_batch.n_threads = batch_threads
    params.kv_unified = not args.no_kv_unified
    params.ui = not args.no_ui
    params.warmup = not args.no_warmup
    if args.cache_ram is not None:
        params.cache_ram_mib = args.cache_ram
    if args.batch_size is not None:
        params.n_batch = args.batch_size
    if args.ubatch_size is not None:
        params.n_ubatch = args.ubatch_size
    if args.spec_type:
        member = "COMMON_SPECULATIVE_TYPE_" + args.spec_type.upper().replace("-", "_")
        kinds = xlc.common_speculative_type.__members__
        if member not in kinds:
            raise ValueError(f"--spec-type {args.spec_type}: not one of the wheel's speculative types "
                             f"({', '.join(k.removeprefix('COMMON_SPECULATIVE_TYPE_').lower() for k in kinds)})")
        params.speculative.types = [kinds[member]]
    if args.draft_max is not None:
        params.speculative.draft.n_max = args.draft_max
    return params


def stop(*_) -> None:
    """Leave through Python, so the server shuts down and joins its threads; SIGALRM's default action
    ends the process if that takes more than 10 s (no parent may be left to kill it)."""
    signal.alarm(10)
    sys.exit(0)


def main(argv: list[str] | None = None) -> int:
    args, unknown = parser().parse_known_args(argv)
    if unknown:
        print(f"error: the prebuilt engine ({WHEEL} wheel) does not take {' '.join(unknown)}; "
              "build llama-server (bash scripts/build_llama_server.sh) for its whole command line", flush=True)
        return 2
    print(build_line(), flush=True)
    if args.version:
        return 0
    if not args.model:
        print("error: --model is required", flush=True)
        return 2
    import xllamacpp as xlc  # 100 MB of native code: loaded only to serve

    print(f"system_info: n_threads = {args.threads} | {xlc.get_system_info()}", flush=True)
    try:
        params = params_from(args, xlc)
    except ValueError as exc:
        print(f"error: {exc}", flush=True)
        return 2
    try:
        server = xlc.Server(params)  # loads the model and listens; returns once it serves
    except Exception as exc:  # noqa: BLE001 - llama.cpp has logged why (a taken port: "couldn't bind ...")
        print(f"error: {exc}", flush=True)
        return 1
    print(f"main: server is listening on {server.listening_address}", flush=True)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
