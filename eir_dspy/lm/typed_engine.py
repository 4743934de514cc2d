"""The base of the project's LiteLLM engines: DSPy always calls them through the typed
`complete(Request) -> Response`, the engine contract of DSPy 3.4 and later.

DSPy 3.4's own LiteLLMEngine still carries the untyped shortcut that 3.5 removes, and DSPy's LM
takes it for every adapter call whenever it is callable (dspy/clients/execution.py,
`_select_engine`): inherited, it would send the request past the subclass's `complete` (no Router,
no grammar). Setting it to None turns it off; the typed path also gives DSPy's own truncation
warning (`finish_reason == "length"`).
"""

from __future__ import annotations

from dspy.clients.engines.litellm_engine import LiteLLMEngine


class TypedLiteLLMEngine(LiteLLMEngine):
    complete_legacy = None

    def stream(self, request):
        # One response, replayed as events: the request is never streamed over the wire.
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))
