"""One dspy.Module per method; all pool methods share eir_dspy.episode.run_episode."""

from programs.direct import Direct
from programs.eir import EIR
from programs.full_pool import FullPool
from programs.reflexion import Reflexion
from programs.ssr import SSR

METHODS = {"eir": EIR, "direct": Direct, "full_pool": FullPool, "ssr": SSR, "reflexion": Reflexion}

__all__ = ["EIR", "METHODS", "Direct", "FullPool", "Reflexion", "SSR"]
