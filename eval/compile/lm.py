"""The compile's LM, built from eval.run's own LM flags (eval.runs.flags.add_lm_flags) by the same rules."""

from __future__ import annotations

import argparse

import dspy

from eir_dspy.lm import LOCAL_DEFAULT, build_lm
from eir_dspy.lm.embedded_server import EMBEDDED_THREADS, EngineError
from eir_dspy.lm.engine_lock import EngineBusy
from eir_dspy.lm.local_models import ModelFetchError
from eval.runs.errors import RunError
from eval.runs.flags import add_lm_flags as add_run_lm_flags
from eval.runs.flags import lm_config, positive_int


def add_lm_flags(p: argparse.ArgumentParser) -> None:
    """eval.run's LM flags, and the compile's --threads."""
    add_run_lm_flags(p)
    p.add_argument("--threads", type=positive_int, default=None,
                   help=f"questions in flight while scoring before and after (default {EMBEDDED_THREADS} for the "
                        "embedded server, else 1); the optimizer itself runs one question at a time")


def lm_from_args(args: argparse.Namespace, start: bool = True) -> tuple[dspy.BaseLM | None, str, str, bool]:
    """(the LM, its logged name, its decoding mode, whether that is the LM's default); sets
    args.threads. A RunError on a bad LM. With start=False (a compile that calls no model) the embedded
    engine is not started and the LM is None: only its name and decoding go into the program file."""
    lm = lm_config(vars(args))
    if args.threads is None:
        args.threads = lm.default_threads
    spec = lm.spec(args.threads)
    if not start and spec.is_local:
        return None, spec.name, spec.decoding, spec.decoding == LOCAL_DEFAULT
    try:
        built = build_lm(spec)
    except (FileNotFoundError, ModelFetchError, ValueError, EngineBusy, EngineError) as exc:
        raise RunError(str(exc)) from None
    decoding, default = lm.decodings(built)
    return (built if start else None), built.model, decoding, decoding == default
