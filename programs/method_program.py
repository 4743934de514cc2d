"""What every method's program shares: its rules are given to it, never looked up while it runs.

A `MethodProgram` is a dspy.Module whose class declares its acceptance rule (`acceptance`,
eir_dspy/acceptance.py) and whose constructor takes the run's `RunContext` (programs/run_context.py:
the decoding mode and the corpus's futile-search rule). It builds its adapter once, from both
(`DecodingAdapter(context.decoding, acceptance=acceptance)`, which keeps each signature's rendering
between calls), and its `forward` runs under it (`with dspy.context(adapter=self.adapter)`), so
every call it makes follows the method's rule, its nested modules' included (EIR's final answer,
Reflexion's reflection, SSR's verifiers), whatever adapter is configured around it. Its strict
grammars (`self.context.strict`) and its environments' futile-search rule
(`new_environment(..., futile_searches=self.context.futile_searches)`) come from the same context.

The context and the adapter are plain attributes, not parameters: `named_predictors`, `save`/`load`
(the predictors' state only), `deepcopy` and DSPy's optimizers carry them along unchanged. eval.compile's
gold demonstrations put a scripted adapter in `adapter`'s place (eval/compile/gold_demos.py).
"""

from __future__ import annotations

import dspy

from eir_dspy.lm import DecodingAdapter
from programs.run_context import RunContext


class MethodProgram(dspy.Module):
    acceptance: str  # each method's class declares it (tests/eir_dspy/test_acceptance.py)

    def __init__(self, context: RunContext | None = None) -> None:
        """`context`: the run's (None: `RunContext()`, the defaults with no LM known)."""
        super().__init__()
        self.context = context if context is not None else RunContext()
        self.adapter = DecodingAdapter(self.context.decoding, acceptance=type(self).acceptance)
