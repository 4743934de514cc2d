"""One dspy.Module per method; all pool methods share eir_dspy.episode.run_episode.
programs.registry holds each method's entry (its options, settings, labels, call bound); each program
takes the run's RunContext (programs/run_context.py) in its constructor."""

from programs.direct import Direct
from programs.eir import EIR
from programs.full_pool import FullPool
from programs.reflexion import Reflexion
from programs.run_context import RunContext
from programs.ssr import SSR

__all__ = ["EIR", "Direct", "FullPool", "Reflexion", "RunContext", "SSR"]
