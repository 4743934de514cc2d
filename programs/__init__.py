"""One dspy.Module per method; all pool methods share eir_dspy.episode.run_episode."""

from programs.eir import EIR

METHODS = {"eir": EIR}

__all__ = ["EIR", "METHODS"]
