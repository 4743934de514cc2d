"""`lm_call`: run one predictor and record its model calls in the active ledger.

The calls are read from the history of the LM that served each one: the predictor's own LM
(`program.set_lm`, `predictor.lm = ...`) if it has one, else the configured one, as DSPy's
Predict chooses (`serving_lms`). A predictor's own LM is shared by every question running in
parallel, so its calls are taken one at a time (`_lock_of`). An output the model wrote that cannot
be used takes the one unusable-output path (eir_dspy.accounting.unusable) and, under an active
DSPy trace, is recorded there as DSPy's FailedPrediction.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from contextlib import ExitStack

import dspy
from dspy.primitives.base_module import BaseModule
from dspy.teleprompt.bootstrap_trace import FailedPrediction
from pydantic import BaseModel

from eir_dspy.accounting.ledger import CallRecord, _record, active_ledger
from eir_dspy.accounting.prices import price_call
from eir_dspy.accounting.unusable import _unusable

_RAISE = object()


def lm_call(role, predictor, *, on_unusable=_RAISE, **inputs):
    """Run one DSPy predictor (a dspy.Predict, or a module such as dspy.ChainOfThought) and record
    the model calls it made under `role`, each with the model of the LM that served it.

    An output the model wrote that cannot be used raises UnusableOutput, or returns `on_unusable`
    when the caller has a fallback (an invalid vote, an empty final answer, ...). Under an active
    DSPy trace (an optimizer's compile) it is also recorded there as DSPy's FailedPrediction.
    """
    lms = serving_lms(predictor, inputs)
    configured = dspy.settings.lm
    with ExitStack() as held:
        for lm in sorted((lm for lm in lms if lm is not configured), key=id):  # a fixed order: no deadlock
            held.enter_context(_lock_of(lm))
        return _call(role, predictor, lms, on_unusable, inputs)


def serving_lms(predictor, inputs: dict) -> list:
    """The LMs that serve `predictor`, by DSPy's own rule (dspy/predict/predict.py, `_forward_preprocess`):
    the call's `lm=` argument, else the predictor's own `lm`, else `dspy.settings.lm` (dspy.configure,
    or dspy.context). A module is served by the LMs of the predictors inside it."""
    inner = _predictors(predictor) if isinstance(predictor, dspy.Module) else []
    out = []
    for p in inner or [None]:
        lm = inputs.get("lm", getattr(p, "lm", None)) or dspy.settings.lm
        if lm is not None and all(lm is not seen for seen in out):
            out.append(lm)
    return out


def _predictors(module) -> list:
    """The Predicts in `module` (itself included), in the order of DSPy's `named_sub_modules(type_=dspy.Predict)`,
    without walking the modules' `history`. DSPy appends every call's history entry to each calling module's
    own `history` (dspy/clients/base_lm.py, `record_history`), up to `max_history_size` (10,000) entries shared
    by all questions, and `named_sub_modules` walks every entry's messages, kwargs and outputs: a search that grew
    with the run, once per call (14 ms a call after 700 calls here). The entries hold no modules."""
    queue, seen, out = deque([module]), {id(module)}, []
    while queue:
        item = queue.popleft()
        if isinstance(item, dspy.Predict):
            out.append(item)
        if isinstance(item, BaseModule):
            calls = item.__dict__.get("history") if isinstance(item, dspy.Module) else None
            children = [v for v in item.__dict__.values() if v is not calls]
        elif isinstance(item, (list, tuple)):
            children = list(item)
        elif isinstance(item, dict):
            children = list(item.values())
        else:
            continue
        for child in children:
            if id(child) not in seen:
                seen.add(id(child))
                queue.append(child)
    return out


# A predictor's own LM is shared by every question running in parallel; one call at a time on it
# keeps each call's history entries its own.
_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


def _lock_of(lm) -> threading.RLock:
    with _locks_guard:
        lock = _locks.get(lm)
        if lock is None:
            lock = _locks[lm] = threading.RLock()
        return lock


def _call(role, predictor, lms, on_unusable, inputs):
    ledger = active_ledger()
    last = [lm.history[-1] if lm.history else None for lm in lms]
    t0 = time.perf_counter()
    error = unusable = None
    served: list[tuple[str, dict]] = []
    try:
        return _valid_unicode(predictor(**inputs))
    except Exception as exc:
        served = _served(lms, last)
        if not served or isinstance(exc, dspy.utils.exceptions.LMError):
            error = f"{type(exc).__name__}: {exc}"[:500]
            raise  # the provider failed (after its retries), or a bug: the question fails
        unusable = _unusable(role, exc)
        _trace_failure(predictor, inputs, exc, served)
        if on_unusable is _RAISE:
            raise unusable from exc
        return on_unusable
    finally:
        served = served or _served(lms, last)
        if ledger is not None and lms:
            elapsed = time.perf_counter() - t0
            for model, entry in served:
                ledger.calls.append(_record(role, model, entry, elapsed / len(served), error,
                                            unusable.cause if unusable else None))
            if not served and error is not None:
                # The request never produced a response (e.g. the provider failed after retries):
                # it was still an attempted model call.
                model = lms[0].model
                ledger.calls.append(CallRecord(role, model, 0, 0, elapsed, False, price_call(model, 0, 0), error))


def _served(lms, last) -> list[tuple[str, dict]]:
    """(model, history entry) of every call made since `last` (each LM's last entry before the call),
    oldest first. Found from the end, so DSPy dropping the oldest entries of a full history
    (settings.max_history_size) never hides a call."""
    out = []
    for lm, before in zip(lms, last):
        new = []
        for entry in reversed(lm.history):
            if entry is before:
                break
            new.append(entry)
        out += [(lm.model, entry) for entry in reversed(new)]
    return sorted(out, key=lambda pair: pair[1].get("timestamp") or "")  # stable: one LM's order is kept


_PRIVILEGED = ("signature", "demos", "config", "lm")  # arguments Predict takes for itself, not as inputs


def _trace_failure(predictor, inputs: dict, exc: Exception, served) -> None:
    """Record an unusable output in an active DSPy trace as DSPy records one: the step
    `(predictor, inputs, FailedPrediction(completion_text))` that bootstrap_trace_data appends when a
    program raises AdapterParseError (dspy/teleprompt/bootstrap_trace.py), which GEPA's reflective
    dataset and GRPO read. Here the program goes on (a rejected turn, a fallback), so the step is
    appended where it happened, with the predictor's own inputs as Predict records them."""
    trace = dspy.settings.trace
    if trace is None or dspy.settings.max_trace_size <= 0:
        return
    failed = _failed_predict(predictor, exc)
    if failed is None:
        return
    if len(trace) >= dspy.settings.max_trace_size:
        trace.pop(0)
    step_inputs = {k: v for k, v in inputs.items() if k not in _PRIVILEGED}
    trace.append((failed, step_inputs, FailedPrediction(completion_text=_completion_text(exc, served))))


def _failed_predict(predictor, exc: Exception):
    """The Predict whose output failed: the predictor itself, or in a module the one with the failed
    signature (as bootstrap_trace_data finds it)."""
    if isinstance(predictor, dspy.Predict):
        return predictor
    if not isinstance(predictor, dspy.Module):
        return None
    signature = getattr(exc, "signature", None)
    return next((p for p in _predictors(predictor) if p.signature == signature), None)


def _completion_text(exc: Exception, served) -> str:
    text = getattr(exc, "lm_response", None)
    if isinstance(text, str):
        return text
    outputs = served[-1][1].get("outputs") if served else None
    first = (outputs or [""])[0]
    return (first.get("text") or "") if isinstance(first, dict) else str(first)


def _valid_unicode(prediction):
    """The parsed output with every lone surrogate (a JSON escape like \\ud800 that is no character)
    replaced by "?". Left in, it would make the next prompt unsendable and the record unwritable."""
    for key in list(prediction.keys()):
        prediction[key] = _repair(prediction[key])
    return prediction


def _repair(value):
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_repair(v) for v in value]
    if isinstance(value, dict):
        return {k: _repair(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        dumped = value.model_dump()
        repaired = _repair(dumped)
        return value if repaired == dumped else type(value).model_validate(repaired)
    return value
