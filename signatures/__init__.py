"""Typed DSPy signatures, one per LM decision."""

from signatures.eir_turn import EIRAction, EIRTurn
from signatures.final_answer import FinalAnswer

__all__ = ["EIRAction", "EIRTurn", "FinalAnswer"]
