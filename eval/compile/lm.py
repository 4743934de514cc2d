"""The compile's LM, built from the same flags and by the same rules as eval.run's."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace

import dspy

from eir_dspy.lm import DECODINGS, DEFAULT_REQUEST_TIMEOUT, LOCAL_DEFAULT, LMSpec, build_lm, default_decoding
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS, EngineError
from eir_dspy.lm.engine_lock import EngineBusy
from eir_dspy.lm.local_models import DEFAULT_MODEL, ModelFetchError
from eir_dspy.lm.spec import ENGINES


def add_lm_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lm", default=DEFAULT_MODEL, help="a local model key or any DSPy/LiteLLM model string")
    p.add_argument("--lm-path", default=None, help="run any local GGUF file")
    p.add_argument("--api-base", nargs="+", default=None, metavar="URL", help="OpenAI-compatible server(s)")
    p.add_argument("--price-in", type=float, default=None, metavar="USD", help="dollars per million prompt tokens")
    p.add_argument("--price-out", type=float, default=None, metavar="USD", help="dollars per million completion tokens")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-tokens", type=int, default=2048)
    p.add_argument("--decoding", default=None, choices=DECODINGS, help="as eval.run --decoding (default: the LM's)")
    p.add_argument("--request-timeout", type=float, default=DEFAULT_REQUEST_TIMEOUT, metavar="SECONDS")
    p.add_argument("--engine", default="server", choices=ENGINES, help="the embedded model's engine")
    p.add_argument("--server-args", default="", metavar="FLAGS", help="more llama-server flags (embedded server)")
    p.add_argument("--threads", type=int, default=None,
                   help=f"questions in flight while scoring before and after (default {EMBEDDED_THREADS} for the "
                        "embedded server, else 1); the optimizer itself runs one question at a time")


def lm_from_args(args: argparse.Namespace, start: bool = True) -> tuple[dspy.BaseLM | None, str, str, bool]:
    """(the LM, its logged name, its decoding mode, whether that is the LM's default); sets
    args.threads. Exits on a bad LM. With start=False (a compile that calls no model) the embedded
    engine is not started and the LM is None: only its name and decoding go into the program file."""
    spec = LMSpec(args.lm, args.lm_path, args.api_base, args.temperature, args.max_tokens,
                  request_timeout=args.request_timeout, price_in=args.price_in, price_out=args.price_out)
    spec = replace(spec, decoding=args.decoding or (LOCAL_DEFAULT if spec.is_local else None))
    if args.threads is None:
        args.threads = EMBEDDED_THREADS if spec.is_local and args.engine == "server" else 1
    spec = replace(spec, engine=args.engine, slots=args.threads, server_args=tuple(shlex.split(args.server_args)))
    if not start and spec.is_local:
        return None, spec.name, spec.decoding, spec.decoding == LOCAL_DEFAULT
    try:
        lm = build_lm(spec)
    except (FileNotFoundError, ModelFetchError, ValueError, EngineBusy, EngineError) as exc:
        raise SystemExit(f"error: {exc}") from None
    default = default_decoding(lm, spec.is_local)
    decoding = spec.decoding or default
    return (lm if start else None), lm.model, decoding, decoding == default
