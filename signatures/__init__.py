"""Typed DSPy signatures, one per LM decision."""

from signatures.direct_turn import DirectAction, DirectTurn, ReflexionTurn
from signatures.eir_turn import EIRAction, EIRTurn
from signatures.final_answer import FinalAnswer
from signatures.reflect import Reflect
from signatures.search_turns import DirectSearchTurn, EIRSearchTurn, ReflexionSearchTurn
from signatures.select_reads import MaybeSelectMoreReads, SelectMoreReads
from signatures.ssr import DecomposeProposal, RefineSearchStep, RefineStep, VerifySearchStep, VerifyStep

__all__ = ["DecomposeProposal", "DirectAction", "DirectSearchTurn", "DirectTurn", "EIRAction", "EIRSearchTurn",
           "EIRTurn", "FinalAnswer", "MaybeSelectMoreReads", "Reflect", "ReflexionSearchTurn", "ReflexionTurn",
           "RefineSearchStep", "RefineStep", "SelectMoreReads", "VerifySearchStep", "VerifyStep"]
