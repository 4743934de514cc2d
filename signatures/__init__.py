"""Typed DSPy signatures, one per LM decision."""

from signatures.direct_turn import DirectAction, DirectTurn, ReflexionTurn
from signatures.eir_turn import EIRAction, EIRTurn
from signatures.final_answer import FinalAnswer
from signatures.reflect import Reflect
from signatures.ssr import DecomposeProposal, RefineStep, VerifyStep

__all__ = ["DecomposeProposal", "DirectAction", "DirectTurn", "EIRAction", "EIRTurn", "FinalAnswer", "Reflect",
           "ReflexionTurn", "RefineStep", "VerifyStep"]
