"""One dspy.Module per method; all pool methods share eir_dspy.episode.run_episode."""

from programs.direct import Direct
from programs.eir import EIR
from programs.full_pool import FullPool
from programs.reflexion import Reflexion
from programs.ssr import SSR

METHODS = {"eir": EIR, "direct": Direct, "full_pool": FullPool, "ssr": SSR, "reflexion": Reflexion}
CORPUS_METHODS = ("eir", "direct", "ssr", "reflexion")  # Full Pool has no pool to give in the corpus setting

__all__ = ["EIR", "CORPUS_METHODS", "METHODS", "Direct", "FullPool", "Reflexion", "SSR"]
