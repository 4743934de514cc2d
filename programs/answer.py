"""The final answer call lives with EIR (programs/eir.py); this name is kept for eval's imports."""

from programs.eir import AnswerFromEvidence

__all__ = ["AnswerFromEvidence"]
