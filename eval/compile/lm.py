"""The compile's LM, built from eval.run's own LM flags (eval.runs.config.add_lm_flags) by the same rules."""

from __future__ import annotations

import argparse

import dspy

from eir_dspy.lm import LOCAL_DEFAULT, build_lm
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS, EngineError
from eir_dspy.lm.engine_lock import EngineBusy
from eir_dspy.lm.local_models import ModelFetchError
from eval.runs.config import LMConfig, positive_int
from eval.runs.config import add_lm_flags as add_run_lm_flags


def add_lm_flags(p: argparse.ArgumentParser) -> None:
    """eval.run's LM flags, and the compile's --threads."""
    add_run_lm_flags(p)
    p.add_argument("--threads", type=positive_int, default=None,
                   help=f"questions in flight while scoring before and after (default {EMBEDDED_THREADS} for the "
                        "embedded server, else 1); the optimizer itself runs one question at a time")


def lm_from_args(args: argparse.Namespace, start: bool = True) -> tuple[dspy.BaseLM | None, str, str, bool]:
    """(the LM, its logged name, its decoding mode, whether that is the LM's default); sets
    args.threads. Exits on a bad LM. With start=False (a compile that calls no model) the embedded
    engine is not started and the LM is None: only its name and decoding go into the program file."""
    lm_config = LMConfig.from_args(args)
    if args.threads is None:
        args.threads = lm_config.default_threads
    spec = lm_config.spec(args.threads)
    if not start and spec.is_local:
        return None, spec.name, spec.decoding, spec.decoding == LOCAL_DEFAULT
    try:
        lm = build_lm(spec)
    except (FileNotFoundError, ModelFetchError, ValueError, EngineBusy, EngineError) as exc:
        raise SystemExit(f"error: {exc}") from None
    decoding, default = lm_config.decodings(lm)
    return (lm if start else None), lm.model, decoding, decoding == default
