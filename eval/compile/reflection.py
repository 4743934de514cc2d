"""The instruction optimizer's own LM, accounted like every call.

GEPA calls its reflection LM directly (not through a program's predictor), so eir_dspy.accounting's
`lm_call` never sees those calls. A callback on that LM alone records each one in the compile's
ledger under the role `reflect`, with the same per-entry accounting (`_record`) as every other call.
"""

from __future__ import annotations

import threading
import time

import dspy
from dspy.utils.callback import BaseCallback

from eir_dspy.accounting import Ledger, _record

ROLE = "reflect"


class _Recorder(BaseCallback):
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.started: dict[str, tuple[dspy.BaseLM, int, float]] = {}
        self.lock = threading.Lock()

    def on_lm_start(self, call_id, instance, inputs):
        self.started[call_id] = (instance, len(instance.history), time.perf_counter())

    def on_lm_end(self, call_id, outputs, exception=None):
        lm, start, t0 = self.started.pop(call_id)
        entries = lm.history[start:]
        elapsed = time.perf_counter() - t0
        error = f"{type(exception).__name__}: {exception}"[:500] if exception else None
        with self.lock:
            for entry in entries:
                self.ledger.calls.append(_record(ROLE, lm.model, entry, elapsed / len(entries), error))


def reflection_lm(lm: dspy.BaseLM, ledger: Ledger) -> dspy.BaseLM:
    """A copy of `lm` (own history) whose calls go into `ledger` as `reflect`."""
    copy = lm.copy()
    copy.callbacks = [*copy.callbacks, _Recorder(ledger)]
    return copy
