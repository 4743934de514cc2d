"""Per-call accounting, in one place: role, tokens, latency, cache hit and dollar cost.

Every LM decision goes through `lm_call`, which reads the entries the call appended to the
history of the LM that served it: the predictor's own LM (`program.set_lm`, `predictor.lm = ...`)
if it has one, else the configured one, as DSPy's Predict chooses. The runner gives each question
its own copy of the configured LM (DSPy isolates history per copy); a predictor's own LM is shared,
so its calls are taken one at a time. Either way the entries are exactly this call's model calls:
a JSONAdapter retry or any other extra request shows up as an extra entry and is counted.
Provider retries happen inside one entry.
A cache hit keeps the tokens and cost of the call that produced it (`replay`: DSPy's cache is told
to keep them), so a cached rerun, or a question resumed mid-way, reports the same calls, tokens and
cost as the original run; it is flagged as a cache hit, not dropped.

One module per concern: `prices` (what a call costs), `ledger` (the records of a question's calls
and the ledger active in a context), `calls` (`lm_call`: running a predictor and recording its
calls) and `unusable` (the one path for an output the model wrote that cannot be used).
"""

from eir_dspy.accounting.calls import lm_call, serving_lms

# eval/compile/reflection.py records GEPA's reflection calls with `_record`, as lm_call records every other call.
from eir_dspy.accounting.ledger import (
           CallRecord,
           Ledger,
           _record,  # noqa: F401
           calls_so_far,
           recording,
)
from eir_dspy.accounting.prices import PRICES, price_call, register_price
from eir_dspy.accounting.replay import keep_replayed_usage
from eir_dspy.accounting.unusable import UnusableOutput, short_error

__all__ = ["PRICES", "CallRecord", "Ledger", "UnusableOutput", "calls_so_far", "keep_replayed_usage",
           "lm_call", "price_call", "recording",
           "register_price", "serving_lms", "short_error"]
